package server

import (
	"fmt"
	"testing"
)

func TestAttachments(t *testing.T) {
	raw := "From: a@example.com\r\nSubject: files\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=outer\r\n\r\n" +
		"--outer\r\nContent-Type: multipart/alternative; boundary=inner\r\n\r\n" +
		"--inner\r\nContent-Type: text/plain\r\n\r\nhello\r\n" +
		"--inner\r\nContent-Type: text/html\r\n\r\n<p>hello</p>\r\n" +
		"--inner--\r\n" +
		"--outer\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"report.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n" +
		"--outer\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n" +
		"--outer\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Disposition: attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt\r\n\r\nnotes\r\n" +
		"--outer\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\nforwarded\r\n" +
		"--outer--\r\n"
	got := attachments([]byte(raw))
	want := []attachment{
		{Filename: "report.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4\n")},
		{Filename: "attachment-2.png", ContentType: "image/png", ContentID: "logo@x", Data: []byte("\x89PNG\r\n\x1a\n")},
		{Filename: "résumé.txt", ContentType: "text/plain", Data: []byte("notes")},
		{Filename: "attachment-4.eml", ContentType: "message/rfc822", Data: []byte("Subject: inner\r\n\r\nforwarded")},
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("attachments =\n%q\nwant\n%q", got, want)
	}
	if got := attachments([]byte("Subject: plain\r\n\r\njust text\r\n")); len(got) != 0 {
		t.Errorf("attachments of a plain message = %q, want none", got)
	}
}
