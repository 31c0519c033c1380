package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"burner/storage"
)

// TestMCPWaitForCode: wait_for_code passes over mail without a code,
// wakes on the one with it, and gives its codes verbatim in spec §7's
// order; an empty wait gives the since to go on with.
func TestMCPWaitForCode(t *testing.T) {
	n := newMCPNode(t, openDB(t), Options{Domains: []string{"inbox.test"}})
	cs := n.connect(n.key("full", storage.Scope{}))
	n.send("codes@inbox.test", "From: Shop <noreply@shop.test>\r\nSubject: Welcome\r\n\r\nWelcome aboard, no code in here.\r\n")
	result := waitInBackground(t, cs, "wait_for_code", map[string]any{"inbox": "codes@inbox.test", "from": "shop.test", "timeout_s": 20})
	n.waitingOn("codes")
	n.send("codes@inbox.test", "From: Other <x@other.test>\r\nSubject: Your code 111111\r\n\r\nNot from the shop.\r\n")
	n.send("codes@inbox.test", "From: Shop <noreply@shop.test>\r\nSubject: Sign in\r\n\r\n"+
		"Order 5550123 shipped.\r\nYour login code: 482 913\r\nOr use backup code 7788-9900.\r\n")
	r, _ := result()
	var got waitForCodeOut
	if err := json.Unmarshal([]byte(r.structured), &got); err != nil || r.isError {
		t.Fatalf("wait_for_code = %+v (%v)", r, err)
	}
	if !got.Arrived || got.Code != "482913" || !slices.Equal(got.Codes, []string{"482913", "77889900", "5550123"}) ||
		got.Subject == nil || *got.Subject != "Sign in" || got.Since != nil {
		t.Errorf("wait_for_code = %s; want the shop's sign-in mail, code 482913 first", r.structured)
	}
	var codes extractCodesOut
	callOK(t, cs, "extract_codes", map[string]any{"id": got.EmailID}, &codes)
	if !slices.Equal(codes.Codes, got.Codes) {
		t.Errorf("wait_for_code gave codes %v, extract_codes of its email %v; want the same (spec §7)", got.Codes, codes.Codes)
	}
	if !strings.Contains(r.text, "code: <untrusted-mail-") || !strings.Contains(r.text, ">482913</untrusted-mail-") ||
		!strings.Contains(r.text, "email: "+got.EmailID+"\n") {
		t.Errorf("wait_for_code says %q; want the code, fenced, and the email's id", r.text)
	}

	// A pattern replaces the rule, and finds mail already there at once.
	callOK(t, cs, "wait_for_code", map[string]any{"inbox": "codes", "pattern": `backup code (\d+-\d+)`, "timeout_s": 1}, &got)
	if !got.Arrived || got.Code != "7788-9900" {
		t.Errorf("wait_for_code(pattern) = %+v, want 7788-9900 as written", got)
	}

	// None with a code: the since to wait again with.
	n.send("nocode@inbox.test", "From: a@shop.test\r\nSubject: hello\r\n\r\nno digits\r\n")
	r = call(t, cs, "wait_for_code", map[string]any{"inbox": "nocode", "timeout_s": 1, "since": 1700000000})
	if r.isError || r.structured != `{"arrived":false,"since":1700000000}` ||
		r.text != "No email with a code arrived in nocode within 1 s. To keep waiting without missing one, call wait_for_code again with since: 1700000000.\n" {
		t.Errorf("wait_for_code on mail without codes = %+v; want arrived: false with the since given", r)
	}
}

