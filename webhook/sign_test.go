package webhook

import (
	"bytes"
	"encoding/base64"
	"testing"
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
