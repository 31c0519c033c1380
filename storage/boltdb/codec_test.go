package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"
	"burner/storage/storetest"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// TestContentRoundTrip stores messages at the edges of the compact
// encoding and reads every part back; TestNewsletterRoundTrip does the same
// for a realistic one.
func TestContentRoundTrip(t *testing.T) {
	db := openDB(t, Options{})
	long := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 2000) // 114 KB
	for _, msg := range []*storage.Message{
		{Raw: []byte("x")},
		{Subject: ptr("s"), Body: ptr(""), Text: "", Raw: []byte{}},
		{Subject: ptr("short"), Body: ptr("<p>hi</p>"), Text: "hi", Plain: "hi", Raw: []byte("Subject: short\r\n\r\nhi\r\n")},
		{Subject: ptr("long"), Body: ptr("<p>" + long + "</p>"), Text: long + "\n" + long, Plain: long,
			Links: []string{"https://a.test/", "mailto:b@c.test"}, Headers: []storage.Header{{Name: "X-Test-Run", Value: "Run 42"}, {Name: "Subject", Value: "long"}},
			Raw: []byte("Subject: long\r\n\r\n" + long + long)},
	} {
		roundTrip(t, db, msg)
	}
	for _, q := range []storage.Query{
		{Body: "DOLOR SIT"}, {Terms: []string{"long", "adipiscing"}}, {Header: &storage.Header{Name: "x-test-run", Value: "RUN 42"}},
	} {
		q.LocalPart = "r"
		if got := storetest.ListSubjects(t, db, q); !slices.Equal(got, []string{"long"}) {
			t.Errorf("List(%+v) = %q, want [long]", q, got)
		}
	}
}

// encodeOldContent is the content record of the layout before compression
// (codec.go, legacy.go): files written then must read the same.
func encodeOldContent(refs int, msg *storage.Message) []byte {
	var flags byte
	body := ""
	if msg.Body != nil {
		flags |= flagHasBody
		body = *msg.Body
	}
	b := binary.AppendUvarint(nil, uint64(refs))
	b = append(b, flags)
	b = record.AppendString(b, body)
	b = binary.AppendUvarint(b, uint64(len(msg.Headers)))
	for _, h := range msg.Headers {
		b = record.AppendString(b, strings.ToLower(h.Name))
		b = record.AppendString(b, match.Fold(h.Value))
	}
	b = record.AppendString(b, msg.Plain)
	b = binary.AppendUvarint(b, uint64(len(msg.Links)))
	for _, l := range msg.Links {
		b = record.AppendString(b, l)
	}
	return append(b, match.Fold(msg.Text)...)
}

