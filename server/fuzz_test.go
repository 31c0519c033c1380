package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"burner/emailjson"
	"burner/storage"
	"burner/storage/boltdb"
)

// listErrors are the messages a list request's query may refuse a list
// with: the API document's §7 and spec §4, to the letter, and that of the
// header filter (spec §5).
var listErrors = []string{
	"'to' is required.",
	"Invalid local part. Only alphanumeric characters and _-+. are allowed.",
	"Local part must be at most 64 characters.",
	"Only one of subject, search, or body may be specified.",
	"'limit' must be an integer from 1 to 10.",
	"'since' must be a Unix timestamp in seconds.",
	"'before' must be a Unix timestamp in seconds.",
	"'header' must be Name:value, like X-Test-Run:42.",
	"'wait' must be an integer from 1 to 60.",
}

// emailFields are the eight fields of an Email on the wire (spec §3).
var emailFields = []string{"body", "fromAddress", "fromName", "id", "read", "receivedAt", "subject", "toAddress"}

// addListQuerySeeds adds the raw query strings both list fuzzers start
// from: valid ones, one for every documented error, and odd encodings.
func addListQuerySeeds(f *testing.F) {
	for _, q := range []string{
		// Valid.
		"to=alice",
		"to=Alice",
		"to=alice&limit=1",
		"to=alice&limit=10",
		"to=alice&subject=hello",
		"to=alice&body=reset",
		"to=alice&search=%22two+words%22+alice",
		"to=alice&search=+++",
		"to=alice&since=0",
		"to=alice&since=1741964966.5",
		"to=alice&since=1.741964966e9",
		"to=alice&since=1e10",
		"to=alice+x",
		"to=alice%2Bx",
		"to=%61lice",
		"t%6F=alice",
		"to=a.b_c-d",
		"to=" + strings.Repeat("a", 64),
		"to=alice&subject=",
		"to=alice&limit=&since=",
		"to=alice&header=From:shop",
		"to=alice&header=X-Test-Run%3A",
		"to=alice&from=shop",
		"to=alice&from=SHOP&subject=reset&limit=1",
		"to=alice&from=%C3%9F",
		"to=alice&from=",
		// Every documented error.
		"",
		"to=",
		"subject=hello",
		"to=al%20ice",
		"to=alice!",
		"to=alice@example.com",
		"to=" + strings.Repeat("a", 65),
		"to=" + strings.Repeat("%C3%A9", 65),
		"to=alice&subject=a&body=b",
		"to=alice&search=a&subject=b",
		"to=alice&search=a&body=b&subject=c",
		"to=alice&limit=0",
		"to=alice&limit=11",
		"to=alice&limit=-1",
		"to=alice&limit=1.5",
		"to=alice&limit=abc",
		"to=alice&limit=+5",
		"to=alice&since=-1",
		"to=alice&since=abc",
		"to=alice&since=0x10",
		"to=alice&since=Inf",
		"to=alice&since=NaN",
		"to=alice&since=1_000",
		"to=alice&header=:x",
		"to=alice&header=X+Y:1",
		// Odd encodings.
		"%",
		"%zz",
		"to=%",
		"to=%zz",
		"to=ali%ce",
		"to=%00",
		"to=alice%00",
		"to=%C3%A9",
		"to=alice&to=bob",
		"to=&to=alice",
		"&&&to=alice&&",
		"to=alice;limit=1",
		"to=alice&limit=5&limit=x",
		"to=alice&limit=99999999999999999999999999",
		"to=alice&since=1e400",
		"to=alice&since=1e-400",
		"to=alice&since=.5",
		"to=alice&since=5.",
		"to=alice&since=+1",
		"to=alice&since=1e",
		"to=alice&since=99999999999999999999.999999999999",
		"to=alice&subject=%",
		"to=alice&search=%22unclosed",
		"to=alice&search=" + strings.Repeat("x", 5000),
		"to==alice",
		"=alice",
		"to",
	} {
		f.Add(q)
	}
}

// checkListQueryError checks that err, from a list request's query, is a badRequest
// with a documented message.
func checkListQueryError(t *testing.T, rawQuery string, err error) {
	t.Helper()
	var bad badRequest
	if !errors.As(err, &bad) {
		t.Fatalf("parseListRequest(%q).query() returned %T %v, want a badRequest", rawQuery, err, err)
	}
	if !slices.Contains(listErrors, string(bad)) {
		t.Fatalf("parseListRequest(%q).query() returned message %q, want one of %q", rawQuery, string(bad), listErrors)
	}
}

