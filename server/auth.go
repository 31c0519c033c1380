package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"burner/storage"
)

// GET /api/v1/emails/{id}/auth[?wait=N] (spec §12): what the receiving MX
// saw of a message and its SPF, DKIM and DMARC verdicts, stored with the
// message (storage.Engine.Auth). A wait is woken when the verdict lands,
// on this node or another (Engine.AuthChanged), never by a poll. A record
// still pending long after its message's 250 lost its verdict with the
// process that took the message: it is computed here, when it is read.

// Verifier computes the verdicts of a message synchronously, as
// mailauth.Verifier does: for a record whose verdict was lost.
type Verifier interface {
	// Verify returns the verdicts (status done) on the message raw
	// received with env, within its own timeout.
	Verify(ctx context.Context, env storage.Envelope, raw []byte) storage.AuthResult
	// MaxDelay is the longest a verdict may take after the 250 when the
	// process that took the message goes on running.
	MaxDelay() time.Duration
}

// lostMargin is how long past the verifier's MaxDelay a record may stay
// pending before it is taken for lost: the time its verdict takes to be
// stored. Computing a verdict twice costs lookups, never a wrong answer.
const lostMargin = 5 * time.Second

// The JSON of spec §12, to the letter: a null where there is nothing
// (no PTR, no TLS, no DMARC record), [] for an unsigned message. While
// the status is pending or off, spf, dmarc and authenticationResults are
// null: there is no verdict yet, or none to come.
type authJSON struct {
	Status                string         `json:"status"`
	Client                authClientJSON `json:"client"`
	TLS                   *tlsJSON       `json:"tls"`
	MailFrom              string         `json:"mailFrom"`
	SPF                   *authSPFJSON   `json:"spf"`
	DKIM                  []authDKIMJSON `json:"dkim"`
	DMARC                 *authDMARCJSON `json:"dmarc"`
	AuthenticationResults *string        `json:"authenticationResults"`
}

type authClientJSON struct {
	IP     string  `json:"ip"`
	Helo   string  `json:"helo"`
	PTR    *string `json:"ptr"`
	FCrDNS bool    `json:"fcrdns"`
}

// tlsJSON is the TLS a client started, as both an email's record (spec
// §12) and a session (§13.1) show it: one type, so the two keep one shape.
type tlsJSON struct {
	Version string `json:"version"`
	Cipher  string `json:"cipher"`
}

type authSPFJSON struct {
	Result string `json:"result"`
	Domain string `json:"domain"`
}

type authDKIMJSON struct {
	Result   string `json:"result"`
	Domain   string `json:"domain"`
	Selector string `json:"selector"`
	Error    string `json:"error,omitempty"`
}

type authDMARCJSON struct {
	Result      string  `json:"result"`
	Domain      string  `json:"domain"`
	Policy      *string `json:"policy"`
	SPFAligned  bool    `json:"spfAligned"`
	DKIMAligned bool    `json:"dkimAligned"`
}

// newAuthJSON returns the API's shape of r.
func newAuthJSON(r storage.AuthResult) authJSON {
	env := r.Envelope
	out := authJSON{
		Status:   string(r.Status),
		Client:   authClientJSON{Helo: env.Helo, PTR: nonEmpty(r.PTR), FCrDNS: r.FCrDNS},
		MailFrom: env.MailFrom,
		DKIM:     []authDKIMJSON{},
	}
	if env.ClientIP.IsValid() {
		out.Client.IP = env.ClientIP.String()
	}
	if env.TLS != nil {
		out.TLS = &tlsJSON{Version: env.TLS.Version, Cipher: env.TLS.Cipher}
	}
	if r.Status != storage.AuthDone {
		return out
	}
	out.SPF = &authSPFJSON{Result: string(r.SPF.Result), Domain: r.SPF.Domain}
	for _, d := range r.DKIM {
		out.DKIM = append(out.DKIM, authDKIMJSON{Result: string(d.Result), Domain: d.Domain, Selector: d.Selector, Error: d.Error})
	}
	out.DMARC = &authDMARCJSON{
		Result: string(r.DMARC.Result), Domain: r.DMARC.Domain, Policy: nonEmpty(r.DMARC.Policy),
		SPFAligned: r.DMARC.SPFAligned, DKIMAligned: r.DMARC.DKIMAligned,
	}
	out.AuthenticationResults = &r.AuthenticationResults
	return out
}

