package postgres_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/internal/match"
	"burner/storage/postgres"

	"github.com/jackc/pgx/v5"
)

// wordy returns a text of n words drawn from a vocabulary of vocab made-up
// words, the same for the same seed.
func wordy(seed uint64, n, vocab int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	words := make([]string, vocab)
	for i := range words {
		w := make([]byte, 3+r.IntN(8))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(w)
	}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(" \n"[min(1, r.IntN(12)/11)])
		}
		b.WriteString(words[r.IntN(vocab)])
	}
	return b.String()
}

// emailSig returns the signature of m, as match.EmailSignature makes
// it, nil when there is none.
func emailSig(m storage.Message) []byte {
	sig := match.EmailSignature(match.AppendSearchText(nil, m.Text), m.Subject, m.FromName, m.From)
	if len(sig) == 0 {
		return nil
	}
	return sig
}

func connect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestSignatureBitsAsGetBit: PostgreSQL's get_bit, as list.go's SQL calls
// it, reads the bit of a hash that match.SignatureHas reads, in real
// signatures of every size, for the hashes of needles and for random
// ones.
func TestSignatureBitsAsGetBit(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, testDatabase(t))
	r := rand.New(rand.NewPCG(7, 7))
	var sizes []int
	for _, words := range []int{2, 10, 100, 1000, 10_000} {
		text := wordy(uint64(words), words, 10*words)
		sig := emailSig(storage.Message{Text: text})
		if len(sig) == 0 {
			t.Fatalf("a text of %d words has no signature", words)
		}
		sizes = append(sizes, len(sig))
		hs := match.GramHashes([]byte(text[:min(len(text), 40)]))
		for range 2000 {
			hs = append(hs, r.Uint32())
		}
		var bits []int32
		err := conn.QueryRow(ctx, `SELECT array(SELECT get_bit($1::bytea, (h * (8 * octet_length($1::bytea))) >> 32)
			FROM unnest($2::int8[]) WITH ORDINALITY AS u(h, i) ORDER BY i)`, sig, int64s(hs)).Scan(&bits)
		if err != nil {
			t.Fatal(err)
		}
		set := 0
		for i, h := range hs {
			want := match.SignatureHas(sig, []uint32{h})
			if (bits[i] == 1) != want {
				t.Fatalf("signature of %d bytes, hash %d: get_bit = %d, SignatureHas = %v", len(sig), h, bits[i], want)
			}
			set += int(bits[i])
		}
		if set == 0 || set == len(hs) {
			t.Errorf("signature of %d bytes: %d of %d hashes set; want some of both", len(sig), set, len(hs))
		}
	}
	if len(slices.Compact(sizes)) < 4 {
		t.Errorf("signatures of %v bytes; want several sizes", sizes)
	}
}

func int64s(hs []uint32) []int64 {
	out := make([]int64, len(hs))
	for i, h := range hs {
		out[i] = int64(h)
	}
	return out
}

