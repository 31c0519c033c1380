package storetest

import (
	"context"
	"errors"
	"testing"

	"burner/storage"
)

// testCanceledContext: a method called with a context already done fails
// with its error and changes nothing.
func testCanceledContext(t *testing.T, open Opener) {
	db := open(t, Config{Retention: storage.Retention{MaxAge: 1}}) // every email is due for Sweep
	e := deliver(t, db, "kept", "ctx@x.org")[0]
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() error{
		"Deliver": func() error {
			_, err := db.Deliver(ctx, &storage.Message{Subject: ptr("no"), Raw: []byte("x")}, []string{"ctx@x.org"})
			return err
		},
		"List":           func() error { _, err := db.List(ctx, storage.Query{LocalPart: "ctx"}); return err },
		"Email":          func() error { _, err := db.Email(ctx, e.ID); return err },
		"Raw":            func() error { _, err := db.Raw(ctx, e.ID); return err },
		"Content":        func() error { _, err := db.Content(ctx, e.ID); return err },
		"MarkRead":       func() error { return db.MarkRead(ctx, e.ID) },
		"Delete":         func() error { return db.Delete(ctx, e.ID) },
		"Clear":          func() error { _, err := db.Clear(ctx, "ctx"); return err },
		"Attachments":    func() error { _, _, err := db.Attachments(ctx, e.ID); return err },
		"PutAttachments": func() error { return db.PutAttachments(ctx, e.ID, storage.Attachments{Rules: 1}) },
		"Stats":          func() error { _, err := db.Stats(ctx); return err },
		"Inboxes":        func() error { _, err := db.Inboxes(ctx); return err },
		"RecentInboxes":  func() error { _, err := db.RecentInboxes(ctx, storage.InboxQuery{Limit: 1}); return err },
		"Sweep":          func() error { _, err := db.Sweep(ctx); return err },
		"CheckWritable":  func() error { return db.CheckWritable(ctx) },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context: err = %v, want context.Canceled", name, err)
		}
	}
	got, err := db.List(context.Background(), storage.Query{LocalPart: "ctx"})
	if err != nil || len(got) != 1 || got[0].ID != e.ID || got[0].Read {
		t.Errorf("List after the canceled calls = %+v, %v; want the one email, unread", got, err)
	}
	if _, ok, err := db.Attachments(context.Background(), e.ID); ok || err != nil {
		t.Errorf("Attachments after a canceled Put = %v, %v; want none stored", ok, err)
	}
}

// testClosed: a closed store refuses work with an error, and Close may be
// called again.
func testClosed(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	e := deliver(t, db, "s", "c@x.org")[0]
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := db.Deliver(ctx, &storage.Message{Raw: []byte("x")}, []string{"c@x.org"}); err == nil {
		t.Error("Deliver on a closed store succeeded")
	}
	if _, err := db.Email(ctx, e.ID); err == nil {
		t.Error("Email on a closed store succeeded")
	}
	if err := db.CheckWritable(ctx); err == nil {
		t.Error("CheckWritable on a closed store succeeded")
	}
	db.Close() // safe: the Opener's cleanup closes it once more too
}
