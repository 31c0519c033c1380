package server

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decoded filenames in any charset
)

// attachment is one file carried by a message.
type attachment struct {
	Filename    string
	ContentType string // media type, without parameters
	ContentID   string // without angle brackets; "" when none
	Data        []byte // transfer encoding decoded
}

// maxPartDepth bounds how deep attachments looks into nested multiparts; a
// message nested deeper is hostile.
const maxPartDepth = 16

// attachments returns the files of raw, in the order they appear: every
// leaf part that is not a message's text (an attachment disposition, a
// file name, or a type other than text/plain and text/html), and every
// attached message/rfc822 whole.
func attachments(raw []byte) []attachment {
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		return nil
	}
	_ = err // an unknown charset still gives the bytes, which is what a file is
	var out []attachment
	walkParts(e, 0, &out)
	return out
}

func walkParts(e *message.Entity, depth int, out *[]attachment) {
	if depth > maxPartDepth {
		return
	}
	if mr := e.MultipartReader(); mr != nil {
		for {
			p, err := mr.NextPart()
			if p == nil || (err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err)) {
				return
			}
			walkParts(p, depth+1, out)
		}
	}
	mediaType, params, _ := e.Header.ContentType()
	if mediaType == "" {
		mediaType = "text/plain"
	}
	disp, dparams, _ := e.Header.ContentDisposition()
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	isText := mediaType == "text/plain" || mediaType == "text/html"
	if !strings.EqualFold(disp, "attachment") && name == "" && isText {
		return // the message's own text
	}
	data, err := io.ReadAll(e.Body)
	if err != nil && len(data) == 0 {
		return
	}
	if name == "" {
		name = defaultName(mediaType, len(*out)+1)
	}
	*out = append(*out, attachment{
		Filename:    name,
		ContentType: mediaType,
		ContentID:   strings.Trim(e.Header.Get("Content-Id"), "<> "),
		Data:        data,
	})
}

// extensions name the files their messages did not name. A fixed table,
// not mime.ExtensionsByType: that reads the host's mime.types, and the same
// mail would get other names on other machines.
var extensions = map[string]string{
	"application/pdf": ".pdf", "image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif",
	"image/webp": ".webp", "image/svg+xml": ".svg", "text/calendar": ".ics", "text/csv": ".csv",
	"text/plain": ".txt", "text/html": ".html", "message/rfc822": ".eml", "application/zip": ".zip",
	"application/json": ".json",
}

// defaultName names a file its message did not name, after its type.
func defaultName(mediaType string, n int) string {
	ext, ok := extensions[mediaType]
	if !ok {
		ext = ".bin"
	}
	return fmt.Sprintf("attachment-%d%s", n, ext)
}

// attachmentN returns the file of raw whose index is n, as a URL writes it
// (decimal, no sign, no leading zeros).
func attachmentN(raw []byte, n string) (attachment, bool) {
	files := attachments(raw)
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 || i >= len(files) || n != strconv.Itoa(i) {
		return attachment{}, false
	}
	return files[i], true
}

// writeAttachment sends a file always as a download, and sandboxed: an
// HTML or SVG file from a stranger must never run as burner's page.
func writeAttachment(w http.ResponseWriter, a attachment) {
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	writeBytes(w, a.ContentType, a.Data)
}
