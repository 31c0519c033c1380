package mailauth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"

	"burner/storage"

	"github.com/emersion/go-msgauth/dkim"
)

// errTooManySignatures is the error of each signature past maxSignatures.
const errTooManySignatures = "too many signatures"

// checkDKIM verifies the DKIM signatures of raw (RFC 6376), at most
// maxSignatures of them, and returns one verdict per DKIM-Signature field
// in header order, nil when there is none. A signature whose body hash or
// signature does not verify is fail; one that cannot be evaluated
// (malformed, no key, a key of the wrong kind, rsa-sha1) is permerror; one
// whose key could not be fetched in time is temperror. A signature with
// l= is neutral: go-msgauth refuses it before checking, since it would
// leave part of the body unsigned.
func (v *Verifier) checkDKIM(ctx context.Context, raw []byte, h header) []storage.DKIMResult {
	if len(h.sigs) == 0 {
		return nil
	}
	out := make([]storage.DKIMResult, len(h.sigs))
	for i, s := range h.sigs {
		out[i] = storage.DKIMResult{Domain: s.domain, Selector: s.selector}
	}
	var r io.Reader = bytes.NewReader(raw)
	if !h.ended {
		// A message of header fields alone is valid (RFC 5322 §3.5), but
		// go-msgauth wants the blank line: give it one, and so an empty body.
		end := "\r\n\r\n"
		if bytes.HasSuffix(raw, []byte("\n")) {
			end = "\r\n"
		}
		r = io.MultiReader(r, strings.NewReader(end))
	}
	verifs, err := dkim.VerifyWithOptions(r, &dkim.VerifyOptions{
		LookupTXT:        func(name string) ([]string, error) { return v.res.LookupTXT(ctx, name) },
		MaxVerifications: maxSignatures,
	})
	if err != nil && !errors.Is(err, dkim.ErrTooManySignatures) {
		// Not a verdict on a signature: the message could not be read.
		for i := range out {
			out[i].Result, out[i].Error = storage.AuthPermError, trimDKIM(err)
		}
		return out
	}
	for i := range out {
		if i >= len(verifs) {
			out[i].Result, out[i].Error = storage.AuthPermError, errTooManySignatures
			continue
		}
		if out[i].Domain == "" {
			out[i].Domain = strings.ToLower(verifs[i].Domain)
		}
		out[i].Result, out[i].Error = dkimWord(verifs[i].Err)
	}
	return out
}

// dkimWord returns the RFC 8601 word for a verification's error, and the
// error's text.
func dkimWord(err error) (storage.AuthValue, string) {
	switch {
	case err == nil:
		return storage.AuthPass, ""
	case dkim.IsTempFail(err):
		return storage.AuthTempError, trimDKIM(err)
	case dkim.IsPermFail(err):
		return storage.AuthPermError, trimDKIM(err)
	case strings.Contains(err.Error(), "body length tag"):
		return storage.AuthNeutral, "l= (body length) not accepted: part of the body would be unsigned"
	default:
		return storage.AuthFail, trimDKIM(err)
	}
}

func trimDKIM(err error) string {
	return strings.TrimPrefix(err.Error(), "dkim: ")
}