// nonEmpty returns &s, or nil for "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) handleAuth(w http.ResponseWriter, r *http.Request) {
	wait, err := authWait(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if r.Method == http.MethodHead { // HEAD wants the headers now
		wait = 0
	}
	if wait > 0 {
		extendDeadlines(w, wait)
	}
	a, err := s.auth(r.Context(), r.PathValue("id"), wait, time.Time{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newAuthJSON(a))
}

// authWait reads wait=N, 1 to 60 seconds as a list's (spec §12); an empty
// one is not given.
func authWait(rawQuery string) (time.Duration, error) {
	v, _ := url.ParseQuery(rawQuery)
	s := v.Get("wait")
	if s == "" {
		return 0, nil
	}
	n, ok := decimal(s)
	if !ok {
		return 0, errWait
	}
	return waitSeconds(n)
}

// auth returns the authentication record of email id; while it is
// pending, it waits up to wait for the verdict to land. A record pending
// past its message's receivedAt plus the verifier's MaxDelay and
// lostMargin lost its verdict: auth computes it (verifyLost), waiting
// for that moment if it comes within wait. receivedAt is the email's, for
// a caller that read the email already; zero: auth reads it when needed.
func (s *Server) auth(ctx context.Context, id string, wait time.Duration, receivedAt time.Time) (storage.AuthResult, error) {
	// Taken before the read, so that no verdict slips between them.
	changed := s.db.AuthChanged(id)
	a, err := s.db.Auth(ctx, id)
	if err != nil || a.Status != storage.AuthPending {
		return a, err
	}
	var lost time.Time // when the verdict counts as lost; zero: never here
	if v := s.opts.Verifier; v != nil {
		if receivedAt.IsZero() {
			e, err := s.db.Email(ctx, id)
			if err != nil {
				return storage.AuthResult{}, err
			}
			receivedAt = e.ReceivedAt
		}
		lost = receivedAt.Add(v.MaxDelay() + lostMargin)
	}
	// The wait runs on the real clock; the loss is told by the store's,
	// which gave receivedAt.
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if !lost.IsZero() {
			lostIn := lost.Sub(s.opts.Now())
			if lostIn <= 0 {
				return s.verifyLost(ctx, id, a)
			}
			left = min(left, lostIn)
		}
		if left <= 0 {
			return a, nil
		}
		timer := time.NewTimer(left)
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return storage.AuthResult{}, ctx.Err()
		}
		timer.Stop()
		changed = s.db.AuthChanged(id)
		if a, err = s.db.Auth(ctx, id); err != nil || a.Status != storage.AuthPending {
			return a, err
		}
	}
}

// verifyLost computes the verdicts of email id, whose record a is pending
// and lost, from its stored source, and stores them for every reader.
// The verdicts are answered even when storing them fails: the next read
// computes them again.
func (s *Server) verifyLost(ctx context.Context, id string, a storage.AuthResult) (storage.AuthResult, error) {
	raw, err := s.db.Raw(ctx, id)
	if err != nil {
		return storage.AuthResult{}, err
	}
	done := s.opts.Verifier.Verify(ctx, a.Envelope, raw)
	if err := ctx.Err(); err != nil {
		return storage.AuthResult{}, err // cut short: not the message's verdict
	}
	if err := s.db.PutAuth(ctx, []string{id}, done); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return storage.AuthResult{}, err // deleted meanwhile
		}
		s.log.WarnContext(ctx, "a lost authentication verdict computed again, but not stored", "email_id", id, "err", err)
	} else {
		s.log.InfoContext(ctx, "a lost authentication verdict computed again", "email_id", id)
	}
	return done, nil
}