func FuzzParseListQuery(f *testing.F) {
	addListQuerySeeds(f)
	f.Fuzz(func(t *testing.T, rawQuery string) {
		q, err := parseListRequest(rawQuery).query()
		if err != nil {
			checkListQueryError(t, rawQuery, err)
			return
		}
		if q.Limit < 1 || q.Limit > maxLimit {
			t.Errorf("parseListRequest(%q).query().Limit = %d, want 1 to %d", rawQuery, q.Limit, maxLimit)
		}
		if q.wait < 0 || q.wait > maxWait {
			t.Errorf("parseListRequest(%q).query().wait = %v, want 0 to %v", rawQuery, q.wait, maxWait)
		}
		if !storage.ValidLocalPart(q.LocalPart) || len(q.LocalPart) > storage.MaxLocalPart {
			t.Errorf("parseListRequest(%q).query().LocalPart = %q, want a valid local part of at most %d characters", rawQuery, q.LocalPart, storage.MaxLocalPart)
		}
		if !q.Since.IsZero() && q.Since.Before(time.Unix(0, 0)) {
			t.Errorf("parseListRequest(%q).query().Since = %v, want none or not before 1970", rawQuery, q.Since)
		}
		filters := 0
		for _, given := range []bool{q.Subject != "", q.Body != "", len(q.Terms) > 0} {
			if given {
				filters++
			}
		}
		if filters > 1 {
			t.Errorf("parseListRequest(%q).query() = %+v, has more than one of subject, body and search", rawQuery, q)
		}
		if slices.Contains(q.Terms, "") {
			t.Errorf("parseListRequest(%q).query().Terms = %q, has an empty term", rawQuery, q.Terms)
		}
		// from takes any text as it is given, and refuses nothing.
		if v, _ := url.ParseQuery(rawQuery); q.From != v.Get("from") {
			t.Errorf("parseListRequest(%q).query().From = %q, want %q as given", rawQuery, q.From, v.Get("from"))
		}
	})
}

// sendableQuery reports whether s can go into a request line as it is:
// printable ASCII without '#', which would end the query.
func sendableQuery(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

func FuzzListQuery(f *testing.F) {
	addListQuerySeeds(f)

	// One data file, key and server per fuzz process; every input is a
	// read, so the inputs cannot disturb one another.
	ctx := context.Background()
	db, err := boltdb.Open(filepath.Join(f.TempDir(), "burner.db"), boltdb.Options{})
	if err != nil {
		f.Fatalf("boltdb.Open: %v", err)
	}
	f.Cleanup(func() { db.Close() })
	_, key, err := db.CreateKey(ctx, "fuzz", storage.Scope{})
	if err != nil {
		f.Fatalf("CreateKey: %v", err)
	}
	subject := "Reset your password"
	body := `<p>Hello <b>Alice</b>, <a href="https://example.com/reset">reset</a> it.</p>`
	for _, d := range []struct {
		msg storage.Message
		to  string
	}{
		{storage.Message{From: "shop@example.com", FromName: "Shop", Subject: &subject, Body: &body, Text: "Hello Alice, reset it.\nhttps://example.com/reset"}, "alice@example.com"},
		{storage.Message{From: "bob@example.com", Text: ""}, "alice@example.com"},
		{storage.Message{From: "", FromName: "", Subject: &subject}, "Alice@example.com"},
		{storage.Message{From: "x@example.com", Subject: &subject, Body: &body, Text: "two words"}, "alice+x@example.com"},
	} {
		if _, err := db.Deliver(ctx, &d.msg, []string{d.to}); err != nil {
			f.Fatalf("Deliver(%q): %v", d.to, err)
		}
	}
	srv := httptest.NewServer(New(db, Options{}, nil).Handler())
	f.Cleanup(srv.Close)
	client := srv.Client()

	f.Fuzz(func(t *testing.T, rawQuery string) {
		if !sendableQuery(rawQuery) {
			t.Skip("not sendable in a request line")
		}
		if v, _ := url.ParseQuery(rawQuery); v.Get("wait") != "" {
			// A long poll on an empty inbox would hold each input for up
			// to a minute; wait has tests of its own.
			t.Skip("long poll")
		}
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/emails", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = rawQuery
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET /api/v1/emails?%s: %v", rawQuery, err)
		}
		data, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("GET /api/v1/emails?%s: reading body: %v", rawQuery, err)
		}
		what := "GET /api/v1/emails?" + rawQuery
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q, want application/json (status %d, body %s)", what, ct, res.StatusCode, data)
		}
		if len(rawQuery) > 4<<10 {
			if res.StatusCode != http.StatusRequestURITooLong || string(data) != `{"error":"Query string too long."}`+"\n" {
				t.Fatalf("%s: status %d, body %s, want 414 and the error", what, res.StatusCode, data)
			}
			return
		}

		// The handler must answer what the list request's query decides.
		q, qerr := parseListRequest(rawQuery).query()
		switch res.StatusCode {
		case http.StatusOK:
			if qerr != nil {
				t.Fatalf("%s: status 200, but the list request's query returned %v", what, qerr)
			}
			checkEmails(t, what, data, q.Query)
		case http.StatusBadRequest:
			var bad badRequest
			if !errors.As(qerr, &bad) {
				t.Fatalf("%s: status 400 (body %s), but the list request's query returned %v", what, data, qerr)
			}
			msg := checkError(t, what, data)
			if msg != string(bad) {
				t.Fatalf("%s: error %q, want %q", what, msg, string(bad))
			}
		default:
			t.Fatalf("%s: status %d, want 200 or 400 (body %s)", what, res.StatusCode, data)
		}
	})
}

