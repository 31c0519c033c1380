package emailjson

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"burner/storage"
)

func ptr(s string) *string { return &s }

// encode is what encoding/json writes for e as the API writes JSON
// (SetEscapeHTML(false)), without the newline its Encoder adds.
func encode(t testing.TB, e storage.Email) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(New(e)); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

func checkAppend(t *testing.T, e storage.Email) {
	t.Helper()
	prefix := []byte("[")
	got := Append(prefix, &e)
	if want := append([]byte("["), encode(t, e)...); !bytes.Equal(got, want) {
		t.Fatalf("Append(%+v) wrote\n%q, want encoding/json's\n%q", e, got, want)
	}
}

var jsonStrings = []string{
	"", "plain", `<p class="x">Tom & "Jerry" \ 'quotes'</p>`, "tab\tnew\nline\rcr\bback\fform\x00nul\x1f\x7f",
	"Grüße 😀 \u2028 \u2029 \u00a0", "bad \xff\xfe utf8 \xc3", "12345678\"2345678\\", "long ascii run without anything to escape at all",
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for i, s := range jsonStrings {
		e := storage.Email{
			ID: "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11", To: s, From: s, FromName: s,
			ReceivedAt: time.Date(2026, 3, 14, 15, 9, 26, 535_000_000, time.UTC), Read: i%2 == 0,
		}
		if i%3 != 0 {
			e.Subject, e.Body = ptr(s), ptr(s+s)
		}
		checkAppend(t, e)
	}
}

// spec §3: exactly the eight fields, in order; null subject and body;
// receivedAt in UTC with milliseconds, whatever the time's zone.
func TestNew(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	e := storage.Email{ID: "id", To: "alice@example.com", From: "bob@example.com", FromName: "Bob",
		ReceivedAt: time.Date(2026, 3, 14, 16, 9, 26, 535_999_999, paris)}
	want := `{"id":"id","toAddress":"alice@example.com","fromAddress":"bob@example.com","fromName":"Bob",` +
		`"subject":null,"body":null,"receivedAt":"2026-03-14T15:09:26.535Z","read":false}`
	if got := string(encode(t, e)); got != want {
		t.Errorf("New(%+v) encodes as\n%s, want\n%s", e, got, want)
	}
	checkAppend(t, e)
}

func FuzzAppend(f *testing.F) {
	for _, s := range jsonStrings {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, withBody bool) {
		e := storage.Email{ID: s, To: s, FromName: s, ReceivedAt: time.Unix(1_700_000_000, 0)}
		if withBody {
			e.Body = &s
		}
		checkAppend(t, e)
	})
}

func BenchmarkAppend(b *testing.B) {
	body := `<table width="100%" cellpadding="0"><tr><td style="padding: 24px; font-family: Arial, sans-serif">` +
		`<p style="margin: 0 0 12px 0">Send please renewal expired shipping and that good the trial the. Up package of in on ready.</p>`
	for len(body) < 2000 {
		body += body
	}
	emails := make([]storage.Email, 10)
	for i := range emails {
		emails[i] = storage.Email{ID: "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11", To: "bench@inbox.test", From: "news@shop1.example.com",
			FromName: "Shop Team", Subject: ptr("May the item to and you renewal"), Body: &body, ReceivedAt: time.Unix(1_700_000_000, 0)}
	}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = buf[:0]
			for i := range emails {
				buf = Append(buf, &emails[i])
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			out := make([]Email, 0, len(emails))
			for _, e := range emails {
				out = append(out, New(e))
			}
			enc.Encode(out)
		}
	})
}
