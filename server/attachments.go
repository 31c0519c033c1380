package server

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"strconv"

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
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": a.Filename}))
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	writeBytes(w, a.ContentType, a.Data)
}
