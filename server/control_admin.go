package server

import (
	"net/http"
	"strconv"

	"burner/storage"
)

// The control socket's administration routes, for `burner backup`,
// `burner stats`, `burner inboxes` and `burner check` while `burner serve`
// holds the data file. Each answers with storage's type as JSON, which
// ControlClient (control_client.go) decodes.

// handleBackup streams a consistent copy of the data file, taken when the
// request arrives, while mail goes on arriving. Content-Length is the
// copy's size, so that a client can tell a complete copy from a cut one.
func (s *Server) handleBackup(w http.ResponseWriter, r *http.Request) {
	st, ok := s.admin.(storage.Snapshotter)
	if !ok {
		writeError(w, http.StatusNotImplemented, "This store takes no backup: use its own tools.")
		return
	}
	snap, err := st.Snapshot(r.Context())
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
	st, err := s.admin.Stats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleInboxes(w http.ResponseWriter, r *http.Request) {
	ins, err := s.admin.Inboxes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ins)
}

// handleCheck verifies the data file. It answers 200 with the report
// whether or not the file is sound: the report says.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	rep, err := s.admin.Check(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// handleWaiting reports the webhook events waiting, by hook, for
// `burner stats`.
func (s *Server) handleWaiting(w http.ResponseWriter, r *http.Request) {
	ws, err := s.admin.Waiting(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if ws == nil {
		ws = []storage.HookWaiting{}
	}
	writeJSON(w, http.StatusOK, ws)
}
