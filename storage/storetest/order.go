package storetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"burner/storage"
)

func testListOrderAndIsolation(t *testing.T, open Opener) {
	clk := NewClock(time.Unix(1_700_000_000, 0))
	db := open(t, Config{Now: clk.Now})
	deliver(t, db, "a1", "alice@x.org")
	clk.Advance(time.Second)
	deliver(t, db, "plus", "alice+x@x.org")
	deliver(t, db, "f", "alicf@x.org")
	deliver(t, db, "short", "alic@x.org")
	deliver(t, db, "a2", "ALICE@y.org")
	deliver(t, db, "a3", "alice@x.org") // same millisecond as a2: stored 1 ms later
	deliver(t, db, "a4", "aLiCe@x.org") // and this one 2 ms later

	for _, tc := range []struct {
		q    storage.Query
		want []string
	}{
		{storage.Query{LocalPart: "alice"}, []string{"a4", "a3", "a2", "a1"}},
		{storage.Query{LocalPart: "ALICE"}, []string{"a4", "a3", "a2", "a1"}},
		{storage.Query{LocalPart: "alice+x"}, []string{"plus"}},
		{storage.Query{LocalPart: "alicf"}, []string{"f"}},
		{storage.Query{LocalPart: "alic"}, []string{"short"}},
		{storage.Query{LocalPart: "alice", Limit: 2}, []string{"a4", "a3"}},
		{storage.Query{LocalPart: "nobody"}, nil},
		{storage.Query{LocalPart: "zzz"}, nil},
		{storage.Query{LocalPart: "alice", Since: time.Unix(1_700_000_000, 0)}, []string{"a4", "a3", "a2"}},
		{storage.Query{LocalPart: "alice", Since: time.Unix(1_700_000_001, 0)}, []string{"a4", "a3"}},
		{storage.Query{LocalPart: "alice", Since: time.Unix(1_700_000_001, 500_000)}, []string{"a4", "a3"}},
		{storage.Query{LocalPart: "alice", Since: time.Unix(1_700_000_001, 1_000_000)}, []string{"a4"}},
		{storage.Query{LocalPart: "alice", Since: time.Unix(1_700_000_001, 2_000_000)}, nil},
	} {
		if got := ListSubjects(t, db, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

// testSinceAndBefore: before (spec §5) is exclusive, takes fractions of a
// millisecond, and holds together with since and limit.
func testSinceAndBefore(t *testing.T, open Opener) {
	base := time.Unix(1_700_000_000, 0)
	clk := NewClock(base)
	db := open(t, Config{Now: clk.Now})
	for i := range 5 { // m0 at base, m1 at base+10ms, …
		deliver(t, db, fmt.Sprint("m", i), "p@x.org")
		clk.Advance(10 * time.Millisecond)
	}
	deliver(t, db, "other", "p+1@x.org")
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		q    storage.Query
		want []string
	}{
		{storage.Query{Before: ms(40)}, []string{"m3", "m2", "m1", "m0"}},
		{storage.Query{Before: ms(40).Add(time.Microsecond)}, []string{"m4", "m3", "m2", "m1", "m0"}},
		{storage.Query{Before: ms(39).Add(999 * time.Microsecond)}, []string{"m3", "m2", "m1", "m0"}},
		{storage.Query{Before: ms(0)}, nil},
		{storage.Query{Before: time.Unix(0, 0)}, nil},
		{storage.Query{Before: ms(100)}, []string{"m4", "m3", "m2", "m1", "m0"}},
		{storage.Query{Before: ms(40), Limit: 2}, []string{"m3", "m2"}},
		{storage.Query{Before: ms(40), Since: ms(10)}, []string{"m3", "m2"}},
		{storage.Query{Before: ms(20), Since: ms(20)}, nil},
		{storage.Query{Before: ms(40), Subject: "M1"}, []string{"m1"}},
	} {
		tc.q.LocalPart = "p"
		if got := ListSubjects(t, db, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
	// Paging with before = the oldest receivedAt of the page reads every
	// email once.
	var seen []string
	q := storage.Query{LocalPart: "p", Limit: 2}
	for range 10 {
		page, err := db.List(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		seen = append(seen, Subjects(page)...)
		q.Before = page[len(page)-1].ReceivedAt
	}
	if want := []string{"m4", "m3", "m2", "m1", "m0"}; !slices.Equal(seen, want) {
		t.Errorf("paging with Before read %q, want %q", seen, want)
	}
}

// testReceivedAtIncreases: spec §3, within an inbox receivedAt strictly
// increases in commit order, also when the clock stands still or steps
// back; other inboxes keep the clock's time. The emails Deliver returns
// carry the time stored.
func testReceivedAtIncreases(t *testing.T, open Opener) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := NewClock(base)
	db := open(t, Config{Now: clk.Now})
	got := deliver(t, db, "a", "r@x.org", "R@y.org", "s@x.org") // r twice: two emails of one inbox
	want := []time.Time{base, base.Add(time.Millisecond), base}
	for i := range got {
		if !got[i].ReceivedAt.Equal(want[i]) {
			t.Errorf("Deliver to %s: ReceivedAt %v, want %v", got[i].To, got[i].ReceivedAt, want[i])
		}
	}
	b := deliver(t, db, "b", "r@x.org")[0]
	clk.Advance(-time.Hour) // the clock steps back
	c := deliver(t, db, "c", "r@x.org")[0]
	d := deliver(t, db, "d", "s@x.org")[0]
	for _, tc := range []struct {
		e    storage.Email
		want time.Time
	}{
		{b, base.Add(2 * time.Millisecond)},
		{c, base.Add(3 * time.Millisecond)},
		{d, base.Add(time.Millisecond)},
	} {
		if !tc.e.ReceivedAt.Equal(tc.want) {
			t.Errorf("email %q to %s: ReceivedAt %v, want %v", *tc.e.Subject, tc.e.To, tc.e.ReceivedAt, tc.want)
		}
		stored, err := db.Email(context.Background(), tc.e.ID)
		if err != nil || !stored.ReceivedAt.Equal(tc.e.ReceivedAt) {
			t.Errorf("Email(%s) = %v, %v; want the ReceivedAt Deliver returned, %v", tc.e.ID, stored.ReceivedAt, err, tc.e.ReceivedAt)
		}
	}
	if got := ListSubjects(t, db, storage.Query{LocalPart: "r", Since: base.Add(2 * time.Millisecond)}); !slices.Equal(got, []string{"c"}) {
		t.Errorf("List since the newest but one = %q, want [c]", got)
	}
}

// testReceivedAtConcurrent: concurrent deliveries on a frozen clock get
// distinct times in each inbox, and a poller that lists since the newest
// time it saw, a page at a time, misses none.
func testReceivedAtConcurrent(t *testing.T, open Opener) {
	clk := NewClock(time.Unix(1_700_000_000, 0))
	db := open(t, Config{Now: clk.Now})
	const n = 200
	var (
		mu    sync.Mutex
		times = map[string][]time.Time{}
		wg    sync.WaitGroup
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				msg := &storage.Message{Subject: ptr(fmt.Sprint("m", i)), Raw: []byte("x")}
				es, err := db.Deliver(context.Background(), msg, []string{fmt.Sprintf("in%d@x.org", i%3), "all@x.org"})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, e := range es {
					times[storage.LocalPart(e.To)] = append(times[storage.LocalPart(e.To)], e.ReceivedAt)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for inbox, ts := range times {
		seen := map[time.Time]bool{}
		for _, tm := range ts {
			if seen[tm] {
				t.Errorf("inbox %s: two emails received at %v", inbox, tm)
			}
			seen[tm] = true
		}
		all, err := db.List(context.Background(), storage.Query{LocalPart: inbox})
		if err != nil || len(all) != len(ts) {
			t.Fatalf("List(%s) = %d emails, %v; want %d", inbox, len(all), err, len(ts))
		}
		if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].ReceivedAt.After(all[j].ReceivedAt) }) {
			t.Errorf("List(%s) is not in strictly decreasing receivedAt", inbox)
		}
	}
	// Page through "all" with before, as a client would.
	var read int
	q := storage.Query{LocalPart: "all", Limit: 7, NoBody: true}
	for range n {
		page, err := db.List(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		read += len(page)
		q.Before = page[len(page)-1].ReceivedAt
	}
	if read != n {
		t.Errorf("paging through all with Before read %d emails, want %d", read, n)
	}
}

// testFilterLiterals: filters are substrings under Unicode case folding,
// with % and _ taken literally (no SQL wildcard leaks into an engine).
func testFilterLiterals(t *testing.T, open Opener) {
	db := open(t, Config{})
	for _, s := range []string{"100% off", "100 off", "a_b", "axb", "ΣΊΣΥΦΟΣ", "İstanbul", "ﬁle"} {
		msg := &storage.Message{Subject: ptr(s), Text: "body " + s, Raw: []byte("x")}
		if _, err := db.Deliver(context.Background(), msg, []string{"lit@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		q    storage.Query
		want []string
	}{
		{storage.Query{Subject: "%"}, []string{"100% off"}},
		{storage.Query{Subject: "0% O"}, []string{"100% off"}},
		{storage.Query{Body: "_"}, []string{"a_b"}},
		{storage.Query{Terms: []string{"a_b"}}, []string{"a_b"}},
		{storage.Query{Subject: "σίσυφος"}, []string{"ΣΊΣΥΦΟΣ"}},
		{storage.Query{Body: "σίσυφοσ"}, []string{"ΣΊΣΥΦΟΣ"}},
		{storage.Query{Subject: "FILE"}, []string{"ﬁle"}},
		{storage.Query{Subject: "i̇stanbul"}, []string{"İstanbul"}},
	} {
		tc.q.LocalPart = "lit"
		if got := ListSubjects(t, db, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

// testListNoBody: NoBody leaves Body nil and changes nothing else: the
// same emails in the same order, with every filter.
func testListNoBody(t *testing.T, open Opener) {
	db := open(t, Config{})
	for i, s := range []string{"alpha one", "beta two", "alpha three", "gamma"} {
		msg := &storage.Message{
			From: "s@x.org", Subject: ptr(s), Body: ptr("<p>" + strings.Repeat(s+" ", 100) + "</p>"), Text: s,
			Headers: []storage.Header{{Name: "X-N", Value: fmt.Sprint(i)}}, Raw: []byte("Subject: " + s + "\r\n\r\nx\r\n"),
		}
		if _, err := db.Deliver(context.Background(), msg, []string{"nb@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []storage.Query{
		{}, {Limit: 2}, {Subject: "alpha"}, {Body: "two"}, {Terms: []string{"alpha", "three"}},
		{Header: &storage.Header{Name: "x-n", Value: "2"}},
	} {
		q.LocalPart = "nb"
		with, err := db.List(context.Background(), q)
		if err != nil || len(with) == 0 {
			t.Fatalf("List(%+v) = %d emails, %v; want some", q, len(with), err)
		}
		q.NoBody = true
		without, err := db.List(context.Background(), q)
		if err != nil || len(without) != len(with) {
			t.Fatalf("List(%+v) = %d emails, %v; want %d", q, len(without), err, len(with))
		}
		for i := range with {
			if with[i].Body == nil || without[i].Body != nil {
				t.Errorf("List(%+v)[%d]: body %v with, %v without NoBody", q, i, with[i].Body, without[i].Body)
			}
			with[i].Body = nil
			a, b := with[i], without[i]
			if *a.Subject != *b.Subject {
				t.Errorf("List(%+v)[%d]: subject %q with NoBody, want %q", q, i, *b.Subject, *a.Subject)
			}
			a.Subject, b.Subject = nil, nil
			if a != b {
				t.Errorf("List(%+v)[%d] = %+v with NoBody, want %+v", q, i, without[i], with[i])
			}
		}
	}
}
