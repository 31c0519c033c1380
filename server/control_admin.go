package server

import (
	"net/http"
	"strconv"
)

// The control socket's administration routes, for `burner backup`,
// `burner stats`, `burner inboxes` and `burner check` while `burner serve`
// holds the data file.

// handleBackup streams a consistent copy of the data file, taken when the
// request arrives, while mail goes on arriving. Content-Length is the
// copy's size, so that a client can tell a complete copy from a cut one.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) {
	snap, err := s.db.Snapshot(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer snap.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(snap.Size(), 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	start := s.opts.Now()
	n, err := snap.WriteTo(w)
	if err != nil {
		// The status is out: all that is left is to log and cut the
		// connection short, which the client sees as a short copy.
		s.log.WarnContext(r.Context(), "backup cut short", "bytes", n, "err", err)
		return
	}
	s.log.InfoContext(r.Context(), "backup sent", "bytes", n, "duration_ms", s.opts.Now().Sub(start).Milliseconds())
}

func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	st, err := s.db.Stats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newControlStats(st))
}

func (s *Server) handleInboxes(w http.ResponseWriter, r *http.Request) {
	ins, err := s.db.Inboxes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]ControlInbox, len(ins))
	for i, in := range ins {
		out[i] = newControlInbox(in)
	}
	writeJSON(w, http.StatusOK, out)
}

// handleCheck verifies the data file (storage.DB.Check). It answers 200
// with the report whether or not the file is sound: the report says.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	rep, err := s.db.Check(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newControlCheck(rep))
}
