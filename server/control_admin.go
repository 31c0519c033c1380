package server

import (
	"net/http"
	"strconv"

	"burner/storage"
)

// The control socket's administration routes, for `burner backup`,
// `burner stats`, `burner inboxes` and `burner check` while `burner serve`
// holds the data file.

// statsJSON is storage.Stats on the control socket.
type statsJSON struct {
	Emails    int     `json:"emails"`
	Inboxes   int     `json:"inboxes"`
	Keys      int     `json:"keys"`
	FileBytes int64   `json:"fileBytes"`
	Oldest    *string `json:"oldest"` // null without emails
}

// inboxJSON is a storage.Inbox on the control socket.
type inboxJSON struct {
	Name   string `json:"name"`
	Emails int    `json:"emails"`
	Newest string `json:"newest"`
}

// checkJSON is a storage.CheckReport on the control socket.
type checkJSON struct {
	SchemaVersion int      `json:"schemaVersion"`
	FileBytes     int64    `json:"fileBytes"`
	Emails        int      `json:"emails"`
	Inboxes       int      `json:"inboxes"`
	Messages      int      `json:"messages"`
	Keys          int      `json:"keys"`
	Problems      []string `json:"problems"`
	More          int      `json:"more"`
}

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
	out := statsJSON{Emails: st.Emails, Inboxes: st.Inboxes, Keys: st.Keys, FileBytes: st.FileBytes}
	if !st.Oldest.IsZero() {
		oldest := formatTime(st.Oldest)
		out.Oldest = &oldest
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleInboxes(w http.ResponseWriter, r *http.Request) {
	ins, err := s.db.Inboxes(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]inboxJSON, len(ins))
	for i, in := range ins {
		out[i] = inboxJSON{Name: in.Name, Emails: in.Emails, Newest: formatTime(in.Newest)}
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
	writeJSON(w, http.StatusOK, newCheckJSON(rep))
}

func newCheckJSON(r storage.CheckReport) checkJSON {
	problems := r.Problems
	if problems == nil {
		problems = []string{}
	}
	return checkJSON{
		SchemaVersion: r.SchemaVersion, FileBytes: r.FileBytes, Emails: r.Emails, Inboxes: r.Inboxes,
		Messages: r.Messages, Keys: r.Keys, Problems: problems, More: r.More,
	}
}
