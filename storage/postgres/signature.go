package postgres

import (
	"fmt"
	"slices"
	"strings"

	"burner/storage"
	"burner/storage/internal/match"
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
// search text is search (match.EmailSignature): nil (NULL) when there
// is none.
func signature(search []byte, msg *storage.Message) []byte {
	sig := match.EmailSignature(search, msg.Subject, msg.FromName, msg.From)
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

// signatureTest returns the SQL test of the signatures of emails against
// the filters of m that have trigrams, or "" when none has: one chain of
// get_bit tests, which PostgreSQL evaluates in order and stops at the
// first bit missing. (Apart, each filter its own test, PostgreSQL would
// order them by cost, the shortest needle first: the one most emails
// hold.) The longest needles go first, the least likely to be in an
// email; each gives at most maxSignatureTests hashes, spread over it
// (neighbouring trigrams overlap, and one bit missing is enough).
func signatureTest(m *match.Matcher, arg func(any) string) string {
	needles := m.NeedleGrams()
	if len(needles) == 0 {
		return ""
	}
	slices.SortStableFunc(needles, func(a, b []uint32) int { return len(b) - len(a) })
	var params []string
	seen := make(map[uint32]bool)
	for _, hs := range needles {
		if len(hs) > maxSignatureTests {
			picked := make([]uint32, maxSignatureTests)
			for i := range picked {
				picked[i] = hs[i*len(hs)/maxSignatureTests]
			}
			hs = picked
		}
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				// A bigint: the hash does not fit in an integer.
				params = append(params, arg(int64(h))+"::int8")
			}
		}
	}
	return signatureHas("e.sig", params)
}

// signatureHas returns the SQL test of whether the signature in column
// col may be of an email that holds a needle whose hashes are the
// parameters hashes (signatureTest): the bit of each, h*n>>32 of n bits
// (match.SignatureHas), is set; get_bit numbers bits as signatures
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
