package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"burner/smtpd"
	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// tee delivers each message to two stores, bolt first, and remembers
// which email of pg is which of bolt: the engines choose the ids, and
// nothing else, for the same clock.
type tee struct {
	bolt, pg storage.Engine
	mu       sync.Mutex
	ids      map[string]string // pg id -> bolt id
}

func (d *tee) Deliver(ctx context.Context, msg *storage.Message, to []string) ([]storage.Email, error) {
	be, err := d.bolt.Deliver(ctx, msg, to)
	if err != nil {
		return nil, err
	}
	pe, err := d.pg.Deliver(ctx, msg, to)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range be {
		d.ids[pe[i].ID] = be[i].ID
	}
	return be, nil
}

// differentialMail is what the test sends: each a message and its
// recipients, sent one second after the previous one unless same is set
// (then in the same millisecond, which spec §3 resolves with +1 ms).
var differentialMail = []struct {
	to   []string
	same bool
	msg  string
}{
	{[]string{"alice@x.test"}, false, "From: Shop <shop@example.com>\r\nSubject: Your code is 483920\r\nX-Test-Run: 42\r\n\r\nUse 483920 to sign in, or open https://example.com/verify?token=abc.\r\n"},
	{[]string{"alice@x.test", "Bob@x.test", "alice+ci@x.test"}, false, "From: =?UTF-8?Q?J=C3=BCrgen?= <j@example.de>\r\nSubject: =?UTF-8?Q?Gr=C3=B6=C3=9Fe_Stra=C3=9Fe?=\r\nX-Tag: =?UTF-8?Q?=C3=9Cn=C3=AFc=C3=B6d=C3=A9?=\r\nMIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Die gro\xc3\x9fe STRASSE, <a href=\"https://example.de/a?x=1&amp;y=2\">hier</a>. \xe2\x84\xaaelvin \xc4\xb0stanbul</p>\r\n"},
	{[]string{"alice@x.test"}, false, "From: ci@example.com\r\nSubject: 100%_done for build_7\r\n\r\nprogress 100% and under_score; also 100a done\r\n"},
	{[]string{"alice@x.test"}, true, "From: ci@example.com\r\nSubject: 100a done\r\n\r\nnot a percent\r\n"},
	{[]string{"alice@x.test"}, false, "From: files@example.com\r\nSubject: files\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nsee attached, code: AB-1234\r\n--b1\r\nContent-Type: text/plain; name=\"notes.txt\"\r\nContent-Disposition: attachment; filename=\"notes.txt\"\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8gd29ybGQK\r\n--b1\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename*=UTF-8''%C3%BCber.bin\r\n\r\n\x00\x01\x02\xff\r\n--b1--\r\n"},
	{[]string{"alice@x.test"}, false, "From: latin@example.com\r\nSubject: latin1 body\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\nCaf\xe9 cr\xe8me \xff\r\n"},
	{[]string{"alice@x.test"}, false, "From: bare@example.com\r\n\r\n"},
	{[]string{"carol@x.test"}, false, "From: x@example.com\r\nSubject: carol only\r\n\r\nhttps://a.example/1 https://b.example/2 https://a.example/1\r\n"},
}

