package record

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"burner/storage"
)

func sp(s string) *string { return &s }

// deliveredSession is a session as smtpd records one message taken for
// one recipient: what every delivery writes.
func deliveredSession() storage.SMTPSession {
	start := time.Date(2026, 3, 1, 12, 0, 0, 123e6, time.UTC)
	end := start.Add(42 * time.Millisecond)
	id := "0195f3b0-9c1e-7a2b-8c3d-4e5f60718293"
	ok := "250 2.0.0 OK " + id
	return storage.SMTPSession{
		ID: id, StartedAt: start, EndedAt: &end, Node: "mx1.example.test/127.0.0.1:2525",
		Client:   storage.SMTPClient{IP: "127.0.0.1", HELO: "app.example"},
		MailFrom: "app@example.com",
		Recipients: []storage.SMTPRecipient{
			{Address: "alice@inbox.test", Inbox: sp("alice"), Reply: sp("250 2.1.5 OK")},
		},
		Data:    &storage.SMTPData{Reply: &ok, Bytes: 4096},
		Emails:  []string{"0195f3b0-9c1f-7a2b-8c3d-4e5f60718294"},
		Outcome: storage.SMTPDelivered,
		Transcript: []storage.TranscriptLine{
			{C: "EHLO app.example", S: "250-localhost\n250-PIPELINING\n250-8BITMIME\n250-ENHANCEDSTATUSCODES\n250-CHUNKING\n250-SMTPUTF8\n250-SIZE 10485760\n250 LIMITS RCPTMAX=100"},
			{C: "MAIL FROM:<app@example.com>", S: "250 2.1.0 OK"},
			{C: "RCPT TO:<alice@inbox.test>", S: "250 2.1.5 OK"},
			{C: "DATA", S: "354 End data with <CR><LF>.<CR><LF>"},
			{C: ".", S: ok},
		},
	}
}

func TestSMTPSessionRoundTrip(t *testing.T) {
	full := deliveredSession()
	full.TLS = &storage.TLS{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256"}
	full.Recipients = append(full.Recipients,
		storage.SMTPRecipient{Address: "Bob@Inbox.test", Inbox: sp("bob"), Reply: sp("451 4.3.0 Try again later"), Fault: "rule-1"},
		storage.SMTPRecipient{Address: "x@elsewhere.test", Reply: sp("550 5.1.1 Relay access denied: not an inbox domain here")},
		storage.SMTPRecipient{Address: "odd@inbox.test", Inbox: sp("not-the-address"), Reply: nil, Fault: "rule-2"},
	)
	full.Emails = []string{"not-a-uuid", "0195f3b0-9c1f-7a2b-8c3d-4e5f60718294"}
	open := deliveredSession()
	open.EndedAt, open.Outcome, open.Data, open.Emails, open.Transcript = nil, "", nil, nil, open.Transcript[:3]
	long := deliveredSession()
	for i := range 150 {
		long.Transcript = append(long.Transcript, storage.TranscriptLine{C: "NOOP " + strings.Repeat("n", i), S: "250 2.0.0 OK"})
	}
	for name, s := range map[string]storage.SMTPSession{"delivered": deliveredSession(), "everything": full, "open": open, "long": long,
		"empty": {ID: "0195f3b0-9c1e-7a2b-8c3d-4e5f60718293", StartedAt: time.UnixMilli(0).UTC()}} {
		v, err := EncodeSMTPSession(&s)
		if err != nil {
			t.Fatalf("%s: EncodeSMTPSession: %v", name, err)
		}
		got, err := DecodeSMTPSession(v)
		if err != nil || !reflect.DeepEqual(got, s) {
			t.Errorf("%s: DecodeSMTPSession(EncodeSMTPSession(s)) = %+v, %v; want %+v", name, got, err, s)
		}
		if inboxes, err := SMTPSessionInboxes(v); err != nil || !reflect.DeepEqual(inboxes, s.Inboxes()) {
			t.Errorf("%s: SMTPSessionInboxes = %q, %v; want %q", name, inboxes, err, s.Inboxes())
		}
		if ended, err := SMTPSessionEnded(v); err != nil || ended != (s.EndedAt != nil) {
			t.Errorf("%s: SMTPSessionEnded = %v, %v; want %v", name, ended, err, s.EndedAt != nil)
		}
	}
}

// A delivered session is written with every message: it stays small.
func TestSMTPSessionCompact(t *testing.T) {
	s := deliveredSession()
	v, err := EncodeSMTPSession(&s)
	if err != nil {
		t.Fatal(err)
	}
	plain := 0
	for _, l := range s.Transcript {
		plain += len(l.C) + len(l.S)
	}
	t.Logf("a delivered session: %d bytes encoded; its transcript alone is %d", len(v), plain)
	if len(v) > 220 {
		t.Errorf("a delivered session takes %d bytes, want at most 220", len(v))
	}
}

func TestSMTPSessionEncodeRefuses(t *testing.T) {
	s := deliveredSession()
	s.ID = "session-1"
	if _, err := EncodeSMTPSession(&s); err == nil {
		t.Error("EncodeSMTPSession with an id that is no UUID: nil error")
	}
	s = deliveredSession()
	s.Outcome = "exploded"
	if _, err := EncodeSMTPSession(&s); err == nil {
		t.Error("EncodeSMTPSession with an unknown outcome: nil error")
	}
}

func TestSMTPSessionCorrupt(t *testing.T) {
	s := deliveredSession()
	v, err := EncodeSMTPSession(&s)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{nil, {1}, {9, 0}, v[:len(v)-3], append(append([]byte(nil), v...), 0)} {
		if _, err := DecodeSMTPSession(bad); !errors.Is(err, storage.ErrCorrupt) {
			t.Errorf("DecodeSMTPSession(%q): %v, want ErrCorrupt", strings.TrimSpace(string(bad)), err)
		}
	}
}

func FuzzDecodeSMTPSession(f *testing.F) {
	s := deliveredSession()
	v, _ := EncodeSMTPSession(&s)
	f.Add(v)
	f.Fuzz(func(t *testing.T, v []byte) {
		s, err := DecodeSMTPSession(v)
		if err != nil {
			return
		}
		// What decodes encodes to a record that decodes alike.
		again, err := EncodeSMTPSession(&s)
		if err != nil {
			return // an id that is no UUID, or times out of order
		}
		if back, err := DecodeSMTPSession(again); err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("a decoded record re-encoded decodes as %+v, %v; want %+v", back, err, s)
		}
	})
}

// BenchmarkEncodeSMTPSession: a delivered session's record, made with
// every delivery.
func BenchmarkEncodeSMTPSession(b *testing.B) {
	s := deliveredSession()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeSMTPSession(&s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSMTPSession(b *testing.B) {
	s := deliveredSession()
	v, _ := EncodeSMTPSession(&s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSMTPSession(v); err != nil {
			b.Fatal(err)
		}
	}
}
