package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"burner/storage"
)

// The web UI's login (spec §5). A visitor logs in with an API key; the
// server then keeps a session: a random token in an HttpOnly,
// SameSite=Strict cookie that maps to the key's id. Each request looks the
// key up again, so a revoked key ends its sessions at once.
//
// The store keeps the sessions, as hashes of their tokens, so that a login
// on one node is valid on every node of one database (spec §10) and
// outlives a restart of serve.

const (
	sessionCookie = "burner_session"
	// csrfCookie carries the CSRF token of a visitor without a session (the
	// login form, and every form of a public UI): a double-submit cookie.
	csrfCookie = "burner_csrf"
	// sessionIdle is how long a session lives without a request.
	sessionIdle = 12 * time.Hour
	// sessionTouch is how often, at most, a request that slides a stored
	// session writes its new end (spec §10: a session's last activity is
	// written at most once a minute). A session may so end up to this much
	// earlier than its last request plus sessionIdle.
	sessionTouch = time.Minute
	// sessionCleanup is how often, at most, a login on this node removes
	// the expired sessions of the store.
	sessionCleanup = 10 * time.Minute
	// recheckStream is how often an open event stream checks that its
	// session and key still exist.
	recheckStream = 2 * time.Second
	// maxFormBytes bounds a UI form; the largest holds an API key.
	maxFormBytes = 4 << 10
)

// session is what a session token stands for.
type session struct {
	keyID string
}

// sessions keeps the sessions of the web UI in the store, valid on every
// node that shares it (spec §10). The store is unscoped: a session comes
// before the scope of its key.
type sessions struct {
	db  storage.Engine
	now func() time.Time

	mu      sync.Mutex
	cleaned time.Time // when this node last removed the expired sessions of the store
}

// create starts a session for the key with keyID and returns its token;
// an error wrapping storage.ErrNotFound when the key is gone.
func (ss *sessions) create(ctx context.Context, keyID string) (string, error) {
	now := ss.now()
	ss.mu.Lock()
	cleanup := now.Sub(ss.cleaned) >= sessionCleanup
	if cleanup {
		ss.cleaned = now
	}
	ss.mu.Unlock()
	if cleanup {
		// Expired sessions are invisible already; this only bounds the
		// table, so a failure waits for the next login.
		_, _ = ss.db.DeleteExpiredSessions(ctx, now)
	}
	token := randomToken()
	if err := ss.db.CreateSession(ctx, sha256.Sum256([]byte(token)), keyID, now.Add(sessionIdle)); err != nil {
		return "", err
	}
	return token, nil
}

// get returns the live session of token, or an error wrapping
// storage.ErrNotFound. With slide, the session's idle time starts again.
func (ss *sessions) get(ctx context.Context, token string, slide bool) (session, error) {
	h := sha256.Sum256([]byte(token))
	now := ss.now()
	s, err := ss.db.Session(ctx, h, now)
	if err != nil {
		return session{}, err
	}
	if next := now.Add(sessionIdle); slide && next.Sub(s.Expires) >= sessionTouch {
		if err := ss.db.TouchSession(ctx, h, next); err != nil {
			return session{}, err
		}
	}
	return session{keyID: s.KeyID}, nil
}

// end forgets the session of token.
func (ss *sessions) end(ctx context.Context, token string) error {
	return ss.db.DeleteSession(ctx, sha256.Sum256([]byte(token)))
}

// csrfOf returns the CSRF token of the session of token: derived from the
// token, so that every node that knows the token knows it, and no store
// need keep it. The hash a store keeps is of the token alone, so it does
// not give this away.
func csrfOf(token string) string {
	sum := sha256.Sum256([]byte("burner csrf\x00" + token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// tokenLen is the length of a randomToken: 32 bytes in base64url.
const tokenLen = 43

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// visitor is who sent a UI request.
type visitor struct {
	token string        // the session token; "" without a session (public UI)
	csrf  string        // the CSRF token the visitor's forms must carry
	scope storage.Scope // the session's key's scope; the zero Scope in a public UI without one
}

type visitorKey struct{}

// visitorOf returns the visitor that requireSession found for r.
func visitorOf(r *http.Request) visitor {
	v, _ := r.Context().Value(visitorKey{}).(visitor)
	return v
}

func withVisitor(r *http.Request, v visitor) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), visitorKey{}, v))
}

