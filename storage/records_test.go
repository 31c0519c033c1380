package storage

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestAppendFold(t *testing.T) {
	for _, s := range []string{
		"", "plain ascii", "MiXeD Case 123", "Straße STRASSE", "ΣΊΣΥΦΟΣ ς", "ﬁ ligature", "İstanbul",
		"K\u212a Kelvin", "emoji 😀 and Ⅻ", "\xff\xfe invalid \xc3", "ǅ titlecase", "ａｂｃ ＡＢＣ",
	} {
		if got, want := string(appendFold(nil, s)), fold(s); got != want {
			t.Errorf("appendFold(%q) = %q, want fold's %q", s, got, want)
		}
	}
}

func FuzzAppendFold(f *testing.F) {
	f.Add("Straße")
	f.Add("ΣΊΣΥΦΟΣ")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendFold([]byte("x"), s)), "x"+fold(s); got != want {
			t.Fatalf("appendFold(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestAppendSearchText(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"", ""},
		{"One\nTwo", "one\ntwo"},
		// The plain part repeats the text of the HTML, wrapped otherwise.
		{"Hello Alice,\nYour order has shipped. Track it.\nhttps://x.test/1\nHello Alice,\n\nYour order has\nshipped. Track it: https://x.test/1",
			"hello alice,\nyour order has shipped. track it.\nhttps://x.test/1\nshipped. track it: https://x.test/1"},
		{"a\n\n\nb\na", "a\nb"},
	} {
		if got := string(appendSearchText(nil, tc.text)); got != tc.want {
			t.Errorf("appendSearchText(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	// Many distinct short lines: bounded work, every line kept.
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "%x\n", i*7919)
	}
	got := appendSearchText(nil, b.String())
	if n := bytes.Count(got, []byte("\n")); n < 150_000 {
		t.Errorf("appendSearchText of 200,000 distinct lines kept %d", n+1)
	}
}

// TestContentRoundTrip stores messages at the edges of the compact
// encoding and reads every part back; TestNewsletterRoundTrip does the same
// for a realistic one.
func TestContentRoundTrip(t *testing.T) {
	db := openDB(t, Options{})
	long := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 2000) // 114 KB
	for _, msg := range []*Message{
		{Raw: []byte("x")},
		{Subject: ptr("s"), Body: ptr(""), Text: "", Raw: []byte{}},
		{Subject: ptr("short"), Body: ptr("<p>hi</p>"), Text: "hi", Plain: "hi", Raw: []byte("Subject: short\r\n\r\nhi\r\n")},
		{Subject: ptr("long"), Body: ptr("<p>" + long + "</p>"), Text: long + "\n" + long, Plain: long,
			Links: []string{"https://a.test/", "mailto:b@c.test"}, Headers: []Header{{"X-Test-Run", "Run 42"}, {"Subject", "long"}},
			Raw: []byte("Subject: long\r\n\r\n" + long + long)},
	} {
		roundTrip(t, db, msg)
	}
	for _, q := range []Query{
		{Body: "DOLOR SIT"}, {Terms: []string{"long", "adipiscing"}}, {Header: &Header{"x-test-run", "RUN 42"}},
	} {
		q.LocalPart = "r"
		if got := list(t, db, q); !equal(got, []string{"long"}) {
			t.Errorf("List(%+v) = %q, want [long]", q, got)
		}
	}
}

// encodeOldContent is the content record of the layout before compression
// (records.go): files written then must read the same.
func encodeOldContent(refs int, msg *Message) []byte {
	var flags byte
	body := ""
	if msg.Body != nil {
		flags |= flagHasBody
		body = *msg.Body
	}
	b := binary.AppendUvarint(nil, uint64(refs))
	b = append(b, flags)
	b = appendString(b, body)
	b = binary.AppendUvarint(b, uint64(len(msg.Headers)))
	for _, h := range msg.Headers {
		b = appendString(b, strings.ToLower(h.Name))
		b = appendString(b, fold(h.Value))
	}
	b = appendString(b, msg.Plain)
	b = binary.AppendUvarint(b, uint64(len(msg.Links)))
	for _, l := range msg.Links {
		b = appendString(b, l)
	}
	return append(b, fold(msg.Text)...)
}

