package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"burner/emailjson"
	"burner/storage"
)

// keepAlive is how often an idle event stream gets a comment line, so that
// proxies and clients see it alive.
const keepAlive = 15 * time.Second

// handleEvents streams the emails that arrive in one inbox as Server-Sent
// Events (spec §5): `id:` is the email id, `data:` its JSON. A client that
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
// away. The web UI serves the same stream to its pages. Like a long poll,
// it works from a cursor: a delivery costs it the emails that arrived
// since, read without their bodies, and then each one's body as it is
// sent, so that a burst of large emails is never held in memory at once.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request, to string) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	// The cursor is the newest email the client has: Last-Event-ID on a
	// reconnection, else the newest at connection time.
	var cur cursor
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		e, err := s.db.Email(ctx, id)
		switch {
		case err == nil && strings.EqualFold(storage.LocalPart(e.To), to):
			cur = cursor{id: e.ID, at: e.ReceivedAt}
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			s.fail(w, r, err)
			return
		}
		// Deleted since, or never ours: start from now.
	}
	if cur.id == "" {
		var err error
		if cur, err = s.newest(ctx, to); err != nil {
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
		fresh, err := s.arrived(ctx, storage.Query{LocalPart: to, NoBody: true}, cur)
		if err != nil {
			if ctx.Err() == nil {
				s.log.ErrorContext(ctx, "event stream failed", "err", err)
			}
			return
		}
		slices.Reverse(fresh)
		for _, e := range fresh {
			cur = cursor{id: e.ID, at: e.ReceivedAt}
			full, err := s.db.Email(ctx, e.ID)
			if errors.Is(err, storage.ErrNotFound) {
				continue // deleted since: there is nothing to tell
			}
			if err != nil {
				if ctx.Err() == nil {
					s.log.ErrorContext(ctx, "event stream failed", "err", err)
				}
				return
			}
			data, _ := json.Marshal(emailjson.New(full))
			if !send("id: %s\nevent: email\ndata: %s\n\n", e.ID, data) {
				return
			}
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