// requireSession lets a request through when it belongs to a live session
// whose key still exists, or, in a public UI, to anyone. Others are sent
// to the login page. A POST must also carry the visitor's CSRF token.
func (u *webUI) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := u.session(r, true)
		switch {
		case errors.Is(err, storage.ErrNotFound) && u.s.opts.Public:
			v = visitor{csrf: u.csrfCookie(w, r)}
		case errors.Is(err, storage.ErrNotFound):
			clearCookie(w, r, sessionCookie)
			u.toLogin(w, r)
			return
		case err != nil:
			u.fail(w, r, err)
			return
		}
		if r.Method == http.MethodPost && !u.checkCSRF(w, r, v.csrf) {
			return
		}
		// The session's key's scope limits the pages as it limits the API
		// (spec §8): Server.db applies it (scope.go).
		r = r.WithContext(withScope(r.Context(), v.scope))
		next.ServeHTTP(w, withVisitor(r, v))
	})
}

// session returns the visitor of r's live session, or an error wrapping
// storage.ErrNotFound when r has none, it expired, or its key was revoked.
func (u *webUI) session(r *http.Request, slide bool) (visitor, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return visitor{}, storage.ErrNotFound
	}
	sess, err := u.sessions.get(r.Context(), c.Value, slide)
	if err != nil {
		return visitor{}, err
	}
	k, err := u.s.admin.Key(r.Context(), sess.keyID)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			// Revoked: this session is over for good (the store
			// removed it with the key already).
			_ = u.sessions.end(r.Context(), c.Value)
		}
		return visitor{}, err
	}
	return visitor{token: c.Value, csrf: csrfOf(c.Value), scope: k.Scope}, nil
}

// toLogin sends r to the login page, which comes back to r's page after.
func (u *webUI) toLogin(w http.ResponseWriter, r *http.Request) {
	target := "/login"
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		target += "?" + url.Values{"next": {r.URL.RequestURI()}}.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// checkCSRF reports whether the form of r carries want, the visitor's CSRF
// token. When it does not, it answers 403.
func (u *webUI) checkCSRF(w http.ResponseWriter, r *http.Request, want string) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		u.render(w, r, http.StatusBadRequest, "error", errorPage{Message: "The form could not be read."})
		return false
	}
	got := r.PostForm.Get("csrf")
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		u.s.log.DebugContext(r.Context(), "csrf token refused", "path", r.URL.Path)
		u.render(w, r, http.StatusForbidden, "error", errorPage{
			Message: "This form has expired or was sent from another site. Go back, reload the page and try again.",
		})
		return false
	}
	return true
}

// csrfCookie returns the double-submit CSRF token of a visitor without a
// session, setting a fresh one when the request has none.
func (u *webUI) csrfCookie(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == tokenLen {
		return c.Value
	}
	token := randomToken()
	setCookie(w, r, csrfCookie, token)
	return token
}

// setCookie sets a cookie for the whole UI that scripts cannot read and
// other sites cannot send. It lives until the browser closes: the server
// decides how long a session lasts.
func setCookie(w http.ResponseWriter, r *http.Request, name, value string) {
	http.SetCookie(w, &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   overTLS(r),
	})
}

func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	if _, err := r.Cookie(name); err != nil {
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     name,
		Path:     "/",
		MaxAge:   -1,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   overTLS(r),
	})
}

