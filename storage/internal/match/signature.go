package match

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// A signature is a Bloom filter of the byte trigrams of an email's search
// text (AppendSearchText) and folded fields, stored beside it, so that a
// body filter or a search can rule an email out without decoding its
// text: a needle can be a substring of the text only if every trigram of
// the needle is one of the text's. It never rules out an email that
// matches (there are no false negatives); it lets through a few that do
// not, which the Matcher then decides on the text itself.
//
// The filter is one hash a trigram (more hashes would need a larger
// filter for the same rate, and the disk is what is short), in a bitmap of
// n bits, n a multiple of 64 sized to the text: trigram hash h (32 bits)
// sets bit h·n >> 32 (the high bits of the product: a division would cost
// more than the rest of the signature), bit i being bit i%8 (least
// significant first) of byte i/8. That is the numbering of PostgreSQL's
// get_bit, so SQL can test a signature with
// get_bit(sig, ((h * 8 * octet_length(sig)) >> 32)::int), h a bigint. An
// empty signature rules out nothing.
const (
	minSignatureBits = 64
	maxSignatureBits = 1 << 16 // 8 KB: the signature of a text of ~50 KB or more
	// signatureFill is the fraction of bits a signature is sized to have
	// set: a needle of q distinct trigrams then passes an email without
	// them with a chance of about signatureFill^q (6% for a word of 10
	// letters, under 1% for two words). A newsletter's takes 64 bytes.
	signatureFill = 0.7
	// uselessFill is the fraction beyond which a signature is not stored:
	// it would let almost everything through.
	uselessFill = 0.9
)

// EmailSignature returns the signature of an email whose search text is
// text: of the text and of the fields a search term may be found in
// instead (its subject, nil when it has none, its sender's name and
// address), each folded, so that a term it rules out is in none of them.
func EmailSignature(text []byte, subject *string, fromName, from string) []byte {
	n := len(fromName) + len(from)
	if subject != nil {
		n += len(*subject)
	}
	fields := make([]byte, 0, n+8) // folding seldom grows ASCII
	if subject != nil {
		fields = AppendFold(fields, *subject)
	}
	a := len(fields)
	fields = AppendFold(fields, fromName)
	b := len(fields)
	fields = AppendFold(fields, from)
	return AppendSignature(nil, text, fields[:a], fields[a:b], fields[b:])
}

// AppendSignature appends the signature of the trigrams of pieces (search
// texts, folded fields) to dst: nothing when they are too short to hold a
// trigram, or too varied for a signature of at most maxSignatureBits to
// rule anything out. A trigram across two pieces is not in it.
func AppendSignature(dst []byte, pieces ...[]byte) []byte {
	grams := 0
	for _, p := range pieces {
		grams += max(len(p)-2, 0)
	}
	if grams == 0 {
		return dst
	}
	// Count the distinct trigrams, about: set their bits in a bitmap of
	// about two bits a trigram, where few share one, and estimate from the
	// bits set. Then set them again in a bitmap of the size that many
	// fill to signatureFill.
	n := minSignatureBits
	for n < 2*grams && n < maxSignatureBits {
		n *= 2
	}
	// 8 Kbit on the stack: enough for a newsletter's first bitmap.
	var stack [128]uint64
	words := stack[:]
	if n/64 > len(stack) {
		words = make([]uint64, n/64)
	}
	set := setGrams(words[:n/64], pieces)
	if set == n {
		return dst
	}
	distinct := -float64(n) * math.Log1p(-float64(set)/float64(n))
	size := int(math.Ceil(distinct/-math.Log1p(-signatureFill)/64)) * 64
	if size > maxSignatureBits {
		if 1-math.Exp(-distinct/maxSignatureBits) > uselessFill {
			return dst
		}
		size = maxSignatureBits
	}
	size = max(size, minSignatureBits)
	if size/64 > cap(words) {
		words = make([]uint64, size/64)
	}
	words = words[:size/64]
	clear(words)
	setGrams(words, pieces)
	dst = slices.Grow(dst, 8*len(words))
	for _, w := range words {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return dst
}

// setGrams sets the bits of the trigrams of pieces in words, and returns
// the number of bits set.
func setGrams(words []uint64, pieces [][]byte) int {
	n := uint64(64 * len(words))
	for _, p := range pieces {
		if len(p) < 3 {
			continue
		}
		t := uint32(p[0])<<8 | uint32(p[1])
		for _, c := range p[2:] {
			t = (t<<8 | uint32(c)) & 0xffffff
			i := uint64(gramHash(t)) * n >> 32
			words[i/64] |= 1 << (i % 64)
		}
	}
	set := 0
	for _, w := range words {
		set += bits.OnesCount64(w)
	}
	return set
}

// GramHashes returns the distinct trigram hashes of needle, a folded
// filter: an email whose signature lacks one of them cannot hold needle in
// its search text. A needle shorter than three bytes has none.
func GramHashes(needle []byte) []uint32 {
	if len(needle) < 3 {
		return nil
	}
	hs := make([]uint32, 0, len(needle)-2)
	t := uint32(needle[0])<<8 | uint32(needle[1])
next:
	for _, c := range needle[2:] {
		t = (t<<8 | uint32(c)) & 0xffffff
		h := gramHash(t)
		for _, seen := range hs {
			if seen == h {
				continue next
			}
		}
		hs = append(hs, h)
	}
	return hs
}

// SignatureHas reports whether sig, a signature from AppendSignature, has
// the bit of every hash in hs: false means that the text it was made of
// holds none of the needles whose GramHashes are hs. An empty signature
// has every bit.
func SignatureHas(sig []byte, hs []uint32) bool {
	if len(sig) == 0 {
		return true
	}
	n := uint64(8 * len(sig))
	for _, h := range hs {
		i := uint64(h) * n >> 32
		if sig[i/8]&(1<<(i%8)) == 0 {
			return false
		}
	}
	return true
}

// ValidSignature reports whether sig has a length AppendSignature makes:
// none, or a multiple of 64 bits from minSignatureBits to maxSignatureBits.
// A record with another is corrupt.
func ValidSignature(sig []byte) bool {
	n := 8 * len(sig)
	return n == 0 || n >= minSignatureBits && n <= maxSignatureBits && n%64 == 0
}

// gramHash mixes a trigram (three bytes, the first in the high bits) into
// 32 bits whose high bits, the ones a signature takes, depend on all of
// it: Fibonacci hashing, one multiplication by an odd constant, so a
// bijection (distinct trigrams never share a hash, only at times a bit).
func gramHash(t uint32) uint32 { return t * 0x9e3779b1 }
