package server

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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

// TestContentDisposition: a download names its file in ASCII too (spec
// §14), safe in the quoted string and on a disk, and never empty, beside
// the name itself in filename*, which Go's own parser reads back.
func TestContentDisposition(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"report.pdf", `attachment; filename=report.pdf`},
		{"run 42.txt", `attachment; filename="run 42.txt"`},
		{"Rechnung-Ä.pdf", `attachment; filename="Rechnung-A.pdf"; filename*=UTF-8''Rechnung-%C3%84.pdf`},
		{"Straße Café.txt", `attachment; filename="Strasse Cafe.txt"; filename*=UTF-8''Stra%C3%9Fe%20Caf%C3%A9.txt`},
		{"Ærø ﬁle.doc", `attachment; filename="AEro file.doc"; filename*=UTF-8''%C3%86r%C3%B8%20%EF%AC%81le.doc`},
		{"日本語.pdf", `attachment; filename="attachment.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E.pdf`},
		{"Отчёт 2026.xlsx", `attachment; filename="_ 2026.xlsx"; filename*=UTF-8''%D0%9E%D1%82%D1%87%D1%91%D1%82%202026.xlsx`},
		{`a"b\c/d.txt`, `attachment; filename="a_b_c_d.txt"; filename*=UTF-8''a%22b%5Cc%2Fd.txt`},
		{"evil\r\nX-Header: 1.txt", `attachment; filename="evil_X-Header: 1.txt"; filename*=UTF-8''evil%0D%0AX-Header%3A%201.txt`},
		{".bashrc", `attachment; filename="_bashrc"; filename*=UTF-8''.bashrc`},
		{"  ü", `attachment; filename="u"; filename*=UTF-8''%20%20%C3%BC`},
		{"€", `attachment; filename="attachment"; filename*=UTF-8''%E2%82%AC`},
		{"", `attachment; filename="attachment"`},
	} {
		got := contentDisposition(tc.name)
		if got != tc.want {
			t.Errorf("contentDisposition(%q) =\n%s\nwant\n%s", tc.name, got, tc.want)
		}
		if strings.ContainsAny(got, "\r\n") {
			t.Errorf("contentDisposition(%q) = %q, which breaks the header", tc.name, got)
		}
		disp, params, err := mime.ParseMediaType(got)
		if tc.name != "" && (err != nil || disp != "attachment" || params["filename"] != strings.ToValidUTF8(tc.name, "\uFFFD")) {
			t.Errorf("mime.ParseMediaType(%q) = %q, %q, %v; want attachment, filename %q", got, disp, params, err, tc.name)
		}
	}
	long := strings.Repeat("é", 300) + ".pdf"
	if ascii := asciiFilename(long); len(ascii) != maxASCIIFilename || !strings.HasSuffix(ascii, ".pdf") {
		t.Errorf("asciiFilename(300 × é .pdf) = %q (%d bytes); want %d bytes ending in .pdf", ascii, len(ascii), maxASCIIFilename)
	}
}

// FuzzASCIIFilename: whatever the name, the ASCII one is printable ASCII,
// not empty, without a quote, backslash or slash, not hidden, and fits a
// file system's name.
func FuzzASCIIFilename(f *testing.F) {
	for _, s := range []string{"Rechnung-Ä.pdf", "日本語", `"\/`, ".", "..", " . ", "\x00\xff", "a.\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := asciiFilename(name)
		if got == "" || len(got) > maxASCIIFilename || got[0] == '.' || got[0] == ' ' || strings.ContainsAny(got, `"\/`) {
			t.Fatalf("asciiFilename(%q) = %q", name, got)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < ' ' || got[i] >= 0x7f {
				t.Fatalf("asciiFilename(%q) = %q, with byte %#x", name, got, got[i])
			}
		}
	})
}

// TestCurlSavesFileNames: curl -OJ, which reads filename= and never
// filename*, saves every download under a name of its own (spec §14):
// an API attachment and a UI attachment of a non-ASCII name in ASCII, and
// the UI's .eml under the email's id. It used to save the first two as
// "0", the last segment of their URL.
func TestCurlSavesFileNames(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is not installed, and CI=true needs this test to run (.ci/run installs it)")
		}
		t.Skip("curl is not installed: this test runs the real curl -OJ (.ci/run installs it)")
	}
	u := newUI(t, Options{})
	u.login()
	const pdf = "%PDF-1.4 Rechnung"
	e := u.deliver("alice@example.com", storage.Message{Raw: []byte("Subject: invoice\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*=UTF-8''Rechnung-%C3%84.pdf\r\n\r\n" + pdf + "\r\n--b--\r\n")})
	srvURL, _ := url.Parse(u.srv.URL)
	var session string
	for _, c := range u.client.Jar.Cookies(srvURL) {
		if c.Name == sessionCookie {
			session = c.Name + "=" + c.Value
		}
	}
	if session == "" {
		t.Fatal("no session cookie after login")
	}
	for _, tc := range []struct {
		what, path, header, file, content string
	}{
		{"an API attachment", "/api/v1/emails/" + e.ID + "/attachments/0", "Authorization: Bearer " + u.key, "Rechnung-A.pdf", pdf},
		{"a UI attachment", "/email/" + e.ID + "/attachments/0", "Cookie: " + session, "Rechnung-A.pdf", pdf},
		{"the UI's source download", "/email/" + e.ID + "/download", "Cookie: " + session, e.ID + ".eml", "Subject: invoice"},
	} {
		dir := t.TempDir()
		cmd := exec.Command(curl, "--silent", "--show-error", "--fail", "--remote-name", "--remote-header-name",
			"--max-time", "30", "--header", tc.header, u.srv.URL+tc.path)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("curl -OJ %s: %v\n%s", tc.path, err, out)
			continue
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, f := range entries {
			names = append(names, f.Name())
		}
		if len(names) != 1 || names[0] != tc.file {
			t.Errorf("curl -OJ of %s saved %q, want %q", tc.what, names, tc.file)
			continue
		}
		if data, err := os.ReadFile(filepath.Join(dir, tc.file)); err != nil || !strings.Contains(string(data), tc.content) {
			t.Errorf("curl -OJ of %s saved %q (%v), want it to hold %q", tc.what, data, err, tc.content)
		}
	}
}
