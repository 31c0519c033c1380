package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"burner/storage"
)

func testDeliverAndGet(t *testing.T, open Opener) {
	clk := NewClock(time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.UTC))
	db := open(t, Config{Now: clk.Now})
	msg := &storage.Message{From: "a@b.c", FromName: "A", Subject: nil, Body: nil, Text: "x", Raw: []byte("raw bytes")}
	got, err := db.Deliver(context.Background(), msg, []string{"Alice@example.com", "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID == got[1].ID {
		t.Fatalf("Deliver to 2 recipients returned %+v, want 2 emails with distinct ids", got)
	}
	e, err := db.Email(context.Background(), got[0].ID)
	if err != nil {
		t.Fatalf("Email(%s): %v", got[0].ID, err)
	}
	want := storage.Email{ID: got[0].ID, To: "Alice@example.com", From: "a@b.c", FromName: "A", ReceivedAt: time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)}
	if e != want {
		t.Errorf("Email = %+v, want %+v", e, want)
	}
	raw, err := db.Raw(context.Background(), got[1].ID)
	if err != nil || string(raw) != "raw bytes" {
		t.Errorf("Raw = %q, %v; want %q", raw, err, "raw bytes")
	}
	// Each recipient's copy has its own life.
	if err := db.Delete(context.Background(), got[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Email(context.Background(), got[0].ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Email after Delete: err = %v, want ErrNotFound", err)
	}
	if raw, err := db.Raw(context.Background(), got[1].ID); err != nil || string(raw) != "raw bytes" {
		t.Errorf("Raw of the other copy after Delete = %q, %v; want it kept", raw, err)
	}
	if err := db.Delete(context.Background(), got[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete(context.Background(), got[1].ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	for _, id := range []string{"", "not-a-uuid", "00000000-0000-0000-0000-000000000000",
		"urn:uuid:" + got[1].ID, "{" + got[1].ID + "}", strings.ReplaceAll(got[1].ID, "-", "")} {
		if _, err := db.Email(context.Background(), id); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Email(%q): err = %v, want ErrNotFound", id, err)
		}
	}
}

func testListFilters(t *testing.T, open Opener) {
	db := open(t, Config{})
	add := func(subject, fromName, from, text string) {
		t.Helper()
		msg := &storage.Message{From: from, FromName: fromName, Subject: ptr(subject), Body: ptr(text), Text: text, Raw: []byte("x")}
		if _, err := db.Deliver(context.Background(), msg, []string{"in@x.org"}); err != nil {
			t.Fatal(err)
		}
	}
	add("Welcome to Straße", "Grüße GmbH", "hello@shop.example", "Click https://shop.example/verify?t=1 to confirm")
	add("Your code", "Bank", "noreply@bank.example", "Your one time code is 4242")
	msg := &storage.Message{From: "x@y.z", Subject: nil, Body: nil, Text: "", Raw: []byte("x")}
	if _, err := db.Deliver(context.Background(), msg, []string{"in@x.org"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q    storage.Query
		want []string
	}{
		{storage.Query{Subject: "STRASSE"}, []string{"Welcome to Straße"}},
		{storage.Query{Subject: "code"}, []string{"Your code"}},
		{storage.Query{Subject: "nothing"}, nil},
		{storage.Query{Body: "VERIFY?T=1"}, []string{"Welcome to Straße"}},
		{storage.Query{Body: "4242"}, []string{"Your code"}},
		{storage.Query{Terms: []string{"bank", "4242"}}, []string{"Your code"}},
		{storage.Query{Terms: []string{"grüsse", "confirm"}}, []string{"Welcome to Straße"}},
		{storage.Query{Terms: []string{"shop.example"}}, []string{"Welcome to Straße"}},
		{storage.Query{Terms: []string{"time code"}}, []string{"Your code"}},
		{storage.Query{Terms: []string{"code time"}}, nil},
		{storage.Query{Terms: []string{"bank", "confirm"}}, nil},
	} {
		tc.q.LocalPart = "in"
		if got := ListSubjects(t, db, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func testClear(t *testing.T, open Opener) {
	db := open(t, Config{})
	DeliverMany(t, db, 260+3, func(i int) (string, string) { return fmt.Sprint("m", i), "bulk@x.org" })
	kept := deliver(t, db, "other", "bulk+1@x.org", "bulk@x.org")
	n, err := db.Clear(context.Background(), "BULK")
	if err != nil || n != 260+4 {
		t.Fatalf("Clear = %d, %v; want %d, nil", n, err, 260+4)
	}
	if got := ListSubjects(t, db, storage.Query{LocalPart: "bulk"}); len(got) != 0 {
		t.Errorf("List after Clear = %q, want none", got)
	}
	if got := ListSubjects(t, db, storage.Query{LocalPart: "bulk+1"}); !slices.Equal(got, []string{"other"}) {
		t.Errorf("List(bulk+1) after clearing bulk = %q, want [other]", got)
	}
	if raw, err := db.Raw(context.Background(), kept[0].ID); err != nil || len(raw) == 0 {
		t.Errorf("Raw of the copy in another inbox = %q, %v; want it kept", raw, err)
	}
	if n, err := db.Clear(context.Background(), "bulk"); n != 0 || err != nil {
		t.Errorf("Clear of an empty inbox = %d, %v; want 0, nil", n, err)
	}
}

func testMarkRead(t *testing.T, open Opener) {
	db := open(t, Config{})
	e := deliver(t, db, "s", "r@x.org")[0]
	if e.Read {
		t.Fatal("a new email is read")
	}
	for range 2 { // idempotent
		if err := db.MarkRead(context.Background(), e.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Email(context.Background(), e.ID)
	if err != nil || !got.Read || *got.Subject != "s" {
		t.Errorf("Email after MarkRead = %+v, %v; want read, subject kept", got, err)
	}
	if err := db.MarkRead(context.Background(), "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("MarkRead(unknown) = %v, want ErrNotFound", err)
	}
}

func testDeliverRejectsBadLocalPart(t *testing.T, open Opener) {
	db := open(t, Config{})
	msg := &storage.Message{Raw: []byte("x")}
	for _, to := range []string{"a b@x.org", "@x.org", "a\x00b@x.org", fmt.Sprintf("%065d@x.org", 0)} {
		if _, err := db.Deliver(context.Background(), msg, []string{to}); err == nil {
			t.Errorf("Deliver(%q) succeeded, want an error", to)
		}
	}
}

func testListAfterAndHeader(t *testing.T, open Opener) {
	clk := NewClock(time.Unix(1_700_000_000, 0))
	db := open(t, Config{Now: clk.Now})
	var es []storage.Email
	for i := range 4 {
		msg := &storage.Message{Subject: ptr(fmt.Sprint("m", i)), Raw: []byte("x"),
			Headers: []storage.Header{{Name: "X-Test-Run", Value: fmt.Sprint("Run ", i%2)}, {Name: "Subject", Value: fmt.Sprint("m", i)}}}
		got, err := db.Deliver(context.Background(), msg, []string{"h@x.org"})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, got[0])
	}
	other := deliver(t, db, "o", "other@x.org")[0]
	for _, tc := range []struct {
		q    storage.Query
		want []string
	}{
		{storage.Query{AfterID: es[1].ID}, []string{"m3", "m2"}},
		{storage.Query{BeforeID: es[2].ID}, []string{"m1", "m0"}},
		{storage.Query{BeforeID: es[3].ID, Limit: 2}, []string{"m2", "m1"}},
		{storage.Query{BeforeID: es[0].ID}, nil},
		{storage.Query{BeforeID: es[3].ID, AfterID: es[0].ID}, []string{"m2", "m1"}},
		{storage.Query{AfterID: es[3].ID}, nil},
		{storage.Query{Header: &storage.Header{Name: "x-test-RUN", Value: "run 1"}}, []string{"m3", "m1"}},
		{storage.Query{Header: &storage.Header{Name: "X-Test-Run", Value: "RUN"}}, []string{"m3", "m2", "m1", "m0"}},
		{storage.Query{Header: &storage.Header{Name: "X-Other", Value: "run"}}, nil},
		{storage.Query{Header: &storage.Header{Name: "X-Test-Run", Value: "run 0"}, Subject: "m2"}, []string{"m2"}},
		{storage.Query{Header: &storage.Header{Name: "X-Test-Run", Value: "run 0"}, AfterID: es[0].ID}, []string{"m2"}},
	} {
		tc.q.LocalPart = "h"
		if got := ListSubjects(t, db, tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("List(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
	for _, after := range []string{other.ID, "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11", "junk"} {
		if _, err := db.List(context.Background(), storage.Query{LocalPart: "h", AfterID: after}); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("List(AfterID: %s) err = %v, want ErrNotFound", after, err)
		}
		if _, err := db.List(context.Background(), storage.Query{LocalPart: "h", BeforeID: after}); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("List(BeforeID: %s) err = %v, want ErrNotFound", after, err)
		}
	}
}

func testChanged(t *testing.T, open Opener) {
	db := open(t, Config{})
	alice, alice2, bob := db.Changed("alice"), db.Changed("ALICE"), db.Changed("bob")
	if alice != alice2 {
		t.Error("Changed(alice) and Changed(ALICE) differ; waiters of one inbox share a channel")
	}
	deliver(t, db, "s", "Alice@x.org")
	select {
	case <-alice:
	default:
		t.Error("Changed(alice) not closed by a delivery to Alice@")
	}
	select {
	case <-bob:
		t.Error("Changed(bob) closed by a delivery to alice")
	default:
	}
	if next := db.Changed("alice"); next == alice {
		t.Error("Changed(alice) after a delivery returned the closed channel")
	}
}

func testContent(t *testing.T, open Opener) {
	db := open(t, Config{})
	msg := &storage.Message{Subject: ptr("s"), Plain: "Hello\nworld", Links: []string{"https://a.test/1", "mailto:x@y.z"}, Raw: []byte("x")}
	e, err := db.Deliver(context.Background(), msg, []string{"c@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.Content(context.Background(), e[0].ID)
	if err != nil || got.Plain != msg.Plain || !slices.Equal(got.Links, msg.Links) {
		t.Errorf("Content = %+v, %v; want plain %q and links %q", got, err, msg.Plain, msg.Links)
	}
	if _, err := db.Content(context.Background(), "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Content(unknown) err = %v, want ErrNotFound", err)
	}
}
