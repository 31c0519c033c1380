package server

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/boltdb"
)

func TestControlAdmin(t *testing.T) {
	c := newControl(t)
	ctx := context.Background()
	for _, to := range []string{"alice@x.test", "bob@x.test", "alice@x.test"} {
		if _, err := c.db.Deliver(ctx, &storage.Message{Raw: []byte("Subject: hi\r\n\r\nhi\r\n")}, []string{to}); err != nil {
			t.Fatal(err)
		}
		c.clock.Advance(1500 * time.Millisecond)
	}
	c.create("ops")

	wantStats, err := c.db.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.client.Stats(ctx)
	if err != nil || st.Emails != 3 || st.Inboxes != 2 || st.Keys != 1 || st.FileBytes != wantStats.FileBytes ||
		!st.Oldest.Equal(time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC)) {
		t.Errorf("Stats() = %+v, %v; want %+v", st, err, wantStats)
	}

	ins, err := c.client.Inboxes(ctx)
	if err != nil || len(ins) != 2 || ins[0].Name != "alice" || ins[0].Emails != 2 ||
		!ins[0].Newest.Equal(time.Date(2025, 3, 14, 15, 9, 29, 535_000_000, time.UTC)) || ins[1].Name != "bob" || ins[1].Emails != 1 {
		t.Errorf("Inboxes() = %+v, %v", ins, err)
	}

	ck, err := c.client.Check(ctx)
	if err != nil || ck.Emails != 3 || ck.Inboxes != 2 || ck.Keys != 1 || ck.SchemaVersion == 0 || !ck.OK() {
		t.Errorf("Check() = %+v, %v", ck, err)
	}

	res := c.call("GET", "/backup", "")
	if res.status != 200 || res.header.Get("Content-Type") != "application/octet-stream" || res.header.Get("Content-Length") != strconv.Itoa(len(res.body)) {
		t.Fatalf("GET /backup = %d %v, %d bytes", res.status, res.header, len(res.body))
	}
	snap, err := c.client.Snapshot(ctx)
	if err != nil {
		t.Fatalf("Snapshot(): %v", err)
	}
	var copied bytes.Buffer
	n, err := snap.WriteTo(&copied)
	snap.Close()
	if err != nil || n != snap.Size() || n != int64(copied.Len()) || n != int64(len(res.body)) {
		t.Fatalf("Snapshot().WriteTo = %d, %v; Size %d, wrote %d bytes; GET /backup sent %d", n, err, snap.Size(), copied.Len(), len(res.body))
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	os.WriteFile(path, copied.Bytes(), 0o600)
	cp, err := boltdb.Open(path, boltdb.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open the backup: %v", err)
	}
	defer cp.Close()
	if es, err := cp.List(ctx, storage.Query{LocalPart: "alice"}); err != nil || len(es) != 2 {
		t.Errorf("the backup lists %d emails for alice (%v), want 2", len(es), err)
	}
	if res := c.call("HEAD", "/backup", ""); res.status != 200 || res.header.Get("Content-Length") == "" || res.body != "" {
		t.Errorf("HEAD /backup = %d %v %q", res.status, res.header, res.body)
	}
	if res := c.call("POST", "/backup", ""); res.status != http.StatusMethodNotAllowed || res.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /backup = %d %v", res.status, res.header)
	}
}
