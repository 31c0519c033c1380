package server

import (
	"net/http"
	"strconv"
)

// The routes of this file serve what a test needs of a message beyond its
// Email fields (spec §5, §7): the source, the files, the text, the links,
// the codes.

func (s *Server) handleRaw(w http.ResponseWriter, r *http.Request) {
	raw, err := s.db.Raw(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeBytes(w, "message/rfc822", raw)
}

// attachmentJSON describes one file of a message.
type attachmentJSON struct {
	Index       int    `json:"index"`
	Filename    string `json:"filename"`
	ContentType string `json:"contentType"`
	Size        int    `json:"size"`
	ContentID   string `json:"contentId"`
}

// handleAttachments lists the files of a message: the first
// maxListedFiles of them, as a JSON array. A longer list is cut there, and
// says so in headers, so that the array stays what clients parse:
// X-Attachments-More counts the files beyond it, and X-Attachments-Partial
// is "true" when burner stopped reading the message (message.MaxParts) before
// its end, so that there may be more files than counted.
func (s *Server) handleAttachments(w http.ResponseWriter, r *http.Request) {
	a, err := s.attachmentList(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if a.More > 0 || a.Partial {
		w.Header().Set("X-Attachments-More", strconv.Itoa(a.More))
	}
	if a.Partial {
		w.Header().Set("X-Attachments-Partial", "true")
	}
	writeJSON(w, http.StatusOK, attachmentsJSON(a))
}

func (s *Server) handleAttachment(w http.ResponseWriter, r *http.Request) {
	raw, err := s.db.Raw(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	a, ok := attachmentN(raw, r.PathValue("n"))
	if !ok {
		writeError(w, http.StatusNotFound, "Attachment not found")
		return
	}
	writeAttachment(w, a)
}

func (s *Server) handleText(w http.ResponseWriter, r *http.Request) {
	c, err := s.db.Content(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeBytes(w, "text/plain; charset=utf-8", []byte(c.Plain))
}

func (s *Server) handleLinks(w http.ResponseWriter, r *http.Request) {
	c, err := s.db.Content(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	links := c.Links
	if links == nil {
		links = []string{}
	}
	writeJSON(w, http.StatusOK, links)
}

// handleCodes answers the one-time codes of an email (spec §7, package codes).
// A bad pattern is refused before the email is looked up: the request's
// own 400 comes before a 404 (spec §8's order). The subject is in the
// email, the text in its content: two reads, and an email deleted between
// them is a 404 all the same.
func (s *Server) handleCodes(w http.ResponseWriter, r *http.Request) {
	re, err := codesPattern(r.URL.Query().Get("pattern"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := r.PathValue("id")
	e, err := s.db.Email(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.db.Content(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	found, err := emailCodes(re, e.Subject, c.Plain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, found)
}
