package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"burner/emailjson"
	"burner/storage"
)

// Standard Webhooks (standardwebhooks.com): a secret, the signature of a
// request, and what the request carries.

// ParseSecret returns the signing key of a Standard Webhooks secret:
// "whsec_" and the standard base64 of 24 to 64 bytes.
func ParseSecret(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New("secret: must be whsec_ followed by the base64 of 24 to 64 random bytes (required)")
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) < 24 || len(key) > 64 {
		return nil, errors.New("secret: after whsec_ must come the standard base64 of 24 to 64 random bytes, such as the output of `openssl rand -base64 32`")
	}
	return key, nil
}

// sign returns the webhook-signature header of Standard Webhooks:
// "v1," and the base64 of the HMAC-SHA256 of "id.timestamp.body" keyed
// with key.
func sign(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// eventBody returns the POST body of an email's event: the same bytes
// for every attempt, so that a receiver may compare retries. The email is
// written by emailjson.Append, as the API writes it.
func eventBody(e storage.Email) []byte {
	size := 512
	if e.Body != nil {
		size += len(*e.Body)
	}
	b := append(make([]byte, 0, size), `{"type":"email.received","timestamp":"`...)
	b = e.ReceivedAt.UTC().AppendFormat(b, emailjson.TimeLayout)
	b = append(b, `","data":`...)
	b = emailjson.Append(b, &e)
	return append(b, '}')
}
