package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decoded filenames in any charset

	"burner/storage"
)

// The files of a message are found by one walk of its MIME tree, shared by
// the list and the download so that both number them alike. What one walk
// may cost is bounded, since anyone can send a message of 200,000 tiny
// parts: it reads at most maxWalkedParts parts, no deeper than
// maxPartDepth, and the list keeps maxListedFiles files and counts the rest.
// The list is computed on first use and stored (storage.Attachments), so
// SMTP ingest pays nothing for it and later requests do not walk at all.
const (
	// maxPartDepth bounds how deep a walk looks into nested multiparts; a
	// message nested deeper is hostile.
	maxPartDepth = 16
	// maxWalkedParts bounds the parts one walk reads: about 20 ms of CPU
	// for parts of a byte (BenchmarkAttachments).
	// A walk that stops there marks its list Partial.
	maxWalkedParts = 10_000
	// maxListedFiles bounds the files a list holds, and so the size of the
	// JSON answer and of the email page; the rest are counted in More.
	maxListedFiles = 1000
	// maxNameBytes bounds a file's name, type and content id as listed
	// (the most most file systems take in a name).
	maxNameBytes = 255
	// attachmentRules is the version of the rules below, stored with each
	// list (storage.Attachments.Rules): changing what counts as a file, how
	// files are named or the bounds above must bump it, so that lists stored
	// under the old rules are computed again.
	attachmentRules = 1
)

// attachment is one file carried by a message, with its data.
type attachment struct {
	Filename    string
	ContentType string // media type, without parameters
	ContentID   string // without angle brackets; "" when none
	Data        []byte // transfer encoding decoded
}

// walkFiles calls fn with each file of raw, numbered from 0 in the order
// they appear: every leaf part that is not a message's text (an attachment
// disposition, a file name, or a type other than text/plain and text/html),
// and every attached message/rfc822 whole. fn gets the file's description
// (Size unset) and its body, transfer encoding decoded; a body fn does not
// read is skipped undecoded. The walk ends when fn returns false, and
// partial reports whether it stopped at maxWalkedParts with parts unread.
func walkFiles(raw []byte, fn func(i int, a storage.Attachment, body io.Reader) bool) (partial bool) {
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		return false
	}
	_ = err // an unknown charset still gives the bytes, which is what a file is
	w := walker{fn: fn}
	w.entity(e, 0)
	return w.partial
}

// walker is the state of one walkFiles.
type walker struct {
	fn      func(i int, a storage.Attachment, body io.Reader) bool
	parts   int  // parts read
	files   int  // files found
	done    bool // fn returned false
	partial bool // stopped at maxWalkedParts
}

func (w *walker) entity(e *message.Entity, depth int) {
	if depth > maxPartDepth {
		return
	}
	if mr := e.MultipartReader(); mr != nil {
		for !w.done && !w.partial {
			p, err := mr.NextPart()
			if p == nil || (err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err)) {
				return
			}
			if w.parts++; w.parts > maxWalkedParts {
				w.partial = true
				return
			}
			w.entity(p, depth+1)
		}
		return
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
	i := w.files
	w.files++
	if name == "" {
		name = defaultName(mediaType, i+1)
	}
	a := storage.Attachment{
		Filename:    clip(name),
		ContentType: clip(mediaType),
		ContentID:   clip(strings.Trim(e.Header.Get("Content-Id"), "<> ")),
	}
	if !w.fn(i, a, e.Body) {
		w.done = true
	}
}

// clip cuts s to at most maxNameBytes, at a rune boundary.
func clip(s string) string {
	if len(s) <= maxNameBytes {
		return s
	}
	s = s[:maxNameBytes]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// listAttachments computes the list of raw's files: the first
// maxListedFiles, each size counted by decoding its body into a counter,
// never holding it, and the number of the others.
func listAttachments(raw []byte) storage.Attachments {
	out := storage.Attachments{Rules: attachmentRules}
	out.Partial = walkFiles(raw, func(i int, a storage.Attachment, body io.Reader) bool {
		if i >= maxListedFiles {
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

// attachmentN returns the file of raw whose index is n, as a URL writes it
// (decimal, no sign, no leading zeros). Only listed files are served: the
// others are in the source. It decodes that file alone, and reads no part
// past it.
func attachmentN(raw []byte, n string) (attachment, bool) {
	want, err := strconv.Atoi(n)
	if err != nil || want < 0 || want >= maxListedFiles || n != strconv.Itoa(want) {
		return attachment{}, false
	}
	var (
		out   attachment
		found bool
	)
	walkFiles(raw, func(i int, a storage.Attachment, body io.Reader) bool {
		if i < want {
			return true
		}
		data, _ := io.ReadAll(body) // as listAttachments: what decoded
		out, found = attachment{Filename: a.Filename, ContentType: a.ContentType, ContentID: a.ContentID, Data: data}, true
		return false
	})
	return out, found
}

// attachmentList returns the list of the files of email id: the stored
// one, or else one computed from the source and stored for next time.
func (s *Server) attachmentList(ctx context.Context, id string) (storage.Attachments, error) {
	a, ok, err := s.db.Attachments(ctx, id)
	if err != nil || (ok && a.Rules == attachmentRules) {
		return a, err
	}
	raw, err := s.db.Raw(ctx, id)
	if err != nil {
		return storage.Attachments{}, err
	}
	a = listAttachments(raw)
	if err := s.db.PutAttachments(ctx, id, a); err != nil {
		// The list is right, only not kept: the next request computes it again.
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return storage.Attachments{}, err // deleted meanwhile
		case errors.Is(err, storage.ErrFull):
			s.log.WarnContext(ctx, "attachment list not stored", "email_id", id, "err", err)
		default:
			s.log.ErrorContext(ctx, "attachment list not stored", "email_id", id, "err", err)
		}
	}
	return a, nil
}

// attachmentsJSON returns the wire form of a's files.
func attachmentsJSON(a storage.Attachments) []attachmentJSON {
	out := make([]attachmentJSON, len(a.Files))
	for i, f := range a.Files {
		out[i] = attachmentJSON{Index: i, Filename: f.Filename, ContentType: f.ContentType, Size: int(f.Size), ContentID: f.ContentID}
	}
	return out
}

// fileList is what the email page shows of a message's files.
type fileList struct {
	Files   []attachmentJSON
	More    int  // files beyond Files
	Partial bool // burner stopped reading the message: there may be more than More
}

func newFileList(a storage.Attachments) fileList {
	return fileList{Files: attachmentsJSON(a), More: a.More, Partial: a.Partial}
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

// writeAttachment sends a file always as a download, and sandboxed: an
// HTML or SVG file from a stranger must never run as burner's page.
func writeAttachment(w http.ResponseWriter, a attachment) {
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	writeBytes(w, a.ContentType, a.Data)
}
