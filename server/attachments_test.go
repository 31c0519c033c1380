package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"burner/message"
	"burner/storage"
	"burner/storage/boltdb"
)

// nestedFiles returns message's test message of four files around an
// alternative body, nested.
func nestedFiles(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("../message/testdata/nested-files.eml")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// manyFiles returns a message of n files, the i-th named f<i>.bin and
// holding "data <i>", after one text part.
func manyFiles(n int) []byte {
	var b strings.Builder
	b.WriteString("Subject: many\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n")
	for i := range n {
		fmt.Fprintf(&b, "--b\r\nContent-Type: application/octet-stream; name=f%d.bin\r\n\r\ndata %d\r\n", i, i)
	}
	b.WriteString("--b--\r\n")
	return []byte(b.String())
}

func TestAttachmentsCapped(t *testing.T) {
	for _, tc := range []struct {
		files     int
		listed    int
		more      string // X-Attachments-More
		partial   string // X-Attachments-Partial
		wantMore  int
		wantParts bool
	}{
		{files: message.MaxListedFiles, listed: message.MaxListedFiles},
		{files: message.MaxListedFiles + 5, listed: message.MaxListedFiles, more: "5", wantMore: 5},
		// The text part is a part too: the walk reads message.MaxParts-1 files.
		{files: message.MaxParts + 10, listed: message.MaxListedFiles, more: strconv.Itoa(message.MaxParts - 1 - message.MaxListedFiles), partial: "true",
			wantMore: message.MaxParts - 1 - message.MaxListedFiles, wantParts: true},
	} {
		t.Run(strconv.Itoa(tc.files), func(t *testing.T) {
			a := newAPI(t)
			raw := manyFiles(tc.files)
			e := a.deliver("alice@example.com", storage.Message{Raw: raw})
			res := a.call("GET", "/api/v1/emails/"+e.ID+"/attachments")
			var got []attachmentJSON
			if err := json.Unmarshal([]byte(res.body), &got); res.status != 200 || err != nil {
				t.Fatalf("GET attachments = %d %v", res.status, err)
			}
			if len(got) != tc.listed || got[len(got)-1] != (attachmentJSON{Index: tc.listed - 1, Filename: fmt.Sprintf("f%d.bin", tc.listed-1),
				ContentType: "application/octet-stream", Size: len(fmt.Sprintf("data %d", tc.listed-1))}) {
				t.Errorf("GET attachments of %d files listed %d ending %+v, want %d", tc.files, len(got), got[len(got)-1], tc.listed)
			}
			if m, p := res.header.Get("X-Attachments-More"), res.header.Get("X-Attachments-Partial"); m != tc.more || p != tc.partial {
				t.Errorf("GET attachments of %d files: X-Attachments-More %q, X-Attachments-Partial %q; want %q, %q", tc.files, m, p, tc.more, tc.partial)
			}
			stored, ok, err := a.db.Attachments(context.Background(), e.ID)
			if err != nil || !ok || len(stored.Files) != tc.listed || stored.More != tc.wantMore || stored.Partial != tc.wantParts {
				t.Errorf("stored list: %d files, %d more, partial %v (%v, %v); want %d, %d, %v",
					len(stored.Files), stored.More, stored.Partial, ok, err, tc.listed, tc.wantMore, tc.wantParts)
			}
			// The last listed file is served; the files past the list
			// are in the source only.
			last := strconv.Itoa(tc.listed - 1)
			if res := a.call("GET", "/api/v1/emails/"+e.ID+"/attachments/"+last); res.status != 200 || res.body != "data "+last {
				t.Errorf("GET attachments/%s = %d %q, want data %s", last, res.status, res.body, last)
			}
			wantJSON(t, "GET the file past the list", a.call("GET", "/api/v1/emails/"+e.ID+"/attachments/"+strconv.Itoa(tc.listed)), 404, `{"error":"Attachment not found"}`)
		})
	}
}

// TestAttachmentListStored checks that the list is computed once, on first
// use, for an email stored without one (as every email delivered before
// lists were kept), and read from storage afterwards.
func TestAttachmentListStored(t *testing.T) {
	ctx := context.Background()
	a := newAPI(t)
	raw := nestedFiles(t)
	msg := storage.Message{Raw: raw}
	emails, err := a.db.Deliver(ctx, &msg, []string{"alice@example.com", "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := emails[0], emails[1]
	if _, ok, err := a.db.Attachments(ctx, alice.ID); ok || err != nil {
		t.Fatalf("Attachments before first use = %v, %v; want none stored", ok, err)
	}
	first := a.call("GET", "/api/v1/emails/"+alice.ID+"/attachments")
	stored, ok, err := a.db.Attachments(ctx, bob.ID)
	if want := message.Attachments(raw); err != nil || !ok || !reflect.DeepEqual(stored, want) {
		t.Fatalf("after the first listing, the stored list (of bob's copy, the same message) is %+v, %v, %v; want %+v", stored, ok, err, want)
	}
	if second := a.call("GET", "/api/v1/emails/"+bob.ID+"/attachments"); second.status != 200 || second.body != first.body {
		t.Errorf("second listing = %d %s, want the first's %s", second.status, second.body, first.body)
	}
	// A list stored under the current rules is answered as stored, without
	// a walk: change it behind the server's back and the answer follows.
	stored.Files[0].Filename = "from-storage.pdf"
	if err := a.db.PutAttachments(ctx, alice.ID, stored); err != nil {
		t.Fatal(err)
	}
	if res := a.call("GET", "/api/v1/emails/"+alice.ID+"/attachments"); !strings.Contains(res.body, `"from-storage.pdf"`) {
		t.Errorf("listing with a stored list = %s, want the stored list", res.body)
	}
	// One of other rules is computed again, and replaced.
	stored.Rules = message.AttachmentRules + 1
	if err := a.db.PutAttachments(ctx, alice.ID, stored); err != nil {
		t.Fatal(err)
	}
	if res := a.call("GET", "/api/v1/emails/"+alice.ID+"/attachments"); res.body != first.body {
		t.Errorf("listing with a list of other rules = %s, want it computed again: %s", res.body, first.body)
	}
	if got, _, _ := a.db.Attachments(ctx, alice.ID); got.Rules != message.AttachmentRules {
		t.Errorf("stored list has rules %d after recomputing, want %d", got.Rules, message.AttachmentRules)
	}

	// Deleting a copy keeps the list for the other; deleting the last
	// leaves no list behind (Check finds none astray).
	wantNoContent(t, "DELETE alice's copy", a.call("DELETE", "/api/v1/emails/"+alice.ID))
	if _, ok, err := a.db.Attachments(ctx, bob.ID); !ok || err != nil {
		t.Errorf("bob's list after deleting alice's copy: %v, %v; want it kept", ok, err)
	}
	wantNoContent(t, "DELETE bob's copy", a.call("DELETE", "/api/v1/emails/"+bob.ID))
	if r, err := a.db.Check(ctx); err != nil || !r.OK() || r.Messages != 0 {
		t.Errorf("Check after deleting both copies = %+v, %v; want a sound, empty file", r, err)
	}
	wantJSON(t, "GET attachments of a deleted email", a.call("GET", "/api/v1/emails/"+bob.ID+"/attachments"), 404, `{"error":"Email not found"}`)
}

// TestAttachmentOfManyParts serves files from the middle and the end of
// the list of a message of thousands of parts, and checks each is the
// right file.
func TestAttachmentOfManyParts(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{Raw: manyFiles(5000)})
	for _, n := range []int{0, 1, 437, message.MaxListedFiles - 1} {
		res := a.call("GET", fmt.Sprintf("/api/v1/emails/%s/attachments/%d", e.ID, n))
		if want := fmt.Sprintf("data %d", n); res.status != 200 || res.body != want ||
			res.header.Get("Content-Disposition") != fmt.Sprintf("attachment; filename=f%d.bin", n) ||
			res.header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("GET attachments/%d = %d %q %v; want %q as f%d.bin", n, res.status, res.body, res.header, want, n)
		}
	}
}

func TestUIEmailAttachmentSummary(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	e := u.deliver("alice@example.com", storage.Message{Subject: ptr("many"), Raw: manyFiles(message.MaxListedFiles + 3)})
	res := u.get("/email/" + e.ID)
	wantPage(t, "GET the email page of 1,003 files", res, http.StatusOK,
		`href="/email/`+e.ID+`/attachments/999"`, "… and 3 more files: ", `<a href="/email/`+e.ID+`/download">download the source</a>`)
	if strings.Contains(res.body, `/attachments/1000"`) {
		t.Error("the email page links a file past the list")
	}
	if _, ok, err := u.db.Attachments(context.Background(), e.ID); !ok || err != nil {
		t.Errorf("after the email page, the list is stored: %v, %v; want it stored", ok, err)
	}
	// The page of a message the walk stopped in says "at least".
	stopped := u.deliver("alice@example.com", storage.Message{Subject: ptr("more"), Raw: manyFiles(message.MaxParts + 1)})
	wantPage(t, "GET the email page of a message read in part", u.get("/email/"+stopped.ID), http.StatusOK,
		fmt.Sprintf("… and at least %d more files: ", message.MaxParts-1-message.MaxListedFiles))
	one := u.deliver("alice@example.com", storage.Message{Subject: ptr("one more"), Raw: manyFiles(message.MaxListedFiles + 1)})
	wantPage(t, "GET the email page of 1,001 files", u.get("/email/"+one.ID), http.StatusOK, "… and 1 more file: ")
	// A message read in part before any file was found may still have some.
	var texts strings.Builder
	texts.WriteString("Subject: texts\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n")
	for range message.MaxParts + 1 {
		texts.WriteString("--b\r\n\r\nx\r\n")
	}
	texts.WriteString("--b--\r\n")
	maybe := u.deliver("alice@example.com", storage.Message{Subject: ptr("texts"), Raw: []byte(texts.String())})
	wantPage(t, "GET the email page of a message of text parts read in part", u.get("/email/"+maybe.ID), http.StatusOK, "… and maybe more files: ")
	// And a message of few files says nothing more.
	few := u.deliver("alice@example.com", storage.Message{Subject: ptr("few"), Raw: manyFiles(2)})
	if res := u.get("/email/" + few.ID); res.status != 200 || strings.Contains(res.body, "more files") || !strings.Contains(res.body, "f1.bin") {
		t.Errorf("GET the email page of 2 files = %d, want both files and no summary:\n%s", res.status, res.body)
	}
}

// TestAttachmentListWhenFull checks that a list the file has no room to
// keep is still answered, and computed again next time. Two messages of
// long names fit the file (their sources compress well); so does the list
// of one of them, but not then the other's.
func TestAttachmentListWhenFull(t *testing.T) {
	ctx := context.Background()
	db := openDBWith(t, boltdb.Options{Retention: storage.Retention{MaxBytes: 1 << 20}})
	long := strings.Repeat("n", message.MaxNameBytes)
	var raw strings.Builder
	raw.WriteString("Subject: long names\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n")
	for i := range message.MaxListedFiles {
		fmt.Fprintf(&raw, "--b\r\nContent-Type: application/%s\r\nContent-ID: <%s>\r\nContent-Disposition: attachment; filename=%s%d\r\n\r\nx\r\n", long, long, long[:250], i)
	}
	raw.WriteString("--b--\r\n")
	var ids []string
	for range 2 {
		es, err := db.Deliver(ctx, &storage.Message{Raw: []byte(raw.String())}, []string{"alice@example.com"})
		if err != nil {
			t.Fatalf("Deliver: %v", err)
		}
		ids = append(ids, es[0].ID)
	}
	s := New(db, Options{}, testLogger(t))
	full := withScope(ctx, storage.Scope{}) // as a request with a key of full scope
	for i, stored := range []bool{true, false, false} {
		id := ids[min(i, 1)]
		a, err := s.attachmentList(full, id)
		if err != nil || len(a.Files) != message.MaxListedFiles || a.Files[999].Filename != long[:250]+"999" {
			t.Fatalf("attachmentList #%d = %d files, %v; want %d", i, len(a.Files), err, message.MaxListedFiles)
		}
		if _, ok, err := db.Attachments(ctx, id); ok != stored || err != nil {
			t.Errorf("after attachmentList #%d the list is stored: %v, %v; want %v", i, ok, err, stored)
		}
	}
}