// overTLS reports whether the browser reached us over TLS: directly, or
// through a proxy that says so. Trusting the proxy header is safe here: a
// client that lies about it only makes its own cookie Secure.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// localNext returns next when it is a path on this server, else "/": the
// login page and the delete form must not send anyone to another site.
// Browsers read a backslash as a slash and drop tabs and newlines from a
// URL, so `/\evil.example` and `/<TAB>/evil.example` both mean
// `//evil.example`, another host; and http.Redirect cleans the path, which
// can bring a backslash to the front (`/a/../\evil.example`). So next must
// start with one "/" that no "/" follows, and hold no backslash or control
// character anywhere, as given or percent-decoded (the decoded form is
// what a later hop, or a lenient client, may act on).
func localNext(next string) string {
	decoded, err := url.PathUnescape(next)
	if err != nil || !localPath(next) || !localPath(decoded) {
		return "/"
	}
	return next
}

// localPath reports whether p starts with a single "/" and holds no
// backslash and no control character (C0, DEL or C1).
func localPath(p string) bool {
	if len(p) == 0 || p[0] != '/' || (len(p) > 1 && p[1] == '/') {
		return false
	}
	for _, r := range p {
		if r == '\\' || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

type loginPage struct {
	Next    string
	Message string
}

func (u *webUI) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	if u.s.opts.Public {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	next := localNext(r.URL.Query().Get("next"))
	if _, err := u.session(r, false); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	r = withVisitor(r, visitor{csrf: u.csrfCookie(w, r)})
	u.render(w, r, http.StatusOK, "login", loginPage{Next: next})
}

func (u *webUI) handleLogin(w http.ResponseWriter, r *http.Request) {
	if u.s.opts.Public {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		c = &http.Cookie{}
	}
	if !u.checkCSRF(w, r, c.Value) {
		return
	}
	next := localNext(r.PostForm.Get("next"))
	refuse := func() {
		r := withVisitor(r, visitor{csrf: c.Value})
		u.render(w, r, http.StatusUnauthorized, "login", loginPage{Next: next, Message: "Missing or invalid API key."})
	}
	k, err := u.s.admin.Authenticate(r.Context(), strings.TrimSpace(r.PostForm.Get("key")))
	if errors.Is(err, storage.ErrNotFound) {
		refuse()
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	if k.Scope.Metrics { // spec §14: a key for /metrics alone opens no session
		r := withVisitor(r, visitor{csrf: c.Value})
		u.render(w, r, http.StatusForbidden, "login", loginPage{Next: next, Message: string(errMetricsOnly)})
		return
	}
	// A new token at every login: a token planted before it is worth nothing.
	if old, err := r.Cookie(sessionCookie); err == nil {
		if err := u.sessions.end(r.Context(), old.Value); err != nil {
			u.fail(w, r, err)
			return
		}
	}
	token, err := u.sessions.create(r.Context(), k.ID)
	if errors.Is(err, storage.ErrNotFound) { // revoked since Authenticate
		refuse()
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	setCookie(w, r, sessionCookie, token)
	u.s.log.InfoContext(r.Context(), "ui login", "key_id", k.ID)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (u *webUI) handleLogout(w http.ResponseWriter, r *http.Request) {
	if v := visitorOf(r); v.token != "" {
		if err := u.sessions.end(r.Context(), v.token); err != nil {
			u.fail(w, r, err)
			return
		}
	}
	clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// watchSession returns a context that is canceled once the session of r
// ends (logout, expiry, a revoked key), so that a long-lived event stream
// stops with it. wait stops the watch and waits for it.
func (u *webUI) watchSession(r *http.Request) (ctx context.Context, wait func()) {
	ctx, cancel := context.WithCancel(r.Context())
	if visitorOf(r).token == "" {
		return ctx, cancel // a public UI: nothing to end
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(recheckStream)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// An open page is not activity: the stream does not slide the session.
				if _, err := u.session(r.WithContext(ctx), false); errors.Is(err, storage.ErrNotFound) {
					cancel()
					return
				}
			}
		}
	})
	return ctx, func() { cancel(); wg.Wait() }
}