// TestMCPWaitForLink: the link asked for, verbatim; without contains,
// the unsubscribe links (by List-Unsubscribe, URL or text) come last.
func TestMCPWaitForLink(t *testing.T) {
	n := newMCPNode(t, openDB(t), Options{Domains: []string{"inbox.test"}})
	cs := n.connect(n.key("full", storage.Scope{}))
	newsletter := "From: News <news@news.test>\r\nSubject: Confirm your subscription\r\n" +
		"List-Unsubscribe: <mailto:leave@news.test>, <https://news.test/lu?id=1>\r\nContent-Type: text/html\r\n\r\n" +
		`<p><a href="https://news.test/lu?id=1">Manage preferences</a> ` +
		`<a href="https://news.test/out?u=1&amp;t=2">Unsubscribe here</a> ` +
		`<a href="https://news.test/UnSubscribe/3">Leave</a> ` +
		`<a href="https://news.test/verify?t=777&amp;u=1">Confirm <b>your</b> email</a></p>` + "\r\n"
	n.send("links@inbox.test", "From: a@news.test\r\nSubject: no links\r\n\r\nJust words.\r\n")
	result := waitInBackground(t, cs, "wait_for_link", map[string]any{"inbox": "links", "timeout_s": 20})
	n.waitingOn("links")
	n.send("links@inbox.test", newsletter)
	r, _ := result()
	var got waitForLinkOut
	if err := json.Unmarshal([]byte(r.structured), &got); err != nil || r.isError {
		t.Fatalf("wait_for_link = %+v (%v)", r, err)
	}
	if !got.Arrived || got.Link != "https://news.test/verify?t=777&u=1" || got.LinkText != "Confirm your email" ||
		got.Subject == nil || *got.Subject != "Confirm your subscription" || got.EmailID == "" {
		t.Errorf("wait_for_link = %s; want the confirmation link, past the unsubscribe ones", r.structured)
	}
	if !strings.Contains(r.text, ">https://news.test/verify?t=777&u=1</untrusted-mail-") || strings.Contains(r.text, `\u0026`) {
		t.Errorf("wait_for_link says %q; want the link as written, & and all", r.text)
	}

	for _, tc := range []struct {
		contains, want string
	}{
		{"unsubscribe", "https://news.test/UnSubscribe/3"}, // the URL, in any case; not the text
		{"LU?ID", "https://news.test/lu?id=1"},
		{"t=777&u", "https://news.test/verify?t=777&u=1"},
	} {
		callOK(t, cs, "wait_for_link", map[string]any{"inbox": "links", "contains": tc.contains, "timeout_s": 1}, &got)
		if got.Link != tc.want {
			t.Errorf("wait_for_link(contains: %q) = %+v, want %s", tc.contains, got, tc.want)
		}
	}
	r = call(t, cs, "wait_for_link", map[string]any{"inbox": "links", "contains": "/nowhere", "timeout_s": 1})
	if r.isError || !strings.HasPrefix(r.structured, `{"arrived":false,"since":`) ||
		!strings.HasPrefix(r.text, "No email with such a link arrived in links within 1 s.") {
		t.Errorf("wait_for_link(contains: /nowhere) = %+v; want arrived: false", r)
	}

	// Only unsubscribe links: the first of them, rather than none.
	n.send("leave@inbox.test", "From: a@news.test\r\nSubject: bye\r\nList-Unsubscribe: <https://news.test/lu?id=2>\r\nContent-Type: text/html\r\n\r\n"+
		`<a href="https://news.test/lu?id=2">Preferences</a> <a href="https://news.test/u">UNSUBSCRIBE</a>`+"\r\n")
	callOK(t, cs, "wait_for_link", map[string]any{"inbox": "leave", "timeout_s": 1}, &got)
	if got.Link != "https://news.test/lu?id=2" || got.LinkText != "Preferences" {
		t.Errorf("wait_for_link on a mail of unsubscribe links = %+v, want the first", got)
	}
	// A plain text mail's links are those its text shows.
	n.send("plain@inbox.test", "From: a@shop.test\r\nSubject: plain\r\n\r\nOpen https://shop.test/v?t=1&u=2 to confirm.\r\n")
	callOK(t, cs, "wait_for_link", map[string]any{"inbox": "plain@inbox.test", "timeout_s": 1}, &got)
	if got.Link != "https://shop.test/v?t=1&u=2" {
		t.Errorf("wait_for_link on a plain text mail = %+v", got)
	}
}