// TestSignatureStored: a delivery and an import store in each email the
// signature of its message (match.EmailSignature), none when it has
// too few bytes.
func TestSignatureStored(t *testing.T) {
	ctx := context.Background()
	text := wordy(1, 200, 500)
	msgs := []storage.Message{
		{Subject: ptr("Grüße"), FromName: "Zoë", From: "z@x.org", Text: "Straße\n\nCAFÉ " + text},
		{Text: "ab"},
		{Subject: ptr("bin"), From: "b@x.org", Text: "\xff\x00 " + text},
	}
	check := func(t *testing.T, dbURL string) {
		t.Helper()
		rows, err := connect(t, dbURL).Query(ctx, `SELECT convert_from(m.from_addr, 'UTF8'), e.sig FROM emails e JOIN messages m ON m.id = e.message`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]byte{}
		for rows.Next() {
			var from string
			var sig []byte
			if err := rows.Scan(&from, &sig); err != nil {
				t.Fatal(err)
			}
			got[from] = sig
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(msgs) {
			t.Fatalf("%d emails stored, want %d", len(got), len(msgs))
		}
		for _, m := range msgs {
			if want := emailSig(m); !bytes.Equal(got[m.From], want) {
				t.Errorf("sig of the email from %q = %x, want %x", m.From, got[m.From], want)
			}
		}
		if sig := got[""]; sig != nil {
			t.Errorf("the email of a text of 2 bytes, without subject or sender, has the signature %x, want NULL", sig)
		}
	}

	dbURL := testDatabase(t)
	pg := openDB(t, dbURL, postgres.Options{})
	bolt, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	for _, m := range msgs {
		m.Raw = []byte("x")
		for _, db := range []storage.Engine{pg, bolt} {
			if _, err := db.Deliver(ctx, &m, []string{"s@x.org"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("deliver", func(t *testing.T) { check(t, dbURL) })
	t.Run("import", func(t *testing.T) {
		dbURL := testDatabase(t)
		if _, err := openDB(t, dbURL, postgres.Options{}).Import(ctx, bolt, nil); err != nil {
			t.Fatal(err)
		}
		check(t, dbURL)
	})
}

// TestSignatureFilter: SQL rules emails out by their signatures, before
// the Matcher: a body filter or a search finds what the long texts hold
// (a signature folded to fit a row included) and nothing else; an email
// whose signature lacks a needle is not even given to the Matcher (here
// one made wrong on purpose); and emails without signatures, as older
// versions stored them, are searched.
func TestSignatureFilter(t *testing.T) {
	ctx := context.Background()
	dbURL := testDatabase(t)
	db := openDB(t, dbURL, postgres.Options{})
	conn := connect(t, dbURL)
	huge := wordy(3, 36_000, 120_000) // past the largest signature stored
	msgs := []storage.Message{
		{Subject: ptr("long"), From: "a@x.org", Text: wordy(1, 3000, 4000) + "\nthe Needle phrase here\n" + wordy(2, 3000, 4000)},
		{Subject: ptr("huge"), From: "b@x.org", Text: huge + " needle phrase"},
		{Subject: ptr("other"), From: "c@x.org", Text: wordy(4, 3000, 4000)},
		{Subject: ptr("Needle in the subject"), From: "d@x.org", Text: "nothing to see"},
		{Subject: ptr("bin"), FromName: "Needle Sender", From: "e@x.org", Text: "bytes \xff\xfe needle phrase \xff"},
	}
	for _, m := range msgs {
		m.Raw = []byte("x")
		if _, err := db.Deliver(ctx, &m, []string{"f@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	var stored int
	if err := conn.QueryRow(ctx, `SELECT max(octet_length(sig)) FROM emails`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored > 2048 {
		t.Errorf("the largest signature stored has %d bytes, want at most 2 KB", stored)
	}
	list := func(q storage.Query) []string {
		t.Helper()
		q.LocalPart = "f"
		es, err := db.List(ctx, q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		got := names(es)
		slices.Sort(got)
		return got
	}
	queries := []struct {
		q    storage.Query
		want []string
	}{
		{storage.Query{Body: "needle phrase"}, []string{"bin", "huge", "long"}},
		{storage.Query{Body: "NEEDLE PHRASE HERE"}, []string{"long"}},
		{storage.Query{Body: "needle \xff"}, nil},
		{storage.Query{Body: "phrase \xff"}, []string{"bin"}},
		{storage.Query{Terms: []string{"needle"}}, []string{"Needle in the subject", "bin", "huge", "long"}},
		{storage.Query{Terms: []string{"needle", "sender"}}, []string{"bin"}},
		{storage.Query{Terms: []string{"needle", "subject"}}, []string{"Needle in the subject"}},
		{storage.Query{Terms: []string{"the needle phrase here"}}, []string{"long"}},
		{storage.Query{Terms: []string{"no such needle"}}, nil},
		{storage.Query{Body: "ne", Terms: []string{"xyzzy"}}, nil},
		{storage.Query{Subject: "NEEDLE IN"}, []string{"Needle in the subject"}},
		{storage.Query{Subject: "needle phrase"}, nil},
	}
	run := func(t *testing.T) {
		t.Helper()
		for _, c := range queries {
			if got := list(c.q); !slices.Equal(got, c.want) {
				t.Errorf("List(%+v) = %q, want %q", c.q, got, c.want)
			}
		}
	}
	t.Run("signatures", run)

	// A signature of no bits set rules out every needle: the emails that
	// hold one are no longer found, which shows that SQL consults it.
	zero := make([]byte, 64)
	if _, err := conn.Exec(ctx, `UPDATE emails SET sig = $1`, zero); err != nil {
		t.Fatal(err)
	}
	for _, q := range []storage.Query{{Body: "needle phrase"}, {Terms: []string{"phrase"}}, {Terms: []string{"needle"}}, {Subject: "needle"}} {
		if got := list(q); got != nil {
			t.Errorf("with signatures of no bit set, List(%+v) = %q, want none", q, got)
		}
	}
	if got := list(storage.Query{Terms: []string{"ne"}}); len(got) != len(msgs) {
		t.Errorf("with signatures of no bit set, List(ne) = %q, want every email: a term of 2 bytes has no trigram", got)
	}

	// Rows without signatures, as an older version wrote them, and empty
	// ones, are searched.
	for _, set := range []string{`sig = NULL`, `sig = ''`} {
		if _, err := conn.Exec(ctx, `UPDATE emails SET `+set); err != nil {
			t.Fatal(err)
		}
		t.Run(set, run)
	}
}
