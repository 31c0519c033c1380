package storetest

import (
	"context"
	"fmt"
	"testing"

	"burner/storage"
)

// testAttachmentsReplaced: an index holds any file name and size, and a
// later Put through any copy of the message replaces it, also with an
// index of no files.
func testAttachmentsReplaced(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	es := deliver(t, db, "files", "alice@x.org", "bob@x.org")
	first := storage.Attachments{
		Files: []storage.Attachment{
			{Filename: "report.pdf", ContentType: "application/pdf", Size: 1 << 40},
			{Filename: "résumé 😀.txt", ContentType: "text/plain", ContentID: "x@y", Size: 0},
		},
		More: 7, Partial: true, Rules: 3,
	}
	empty := storage.Attachments{Rules: 1}
	for _, step := range []struct {
		put storage.Email
		idx storage.Attachments
	}{{es[0], first}, {es[1], empty}} {
		if err := db.PutAttachments(ctx, step.put.ID, step.idx); err != nil {
			t.Fatalf("PutAttachments(%s): %v", step.put.To, err)
		}
		for _, e := range es {
			got, ok, err := db.Attachments(ctx, e.ID)
			if err != nil || !ok || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", step.idx) {
				t.Errorf("Attachments(%s) after a Put through %s = %+v, %v, %v; want %+v", e.To, step.put.To, got, ok, err, step.idx)
			}
		}
	}
}
