package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"burner/storage"
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

	res := c.call("GET", "/stats", "")
	var st ControlStats
	if res.status != 200 || json.Unmarshal([]byte(res.body), &st) != nil ||
		st.Emails != 3 || st.Inboxes != 2 || st.Keys != 1 || st.FileBytes <= 0 || st.Oldest == nil || *st.Oldest != "2025-03-14T15:09:26.535Z" {
		t.Errorf("GET /stats = %d %s", res.status, res.body)
	}

	res = c.call("GET", "/inboxes", "")
	var ins []ControlInbox
	if res.status != 200 || json.Unmarshal([]byte(res.body), &ins) != nil || len(ins) != 2 ||
		ins[0] != (ControlInbox{"alice", 2, "2025-03-14T15:09:29.535Z"}) || ins[1].Name != "bob" || ins[1].Emails != 1 {
		t.Errorf("GET /inboxes = %d %s", res.status, res.body)
	}

	res = c.call("GET", "/check", "")
	var ck ControlCheck
	if res.status != 200 || json.Unmarshal([]byte(res.body), &ck) != nil || ck.Emails != 3 || ck.Keys != 1 || len(ck.Problems) != 0 {
		t.Errorf("GET /check = %d %s", res.status, res.body)
	}

	res = c.call("GET", "/backup", "")
	if res.status != 200 || res.header.Get("Content-Type") != "application/octet-stream" || res.header.Get("Content-Length") != strconv.Itoa(len(res.body)) {
		t.Fatalf("GET /backup = %d %v, %d bytes", res.status, res.header, len(res.body))
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	os.WriteFile(path, []byte(res.body), 0o600)
	cp, err := storage.Open(path, storage.Options{})
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
