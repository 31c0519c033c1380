package server

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"burner/message"
	"burner/storage"
)

// attachmentN returns the file of raw whose index is n, as a URL writes it
// (decimal, no sign, no leading zeros), or false.
func attachmentN(raw []byte, n string) (message.File, bool) {
	i, err := strconv.Atoi(n)
	if err != nil || n != strconv.Itoa(i) {
		return message.File{}, false
	}
	return message.Attachment(raw, i)
}

// attachmentList returns the list of the files of email id: the stored
// one, or else one computed from the source and stored for next time.
func (s *Server) attachmentList(ctx context.Context, id string) (storage.Attachments, error) {
	a, ok, err := s.db.Attachments(ctx, id)
	if err != nil || (ok && a.Rules == message.AttachmentRules) {
		return a, err
	}
	raw, err := s.db.Raw(ctx, id)
	if err != nil {
		return storage.Attachments{}, err
	}
	a = message.Attachments(raw)
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

// writeAttachment sends a file always as a download, and sandboxed: an
// HTML or SVG file from a stranger must never run as burner's page.
func writeAttachment(w http.ResponseWriter, a message.File) {
	w.Header().Set("Content-Disposition", contentDisposition(a.Filename))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	writeBytes(w, a.ContentType, a.Data)
}

// contentDisposition returns the Content-Disposition of a download of a
// file called name (spec §14). A name of plain, safe ASCII goes as it is;
// any other goes twice: filename= in ASCII (asciiFilename), for the
// clients that read nothing else (curl -OJ saved such a file as the last
// segment of its URL, "0"), and filename* with the name itself, UTF-8 and
// percent-encoded (RFC 6266 §4.3, RFC 8187), which browsers prefer.
func contentDisposition(name string) string {
	if name == "" {
		return `attachment; filename="attachment"`
	}
	ascii := asciiFilename(name)
	if ascii == name {
		return mime.FormatMediaType("attachment", map[string]string{"filename": name})
	}
	var b strings.Builder
	b.WriteString(`attachment; filename="`)
	b.WriteString(ascii)
	b.WriteString(`"; filename*=UTF-8''`)
	for _, c := range []byte(strings.ToValidUTF8(name, "\uFFFD")) {
		// RFC 8187 §3.2.1: attr-char goes as it is, every other byte as %XX.
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// maxASCIIFilename bounds the ASCII name in bytes, short of the 255 a file
// name may have on most file systems.
const maxASCIIFilename = 200

// asciiFilename returns name as a file name of printable ASCII that is
// safe in a quoted string and on a disk, and never empty: accents are
// dropped (é is e, Ä is A), a few letters are spelled out (ß is ss, æ is
// ae), and what is left that is not ASCII, or is a quote, a backslash, a
// slash, a control character or a leading dot (a hidden file), becomes
// "_", once for a run. A name with no letter or digit left before its
// extension becomes "attachment" with that extension.
func asciiFilename(name string) string {
	var b strings.Builder
	replaced := false
	put := func(r rune) {
		if r == ' ' && b.Len() == 0 {
			return // leading spaces: nothing to keep
		}
		ok := r >= ' ' && r < 0x7f && !strings.ContainsRune(`"\/`, r)
		if ok && !(r == '.' && b.Len() == 0) {
			b.WriteRune(r)
			replaced = false
			return
		}
		if !replaced {
			b.WriteByte('_')
			replaced = true
		}
	}
	// NFKD splits a letter from its accents (and ﬁ into fi); the accents,
	// nonspacing marks, are dropped.
	for _, r := range norm.NFKD.String(strings.ToValidUTF8(name, "\uFFFD")) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		if spelled, ok := asciiLetters[r]; ok {
			for _, c := range spelled {
				put(c)
			}
			continue
		}
		put(r)
	}
	out := strings.TrimSpace(b.String())
	stem, ext := out, ""
	if i := strings.LastIndexByte(out, '.'); i > 0 {
		stem, ext = out[:i], out[i:]
	}
	if len(ext) > 16 || strings.Trim(ext[min(1, len(ext)):], asciiAlnum) != "" {
		stem, ext = out, "" // not an extension a name ends in
	}
	if !strings.ContainsAny(stem, asciiAlnum) {
		stem = "attachment"
	}
	if len(stem)+len(ext) > maxASCIIFilename {
		stem = stem[:maxASCIIFilename-len(ext)]
	}
	return stem + ext
}

const asciiAlnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// asciiLetters spells out in ASCII the letters that NFKD leaves whole.
var asciiLetters = map[rune]string{
	'ß': "ss", 'ẞ': "SS", 'æ': "ae", 'Æ': "AE", 'œ': "oe", 'Œ': "OE", 'ø': "o", 'Ø': "O",
	'đ': "d", 'Đ': "D", 'ð': "d", 'Ð': "D", 'ł': "l", 'Ł': "L", 'þ': "th", 'Þ': "Th", 'ı': "i",
}
