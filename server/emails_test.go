package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"burner/emailjson"
	"burner/storage"
)

func ptr(s string) *string { return &s }

// listIDs lists with the query q (to, filters...) and returns the ids of
// the answer, in order, after checking it is a 200 JSON array.
func (a *apiTest) listIDs(q url.Values) []string {
	a.t.Helper()
	path := "/api/v1/emails?" + q.Encode()
	res := a.call("GET", path)
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/json" {
		a.t.Fatalf("GET %s: %d %s %s, want 200 JSON", path, res.status, res.header.Get("Content-Type"), res.body)
	}
	var got []emailjson.Email
	if err := json.Unmarshal([]byte(res.body), &got); err != nil {
		a.t.Fatalf("GET %s: %v in %s", path, err, res.body)
	}
	ids := []string{}
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	return ids
}

func ids(emails ...storage.Email) []string {
	out := []string{}
	for _, e := range emails {
		out = append(out, e.ID)
	}
	return out
}

// spec §4's table of errors, row by row, and its validation rules.
func TestListValidation(t *testing.T) {
	a := newAPI(t)
	const (
		required = "'to' is required."
		invalid  = "Invalid local part. Only alphanumeric characters and _-+. are allowed."
		tooLong  = "Local part must be at most 64 characters."
		onlyOne  = "Only one of subject, search, or body may be specified."
		limit    = "'limit' must be an integer from 1 to 10."
		since    = "'since' must be a Unix timestamp in seconds."
		before   = "'before' must be a Unix timestamp in seconds."
	)
	long := strings.Repeat("a", storage.MaxLocalPart)
	for _, tc := range []struct {
		query string
		msg   string // "" means 200 []
	}{
		{"", required},
		{"to=", required},
		{"subject=x", required},
		{"to=&to=alice", required}, // the first value counts
		{"to=alice@example.com", invalid},
		{"to=al%20ice", invalid},
		{"to=al%2Fice", invalid},
		{"to=%C3%A5lice", invalid},
		{"to=alice%00", invalid},
		{"to=" + long, ""},
		{"to=" + long + "a", tooLong},
		{"to=" + long + "%40", tooLong}, // length before charset
		{"to=" + strings.Repeat("%C3%A5", storage.MaxLocalPart), invalid}, // 64 characters, 128 bytes
		{"to=Alice_-%2B.9", ""},
		{"to=Alice_-+.9", ""}, // a literal + is a +, not a space
		{"to=al+ice+", ""},
		{"to=alice&subject=a&body=b", onlyOne},
		{"to=alice&subject=a&search=b", onlyOne},
		{"to=alice&search=a&body=b", onlyOne},
		{"to=alice&subject=a&search=b&body=c", onlyOne},
		{"to=alice&subject=&search=&body=b", ""}, // empty counts as not given
		{"to=alice&subject=a&body=", ""},
		{"to=alice&search=%20%20", ""},
		{"to=alice&limit=0", limit},
		{"to=alice&limit=11", limit},
		{"to=alice&limit=-1", limit},
		{"to=alice&limit=5.0", limit},
		{"to=alice&limit=abc", limit},
		{"to=alice&limit=1e1", limit},
		{"to=alice&limit=%205", limit},
		{"to=alice&limit=99999999999999999999", limit},
		{"to=alice&limit=", ""},
		{"to=alice&limit=1", ""},
		{"to=alice&limit=10", ""},
		{"to=alice&since=abc", since},
		{"to=alice&since=-1", since},
		{"to=alice&since=-0.5", since},
		{"to=alice&since=NaN", since},
		{"to=alice&since=Inf", since},
		{"to=alice&since=%2BInf", since},
		{"to=alice&since=1e400", since},
		{"to=alice&since=0x10", since},
		{"to=alice&since=1_000", since},
		{"to=alice&since=1.2.3", since},
		{"to=alice&since=.", since},
		{"to=alice&since=2025-03-14T15:09:26Z", since},
		{"to=alice&since=", ""},
		{"to=alice&since=0", ""},
		{"to=alice&since=1741964966.535", ""},
		{"to=alice&since=.5", ""},
		{"to=alice&since=1e9", ""},
		{"to=alice&since=1e300", ""},
		{"to=alice&before=abc", before},
		{"to=alice&before=-1", before},
		{"to=alice&before=0x10", before},
		{"to=alice&before=2025-03-14T15:09:26Z", before},
		{"to=alice&before=", ""},
		{"to=alice&before=0", ""},
		{"to=alice&before=1741964966.535", ""},
		{"to=alice&before=1e9&since=1", ""},
		{"to=alice&since=x&before=x", since}, // since comes first
		{"to=alice&before=x&header=nocolon", before},
		// Several wrong: the first in the order to, filters, limit, since.
		{"limit=0&since=x&subject=a&body=b", required},
		{"to=a@b&subject=a&body=b", invalid},
		{"to=alice&subject=a&body=b&limit=0&since=x", onlyOne},
		{"to=alice&limit=0&since=x", limit},
	} {
		path := "/api/v1/emails?" + tc.query
		if tc.msg == "" {
			wantJSON(t, "GET "+path, a.call("GET", path), http.StatusOK, `[]`)
		} else {
			wantJSON(t, "GET "+path, a.call("GET", path), http.StatusBadRequest, fmt.Sprintf(`{"error":%q}`, tc.msg))
		}
	}
}

