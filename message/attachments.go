package message

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"burner/storage"
)

// The files of a message are found by the walk that finds its text
// (walk.go), shared by the list and the download so that both number them
// alike. What one walk may cost is bounded, since anyone can send a message
// of 200,000 tiny parts: it reads at most MaxParts parts, no deeper than
// maxDepth, and the list keeps MaxListedFiles files and counts the rest.
// server computes the list on first use and stores it
// (storage.Attachments), so SMTP ingest pays nothing for it and later
// requests do not walk at all.
const (
	// MaxListedFiles bounds the files a list holds, and so the size of the
	// JSON answer and of the email page; the rest are counted in More.
	MaxListedFiles = 1000
	// MaxNameBytes bounds a file's name, type and content id as listed
	// (the most most file systems take in a name).
	MaxNameBytes = 255
	// AttachmentRules is the version of the rules of the package doc and
	// of this file, stored with each list (storage.Attachments.Rules):
	// changing what counts as a file, how files are named or the bounds
	// above must bump it, so that lists stored under the old rules are
	// computed again. 2: one walk decides text or file for delivery and
	// the files alike (a named text part is the body when it is the first
	// of its kind).
	AttachmentRules = 2
)

// File is one file carried by a message, with its data.
type File struct {
	Filename    string
	ContentType string // media type, without parameters
	ContentID   string // without angle brackets; "" when none
	Data        []byte // transfer encoding decoded
}

// walkFiles calls fn with each file of raw, numbered from 0 in the order
// they appear (see the package doc for what is a file), and every attached
// message whole. fn gets the file's description (Size unset) and its body,
// transfer encoding decoded; a body fn does not read is skipped undecoded.
// The walk ends when fn returns false, and partial reports whether it
// stopped at MaxParts with parts unread.
func walkFiles(raw []byte, fn func(i int, a storage.Attachment, body io.Reader) bool) (partial bool) {
	br := getReader(bytes.NewReader(raw))
	defer putReader(br)
	// An unknown charset still gives the bytes, which is what a file is.
	_, e, err := readEntity(br)
	if e.Entity == nil {
		return false
	}
	files := 0
	w := walker{file: func(p part) bool {
		if p.text {
			return true
		}
		i := files
		files++
		name := p.name
		if name == "" {
			name = defaultName(p.mediaType, i+1)
		}
		a := storage.Attachment{
			Filename:    clip(name),
			ContentType: clip(p.mediaType),
			ContentID:   clip(strings.Trim(p.Header.Get("Content-Id"), "<> ")),
		}
		return fn(i, a, p.Body)
	}}
	w.walk(e, err, 0)
	return w.partial
}

// clip cuts s to at most MaxNameBytes, at a rune boundary.
func clip(s string) string {
	if len(s) <= MaxNameBytes {
		return s
	}
	s = s[:MaxNameBytes]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// Attachments returns the list of raw's files: the first MaxListedFiles,
// each size counted by decoding its body into a counter, never holding it,
// and the number of the others.
func Attachments(raw []byte) storage.Attachments {
	out := storage.Attachments{Rules: AttachmentRules}
	out.Partial = walkFiles(raw, func(i int, a storage.Attachment, body io.Reader) bool {
		if i >= MaxListedFiles {
			out.More++
			return true
		}
		// A body that stops decoding is a file of what it decoded to.
		a.Size, _ = io.Copy(io.Discard, body)
		out.Files = append(out.Files, a)
		return true
	})
	return out
}

// Attachment returns the file of raw whose index is n in Attachments'
// list. Only listed files are served: the others are in the source. It
// decodes that file alone, and reads no part past it.
func Attachment(raw []byte, n int) (File, bool) {
	if n < 0 || n >= MaxListedFiles {
		return File{}, false
	}
	var (
		out   File
		found bool
	)
	walkFiles(raw, func(i int, a storage.Attachment, body io.Reader) bool {
		if i < n {
			return true
		}
		data, _ := io.ReadAll(body) // as Attachments: what decoded
		out, found = File{Filename: a.Filename, ContentType: a.ContentType, ContentID: a.ContentID, Data: data}, true
		return false
	})
	return out, found
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
