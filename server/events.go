package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"burner/storage"
)

// keepAlive is how often an idle event stream gets a comment line, so that
// proxies and clients see it alive.
const keepAlive = 15 * time.Second

// handleEvents streams the emails that arrive in one inbox as Server-Sent
// Events (SPEC §5): `id:` is the email id, `data:` its JSON. A client that
// reconnects with Last-Event-ID gets what arrived after that email.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	to, err := localPart(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.streamEvents(w, r, to)
}

// streamEvents writes the event stream of inbox to until the client goes
// away. The web UI serves the same stream to its pages.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, to string) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	// The cursor is the newest email the client has: Last-Event-ID on a
	// reconnection, else the newest at connection time.
	cursor := r.Header.Get("Last-Event-ID")
	if cursor != "" {
		if _, err := s.db.List(ctx, storage.Query{LocalPart: to, After: cursor, Limit: 1}); errors.Is(err, storage.ErrNotFound) {
			cursor = "" // deleted since, or never ours: start from now
		}
	}
	if cursor == "" {
		var err error
		if cursor, err = s.newestID(r, to); err != nil {
			s.fail(w, r, err)
			return
		}
	}

	// A stream lives longer than the server's timeouts, and a read
	// timeout would cancel its context; the keep-alives find dead peers.
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no") // nginx: do not hold events back
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return // the headers are the whole answer; a stream would never end
	}
	send := func(format string, args ...any) bool {
		rc.SetWriteDeadline(time.Now().Add(2 * keepAlive))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: 2000\n: burner events for %s\n\n", to) {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		// What arrived after the cursor, oldest first. Changed is taken
		// before the list, so that no delivery slips between the two.
		changed := s.db.Changed(to)
		fresh, err := s.db.List(ctx, storage.Query{LocalPart: to, After: cursor})
		if errors.Is(err, storage.ErrNotFound) {
			// The cursor email was deleted: go on from the newest.
			cursor, err = s.newestID(r, to)
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.ErrorContext(ctx, "event stream failed", "err", err)
			}
			return
		}
		slices.Reverse(fresh)
		for _, e := range fresh {
			data, _ := json.Marshal(newEmailJSON(e))
			if !send("id: %s\nevent: email\ndata: %s\n\n", e.ID, data) {
				return
			}
			cursor = e.ID
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
			if !send(": keep-alive\n\n") {
				return
			}
		}
	}
}

// newestID returns the id of the newest email of inbox to, or "" when it
// has none (then every email to come is new).
func (s *Server) newestID(r *http.Request, to string) (string, error) {
	newest, err := s.db.List(r.Context(), storage.Query{LocalPart: to, Limit: 1})
	if err != nil || len(newest) == 0 {
		return "", err
	}
	return newest[0].ID, nil
}
