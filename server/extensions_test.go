package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"burner/emailjson"
	"burner/storage"
)

const filesMessage = "From: a@example.com\r\nSubject: files\r\nMIME-Version: 1.0\r\n" +
	"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
	"--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n" +
	"--b\r\nContent-Type: text/html\r\nContent-Disposition: attachment; filename=\"page.html\"\r\n\r\n<script>alert(1)</script>\r\n" +
	"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"report.pdf\"\r\n\r\n%PDF-1.4\r\n" +
	"--b--\r\n"

func TestRawAttachmentsTextLinks(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{
		Subject: ptr("files"), Raw: []byte(filesMessage),
		Plain: "see attached", Links: []string{"https://a.example/1", "https://a.example/2"},
	})
	base := "/api/v1/emails/" + e.ID

	res := a.call("GET", base+"/raw")
	if res.status != 200 || res.header.Get("Content-Type") != "message/rfc822" || res.body != filesMessage {
		t.Errorf("GET raw = %d %q %q, want 200 message/rfc822 and the bytes as received", res.status, res.header.Get("Content-Type"), res.body)
	}
	wantJSON(t, "GET attachments", a.call("GET", base+"/attachments"), 200,
		`[{"index":0,"filename":"page.html","contentType":"text/html","size":25,"contentId":""},{"index":1,"filename":"report.pdf","contentType":"application/pdf","size":8,"contentId":""}]`)
	res = a.call("GET", base+"/attachments/0")
	if res.status != 200 || res.body != "<script>alert(1)</script>" || res.header.Get("Content-Disposition") != `attachment; filename=page.html` ||
		res.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET attachments/0 = %d %q %v; want the file as a download, never rendered", res.status, res.body, res.header)
	}
	for _, n := range []string{"2", "-1", "01", "x"} {
		wantJSON(t, "GET attachments/"+n, a.call("GET", base+"/attachments/"+n), 404, `{"error":"Attachment not found"}`)
	}
	res = a.call("GET", base+"/text")
	if res.status != 200 || res.body != "see attached" || res.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("GET text = %d %q %q", res.status, res.body, res.header.Get("Content-Type"))
	}
	wantJSON(t, "GET links", a.call("GET", base+"/links"), 200, `["https://a.example/1","https://a.example/2"]`)
	plain := a.deliver("alice@example.com", storage.Message{Raw: []byte("Subject: x\r\n\r\nno files\r\n")})
	wantJSON(t, "GET links of a message without", a.call("GET", "/api/v1/emails/"+plain.ID+"/links"), 200, `[]`)
	wantJSON(t, "GET attachments of a message without", a.call("GET", "/api/v1/emails/"+plain.ID+"/attachments"), 200, `[]`)

	for _, p := range []string{"/raw", "/attachments", "/attachments/0", "/text", "/links"} {
		wantJSON(t, "GET unknown id"+p, a.call("GET", "/api/v1/emails/8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"+p), 404, `{"error":"Email not found"}`)
		res := a.call("POST", base+p)
		if res.status != 405 || res.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s = %d Allow %q, want 405 GET, HEAD", p, res.status, res.header.Get("Allow"))
		}
		if res := a.callAuth("GET", base+p, ""); res.status != 401 {
			t.Errorf("GET %s without a key = %d, want 401", p, res.status)
		}
	}
}

func TestHeaderFilter(t *testing.T) {
	a := newAPI(t)
	mine := a.deliver("ci@example.com", storage.Message{Subject: ptr("run 42"), Headers: []storage.Header{{Name: "X-Test-Run", Value: "42"}}})
	a.deliver("ci@example.com", storage.Message{Subject: ptr("run 7"), Headers: []storage.Header{{Name: "X-Test-Run", Value: "7"}}})
	for _, q := range []string{"header=X-Test-Run:42", "header=x-test-run%3A%2042", "header=X-Test-Run:42&subject=run"} {
		if got := a.listIDs(mustQuery(t, "to=ci&"+q)); !slices.Equal(got, []string{mine.ID}) {
			t.Errorf("list %s = %v, want only %s", q, got, mine.ID)
		}
	}
	if got := a.listIDs(mustQuery(t, "to=ci&header=X-Test-Run:")); len(got) != 2 {
		t.Errorf("list header=X-Test-Run: = %v, want both (any value)", got)
	}
	for _, q := range []string{"header=X-Test-Run", "header=:42", "header=X%20Run:1", "header=%C3%A9:1"} {
		wantJSON(t, "list "+q, a.call("GET", "/api/v1/emails?to=ci&"+q), 400, `{"error":"'header' must be Name:value, like X-Test-Run:42."}`)
	}
}