func TestClearValidation(t *testing.T) {
	a := newAPI(t)
	for _, tc := range []struct{ query, msg string }{
		{"", "'to' is required."},
		{"to=", "'to' is required."},
		{"to=bob%40example.com", "Invalid local part. Only alphanumeric characters and _-+. are allowed."},
		{"to=b%20b", "Invalid local part. Only alphanumeric characters and _-+. are allowed."},
		{"to=" + strings.Repeat("b", 65), "Local part must be at most 64 characters."},
	} {
		path := "/api/v1/inbox?" + tc.query
		wantJSON(t, "DELETE "+path, a.call("DELETE", path), http.StatusBadRequest, fmt.Sprintf(`{"error":%q}`, tc.msg))
	}
}

// spec §3: exactly the eight fields, in order; null subject and body;
// receivedAt in UTC with milliseconds.
func TestEmailJSON(t *testing.T) {
	a := newAPI(t)
	full := a.deliver("alice@example.com", storage.Message{
		From: "bob@example.com", FromName: "Bob Ünicode", Subject: ptr(`Hi <there> & "you"`),
		Body: ptr(`<p>Hello <a href="https://example.com/?a=1&amp;b=2">link</a></p>`), Text: "Hello link",
	})
	bare := a.deliver("Alice@Example.com", storage.Message{})
	wantFull := `{"id":"` + full.ID + `","toAddress":"alice@example.com","fromAddress":"bob@example.com",` +
		`"fromName":"Bob Ünicode","subject":"Hi <there> & \"you\"",` +
		`"body":"<p>Hello <a href=\"https://example.com/?a=1&amp;b=2\">link</a></p>",` +
		`"receivedAt":"2025-03-14T15:09:27.535Z","read":false}`
	wantBare := `{"id":"` + bare.ID + `","toAddress":"Alice@Example.com","fromAddress":"","fromName":"",` +
		`"subject":null,"body":null,"receivedAt":"2025-03-14T15:09:28.535Z","read":false}`

	wantJSON(t, "GET full email", a.call("GET", "/api/v1/emails/"+full.ID), http.StatusOK, wantFull)
	wantJSON(t, "GET bare email", a.call("GET", "/api/v1/emails/"+bare.ID), http.StatusOK, wantBare)
	wantJSON(t, "list", a.call("GET", "/api/v1/emails?to=alice"), http.StatusOK, "["+wantBare+","+wantFull+"]")
	// An id in upper case is the same UUID.
	wantJSON(t, "GET upper-case id", a.call("GET", "/api/v1/emails/"+strings.ToUpper(full.ID)), http.StatusOK, wantFull)
}

