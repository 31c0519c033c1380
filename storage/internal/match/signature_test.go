package match

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"burner/storage"
)

// TestSignatureNeverRulesOutASubstring checks the one promise a signature
// makes: every substring of the text passes it, whatever its size.
func TestSignatureNeverRulesOutASubstring(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the order of straße ünïcödé 注文 a bb ccc newsletter unsubscribe 123456 verify your account")
	for n := range 300 {
		var b strings.Builder
		for range n * 7 {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(" \n"[r.IntN(2)])
		}
		text := AppendSearchText(nil, b.String())
		sig := AppendSignature(nil, text)
		if !ValidSignature(sig) {
			t.Fatalf("text of %d bytes: signature of %d bytes is not valid", len(text), len(sig))
		}
		for range 50 {
			if len(text) == 0 {
				break
			}
			i := r.IntN(len(text))
			j := i + r.IntN(min(40, len(text)-i)+1)
			if !SignatureHas(sig, GramHashes(text[i:j])) {
				t.Fatalf("text %q: its substring %q is ruled out", text, text[i:j])
			}
		}
	}
}

// FuzzSignature checks the same promise on any bytes.
func FuzzSignature(f *testing.F) {
	f.Add([]byte("hello world, this is a newsletter"), 3, 11)
	f.Add(bytes.Repeat([]byte("ab"), 50000), 10, 20)
	f.Fuzz(func(t *testing.T, text []byte, i, j int) {
		if len(text) == 0 {
			return
		}
		i = min(max(i, 0), len(text))
		j = min(max(j, i), len(text))
		sig := AppendSignature(nil, text)
		if !ValidSignature(sig) {
			t.Fatalf("invalid signature of %d bytes", len(sig))
		}
		if !SignatureHas(sig, GramHashes(text[i:j])) {
			t.Fatalf("substring [%d:%d] ruled out", i, j)
		}
	})
}

// TestSignatureRulesOut checks that a signature is worth its bytes: a
// needle of a few words that a text does not hold is ruled out for most
// texts, and the signature of a newsletter's text stays small.
func TestSignatureRulesOut(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := make([]string, 2000)
	for i := range vocab {
		w := make([]byte, 3+r.IntN(7))
		for k := range w {
			w[k] = byte('a' + r.IntN(26))
		}
		vocab[i] = string(w)
	}
	passed, texts, size := 0, 200, 0
	for range texts {
		var b strings.Builder
		for b.Len() < 1200 {
			b.WriteString(vocab[r.IntN(len(vocab))])
			b.WriteByte(' ')
		}
		text := AppendSearchText(nil, b.String())
		sig := AppendSignature(nil, text)
		size += len(sig)
		if needle := []byte("no such body text"); bytes.Contains(text, needle) {
			t.Fatal("the needle is in the text")
		} else if SignatureHas(sig, GramHashes(needle)) {
			passed++
		}
	}
	if passed > texts/20 {
		t.Errorf("a needle of 17 bytes passed %d of %d signatures; want at most 5%%", passed, texts)
	}
	if avg := size / texts; avg == 0 || avg > 128 {
		t.Errorf("signatures of 1.2 KB texts average %d bytes; want 1 to 128", avg)
	}
}

// TestSignatureBits pins the bit numbering, which SQL reproduces with
// PostgreSQL's get_bit (bit i is bit i%8, least significant first, of byte
// i/8): a signature's bit for hash h is h times its size, over 2^32.
func TestSignatureBits(t *testing.T) {
	text := []byte("abcdefgh")
	sig := AppendSignature(nil, text)
	if len(sig) != minSignatureBits/8 {
		t.Fatalf("signature of %q has %d bytes, want %d", text, len(sig), minSignatureBits/8)
	}
	want := make([]byte, len(sig))
	for i := 0; i+3 <= len(text); i++ {
		h := uint64(gramHash(uint32(text[i])<<16|uint32(text[i+1])<<8|uint32(text[i+2]))) * uint64(8*len(sig)) >> 32
		want[h/8] |= 1 << (h % 8)
	}
	if !bytes.Equal(sig, want) {
		t.Errorf("signature of %q = %08b, want %08b", text, sig, want)
	}
	for _, tc := range []struct {
		sig []byte
		ok  bool
	}{{nil, true}, {make([]byte, 8), true}, {make([]byte, 16), true}, {make([]byte, 4), false}, {make([]byte, 24), true}, {make([]byte, 12), false}, {make([]byte, 16384), false}} {
		if got := ValidSignature(tc.sig); got != tc.ok {
			t.Errorf("ValidSignature(%d bytes) = %v, want %v", len(tc.sig), got, tc.ok)
		}
	}
}

// TestSignatureOfVariedText checks that a text too varied for a signature
// to rule anything out gets none, rather than bytes that cost disk for
// nothing.
func TestSignatureOfVariedText(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	text := make([]byte, 1<<20)
	for i := range text {
		text[i] = byte(r.IntN(256))
	}
	if sig := AppendSignature(nil, text); len(sig) != 0 {
		t.Errorf("a random MiB got a signature of %d bytes, want none", len(sig))
	}
	if sig := AppendSignature(nil, []byte("ab")); len(sig) != 0 {
		t.Errorf("a text without a trigram got a signature of %d bytes", len(sig))
	}
}

// TestMayMatch checks the Matcher's use of a signature: a term may be in
// the email's fields rather than its text, a subject filter is tested
// too, a needle without a trigram rules nothing out, and an email without
// a signature is never ruled out.
func TestMayMatch(t *testing.T) {
	text := AppendSearchText(nil, "Your verification code is 424242.\nThanks, the team")
	subject := "Welcome aboard"
	sig := EmailSignature(text, &subject, "Acme", "noreply@acme.test")
	for _, tc := range []struct {
		q    storage.Query
		want bool
	}{
		{storage.Query{Body: "verification CODE"}, true},
		{storage.Query{Body: "no such text"}, false},
		{storage.Query{Body: "ab"}, true},
		{storage.Query{Terms: []string{"424242", "WELCOME"}}, true}, // the second in the subject
		{storage.Query{Terms: []string{"acme"}}, true},              // in the sender
		{storage.Query{Terms: []string{"424242", "missing"}}, false},
		{storage.Query{Terms: []string{"xy"}}, true},
		{storage.Query{From: "ACME"}, true},           // the name
		{storage.Query{From: "noreply@acme.t"}, true}, // the address
		{storage.Query{From: "no such sender"}, false},
		{storage.Query{From: "verification"}, true}, // in the text: the signature cannot tell where; MatchSender decides
		{storage.Query{Subject: "WELCOME"}, true},
		{storage.Query{Subject: "no such subject"}, false},
		{storage.Query{Subject: "424242"}, true},                                       // in the text: the signature cannot tell where; MatchSubject decides
		{storage.Query{Header: &storage.Header{Name: "X-Any", Value: "absent"}}, true}, // not the signature's to decide
	} {
		m := New(tc.q)
		if got := m.MayMatch(sig); got != tc.want {
			t.Errorf("%+v: MayMatch = %v, want %v", tc.q, got, tc.want)
		}
		if got := m.MayMatch(nil); !got {
			t.Errorf("%+v: MayMatch(no signature) = false", tc.q)
		}
		// It may let through what the Matcher then refuses, never the reverse.
		if ok, _ := m.MatchFields([]byte(subject), []byte("Acme"), []byte("noreply@acme.test")); ok && m.MatchText(text) && !m.MayMatch(sig) {
			t.Errorf("%+v: the Matcher takes what MayMatch ruled out", tc.q)
		}
	}
}