// checkError checks that data is exactly {"error": msg} with a documented
// msg, and returns msg.
func checkError(t *testing.T, what string, data []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e struct {
		Error *string `json:"error"`
	}
	if err := dec.Decode(&e); err != nil || dec.More() || e.Error == nil {
		t.Fatalf("%s: body %s, want exactly {\"error\": message} (decode error %v)", what, data, err)
	}
	if !slices.Contains(listErrors, *e.Error) {
		t.Fatalf("%s: error %q, want one of %q", what, *e.Error, listErrors)
	}
	return *e.Error
}

// checkEmails checks that data is a JSON array of at most q.Limit emails of
// inbox q.LocalPart, each with exactly the eight fields, newest first.
func checkEmails(t *testing.T, what string, data []byte, q storage.Query) {
	t.Helper()
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(data, &list); err != nil || list == nil {
		t.Fatalf("%s: body %s, want a JSON array of objects (%v)", what, data, err)
	}
	if len(list) > q.Limit {
		t.Fatalf("%s: %d emails, want at most %d", what, len(list), q.Limit)
	}
	var last time.Time
	for i, e := range list {
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, emailFields) {
			t.Fatalf("%s: email %d has fields %q, want %q", what, i, keys, emailFields)
		}
		var email emailjson.Email
		raw, _ := json.Marshal(e)
		if err := json.Unmarshal(raw, &email); err != nil {
			t.Fatalf("%s: email %d: %v", what, i, err)
		}
		local, _, _ := strings.Cut(email.ToAddress, "@")
		if !strings.EqualFold(local, q.LocalPart) {
			t.Fatalf("%s: email %d is to %q, want inbox %q", what, i, email.ToAddress, q.LocalPart)
		}
		at, err := time.Parse(emailjson.TimeLayout, email.ReceivedAt)
		if err != nil {
			t.Fatalf("%s: email %d receivedAt %q: %v", what, i, email.ReceivedAt, err)
		}
		if i > 0 && at.After(last) {
			t.Fatalf("%s: email %d received %v after email %d (%v), want newest first", what, i, at, i-1, last)
		}
		if !q.Since.IsZero() && !at.After(q.Since) {
			t.Fatalf("%s: email %d received %v, not after since %v", what, i, at, q.Since)
		}
		// An ASCII from is matched as ASCII case folds it (spec §14); others
		// fold more (ß and ss), which the storage tests check.
		if from := strings.ToLower(q.From); from != "" && isASCII(from) &&
			!strings.Contains(strings.ToLower(email.FromAddress), from) && !strings.Contains(strings.ToLower(email.FromName), from) {
			t.Fatalf("%s: email %d is from %q <%s>, which does not hold from %q", what, i, email.FromName, email.FromAddress, q.From)
		}
		last = at
	}
}

// isASCII reports whether s is ASCII alone.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