// TestDifferentialBoltPostgres: the same mail, on the same clock, into a
// bbolt store and a PostgreSQL one, through the real SMTP daemon; then
// the API of each answers the same requests with the same status,
// headers and bytes, but for the ids each engine chose (spec §10).
func TestDifferentialBoltPostgres(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	bolt := openDBWith(t, boltdb.Options{Now: clk.Now})
	pg := openPG(t, pgDatabase(t), postgres.Options{Now: clk.Now})
	d := &tee{bolt: bolt, pg: pg, ids: make(map[string]string)}

	mta := smtpd.New(d, smtpd.Options{Hostname: "mx.test"}, slog.New(slog.DiscardHandler))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go mta.Serve(ln)
	t.Cleanup(func() { mta.Shutdown(context.Background()) })
	for i := range 14 { // more than a page of 10
		sendDiff(t, ln.Addr().String(), []string{"many@x.test"}, fmt.Sprintf("From: n@example.com\r\nSubject: number %d\r\n\r\nbody %d\r\n", i, i))
		clk.Advance(time.Second)
	}
	for _, m := range differentialMail {
		if !m.same {
			clk.Advance(time.Second)
		}
		sendDiff(t, ln.Addr().String(), m.to, m.msg)
	}

	type side struct {
		url, key string
	}
	serve := func(db storage.Engine) side {
		_, key, err := db.CreateKey(ctx, "diff", storage.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(New(db, Options{Now: clk.Now}, testLogger(t)).Handler())
		t.Cleanup(srv.Close)
		return side{srv.URL, key}
	}
	bs, ps := serve(bolt), serve(pg)
	toPG := make(map[string]string, len(d.ids))
	var pairs []string
	for p, b := range d.ids {
		toPG[b] = p
		pairs = append(pairs, p, b)
	}
	fromPG := strings.NewReplacer(pairs...)
	var toPGPairs []string
	for b, p := range toPG {
		toPGPairs = append(toPGPairs, b, p)
	}
	toPGPath := strings.NewReplacer(toPGPairs...)

	call := func(s side, method, path string) response {
		t.Helper()
		req, err := http.NewRequest(method, s.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.key)
		return send(t, http.DefaultClient, req)
	}
	compared := 0
	compare := func(method, path string) response {
		t.Helper()
		b := call(bs, method, path)
		p := call(ps, method, toPGPath.Replace(path))
		p.body = fromPG.Replace(p.body)
		compared++
		if b.status != p.status || b.body != p.body {
			t.Errorf("%s %s:\nbbolt:      %d %s\npostgresql: %d %s", method, path, b.status, trim(b.body), p.status, trim(p.body))
		}
		if bh, ph := headerText(b.header, fromPG), headerText(p.header, fromPG); bh != ph {
			t.Errorf("%s %s: headers differ:\nbbolt:\n%s\npostgresql:\n%s", method, path, bh, ph)
		}
		return b
	}

	start := newClock().Now().Unix()
	sinceMid := fmt.Sprint(start + 5)
	beforeMid := fmt.Sprintf("%d.5", start+20)
	var queries []string
	for _, to := range []string{"alice", "ALICE", "Bob", "alice%2Bci", "alice+ci", "many", "carol", "nobody"} {
		queries = append(queries, "to="+to)
	}
	for _, q := range []string{
		"limit=3", "limit=10", "since=" + sinceMid, "before=" + beforeMid, "since=" + sinceMid + "&before=" + beforeMid + "&limit=2",
		"since=0", "before=1e10", "since=" + fmt.Sprint(start+1) + ".535",
	} {
		queries = append(queries, "to=many&"+q, "to=alice&"+q)
	}
	for _, f := range []string{
		"subject=stra%C3%9Fe", "subject=STRASSE", "subject=GR%C3%96SSE", "subject=gr%C3%B6%C3%9Fe", "subject=%25", "subject=_", "subject=100%25_",
		"subject=100a", "subject=%25_d", "subject=code", "subject=Number%201",
		"search=483920", "search=verify%20token", "search=strasse%20hier", "search=%25", "search=_", "search=under_score", "search=kelvin", "search=%E2%84%AAelvin",
		"search=%C4%B0stanbul", "search=istanbul", "search=caf%C3%A9", "search=%20%20",
		"body=example.com%2Fverify", "body=100%25", "body=STRASSE", "body=gro%C3%9Fe", "body=AB-1234",
		"header=X-Test-Run:42", "header=x-test-run:4", "header=X-Tag:%C3%BCn%C3%AFc%C3%B6d%C3%A9", "header=X-Tag:UNICODE", "header=X-Tag:", "header=X-Missing:",
		"header=Subject:files", "header=From:J%C3%BCrgen",
	} {
		queries = append(queries, "to=alice&"+f, "to=bob&"+f)
	}
	for _, bad := range []string{"", "to=", "to=a%20b", "to=alice&limit=0", "to=alice&limit=11", "to=alice&subject=a&search=b", "to=alice&since=abc", "to=alice&before=-1", "to=alice&header=nocolon", "to=alice&wait=abc"} {
		queries = append(queries, bad)
	}
	var all []string
	for _, q := range queries {
		compare("GET", "/api/v1/emails?"+q)
	}

	for p := range d.ids {
		all = append(all, d.ids[p])
	}
	sort.Strings(all)
	for _, id := range all {
		for _, sub := range []string{"", "/raw", "/text", "/links", "/codes", "/attachments", "/attachments/0", "/attachments/1", "/attachments/2", "/auth"} {
			compare("GET", "/api/v1/emails/"+id+sub)
		}
		compare("HEAD", "/api/v1/emails/"+id)
	}
	for _, path := range []string{"/api/v1/emails/00000000-0000-4000-8000-000000000000", "/api/v1/emails/not-an-id", "/api/v1/emails/00000000-0000-4000-8000-000000000000/raw", "/api/v1/nothing"} {
		compare("GET", path)
	}
	// Changes answer alike too, and leave the stores alike.
	compare("DELETE", "/api/v1/emails/"+all[0])
	compare("DELETE", "/api/v1/emails/"+all[0])
	compare("DELETE", "/api/v1/inbox?to=many")
	for _, q := range []string{"to=many", "to=alice", "to=bob&limit=10"} {
		compare("GET", "/api/v1/emails?"+q)
	}
	if compared < 300 {
		t.Errorf("compared %d answers, want the whole set", compared)
	}
}

// sendDiff sends msg to to through the SMTP daemon at addr.
func sendDiff(t *testing.T, addr string, to []string, msg string) {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatalf("smtp.Dial(%s): %v", addr, err)
	}
	defer c.Close()
	if err := c.SendMail("sender@example.net", to, strings.NewReader(msg)); err != nil {
		t.Fatalf("SendMail to %v: %v", to, err)
	}
	if err := c.Quit(); err != nil && err != io.EOF {
		t.Fatalf("QUIT: %v", err)
	}
}

// headerText is h as text, ids mapped by r, without Date: the time of
// the answer.
func headerText(h http.Header, r *strings.Replacer) string {
	var lines []string
	for k, vs := range h {
		if k == "Date" {
			continue
		}
		for _, v := range vs {
			lines = append(lines, k+": "+r.Replace(v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func trim(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}
