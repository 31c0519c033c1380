package storage

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestListNoBody: with NoBody, List answers the same emails in the same
// order, with every field but the body, filters and all.
func TestListNoBody(t *testing.T) {
	db := openDB(t, Options{})
	for i, s := range []string{"alpha one", "beta two", "alpha three", "gamma"} {
		msg := &Message{
			From: "s@x.org", Subject: ptr(s), Body: ptr("<p>" + strings.Repeat(s+" ", 100) + "</p>"), Text: s,
			Headers: []Header{{Name: "X-N", Value: string(rune('0' + i))}}, Raw: []byte("Subject: " + s + "\r\n\r\nx\r\n"),
		}
		if _, err := db.Deliver(context.Background(), msg, []string{"nb@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []Query{
		{LocalPart: "nb"},
		{LocalPart: "nb", Limit: 2},
		{LocalPart: "nb", Subject: "alpha"},
		{LocalPart: "nb", Body: "two"},
		{LocalPart: "nb", Terms: []string{"alpha", "three"}},
		{LocalPart: "nb", Header: &Header{Name: "x-n", Value: "2"}},
	} {
		full, err := db.List(context.Background(), q)
		if err != nil || len(full) == 0 {
			t.Fatalf("List(%+v) = %d emails, %v; want some", q, len(full), err)
		}
		q.NoBody = true
		bare, err := db.List(context.Background(), q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		for i := range full {
			if full[i].Body == nil {
				t.Errorf("List(%+v without NoBody)[%d] has no body", q, i)
			}
			full[i].Body = nil
		}
		if !slices.EqualFunc(full, bare, func(a, b Email) bool {
			return a.ID == b.ID && a.To == b.To && a.From == b.From && *a.Subject == *b.Subject &&
				a.ReceivedAt.Equal(b.ReceivedAt) && a.Read == b.Read && b.Body == nil
		}) {
			t.Errorf("List(%+v) = %+v, want %+v without bodies", q, bare, full)
		}
	}
}

// TestCheckWritableFull: CheckWritable fails with ErrFull while Deliver
// refuses mail for want of room, and passes again once room is made.
func TestCheckWritableFull(t *testing.T) {
	db := openDB(t, Options{MaxBytes: 256 << 10})
	if err := db.CheckWritable(context.Background()); err != nil {
		t.Fatalf("CheckWritable on a new file: %v", err)
	}
	// Random bytes, as they are stored compressed; healthRoom of them,
	// the size CheckWritable asks room for.
	raw := make([]byte, healthRoom)
	rand.NewChaCha8([32]byte{}).Read(raw)
	var err error
	for range 1000 { // bounded: the cap is reached after about 60
		if _, err = db.Deliver(context.Background(), &Message{Raw: raw}, []string{"fill@x.org"}); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrFull) {
		t.Fatalf("Deliver under a 256 KiB cap: err = %v, want ErrFull", err)
	}
	if err := db.CheckWritable(context.Background()); !errors.Is(err, ErrFull) {
		t.Errorf("CheckWritable while Deliver returns ErrFull: %v, want ErrFull", err)
	}
	if _, err := db.Clear(context.Background(), "fill"); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckWritable(context.Background()); err != nil {
		t.Errorf("CheckWritable after Clear: %v, want room again", err)
	}
}

func TestDiskFree(t *testing.T) {
	free, ok := diskFree(t.TempDir())
	switch runtime.GOOS {
	case "linux", "darwin", "freebsd":
		if !ok || free <= 0 {
			t.Errorf("diskFree(a temporary directory) = %d, %v; want a positive size", free, ok)
		}
	}
}