func TestOldRecordsRead(t *testing.T) {
	db := openDB(t, Options{})
	msg := &Message{From: "a@b.c", FromName: "Ann", Subject: ptr("Old times"), Body: ptr("<p>Hello <b>World</b></p>"),
		Text: "Hello World\nhttps://old.test/x", Plain: "Hello World", Links: []string{"https://old.test/x"},
		Headers: []Header{{"X-Test-Run", "Legacy 7"}}, Raw: []byte("Subject: Old times\r\n\r\nHello World\r\n")}
	got, err := db.Deliver(context.Background(), msg, []string{"old@x.org", "older@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the message as the old layout stored it.
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketContents)
		k, _ := c.Cursor().First()
		if err := c.Put(k, encodeOldContent(2, msg)); err != nil {
			return err
		}
		return tx.Bucket(bucketRaw).Put(k, msg.Raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	e, err := db.Email(context.Background(), got[0].ID)
	if err != nil || e.Body == nil || *e.Body != *msg.Body {
		t.Errorf("Email of an old record = %+v, %v", e, err)
	}
	if raw, err := db.Raw(context.Background(), got[0].ID); err != nil || !bytes.Equal(raw, msg.Raw) {
		t.Errorf("Raw of an old record = %q, %v", raw, err)
	}
	if c, err := db.Content(context.Background(), got[0].ID); err != nil || c.Plain != msg.Plain || fmt.Sprint(c.Links) != fmt.Sprint(msg.Links) {
		t.Errorf("Content of an old record = %+v, %v", c, err)
	}
	for _, q := range []Query{
		{}, {Body: "hello world"}, {Terms: []string{"ann", "WORLD"}}, {Header: &Header{"X-TEST-RUN", "legacy"}}, {Subject: "TIMES"},
	} {
		q.LocalPart = "old"
		if got := list(t, db, q); !equal(got, []string{"Old times"}) {
			t.Errorf("List(%+v) of an old record = %q, want [Old times]", q, got)
		}
	}
	// Deleting one copy rewrites the reference count of the old record.
	if err := db.Delete(context.Background(), got[0].ID); err != nil {
		t.Fatal(err)
	}
	if raw, err := db.Raw(context.Background(), got[1].ID); err != nil || !bytes.Equal(raw, msg.Raw) {
		t.Errorf("Raw of the other copy = %q, %v", raw, err)
	}
}

// roundTrip delivers msg to r@x.org and checks that its body, raw source,
// plain text and links read back as stored.
func roundTrip(t *testing.T, db *DB, msg *Message) {
	t.Helper()
	got, err := db.Deliver(context.Background(), msg, []string{"r@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	id := got[0].ID
	e, err := db.Email(context.Background(), id)
	if err != nil || (e.Body == nil) != (msg.Body == nil) || e.Body != nil && *e.Body != *msg.Body {
		t.Errorf("Email(%s).Body = %.40q, %v; want %.40q", id, deref(e.Body), err, deref(msg.Body))
	}
	raw, err := db.Raw(context.Background(), id)
	if err != nil || !bytes.Equal(raw, msg.Raw) {
		t.Errorf("Raw(%s) = %d bytes, %v; want the %d stored", id, len(raw), err, len(msg.Raw))
	}
	c, err := db.Content(context.Background(), id)
	if err != nil || c.Plain != msg.Plain || fmt.Sprint(c.Links) != fmt.Sprint(msg.Links) || len(c.Links) != len(msg.Links) {
		t.Errorf("Content(%s) = %.40q %q, %v; want %.40q %q", id, c.Plain, c.Links, err, msg.Plain, msg.Links)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestListParallel checks the filters over an inbox large enough for List
// to match on all cores against the same filters applied to the whole
// inbox, listed in order.
func TestListParallel(t *testing.T) {
	db := openDB(t, Options{})
	n := parallelScan + 100
	deliverMany(t, db, n, func(i int) (string, string) { return fmt.Sprintf("m%d tag%d", i, i%7), "big@x.org" })
	all := list(t, db, Query{LocalPart: "big"})
	if len(all) != n {
		t.Fatalf("List = %d emails, want %d", len(all), n)
	}
	for _, tc := range []struct {
		q    Query
		want func(subject string) bool
	}{
		{Query{Body: "TAG3"}, func(s string) bool { return strings.HasSuffix(s, " tag3") }},
		{Query{Body: "tag3", Limit: 10}, func(s string) bool { return strings.HasSuffix(s, " tag3") }},
		{Query{Terms: []string{"tag5", "m1"}, Limit: 7}, func(s string) bool { return strings.HasSuffix(s, " tag5") && strings.HasPrefix(s, "m1") }},
		{Query{Body: "m2099 "}, func(s string) bool { return strings.HasPrefix(s, "m2099 ") }},
		{Query{Body: "absent"}, func(string) bool { return false }},
	} {
		tc.q.LocalPart = "big"
		var want []string
		for _, s := range all {
			if tc.want(s) && (tc.q.Limit == 0 || len(want) < tc.q.Limit) {
				want = append(want, s)
			}
		}
		if got := list(t, db, tc.q); !equal(got, want) {
			t.Errorf("List(%+v) = %d emails %.80q, want %d %.80q", tc.q, len(got), got, len(want), want)
		}
	}
}

func TestHeaderFilterAsReceived(t *testing.T) {
	db := openDB(t, Options{})
	for i, date := range []string{"Mon, 2 Mar 2026 10:00:00 +0000", "Tue, 3 Mar 2026 10:00:00 +0000"} {
		msg := &Message{Subject: ptr(fmt.Sprint("m", i)), Raw: []byte("Date: " + date + "\r\n\r\nx"),
			Headers: []Header{{"Date", date}, {"X-Test-Run", fmt.Sprint("run ", i)}, {"DKIM-Signature", "v=1; d=Example.COM"}}}
		if _, err := db.Deliver(context.Background(), msg, []string{"h@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		h    Header
		want []string
	}{
		{Header{"date", "3 MAR"}, []string{"m1"}},
		{Header{"Date", "2026"}, []string{"m1", "m0"}},
		{Header{"Received", "by"}, nil},
		{Header{"dkim-signature", "d=example.com"}, []string{"m1", "m0"}},
		{Header{"X-Test-Run", "RUN 0"}, []string{"m0"}},
		{Header{"Received", ""}, nil},
	} {
		if got := list(t, db, Query{LocalPart: "h", Header: &tc.h}); !equal(got, tc.want) {
			t.Errorf("List(header %v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

// TestFoldConcurrently: fold shares one Caser between goroutines, which is
// safe only while x/text's Fold keeps no state; -race says if that changes.
func TestFoldConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if got := fold("Straße ÅNGSTRÖM"); got != "strasse ångström" {
					t.Errorf("fold = %q", got)
					return
				}
			}
		}()
	}
	wg.Wait()
}
