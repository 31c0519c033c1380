package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"burner/storage"
)

// testHeaderAsReceived: the header filter looks at the fields as the
// message carried them, any of a name, and a field the message lacks
// matches nothing, not even an empty value.
func testHeaderAsReceived(t *testing.T, open Opener) {
	db := open(t, Config{})
	for i, date := range []string{"Mon, 2 Mar 2026 10:00:00 +0000", "Tue, 3 Mar 2026 10:00:00 +0000"} {
		msg := &storage.Message{Subject: ptr(fmt.Sprint("m", i)), Raw: []byte("Date: " + date + "\r\n\r\nx"),
			Headers: []storage.Header{{Name: "Date", Value: date}, {Name: "X-Test-Run", Value: fmt.Sprint("run ", i)}, {Name: "DKIM-Signature", Value: "v=1; d=Example.COM"}}}
		if _, err := db.Deliver(context.Background(), msg, []string{"h@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		h    storage.Header
		want []string
	}{
		{storage.Header{Name: "date", Value: "3 MAR"}, []string{"m1"}},
		{storage.Header{Name: "Date", Value: "2026"}, []string{"m1", "m0"}},
		{storage.Header{Name: "Received", Value: "by"}, nil},
		{storage.Header{Name: "dkim-signature", Value: "d=example.com"}, []string{"m1", "m0"}},
		{storage.Header{Name: "X-Test-Run", Value: "RUN 0"}, []string{"m0"}},
		{storage.Header{Name: "Received", Value: ""}, nil},
	} {
		if got := ListSubjects(t, db, storage.Query{LocalPart: "h", Header: &tc.h}); !slices.Equal(got, tc.want) {
			t.Errorf("List(header %v) = %q, want %q", tc.h, got, tc.want)
		}
	}
}

// testListFrom: the sender filter (spec §14) is a substring of the
// sender's address or of its display name under Unicode case folding,
// never of the two run together, and combines with every other filter,
// with paging, and with a wait (which lists after its wake-up).
func testListFrom(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := NewClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
	db := open(t, Config{Now: clk.Now})
	var ids []string
	add := func(subject, fromName, from, text string) {
		t.Helper()
		clk.Advance(time.Second)
		msg := &storage.Message{From: from, FromName: fromName, Subject: ptr(subject), Body: ptr(text), Text: text, Raw: []byte("x")}
		es, err := db.Deliver(ctx, msg, []string{"in@x.org"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, es[0].ID)
	}
	add("welcome", "Grüße GmbH", "hello@shop.example", "Click to confirm your address")
	add("code", "Bank", "noreply@bank.example", "Your one time code is 4242")
	add("offer", "", "100%_off@deals.example", "Buy now")
	add("second code", "Bank", "alerts@bank.example", "Your code is 9999")
	add("news", "ΣΊΣΥΦΟΣ Press", "news@press.example", "Today")
	for _, tc := range []struct {
		q    storage.Query
		want []string
	}{
		{storage.Query{From: "BANK.example"}, []string{"second code", "code"}},
		{storage.Query{From: "bank"}, []string{"second code", "code"}},
		{storage.Query{From: "grüsse"}, []string{"welcome"}},      // the name, folded
		{storage.Query{From: "GRÜSSE gmbh"}, []string{"welcome"}}, // spaces are literal
		{storage.Query{From: "σίσυφος press"}, []string{"news"}},  // Unicode folding
		{storage.Query{From: "GmbH hello"}, nil},                  // not across name and address
		{storage.Query{From: "GmbH\nhello"}, nil},                 // nor across a line break
		{storage.Query{From: "%_off"}, []string{"offer"}},         // no wildcard
		{storage.Query{From: "_"}, []string{"offer"}},             // no wildcard
		{storage.Query{From: "nobody"}, nil},
		{storage.Query{From: "noreply@"}, []string{"code"}},
		{storage.Query{From: "bank", Subject: "second"}, []string{"second code"}},
		{storage.Query{From: "bank", Body: "4242"}, []string{"code"}},
		{storage.Query{From: "bank", Terms: []string{"9999"}}, []string{"second code"}},
		{storage.Query{From: "example", Terms: []string{"bank"}, Body: "code"}, []string{"second code", "code"}},
		{storage.Query{From: "bank", Header: &storage.Header{Name: "X-None", Value: "x"}}, nil},
		{storage.Query{From: "bank", Limit: 1}, []string{"second code"}},
		{storage.Query{From: "shop", Limit: 1}, []string{"welcome"}}, // the newest four do not match
		{storage.Query{From: "bank", BeforeID: ids[3]}, []string{"code"}},
		{storage.Query{From: "example", AfterID: ids[2]}, []string{"news", "second code"}},
		{storage.Query{From: "bank", Since: time.Date(2026, 4, 1, 9, 0, 3, 0, time.UTC)}, []string{"second code"}},
		{storage.Query{From: "bank", Before: time.Date(2026, 4, 1, 9, 0, 3, 0, time.UTC)}, []string{"code"}},
		{storage.Query{From: "bank", NoBody: true}, []string{"second code", "code"}},
	} {
		tc.q.LocalPart = "in"
		if got := ListSubjects(t, db, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}

	// A wait: take the channel, then list; a delivery wakes the inbox,
	// and the list after it shows what the filter takes, only that.
	changed := db.Changed("in")
	if got := ListSubjects(t, db, storage.Query{LocalPart: "in", From: "late", Since: clk.Now()}); got != nil {
		t.Fatalf("List(from late) before the delivery = %q, want none", got)
	}
	add("late one", "Late Sender", "late@x.example", "hi")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("Changed(in) not closed 10 s after a delivery")
	}
	if got := ListSubjects(t, db, storage.Query{LocalPart: "in", From: "LATE", Since: clk.Now().Add(-2 * time.Second)}); !slices.Equal(got, []string{"late one"}) {
		t.Errorf("List(from LATE) after the wake-up = %q, want [late one]", got)
	}
}
