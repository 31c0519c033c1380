package postgres

import (
	"fmt"
	"strings"

	"burner/storage"
)

// maxStoredSignature bounds the bytes of a signature in emails: a row
// must fit in a page, for the column is PLAIN. A larger one (of a text of
// some 20 KB or more) is folded down to it: bit i of the half is set when
// bit 2i or 2i+1 of the whole was, for hash h has bit h*n>>32 of n bits,
// and h*(n/2)>>32 is half that, rounded down. It lets more emails
// through, never fewer.
const maxStoredSignature = 2048

// maxSignatureTests bounds the get_bit tests of one needle in SQL: a long
// needle has as many hashes as bytes, and a few of them rule out about as
// much as all (one an email lacks rules it out).
const maxSignatureTests = 16

// signature returns what emails store of the signature of msg, whose
// search text is search (storage.EmailSignature): nil (NULL) when there
// is none.
func signature(search []byte, msg *storage.Message) []byte {
	sig := storage.EmailSignature(search, msg.Subject, msg.FromName, msg.From)
	for len(sig) > maxStoredSignature {
		half := make([]byte, len(sig)/2) // even: a signature has a multiple of 64 bits
		for i := range 4 * len(sig) {
			if sig[2*i/8]&(1<<(2*i%8)) != 0 || sig[(2*i+1)/8]&(1<<((2*i+1)%8)) != 0 {
				half[i/8] |= 1 << (i % 8)
			}
		}
		sig = half
	}
	if len(sig) == 0 {
		return nil
	}
	return sig
}

// hashArgs returns the parameters of the hashes hs of a needle
// (storage.GramHashes), added with arg, for signatureHas: a few of them
// when there are many.
func hashArgs(hs []uint32, arg func(any) string) []string {
	if len(hs) > maxSignatureTests {
		// Spread over the needle: neighbouring trigrams overlap.
		picked := make([]uint32, maxSignatureTests)
		for i := range picked {
			picked[i] = hs[i*len(hs)/maxSignatureTests]
		}
		hs = picked
	}
	params := make([]string, len(hs))
	for i, h := range hs {
		// A bigint: the hash does not fit in an integer.
		params[i] = arg(int64(h)) + "::int8"
	}
	return params
}

// signatureHas returns the SQL test of whether the signature in column
// col may be of an email that holds a needle whose hashes are the
// parameters hashes (hashArgs): the bit of each, h*n>>32 of n bits
// (storage.SignatureHas), is set; get_bit numbers bits as signatures
// do. A NULL or empty signature rules nothing out.
func signatureHas(col string, hashes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `(%[1]s IS NULL OR octet_length(%[1]s) = 0 OR (`, col)
	for i, h := range hashes {
		if i > 0 {
			b.WriteString(` AND `)
		}
		fmt.Fprintf(&b, `get_bit(%[1]s, (%[2]s * (8 * octet_length(%[1]s))) >> 32) = 1`, col, h)
	}
	b.WriteString(`))`)
	return b.String()
}