func TestEmailJSONReadFlag(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{From: "bob@example.com"})
	if err := a.db.MarkRead(context.Background(), e.ID); err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + e.ID + `","toAddress":"alice@example.com","fromAddress":"bob@example.com","fromName":"",` +
		`"subject":null,"body":null,"receivedAt":"2025-03-14T15:09:27.535Z","read":true}`
	wantJSON(t, "GET read email", a.call("GET", "/api/v1/emails/"+e.ID), http.StatusOK, want)
}

func TestListEmpty(t *testing.T) {
	a := newAPI(t)
	a.deliver("bob@example.com", storage.Message{})
	wantJSON(t, "GET empty inbox", a.call("GET", "/api/v1/emails?to=alice"), http.StatusOK, `[]`)
}

// spec §4: newest first, 10 by default, limit from 1 to 10.
func TestListOrderAndLimit(t *testing.T) {
	a := newAPI(t)
	var all []storage.Email
	for i := range 12 {
		all = append(all, a.deliver("alice@example.com", storage.Message{Subject: ptr(fmt.Sprint("mail ", i))}))
	}
	slices.Reverse(all) // newest first
	for _, tc := range []struct {
		limit string
		want  []storage.Email
	}{
		{"", all[:10]},
		{"1", all[:1]},
		{"3", all[:3]},
		{"10", all[:10]},
	} {
		q := url.Values{"to": {"alice"}, "limit": {tc.limit}}
		if got := a.listIDs(q); !slices.Equal(got, ids(tc.want...)) {
			t.Errorf("list limit=%q: %v, want %v", tc.limit, got, ids(tc.want...))
		}
	}
}