// progressClient connects to n with key, and gathers the progress
// notifications it receives.
type progressClient struct {
	cs  *mcp.ClientSession
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

func (n *mcpNode) progressClient(key string) *progressClient {
	n.t.Helper()
	pc := &progressClient{}
	c := mcp.NewClient(&mcp.Implementation{Name: "burner-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			pc.mu.Lock()
			defer pc.mu.Unlock()
			pc.got = append(pc.got, req.Params)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   n.srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{key, n.srv.Client().Transport}},
		MaxRetries: -1,
	}, nil)
	if err != nil {
		n.t.Fatalf("Connect: %v", err)
	}
	n.t.Cleanup(func() { cs.Close() })
	pc.cs = cs
	return pc
}

// notifications returns the notifications of token received so far. A
// client hands them to its handler as they come, which may be after the
// result of their call.
func (pc *progressClient) notifications(token string) []*mcp.ProgressNotificationParams {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	var got []*mcp.ProgressNotificationParams
	for _, p := range pc.got {
		if p.ProgressToken == token {
			got = append(got, p)
		}
	}
	return got
}

// TestMCPWaitProgress: a wait called with a progress token reports
// progress while it waits (here every 100 ms rather than every 4 s),
// and one called without gets none; either way the result comes.
func TestMCPWaitProgress(t *testing.T) {
	n := newMCPNode(t, openDB(t), Options{Domains: []string{"inbox.test"}})
	n.server.progressEvery = 100 * time.Millisecond
	pc := n.progressClient(n.key("full", storage.Scope{}))
	for _, tool := range []string{"wait_for_email", "wait_for_code", "wait_for_link"} {
		params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"inbox": "slow", "timeout_s": 1}}
		params.SetProgressToken("tok-" + tool)
		res, err := pc.cs.CallTool(context.Background(), params)
		if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "arrived in slow within 1 s") {
			t.Fatalf("%s with a progress token = %+v, %v; want the empty answer", tool, res, err)
		}
		got := pc.notifications("tok-" + tool)
		if len(got) < 3 {
			t.Fatalf("%s for 1 s sent %d progress notifications, want one every 100 ms", tool, len(got))
		}
		for i, p := range got {
			if p.Total != 1 || (i > 0 && p.Progress <= got[i-1].Progress) ||
				!strings.HasPrefix(p.Message, "Waiting for mail in slow: ") {
				t.Errorf("%s: progress notification %d = %+v; want total 1, growing progress", tool, i, p)
			}
		}
	}
	call(t, pc.cs, "wait_for_email", map[string]any{"inbox": "slow", "timeout_s": 1})
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for _, p := range pc.got {
		if tok, _ := p.ProgressToken.(string); !strings.HasPrefix(tok, "tok-") {
			t.Errorf("a progress notification %+v, for a call without a progress token", p)
		}
	}
}

// TestMCPProgressTransport: a call that asks for progress is answered as
// an event stream, with its notifications before the result; any other
// request with one JSON document.
func TestMCPProgressTransport(t *testing.T) {
	n := newMCPNode(t, openDB(t), Options{Domains: []string{"inbox.test"}})
	n.server.progressEvery = 100 * time.Millisecond
	key := n.key("full", storage.Scope{})
	post := func(body string) (string, string) {
		req, _ := http.NewRequest("POST", n.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		res, err := n.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.Header.Get("Content-Type"), string(b)
	}
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{%s"name":"wait_for_email","arguments":{"inbox":"raw","timeout_s":1}}}`
	ct, body := post(fmt.Sprintf(call, `"_meta":{"progressToken":42},`))
	progress := strings.Index(body, `"method":"notifications/progress"`)
	result := strings.Index(body, `"arrived":false`)
	if ct != "text/event-stream" || progress < 0 || result < progress {
		t.Errorf("a wait with a progress token: %s\n%s\nwant an event stream, progress before the result", ct, body)
	}
	ct, body = post(fmt.Sprintf(call, ""))
	if ct != "application/json" || strings.Contains(body, "notifications/progress") || !strings.Contains(body, `"arrived":false`) {
		t.Errorf("a wait without a progress token: %s\n%s\nwant one JSON document", ct, body)
	}
	for _, b := range []string{`[1,2]`, `{"method":"tools/call","params":{"_meta":{"progressToken":null}}}`, `not json`} {
		if asksProgress([]byte(b)) {
			t.Errorf("asksProgress(%s) = true, want false", b)
		}
	}
}
