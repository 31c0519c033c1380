package postgres_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/postgres"
)

// TestFiltersAsBolt: SQL only prefilters, so the PostgreSQL engine takes
// exactly the emails the bbolt engine takes, also for the bytes SQL's
// tests could get wrong: NUL, invalid UTF-8, a byte within a character,
// line breaks (a sender's name and address are two fields), header
// names in any case.
func TestFiltersAsBolt(t *testing.T) {
	ctx := context.Background()
	pg := openDB(t, testDatabase(t), postgres.Options{})
	bolt, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bolt.Close() })
	msgs := []storage.Message{
		{Subject: ptr("nul"), Text: "a\x00b café", FromName: "Zoë", From: "z@x.org"},
		{Subject: ptr("invalid"), Text: "bad \xff byte", Headers: []storage.Header{{Name: "X-Bin", Value: "v\x00\xff"}}},
		{Subject: ptr("lines"), Text: "one\ntwo\nthree", FromName: "Line\nBreak", From: "l@x.org"},
		{Subject: ptr("Straße"), Text: "STRASSE groß", Headers: []storage.Header{{Name: "x-TEST-run", Value: "Run 42"}}},
		{Subject: nil, Text: "no subject 100%", From: "n@x.org"},
		{Subject: ptr("percent_under"), Text: "a_b 50%", Headers: []storage.Header{{Name: "X-Test-Run", Value: "run 7"}, {Name: "X-Other", Value: "x-test-run"}}},
	}
	for _, m := range msgs {
		m.Raw = []byte("x")
		for _, db := range []storage.Engine{bolt, pg} {
			if _, err := db.Deliver(ctx, &m, []string{"f@x.org"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	queries := []storage.Query{
		{}, {Body: "\x00"}, {Body: "a\x00b"}, {Body: "\xa9"}, {Body: "CAFÉ"}, {Body: "\xff"}, {Body: "one\ntwo"},
		{Body: "strasse"}, {Body: "%"}, {Body: "_"}, {Body: "GROSS"},
		{Subject: "STRASSE"}, {Subject: "ß"}, {Subject: "_"}, {Subject: "%"},
		{Terms: []string{"zoë"}}, {Terms: []string{"e\nb"}}, {Terms: []string{"line\nbreak"}}, {Terms: []string{"k\nl@"}},
		{Terms: []string{"\x00", "café"}}, {Terms: []string{"\xc3"}}, {Terms: []string{"n@x", "100%"}}, {Terms: []string{"subject", "nul"}},
		{Header: &storage.Header{Name: "X-Test-Run", Value: "42"}}, {Header: &storage.Header{Name: "x-test-run", Value: ""}},
		{Header: &storage.Header{Name: "X-Other", Value: "run"}}, {Header: &storage.Header{Name: "X-Bin", Value: "\x00"}},
		{Header: &storage.Header{Name: "X-Bin", Value: "\xff"}}, {Header: &storage.Header{Name: "X-Test", Value: "run"}},
		{Body: "a", Limit: 1}, {Terms: []string{"a"}, Limit: 2, NoBody: true},
		{From: "ZOË"}, {From: "x.org"}, {From: "line\nbreak"}, {From: "k\nl@"}, {From: "e\nb"}, {From: "\x00"},
		{From: "ë"}, {From: "\xc3"}, {From: "n@", Terms: []string{"100%"}}, {From: "@x.org", Limit: 1}, {From: "%"},
	}
	for _, q := range queries {
		q.LocalPart = "f"
		want, err := bolt.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.List(ctx, q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		if !slices.Equal(names(got), names(want)) {
			t.Errorf("List(%+v) = %q, want %q as bbolt answers", q, names(got), names(want))
		}
	}
}

func names(es []storage.Email) []string {
	var out []string
	for _, e := range es {
		if e.Subject == nil {
			out = append(out, "<nil>")
		} else {
			out = append(out, *e.Subject)
		}
	}
	return out
}
