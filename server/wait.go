package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"burner/storage"
)

// listWaiting lists q; when nothing matches and wait is set, it holds the
// request until a delivery to the inbox brings a match or wait passes.
// Deliveries wake it (storage.Changed): there is no polling loop, and a
// client that hangs up releases it at once. The whole query runs once; a
// wake-up reads only the emails that arrived since the last look (a
// cursor), since nothing older can have come to match: so a delivery
// costs each waiter the new emails, not its whole inbox again.
func (s *Server) listWaiting(w http.ResponseWriter, r *http.Request, q storage.Query, wait time.Duration) ([]storage.Email, error) {
	if wait == 0 || r.Method == http.MethodHead { // HEAD wants the headers now
		return s.list(r.Context(), q)
	}
	extendDeadlines(w, wait)
	return s.waitList(r.Context(), q, wait)
}

// extendDeadlines gives a request that may wait up to wait the time to do
// it: the server's read and write timeouts are shorter than a long poll,
// and a read timeout would cancel the request's context.
func extendDeadlines(w http.ResponseWriter, wait time.Duration) {
	deadline := time.Now().Add(wait + 10*time.Second)
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(deadline)
	rc.SetWriteDeadline(deadline)
}

// waitList is listWaiting's wait, for the API's wait=N and MCP's
// wait_for_email (mcp.go): it lists q, and when nothing matches, waits
// for a delivery to the inbox to bring a match, or for wait to pass.
func (s *Server) waitList(ctx context.Context, q storage.Query, wait time.Duration) ([]storage.Email, error) {
	// Changed is taken before anything is read, and the cursor before the
	// query, so that no delivery slips between them unseen.
	changed := s.db.Changed(q.LocalPart)
	seen, err := s.newest(ctx, q.LocalPart)
	if err != nil {
		return nil, err
	}
	emails, err := s.list(ctx, q)
	if err != nil || len(emails) > 0 {
		return emails, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-changed:
		case <-timer.C:
			return s.arrived(ctx, q, seen) // one that came as time ran out
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		changed = s.db.Changed(q.LocalPart)
		next, err := s.newest(ctx, q.LocalPart)
		if err != nil {
			return nil, err
		}
		if emails, err := s.arrived(ctx, q, seen); err != nil || len(emails) > 0 {
			return emails, err
		}
		// Up to next, nothing matched. What came after next is read at
		// the next wake-up, which its delivery causes.
		seen = next
	}
}

// cursor marks the newest email a reader has looked at in an inbox: the
// emails that arrived after it are new. The zero cursor is an empty
// inbox's, after which every email is new.
type cursor struct {
	id string
	at time.Time // its receivedAt, the bound that stays when it is deleted
}

// newest returns the cursor of the newest email of inbox to. It reads
// one email record and no content.
func (s *Server) newest(ctx context.Context, to string) (cursor, error) {
	newest, err := s.list(ctx, storage.Query{LocalPart: to, Limit: 1, NoBody: true})
	if err != nil || len(newest) == 0 {
		return cursor{}, err
	}
	return cursor{id: newest[0].ID, at: newest[0].ReceivedAt}, nil
}

// arrived lists the emails of q that arrived after c, reading none that
// did not. When c's email is gone (deleted, or trimmed by retention), the
// emails that came after it are those received at its time or later:
// those of its very millisecond are read again rather than missed.
func (s *Server) arrived(ctx context.Context, q storage.Query, c cursor) ([]storage.Email, error) {
	q.AfterID = c.id
	emails, err := s.list(ctx, q)
	if errors.Is(err, storage.ErrNotFound) && c.id != "" {
		q.AfterID = ""
		if bound := c.at.Add(-time.Nanosecond); bound.After(q.Since) {
			q.Since = bound // Since is exclusive
		}
		emails, err = s.list(ctx, q)
	}
	return emails, err
}
