package boltdb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"burner/storage"
	"burner/storage/storetest"
)

// TestBackupWhileDelivering takes a hot backup while mail keeps arriving:
// the copy opens, checks clean and holds a consistent prefix of the mail.
func TestBackupWhileDelivering(t *testing.T) {
	db := openDB(t, Options{})
	storetest.DeliverMany(t, db, 50, func(i int) (string, string) { return fmt.Sprint("before ", i), "alice@x.org" })
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			deliver(t, db, fmt.Sprint("during ", i), "alice@x.org", "bob@x.org")
		}
	})
	var buf bytes.Buffer
	n, err := db.Backup(context.Background(), &buf)
	close(stop)
	wg.Wait()
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("Backup = %d, %v; wrote %d bytes", n, err, buf.Len())
	}
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	copyDB, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open the backup: %v", err)
	}
	defer copyDB.Close()
	r, err := copyDB.Check(context.Background())
	if err != nil || !r.OK() {
		t.Fatalf("Check of the backup = %+v, %v", r, err)
	}
	alice := storetest.ListSubjects(t, copyDB, storage.Query{LocalPart: "alice"})
	bob := storetest.ListSubjects(t, copyDB, storage.Query{LocalPart: "bob"})
	if len(alice) < 50 || len(alice)-50 != len(bob) {
		t.Errorf("the backup has %d emails for alice and %d for bob; want the 50 before and as many during as bob", len(alice), len(bob))
	}
}

func TestSnapshot(t *testing.T) {
	db := openDB(t, Options{})
	deliver(t, db, "kept", "alice@x.org")
	s, err := db.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Mail committed after the snapshot is not in it. (The delivery may
	// wait for the snapshot's Close when the file must grow its map.)
	delivered := make(chan struct{})
	go func() { defer close(delivered); deliver(t, db, "after", "alice@x.org") }()
	var buf bytes.Buffer
	if n, err := s.WriteTo(&buf); err != nil || n != s.Size() {
		t.Fatalf("WriteTo = %d, %v; Size %d", n, err, s.Size())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	<-delivered
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	path := filepath.Join(t.TempDir(), "snap.db")
	os.WriteFile(path, buf.Bytes(), 0o600)
	snap, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if got := storetest.ListSubjects(t, snap, storage.Query{LocalPart: "alice"}); !slices.Equal(got, []string{"kept"}) {
		t.Errorf("snapshot holds %v, want what was there when it was taken", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.Snapshot(ctx); err == nil {
		t.Error("Snapshot with a canceled context succeeded")
	}
}
