package webhook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"burner/emailjson"
	"burner/storage"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestSignatureVector: the test vector published with the Standard
// Webhooks specification (standard-webhooks/standard-webhooks).
func TestSignatureVector(t *testing.T) {
	key, err := ParseSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	got := sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("sign(the specification's vector) = %s, want %s", got, want)
	}
}

func TestParseSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	for _, tc := range []struct {
		secret string
		ok     bool
	}{
		{testSecret, true},
		{"whsec_" + b64(24), true},
		{"whsec_" + b64(64), true},
		{"whsec_" + b64(23), false},
		{"whsec_" + b64(65), false},
		{b64(32), false},                  // no prefix
		{"whsec_not base64!", false},      // not base64
		{"", false},                       // missing
		{"WHSEC_" + b64(32)[6:], false},   // the prefix is lower case
		{"whsec_" + b64(32) + "=", false}, // bad padding
	} {
		key, err := ParseSecret(tc.secret)
		if (err == nil) != tc.ok || (tc.ok && len(key) < 24) {
			t.Errorf("ParseSecret(%q) = %d bytes, %v; want ok %v", tc.secret, len(key), err, tc.ok)
		}
	}
}

// TestEventBodyAsEncodingJSON: the event's bytes are what encoding/json
// writes of it, with HTML left unescaped as the API writes bodies.
func TestEventBodyAsEncodingJSON(t *testing.T) {
	subject, body := "Caf\u00e9 <b> & \"quotes\" \u2028", "<p>Hi &amp; <a href=\"https://x.test/?a=1&b=2\">link</a></p>\n\ttab \x01"
	for _, e := range []storage.Email{
		{ID: "0195f3b0-0000-7000-8000-000000000001", To: "alice@inbox.test", From: "a@sender.test", FromName: "A \"B\"",
			Subject: &subject, Body: &body, ReceivedAt: time.Date(2026, 3, 14, 15, 9, 26, 535e6, time.FixedZone("x", 3600)), Read: true},
		{ID: "0195f3b0-0000-7000-8000-000000000002", To: "bob@inbox.test", ReceivedAt: time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)},
	} {
		type event struct {
			Type      string          `json:"type"`
			Timestamp string          `json:"timestamp"`
			Data      emailjson.Email `json:"data"`
		}
		data := emailjson.New(e)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(event{"email.received", data.ReceivedAt, data}); err != nil {
			t.Fatal(err)
		}
		if got := eventBody(e); string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("eventBody =\n%s\nencoding/json:\n%s", got, want.String())
		}
	}
}
