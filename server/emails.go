package server

import (
	"net/http"
	"slices"
	"strconv"
	"sync"

	"burner/emailjson"
	"burner/storage"
)

func (s *Server) handleListEmails(w http.ResponseWriter, r *http.Request) {
	q, err := parseListRequest(r.URL.RawQuery).query()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	emails, err := s.listWaiting(w, r, q.Query, q.wait)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeEmails(w, emails)
}

// listBuffers holds the buffers writeEmails encodes into.
var listBuffers = sync.Pool{New: func() any { return new([]byte) }}

// writeEmails answers 200 with emails as a JSON array of emailjson.Email,
// the bytes writeJSON would write ([] rather than null when empty), with
// emailjson.Append: a list is the API's hottest answer.
func writeEmails(w http.ResponseWriter, emails []storage.Email) {
	bp := listBuffers.Get().(*[]byte)
	// Bodies are most of a list's bytes and escape mostly to themselves:
	// growing the buffer once spares a list of ten large bodies the
	// copies of a buffer that doubles on its way to 10 MB.
	size := 2
	for i := range emails {
		size += 256 + len(emails[i].To) + len(emails[i].From) + len(emails[i].FromName)
		if emails[i].Subject != nil {
			size += len(*emails[i].Subject)
		}
		if emails[i].Body != nil {
			size += len(*emails[i].Body) + len(*emails[i].Body)/16
		}
	}
	b := slices.Grow((*bp)[:0], size)
	b = append(b, '[')
	for i := range emails {
		if i > 0 {
			b = append(b, ',')
		}
		b = emailjson.Append(b, &emails[i])
	}
	b = append(b, ']', '\n') // json.Encoder ends each value with a newline
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b) // an error here means the client is gone
	if cap(b) <= 1<<20 {
		*bp = b
		listBuffers.Put(bp)
	}
}

func (s *Server) handleGetEmail(w http.ResponseWriter, r *http.Request) {
	e, err := s.db.Email(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err) // ErrNotFound also for an id that is not a UUID (spec §4)
		return
	}
	writeJSON(w, http.StatusOK, emailjson.New(e))
}

func (s *Server) handleDeleteEmail(w http.ResponseWriter, r *http.Request) {
	if err := s.db.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleClearInbox(w http.ResponseWriter, r *http.Request) {
	to, err := localPart(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.db.Clear(r.Context(), to); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent) // whether or not there was anything to clear
}
