package message

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"burner/storage"
)

// nestedFiles returns a message of four files around an alternative body,
// nested; server's attachment tests deliver the same file.
func nestedFiles(tb testing.TB) []byte {
	return mustRead(tb, "testdata/nested-files.eml")
}

func TestAttachments(t *testing.T) {
	raw := nestedFiles(t)
	want := []File{
		{Filename: "report.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4\n")},
		{Filename: "attachment-2.png", ContentType: "image/png", ContentID: "logo@x", Data: []byte("\x89PNG\r\n\x1a\n")},
		{Filename: "résumé.txt", ContentType: "text/plain", Data: []byte("notes")},
		{Filename: "attachment-4.eml", ContentType: "message/rfc822", Data: []byte("Subject: inner\r\n\r\nforwarded")},
	}
	list := Attachments(raw)
	wantList := storage.Attachments{Rules: AttachmentRules}
	for i, w := range want {
		wantList.Files = append(wantList.Files, storage.Attachment{Filename: w.Filename, ContentType: w.ContentType, ContentID: w.ContentID, Size: int64(len(w.Data))})
		got, ok := Attachment(raw, i)
		if !ok || !reflect.DeepEqual(got, w) {
			t.Errorf("Attachment(%d) = %q, %v; want %q", i, got, ok, w)
		}
	}
	if !reflect.DeepEqual(list, wantList) {
		t.Errorf("Attachments =\n%+v\nwant\n%+v", list, wantList)
	}
	if got, ok := Attachment(raw, 4); ok {
		t.Errorf("Attachment(4) of 4 files = %q, want none", got)
	}
	if got := Attachments([]byte("Subject: plain\r\n\r\njust text\r\n")); len(got.Files) != 0 || got.More != 0 || got.Partial {
		t.Errorf("Attachments of a plain message = %+v, want none", got)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("a", MaxNameBytes-1) + "é.pdf" // é straddles the cut
	if got := clip(long); got != strings.Repeat("a", MaxNameBytes-1) || !utf8.ValidString(got) {
		t.Errorf("clip(%d bytes ending é.pdf) = %d bytes %q..., want the a's alone", len(long), len(got), got[len(got)-5:])
	}
	if got := clip("short.pdf"); got != "short.pdf" {
		t.Errorf("clip(short.pdf) = %q", got)
	}
	raw := "Subject: x\r\nContent-Type: application/pdf; name=\"" + strings.Repeat("n", 1000) + "\"\r\n\r\n%PDF\r\n"
	if got := Attachments([]byte(raw)); len(got.Files) != 1 || len(got.Files[0].Filename) != MaxNameBytes {
		t.Errorf("Attachments of a 1000-byte name = %+v, want the name cut to %d bytes", got, MaxNameBytes)
	}
}

// TestAttachmentEncodedName: senders write encoded words (RFC 2047) in
// file names although RFC 2047 §5 forbids them there; readers decode them,
// and so does the list.
func TestAttachmentEncodedName(t *testing.T) {
	raw := "Subject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: application/pdf; name=\"=?UTF-8?B?w6l0w6kucGRm?=\"\r\n\r\n%PDF\r\n--b--\r\n"
	if got := Attachments([]byte(raw)); len(got.Files) != 1 || got.Files[0].Filename != "été.pdf" {
		t.Errorf("Attachments of a file named in an encoded word = %+v, want été.pdf", got)
	}
}