// TestFromFilter: from (spec §14) keeps the emails whose sender's address
// or name holds it, in any case, and combines with every other filter and
// with wait; an empty from filters nothing.
func TestFromFilter(t *testing.T) {
	a := newAPI(t)
	shop := a.deliver("ci@example.com", storage.Message{From: "noreply@shop.example", FromName: "Straße Shop", Subject: ptr("Your code"), Text: "code 1234"})
	bank := a.deliver("ci@example.com", storage.Message{From: "alerts@bank.example", FromName: "Bank", Subject: ptr("Your code"), Text: "code 5678"})
	news := a.deliver("ci@example.com", storage.Message{From: "news@shop.example", Subject: ptr("Sale")})
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"from=shop.example", []string{news.ID, shop.ID}},
		{"from=NOREPLY@SHOP", []string{shop.ID}},
		{"from=STRASSE", []string{shop.ID}}, // the name, Unicode case folding
		{"from=bank", []string{bank.ID}},
		{"from=", []string{news.ID, bank.ID, shop.ID}},
		{"from=nobody", nil},
		{"from=shop&subject=code", []string{shop.ID}},
		{"from=shop&search=sale", []string{news.ID}},
		{"from=shop&body=1234", []string{shop.ID}},
		{"from=shop&limit=1", []string{news.ID}},
		{"from=example&header=X-None:", nil},
		{"from=shop&wait=5", []string{news.ID, shop.ID}}, // found: answered at once
	} {
		if got := a.listIDs(mustQuery(t, "to=ci&"+tc.query)); !slices.Equal(got, tc.want) {
			t.Errorf("list %s = %v, want %v", tc.query, got, tc.want)
		}
	}
	// The other filters' rule still holds: from is not one of the three.
	wantJSON(t, "list from, subject and body", a.call("GET", "/api/v1/emails?to=ci&from=x&subject=a&body=b"), 400,
		`{"error":"Only one of subject, search, or body may be specified."}`)
}

// sseEvent is one event of a stream.
type sseEvent struct{ id, event, data string }

func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && ev.id != "":
			return ev
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
}

func openStream(t *testing.T, a *apiTest, lastID string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/api/v1/events?to=Live", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET events = %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(res.Body)
	// The stream opens with a comment: from then on, nothing is missed.
	if line, err := r.ReadString('\n'); err != nil || line != "retry: 2000\n" {
		t.Fatalf("stream starts %q, %v", line, err)
	}
	return r
}

func TestEvents(t *testing.T) {
	a := newAPI(t)
	a.deliver("live@example.com", storage.Message{Subject: ptr("before")}) // not an event: it came before
	stream := openStream(t, a, "")
	first := a.deliver("live@example.com", storage.Message{Subject: ptr("first")})
	a.deliver("other@example.com", storage.Message{Subject: ptr("elsewhere")})
	ev := readEvent(t, stream)
	var e emailjson.Email
	if err := json.Unmarshal([]byte(ev.data), &e); err != nil || ev.id != first.ID || ev.event != "email" || e.ID != first.ID || *e.Subject != "first" {
		t.Fatalf("event = %+v (%v), want the email %s", ev, err, first.ID)
	}
	// Resume: what arrived while disconnected comes in order.
	second := a.deliver("live@example.com", storage.Message{Subject: ptr("second")})
	third := a.deliver("LIVE@example.com", storage.Message{Subject: ptr("third")})
	resumed := openStream(t, a, first.ID)
	for _, want := range []string{second.ID, third.ID} {
		if ev := readEvent(t, resumed); ev.id != want {
			t.Errorf("resumed event id %s, want %s", ev.id, want)
		}
	}
	wantJSON(t, "events without to", a.call("GET", "/api/v1/events"), 400, `{"error":"'to' is required."}`)
	// HEAD answers at once, with the stream's headers.
	if res := a.call("HEAD", "/api/v1/events?to=live"); res.status != 200 || res.header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD events = %d %q", res.status, res.header.Get("Content-Type"))
	}
	if res := a.call("HEAD", "/api/v1/emails?to=nobody&wait=60"); res.status != 200 {
		t.Errorf("HEAD list with wait = %d, want 200 at once", res.status)
	}
}

func mustQuery(t *testing.T, q string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
