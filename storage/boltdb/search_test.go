package boltdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"burner/storage"
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
		if got := storetest.ListSubjects(t, db, tc.q); !equal(got, want) {
			t.Errorf("List(%+v) = %d emails %.80q, want %d %.80q", tc.q, len(got), got, len(want), want)
		}
	}
}

// TestPrefilterReadsNoContent: List rules an email out by its record
// (the subject) before it reads the content, and with NoBody, and no
// filter that reads text, it decodes no content at all: a damaged content
// record is found only by the queries that need it.
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
		{storage.Query{Terms: []string{"sound"}, NoBody: true}, nil, true},
		{storage.Query{Subject: "damaged"}, nil, true},
		{storage.Query{Body: "sound"}, nil, true},
		{storage.Query{}, nil, true},
	} {
		tc.q.LocalPart = "p"
		got, err := db.List(context.Background(), tc.q)
		if tc.corrupt {
			if !errors.Is(err, errCorrupt) {
				t.Errorf("List(%+v) = %q, %v; want errCorrupt", tc.q, storetest.Subjects(got), err)
			}
			continue
		}
		if err != nil || !equal(storetest.Subjects(got), tc.want) {
			t.Errorf("List(%+v) = %q, %v; want %q", tc.q, storetest.Subjects(got), err, tc.want)
		}
	}
}