// spec §4: equal times come in reverse arrival order.
func TestListEqualTimes(t *testing.T) {
	a := newAPI(t)
	var want []storage.Email
	for range 3 {
		emails, err := a.db.Deliver(context.Background(), &storage.Message{}, []string{"alice@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		want = append([]storage.Email{emails[0]}, want...)
	}
	if got := a.listIDs(url.Values{"to": {"alice"}}); !slices.Equal(got, ids(want...)) {
		t.Errorf("list of emails received at one time: %v, want %v", got, ids(want...))
	}
}

// spec §4: since is in seconds with a fraction; only emails received
// strictly after it are listed.
func TestListSince(t *testing.T) {
	a := newAPI(t)
	var all []storage.Email
	for range 3 {
		all = append(all, a.deliver("alice@example.com", storage.Message{}))
	}
	// all[1] was received at 1741964968.535.
	if got := all[1].ReceivedAt.UnixMilli(); got != 1741964968535 {
		t.Fatalf("all[1] received at %d ms, want 1741964968535", got)
	}
	for _, tc := range []struct {
		since string
		want  []storage.Email
	}{
		{"0", []storage.Email{all[2], all[1], all[0]}},
		{"1741964968", []storage.Email{all[2], all[1]}},
		{"1741964968.534", []storage.Email{all[2], all[1]}},
		{"1741964968.534999999", []storage.Email{all[2], all[1]}},
		{"1741964968.535", []storage.Email{all[2]}}, // not at, strictly after
		{"1741964968.5350000001", []storage.Email{all[2]}},
		{"1741964968.536", []storage.Email{all[2]}},
		{"1.7419649685e9", []storage.Email{all[2], all[1]}},
		{"1741964969.535", nil},
		{"99999999999999999999", nil},
	} {
		q := url.Values{"to": {"alice"}, "since": {tc.since}}
		if got := a.listIDs(q); !slices.Equal(got, ids(tc.want...)) {
			t.Errorf("list since=%s: %v, want %v", tc.since, got, ids(tc.want...))
		}
	}
}

// spec §4: Alice and alice are one inbox; alice+x is its own.
func TestListInboxes(t *testing.T) {
	a := newAPI(t)
	lower := a.deliver("alice@example.com", storage.Message{})
	upper := a.deliver("ALICE@example.org", storage.Message{})
	plus := a.deliver("alice+x@example.com", storage.Message{})
	dot := a.deliver("alice.x@example.com", storage.Message{})
	a.deliver("alicex@example.com", storage.Message{})
	a.deliver("bob@example.com", storage.Message{})
	for _, tc := range []struct {
		to   string
		want []storage.Email
	}{
		{"alice", []storage.Email{upper, lower}},
		{"Alice", []storage.Email{upper, lower}},
		{"ALICE", []storage.Email{upper, lower}},
		{"alice+x", []storage.Email{plus}},
		{"ALICE+X", []storage.Email{plus}},
		{"alice.x", []storage.Email{dot}},
		{"alic", nil},
	} {
		if got := a.listIDs(url.Values{"to": {tc.to}}); !slices.Equal(got, ids(tc.want...)) {
			t.Errorf("list to=%s: %v, want %v", tc.to, got, ids(tc.want...))
		}
	}
	// Typed by hand, ?to=alice+x means the inbox alice+x, not "alice x".
	res := a.call("GET", "/api/v1/emails?to=alice+x")
	if res.status != http.StatusOK || !strings.Contains(res.body, plus.ID) || strings.Contains(res.body, lower.ID) {
		t.Errorf("GET ?to=alice+x (literal +) = %d %s, want alice+x's email only", res.status, res.body)
	}
}

func TestListFilters(t *testing.T) {
	a := newAPI(t)
	street := a.deliver("alice@example.com", storage.Message{
		From: "post@amt.example", FromName: "Einwohneramt", Subject: ptr("Ihre Straße"),
		Body: ptr("<p>Neue <b>Anschrift</b></p>"), Text: "Neue Anschrift",
	})
	report := a.deliver("alice@example.com", storage.Message{
		From: "boss@corp.example", FromName: "The Boss", Subject: ptr("Quarterly report draft"),
		Body: ptr(`<p>See <a href="https://corp.example/q3">the draft</a></p>`), Text: "See the draft https://corp.example/q3",
	})
	reversed := a.deliver("alice@example.com", storage.Message{
		From: "intern@corp.example", FromName: "Intern", Subject: ptr("report, quarterly"),
		Body: ptr("<p>Quarterly? Reports!</p>"), Text: "Quarterly? Reports!",
	})
	bare := a.deliver("alice@example.com", storage.Message{From: "nobody@example.com"})
	a.deliver("bob@example.com", storage.Message{Subject: ptr("Quarterly report draft"), Text: "Quarterly report"})

	for _, tc := range []struct {
		param, value string
		want         []storage.Email
	}{
		{"subject", "report", []storage.Email{reversed, report}},
		{"subject", "REPORT DRAFT", []storage.Email{report}},
		{"subject", "STRASSE", []storage.Email{street}}, // Unicode case folding: ß folds to ss
		{"subject", "straße", []storage.Email{street}},
		{"subject", "anschrift", nil}, // in the body, not the subject
		{"subject", "nothing like it", nil},
		{"body", "anschrift", []storage.Email{street}},
		{"body", "NEUE ANSCHRIFT", []storage.Email{street}}, // the text a reader sees, tags gone
		{"body", "<b>", nil},
		{"body", "corp.example/q3", []storage.Email{report}}, // link targets
		{"body", "quarterly", []storage.Email{reversed}},
		{"search", "quarterly", []storage.Email{reversed, report}},
		{"search", "quarterly report", []storage.Email{reversed, report}},
		{"search", `"quarterly report"`, []storage.Email{report}},
		{"search", `"QUARTERLY REPORT" boss`, []storage.Email{report}},
		{"search", `"quarterly report`, []storage.Email{report}}, // an unclosed quote runs to the end
		{"search", "intern@corp", []storage.Email{reversed}},     // sender address
		{"search", "einwohneramt strasse", []storage.Email{street}},
		{"search", "the boss", []storage.Email{report}}, // "the" is in the draft's body, "boss" in its sender
		{"search", "nobody@example.com", []storage.Email{bare}},
		{"search", "quarterly nothing", nil},
	} {
		q := url.Values{"to": {"alice"}, tc.param: {tc.value}}
		if got := a.listIDs(q); !slices.Equal(got, ids(tc.want...)) {
			t.Errorf("list %s=%q: %v, want %v", tc.param, tc.value, got, ids(tc.want...))
		}
	}
}

func TestGetEmailNotFound(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{})
	const notFound = `{"error":"Email not found"}`
	for _, id := range []string{
		"not-a-uuid",
		"0b0e3ab1-7b2e-4e51-9a4b-7d1c2f1e0a11", // a UUID that was never stored
		e.ID + "0",
		url.PathEscape(e.ID + " "),
	} {
		wantJSON(t, "GET "+id, a.call("GET", "/api/v1/emails/"+id), http.StatusNotFound, notFound)
		wantJSON(t, "DELETE "+id, a.call("DELETE", "/api/v1/emails/"+id), http.StatusNotFound, notFound)
	}
}

func TestDeleteEmail(t *testing.T) {
	a := newAPI(t)
	gone := a.deliver("alice@example.com", storage.Message{})
	kept := a.deliver("alice@example.com", storage.Message{})
	wantNoContent(t, "DELETE", a.call("DELETE", "/api/v1/emails/"+gone.ID))
	wantJSON(t, "GET after DELETE", a.call("GET", "/api/v1/emails/"+gone.ID), http.StatusNotFound, `{"error":"Email not found"}`)
	wantJSON(t, "DELETE again", a.call("DELETE", "/api/v1/emails/"+gone.ID), http.StatusNotFound, `{"error":"Email not found"}`)
	if got := a.listIDs(url.Values{"to": {"alice"}}); !slices.Equal(got, ids(kept)) {
		t.Errorf("list after DELETE: %v, want %v", got, ids(kept))
	}
}

// spec §2: each recipient's copy has its own life.
func TestDeleteOneCopy(t *testing.T) {
	a := newAPI(t)
	emails, err := a.db.Deliver(context.Background(), &storage.Message{Subject: ptr("to both")},
		[]string{"alice@example.com", "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	wantNoContent(t, "DELETE alice's copy", a.call("DELETE", "/api/v1/emails/"+emails[0].ID))
	if got := a.listIDs(url.Values{"to": {"bob"}}); !slices.Equal(got, ids(emails[1])) {
		t.Errorf("bob's inbox after deleting alice's copy: %v, want %v", got, ids(emails[1]))
	}
}

func TestClearInbox(t *testing.T) {
	a := newAPI(t)
	for range 3 {
		a.deliver("alice@example.com", storage.Message{})
	}
	plus := a.deliver("alice+x@example.com", storage.Message{})
	bob := a.deliver("bob@example.com", storage.Message{})
	wantNoContent(t, "DELETE inbox ALICE", a.call("DELETE", "/api/v1/inbox?to=ALICE"))
	wantNoContent(t, "DELETE inbox alice again", a.call("DELETE", "/api/v1/inbox?to=alice"))
	wantNoContent(t, "DELETE inbox never used", a.call("DELETE", "/api/v1/inbox?to=carol"))
	for _, tc := range []struct {
		to   string
		want []storage.Email
	}{
		{"alice", nil},
		{"alice+x", []storage.Email{plus}},
		{"bob", []storage.Email{bob}},
	} {
		if got := a.listIDs(url.Values{"to": {tc.to}}); !slices.Equal(got, ids(tc.want...)) {
			t.Errorf("list to=%s after clearing alice: %v, want %v", tc.to, got, ids(tc.want...))
		}
	}
}

func BenchmarkListHTTP(b *testing.B) {
	a := newAPILog(b, slog.New(slog.DiscardHandler))
	for i := range 100 {
		a.deliver("alice@example.com", storage.Message{
			From: "bob@example.com", FromName: "Bob", Subject: ptr(fmt.Sprint("Message ", i)),
			Body: ptr("<p>Hello, this is a fairly ordinary message body.</p>"), Text: "Hello, this is a fairly ordinary message body.",
		})
	}
	req, err := http.NewRequest("GET", a.srv.URL+"/api/v1/emails?to=alice&limit=10", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	c := a.srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		res := send(b, c, req)
		if res.status != http.StatusOK {
			b.Fatalf("GET list: %d %s", res.status, res.body)
		}
	}
}
