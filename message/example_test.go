package message_test

import (
	"fmt"

	"burner/message"
)

// Parse reads a message as received: the sender's name decoded from its
// encoded word, the subject, and an HTML body that is safe to show (the
// script and the handler are gone, the link opens on its own), with the
// links a test follows.
func ExampleParser_Parse() {
	raw := "From: =?UTF-8?Q?Caf=C3=A9_Shop?= <shop@example.com>\r\n" +
		"To: alice@example.test\r\n" +
		"Subject: Confirm your account\r\n" +
		"Content-Type: text/html; charset=utf-8\r\n" +
		"\r\n" +
		"<p onclick=\"steal()\">Confirm at <a href=\"https://example.com/c?t=42\">this link</a>.</p><script>steal()</script>\r\n"
	p := message.New(0) // built once, shared by every delivery
	m, err := p.Parse([]byte(raw), "bounces@example.com")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s <%s>\n", m.FromName, m.From)
	fmt.Println(*m.Subject)
	fmt.Println(*m.Body)
	fmt.Println(m.Links)
	// Output:
	// Café Shop <shop@example.com>
	// Confirm your account
	// <p>Confirm at <a href="https://example.com/c?t=42" rel="nofollow noopener" target="_blank">this link</a>.</p>
	// [https://example.com/c?t=42]
}

// Attachments lists a message's files without holding any of them, and
// Attachment decodes the one asked for.
func ExampleAttachments() {
	raw := []byte("From: a@example.com\r\nSubject: report\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: text/plain\r\n\r\nThe report is attached.\r\n" +
		"--b\r\nContent-Type: text/csv; name=\"q1.csv\"\r\nContent-Disposition: attachment; filename=\"q1.csv\"\r\n" +
		"Content-Transfer-Encoding: base64\r\n\r\nbW9udGgsdG90YWwKamFuLDQyCg==\r\n" +
		"--b--\r\n")
	for i, f := range message.Attachments(raw).Files {
		fmt.Println(i, f.Filename, f.ContentType, f.Size)
	}
	f, _ := message.Attachment(raw, 0)
	fmt.Printf("%q\n", f.Data)
	// Output:
	// 0 q1.csv text/csv 19
	// "month,total\njan,42\n"
}
