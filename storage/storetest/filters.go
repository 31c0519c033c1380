package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

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
