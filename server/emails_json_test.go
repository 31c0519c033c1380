package server

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"burner/emailjson"
	"burner/storage"
)

// encodeList is what writeJSON writes for a list: the bytes writeEmails
// must write.
func encodeList(t testing.TB, emails []storage.Email) []byte {
	out := make([]emailjson.Email, 0, len(emails))
	for _, e := range emails {
		out = append(out, emailjson.New(e))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func checkWriteEmails(t *testing.T, emails []storage.Email) {
	t.Helper()
	rec := httptest.NewRecorder()
	writeEmails(rec, emails)
	if want := encodeList(t, emails); !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("writeEmails(%+v) wrote\n%q, want encoding/json's\n%q", emails, rec.Body.Bytes(), want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("writeEmails: Content-Type %q", ct)
	}
}

// TestWriteEmailsMatchesEncodingJSON: the list around the emails is
// what encoding/json writes: [] for none, commas between, a newline after;
// emailjson's tests hold each email's bytes to encoding/json's.
func TestWriteEmailsMatchesEncodingJSON(t *testing.T) {
	checkWriteEmails(t, nil)
	var emails []storage.Email
	for i, s := range []string{"plain", `<p class="x">Tom & "Jerry" \ 'quotes'</p>`, "tab\tnew\nline \u2028 bad \xff utf8"} {
		e := storage.Email{
			ID: "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11", To: s, From: s, FromName: s,
			ReceivedAt: time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC), Read: i%2 == 0,
		}
		if i > 0 {
			e.Subject, e.Body = ptr(s), ptr(s+s)
		}
		checkWriteEmails(t, []storage.Email{e})
		emails = append(emails, e)
	}
	checkWriteEmails(t, emails)
}
