package boltdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/storetest"

	bolt "go.etcd.io/bbolt"
)

// TestListParallel checks the filters over an inbox large enough for List
// to match on all cores against the same filters applied to the whole
// inbox, listed in order.
func TestListParallel(t *testing.T) {
	db := openDB(t, Options{})
	n := parallelScan + 100
	storetest.DeliverMany(t, db, n, func(i int) (string, string) { return fmt.Sprintf("m%d tag%d", i, i%7), "big@x.org" })
	all := storetest.ListSubjects(t, db, storage.Query{LocalPart: "big"})
	if len(all) != n {
		t.Fatalf("List = %d emails, want %d", len(all), n)
	}
	for _, tc := range []struct {
		q    storage.Query
		want func(subject string) bool
	}{
		{storage.Query{Body: "TAG3"}, func(s string) bool { return strings.HasSuffix(s, " tag3") }},
		{storage.Query{Body: "tag3", Limit: 10}, func(s string) bool { return strings.HasSuffix(s, " tag3") }},
		{storage.Query{Terms: []string{"tag5", "m1"}, Limit: 7}, func(s string) bool { return strings.HasSuffix(s, " tag5") && strings.HasPrefix(s, "m1") }},
		{storage.Query{Body: "m2099 "}, func(s string) bool { return strings.HasPrefix(s, "m2099 ") }},
		{storage.Query{Body: "absent"}, func(string) bool { return false }},
	} {
		tc.q.LocalPart = "big"
		var want []string
		for _, s := range all {
			if tc.want(s) && (tc.q.Limit == 0 || len(want) < tc.q.Limit) {
				want = append(want, s)
			}
		}
		if got := storetest.ListSubjects(t, db, tc.q); !slices.Equal(got, want) {
			t.Errorf("List(%+v) = %d emails %.80q, want %d %.80q", tc.q, len(got), got, len(want), want)
		}
	}
}

// TestPrefilterReadsNoContent: List rules an email out by its record
// (the subject, the signature) before it reads the content, and with
// NoBody, and no filter that reads text, it decodes no content at all: a
// damaged content record is found only by the queries that need it.
func TestPrefilterReadsNoContent(t *testing.T) {
	db := openDB(t, Options{})
	deliver(t, db, "damaged", "p@x.org") // content key 1
	deliver(t, db, "sound", "p@x.org")
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketContents).Put(be64(1), []byte{1}) // a reference count, then nothing
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q       storage.Query
		want    []string
		corrupt bool
	}{
		{storage.Query{NoBody: true}, []string{"sound", "damaged"}, false},
		{storage.Query{Subject: "sound"}, []string{"sound"}, false},
		{storage.Query{Terms: []string{"damaged"}, NoBody: true}, []string{"damaged"}, false}, // the subject holds the term
		// The signature of "damaged" rules "sound" out: its content is not read.
		{storage.Query{Terms: []string{"sound"}, NoBody: true}, []string{"sound"}, false},
		{storage.Query{Body: "sound"}, []string{"sound"}, false},
		// A term of two letters has no trigram to test.
		{storage.Query{Terms: []string{"so"}, NoBody: true}, nil, true},
		{storage.Query{Subject: "damaged"}, nil, true},
		{storage.Query{Body: "so"}, nil, true},
		{storage.Query{}, nil, true},
	} {
		tc.q.LocalPart = "p"
		got, err := db.List(context.Background(), tc.q)
		if tc.corrupt {
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Errorf("List(%+v) = %q, %v; want storage.ErrCorrupt", tc.q, storetest.Subjects(got), err)
			}
			continue
		}
		if err != nil || !slices.Equal(storetest.Subjects(got), tc.want) {
			t.Errorf("List(%+v) = %q, %v; want %q", tc.q, storetest.Subjects(got), err, tc.want)
		}
	}
}

// TestSignatures checks that an email record carries the signature of its
// message (text, subject and sender), that a search finds through it what
// is in any of them, and that a record without one, as written before
// signatures, is searched on its text.
func TestSignatures(t *testing.T) {
	db := openDB(t, Options{})
	body := "Your verification code is 424242"
	subject := "Welcome aboard"
	msg := &storage.Message{From: "noreply@acme.test", FromName: "Acme Support", Subject: &subject, Body: &body, Text: body, Raw: []byte("Subject: x\r\n\r\n" + body)}
	if _, err := db.Deliver(context.Background(), msg, []string{"new@x.org", "old@x.org"}); err != nil {
		t.Fatal(err)
	}
	want := match.EmailSignature(match.AppendSearchText(nil, body), &subject, msg.FromName, msg.From)
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEmails).ForEach(func(k, v []byte) error {
			sig, err := recordSignature(v)
			if err != nil || string(sig) != string(want) || len(sig) == 0 {
				t.Errorf("record %q: signature %x, %v; want %x", k, sig, err, want)
			}
			if !strings.HasPrefix(string(k), "old\x00") {
				return nil
			}
			// Rewrite "old" as a record without a signature.
			ev, err := viewEmail(v)
			if err != nil {
				return err
			}
			e := ev.email(k)
			return tx.Bucket(bucketEmails).Put(k, encodeEmail(&e, [16]byte(ev.id), ev.ckey, nil))
		})
	}); err != nil {
		t.Fatal(err)
	}
	for _, inbox := range []string{"new", "old"} {
		for _, tc := range []struct {
			q    storage.Query
			want int
		}{
			{storage.Query{Body: "VERIFICATION code"}, 1},
			{storage.Query{Terms: []string{"424242", "aboard"}}, 1},
			{storage.Query{Terms: []string{"acme support", "noreply@acme"}}, 1},
			{storage.Query{Terms: []string{"424242", "absent"}}, 0},
			{storage.Query{Body: "welcome"}, 0}, // the subject is not the body
			{storage.Query{Subject: "ABOARD"}, 1},
			{storage.Query{Subject: "verification"}, 0}, // nor the body the subject
		} {
			tc.q.LocalPart = inbox
			if got := storetest.ListSubjects(t, db, tc.q); len(got) != tc.want {
				t.Errorf("List(%+v) = %q, want %d emails", tc.q, got, tc.want)
			}
		}
	}
}
