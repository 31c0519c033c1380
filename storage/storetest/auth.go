package storetest

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"burner/storage"
)

// testAuth: the authentication record of spec §12 is written with its
// message (status pending), shared by the message's copies, replaced by
// PutAuth through any of them (waking the waiters of each), kept while a
// copy is left and gone with the last; a verdict for a deleted message is
// ErrNotFound, and a message stored without a record reads as off.
func testAuth(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	env := storage.Envelope{
		ClientIP: netip.MustParseAddr("203.0.113.7"), Helo: "mail.example.com", MailFrom: "",
		TLS: &storage.TLS{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256"},
	}
	pending := storage.AuthResult{Status: storage.AuthPending, Envelope: env}
	msg := &storage.Message{From: "a@example.com", Subject: ptr("auth"), Text: "auth", Raw: []byte("Subject: auth\r\n\r\nhi\r\n"), Auth: &pending}
	es, err := db.Deliver(ctx, msg, []string{"alice@x.org", "bob@x.org"})
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	plain := deliver(t, db, "no record", "carol@x.org")[0]
	check := func(id string, want storage.AuthResult) {
		t.Helper()
		got, err := db.Auth(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Auth(%s) = %+v, %v;\nwant %+v", id, got, err, want)
		}
	}
	for _, e := range es {
		check(e.ID, pending)
	}
	check(plain.ID, storage.AuthResult{Status: storage.AuthOff})

	done := storage.AuthResult{
		Status: storage.AuthDone, Envelope: env, PTR: "mail.example.com", FCrDNS: true,
		SPF:   storage.SPFResult{Result: storage.AuthPass, Domain: "mail.example.com"},
		DKIM:  []storage.DKIMResult{{Result: storage.AuthPass, Domain: "example.com", Selector: "s1"}},
		DMARC: storage.DMARCResult{Result: storage.AuthPass, Domain: "example.com", Policy: "reject", SPFAligned: true, DKIMAligned: true},
		AuthenticationResults: "mx.x.org; spf=pass smtp.helo=mail.example.com; dkim=pass header.d=example.com header.s=s1; " +
			"dmarc=pass header.from=example.com",
	}
	woken := []<-chan struct{}{db.AuthChanged(es[0].ID), db.AuthChanged(es[1].ID)}
	other := db.AuthChanged(plain.ID)
	if err := db.PutAuth(ctx, []string{es[0].ID, es[1].ID}, done); err != nil {
		t.Fatalf("PutAuth: %v", err)
	}
	for i, ch := range woken {
		select {
		case <-ch:
		default:
			t.Errorf("PutAuth left AuthChanged(%s) open", es[i].To)
		}
	}
	select {
	case <-other:
		t.Errorf("PutAuth of alice's and bob's message woke the waiters of carol's")
	default:
	}
	for _, e := range es {
		check(e.ID, done)
	}
	check(plain.ID, storage.AuthResult{Status: storage.AuthOff})

	// The record stays with the copy left, and a verdict through the
	// deleted copy's id reaches it.
	if err := db.Delete(ctx, es[0].ID); err != nil {
		t.Fatal(err)
	}
	check(es[1].ID, done)
	again := done
	again.SPF.Result = storage.AuthTempError
	if err := db.PutAuth(ctx, []string{es[0].ID, es[1].ID}, again); err != nil {
		t.Errorf("PutAuth with one copy left: %v", err)
	}
	check(es[1].ID, again)
	if _, err := db.Auth(ctx, es[0].ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Auth of a deleted email: %v, want ErrNotFound", err)
	}
	// Gone with the last copy: a late verdict is not found, and the store
	// holds no record of no message (Check).
	if err := db.Delete(ctx, es[1].ID); err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]string{{es[0].ID, es[1].ID}, {"not-an-id"}, {"0190d3c0-0000-7000-8000-000000000000"}, nil} {
		if err := db.PutAuth(ctx, ids, done); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("PutAuth(%q) = %v, want ErrNotFound", ids, err)
		}
	}
	if _, err := db.Auth(ctx, "not-an-id"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Auth(not-an-id) = %v, want ErrNotFound", err)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check after the last copy went: %+v, %v; want it sound", r, err)
	}

	// Retention takes the record with the message too.
	es, err = db.Deliver(ctx, msg, []string{"dave@x.org"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Clear(ctx, "dave"); err != nil {
		t.Fatal(err)
	}
	if err := db.PutAuth(ctx, []string{es[0].ID}, done); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("PutAuth after Clear = %v, want ErrNotFound", err)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check after Clear: %+v, %v; want it sound", r, err)
	}
}