func TestOldRecordsRead(t *testing.T) {
	db := openDB(t, Options{})
	msg := &storage.Message{From: "a@b.c", FromName: "Ann", Subject: ptr("Old times"), Body: ptr("<p>Hello <b>World</b></p>"),
		Text: "Hello World\nhttps://old.test/x", Plain: "Hello World", Links: []string{"https://old.test/x"},
		Headers: []storage.Header{{Name: "X-Test-Run", Value: "Legacy 7"}}, Raw: []byte("Subject: Old times\r\n\r\nHello World\r\n")}
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
	if c, err := db.Content(context.Background(), got[0].ID); err != nil || c.Plain != msg.Plain || !slices.Equal(c.Links, msg.Links) {
		t.Errorf("Content of an old record = %+v, %v", c, err)
	}
	for _, q := range []storage.Query{
		{}, {Body: "hello world"}, {Terms: []string{"ann", "WORLD"}}, {Header: &storage.Header{Name: "X-TEST-RUN", Value: "legacy"}}, {Subject: "TIMES"},
	} {
		q.LocalPart = "old"
		if got := storetest.ListSubjects(t, db, q); !slices.Equal(got, []string{"Old times"}) {
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
func roundTrip(t *testing.T, db *DB, msg *storage.Message) {
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
	if err != nil || c.Plain != msg.Plain || !slices.Equal(c.Links, msg.Links) {
		t.Errorf("Content(%s) = %.40q %q, %v; want %.40q %q", id, c.Plain, c.Links, err, msg.Plain, msg.Links)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// encodeTwoBlockContent is the content record of the compact layout before
// flagOneBlock: the search text in an s2 block of its own, then the body
// section in one with the text as its dictionary. Its raw value is the
// same as today's (the same hot section is its dictionary).
func encodeTwoBlockContent(refs int, msg *storage.Message) []byte {
	flags := byte(flagCompact)
	body := ""
	if msg.Body != nil {
		flags |= flagHasBody
		body = *msg.Body
	}
	text := match.AppendSearchText(nil, msg.Text)
	section := record.AppendHeaders(record.AppendString(nil, body), msg.Headers)
	b := binary.AppendUvarint(nil, uint64(refs))
	b = append(b, flags)
	b = record.AppendString(b, s2.EncodeBetter(nil, text))
	if d := textDict(text); d != nil {
		return append(b, d.Encode(nil, section)...)
	}
	return append(b, s2.Encode(nil, section)...)
}

// TestTwoBlockRecordsRead: records written before flagOneBlock read as
// they did, through every path that decodes content.
func TestTwoBlockRecordsRead(t *testing.T) {
	db := openDB(t, Options{})
	long := strings.Repeat("a longer text, so that it serves as a dictionary. ", 20)
	for i, msg := range []*storage.Message{
		{From: "a@b.c", FromName: "Ann", Subject: ptr("Two blocks"), Body: ptr("<p>Hello <b>World</b> " + long + "</p>"),
			Text: "Hello World " + long, Plain: "Hello World", Links: []string{"https://two.test/x"},
			Headers: []storage.Header{{Name: "X-Test-Run", Value: "Legacy 8"}}, Raw: []byte("Subject: Two blocks\r\n\r\nHello World " + long + "\r\n")},
		{From: "a@b.c", Subject: ptr("Two blocks"), Text: "short", Raw: []byte("Subject: Two blocks\r\n\r\nshort\r\n")}, // no body, no dictionary
	} {
		local := fmt.Sprintf("two%d", i)
		got, err := db.Deliver(context.Background(), msg, []string{local + "@x.org"})
		if err != nil {
			t.Fatal(err)
		}
		err = db.bolt.Update(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketContents)
			k, _ := c.Cursor().Last()
			return c.Put(k, encodeTwoBlockContent(1, msg))
		})
		if err != nil {
			t.Fatal(err)
		}
		e, err := db.Email(context.Background(), got[0].ID)
		if err != nil || (e.Body == nil) != (msg.Body == nil) || e.Body != nil && *e.Body != *msg.Body {
			t.Errorf("Email of a two-block record = %+v, %v", e, err)
		}
		if raw, err := db.Raw(context.Background(), got[0].ID); err != nil || !bytes.Equal(raw, msg.Raw) {
			t.Errorf("Raw of a two-block record = %q, %v", raw, err)
		}
		if c, err := db.Content(context.Background(), got[0].ID); err != nil || c.Plain != msg.Plain || !slices.Equal(c.Links, msg.Links) {
			t.Errorf("Content of a two-block record = %+v, %v", c, err)
		}
		queries := []storage.Query{{}, {Terms: []string{"two", "BLOCKS"}}, {Subject: "blocks"}}
		if msg.Body != nil {
			queries = append(queries, storage.Query{Body: "hello world"}, storage.Query{Header: &storage.Header{Name: "X-TEST-RUN", Value: "legacy"}})
		}
		for _, q := range queries {
			q.LocalPart = local
			if got := storetest.ListSubjects(t, db, q); !slices.Equal(got, []string{"Two blocks"}) {
				t.Errorf("List(%+v) of a two-block record = %q, want [Two blocks]", q, got)
			}
		}
	}
}
