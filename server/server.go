// Package server serves burner's REST API and control socket over net/http.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
)

// DefaultMaxQueryBytes is what a zero Options.MaxQueryBytes means: no
// filter needs more.
const DefaultMaxQueryBytes = 4 << 10

// Options tune New. The zero value gives the defaults.
type Options struct {
	// UI enables the web UI at "/" (spec §5). Without it, everything
	// outside /api/ and /healthz is a JSON 404.
	UI bool
	// Public lets anyone read inboxes in the UI without an API key
	// (ui.public).
	Public bool
	// RequireTLS makes the UI's login page refuse plain HTTP, except from
	// this machine (ui.require_tls; ui_tls.go).
	RequireTLS bool
	// Domains are the inbox domains (smtp.domains); the UI shows an
	// inbox's full addresses with them.
	Domains []string
	// RemoteImages lets the email page load a body's remote (https:)
	// images at once (ui.remote_images). Without it they are blocked, and
	// the page offers a link that loads them for one view: an image
	// tells its sender who reads the address, from where and when.
	RemoteImages bool
	// Now is the clock of UI sessions and of /healthz's cache; time.Now
	// when nil.
	Now func() time.Time
	// MaxQueryBytes caps a request's query string; a longer one is
	// answered 414 before any other work. 0 means 4 KiB.
	MaxQueryBytes int
	// Metrics, when set, receives the API's Prometheus series and is
	// served at /metrics (with an API key).
	Metrics *prometheus.Registry
	// Ready reports whether the rest of the appliance (the SMTP listener)
	// is up, for /healthz; nil means it is.
	Ready func() error
	// AddressDomain is the domain of MCP's new_address (spec §11), as
	// main works it out from smtp.domains, mcp.address_domain and
	// smtp.hostname; when empty, the first of Domains.
	AddressDomain string
	// Version is burner's version, which MCP clients are told.
	Version string
	// MaxMessageBytes and MaxRecipients are the SMTP server's limits
	// (smtp.max_message_bytes, smtp.max_recipients), which GET
	// /api/v1/info reports to clients; the server enforces neither.
	MaxMessageBytes int64
	MaxRecipients   int
	// Features are the optional parts of burner that are on, as GET
	// /api/v1/info reports them (info.go).
	Features Features
	// Verifier computes, when it is read, the verdicts of a message whose
	// authentication record is still pending long after its 250 (spec
	// §12: the process stopped between the 250 and the verdict; auth.go).
	// nil leaves such a record pending. main gives the verifier smtpd's
	// messages go to.
	Verifier Verifier
}

// Server answers HTTP requests from one storage.Engine. It is safe for
// concurrent use.
type Server struct {
	// db is the store as requests see it: limited by the scope of the
	// request's key (scope.go). Every route reaches emails through it.
	db scopedStore
	// admin is the engine itself, unlimited: for what comes before a
	// scope (authentication, UI sessions) and what no scope has a say in
	// (the control socket, /healthz). Never for a route's emails.
	admin   storage.Engine
	opts    Options
	log     *slog.Logger
	handler http.Handler
	control http.Handler
	web     *webUI // the web UI's templates and sessions; nil without Options.UI
	metrics *httpMetrics
	health  healthCache
	// list is db.List, for the long polls, event streams and inbox
	// pages: a test wraps it to see which queries they make.
	list func(context.Context, storage.Query) ([]storage.Email, error)
	// patterns are the patterns routes registered, in order: a test
	// checks that each route has its entry in the scope table.
	patterns []string
	// progressEvery is how often an MCP wait reports progress;
	// mcpProgressEvery when 0. A test makes it short.
	progressEvery time.Duration
}

// New returns a Server over db. A nil log discards log output.
func New(db storage.Engine, opts Options, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.MaxQueryBytes == 0 {
		opts.MaxQueryBytes = DefaultMaxQueryBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	scoped := scopedStore{db}
	s := &Server{db: scoped, admin: db, opts: opts, log: log, list: scoped.List}
	var reg prometheus.Registerer
	if opts.Metrics != nil {
		reg = opts.Metrics
	}
	s.metrics = newHTTPMetrics(reg)
	if reg != nil {
		reg.MustRegister(s.newHealthGauge())
	}
	s.handler = s.logRequests(s.recoverPanics(secureHeaders(s.limitQuery(s.routes()))))
	s.control = s.logRequests(s.recoverPanics(secureHeaders(s.controlRoutes())))
	return s
}

// Handler returns the public HTTP API: /api/v1 (API key required) and
// /healthz.
func (s *Server) Handler() http.Handler { return s.handler }

// ControlHandler returns the handler of the control socket, which the keys
// commands use while `burner serve` holds the data file (spec §1). It asks
// for no API key: main serves it on a unix socket of mode 0600, and the
// socket's file mode is the authentication.
func (s *Server) ControlHandler() http.Handler { return s.control }

// routeMux is a ServeMux that remembers the patterns it is given.
type routeMux struct {
	*http.ServeMux
	patterns *[]string
}

func (m routeMux) Handle(pattern string, h http.Handler) {
	*m.patterns = append(*m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

func (m routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

func (s *Server) routes() http.Handler {
	api := routeMux{http.NewServeMux(), &s.patterns}
	api.HandleFunc("GET /api/v1/emails", s.handleListEmails)
	api.HandleFunc("/api/v1/emails", methodNotAllowed("GET, HEAD")) // JSON 405; the built-in one is text
	api.HandleFunc("GET /api/v1/emails/{id}", s.handleGetEmail)
	api.HandleFunc("DELETE /api/v1/emails/{id}", s.handleDeleteEmail)
	api.HandleFunc("/api/v1/emails/{id}", methodNotAllowed("GET, HEAD, DELETE"))
	api.HandleFunc("DELETE /api/v1/inbox", s.handleClearInbox)
	api.HandleFunc("/api/v1/inbox", methodNotAllowed("DELETE"))
	// Compatible extensions (spec §5): added routes only.
	for path, h := range map[string]http.HandlerFunc{
		"/api/v1/emails/{id}/raw":             s.handleRaw,
		"/api/v1/emails/{id}/attachments":     s.handleAttachments,
		"/api/v1/emails/{id}/attachments/{n}": s.handleAttachment,
		"/api/v1/emails/{id}/text":            s.handleText,
		"/api/v1/emails/{id}/links":           s.handleLinks,
		"/api/v1/emails/{id}/codes":           s.handleCodes,
		"/api/v1/emails/{id}/auth":            s.handleAuth,
		"/api/v1/events":                      s.handleEvents,
		"/api/v1/openapi.json":                s.handleOpenAPI,
		"/api/v1/info":                        s.handleInfo,
		"/api/v1/sessions":                    s.handleListSessions, // spec §13.1, sessions.go
	} {
		api.HandleFunc("GET "+path, h)
		api.HandleFunc(path, methodNotAllowed("GET, HEAD"))
	}
	// spec §13.2, faults.go: 404 as an unknown path unless faults.enabled.
	api.HandleFunc("GET /api/v1/faults", s.faultsOn(s.handleListFaults))
	api.HandleFunc("POST /api/v1/faults", s.faultsOn(s.handleCreateFault))
	api.HandleFunc("/api/v1/faults", s.faultsOn(methodNotAllowed("GET, HEAD, POST")))
	api.HandleFunc("DELETE /api/v1/faults/{id}", s.faultsOn(s.handleDeleteFault))
	api.HandleFunc("/api/v1/faults/{id}", s.faultsOn(methodNotAllowed("DELETE")))
	api.HandleFunc("/", notFound) // JSON 404 for the rest of /api/

	mux := routeMux{http.NewServeMux(), &s.patterns}
	mux.Handle("/api/", s.requireKey(api)) // authentication comes first under /api/
	mux.Handle("/api", s.requireKey(api))  // else the mux would answer a text redirect to /api/
	// MCP (spec §11, mcp.go) answers its methods itself.
	mux.Handle("/mcp", s.requireKey(s.mcpHandler()))
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("/healthz", methodNotAllowed("GET, HEAD"))
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", s.requireMetricsKey(metricsScope(s.metricsHandler())))
		mux.HandleFunc("/metrics", methodNotAllowed("GET, HEAD"))
	}
	if s.opts.UI {
		mux.Handle("/", s.loginOverTLS(s.ui())) // the web UI (spec §5), ui.go
	} else {
		mux.HandleFunc("/", notFound)
	}
	return canonicalPaths(mux)
}

// canonicalPaths answers a JSON 404 to a request whose path is not in
// canonical form ("//api/v1/emails", "/./api/...", "/api/v1/../v1/emails"),
// where ServeMux would answer a text 307 to the cleaned path: every answer
// is JSON (spec §4). A 404 rather than a redirect with a JSON body: such a
// path names none of our routes; a redirect would make every spelling of
// a route an alias of it, one that proxies and access rules in front of
// burner do not see as that route; and the client that built it (most
// often a base URL joined with a stray slash) learns of its bug at once
// instead of paying a round trip on every call.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux leaves CONNECT paths alone, and so do we.
		if p := r.URL.EscapedPath(); r.Method != http.MethodConnect && p != cleanPath(p) {
			notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is ServeMux's canonical form of p: rooted, without "." and ".."
// elements or repeated slashes, and with its trailing slash kept.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// requireKey answers 401 unless the request carries the API key of a key
// that exists now: a revoked key is refused at once (spec §1, §4); and
// 403 to a key for metrics alone (spec §14), before any other check, for
// it is no key of the API: so a route added later refuses it too. The
// request goes on with the key's scope in its context, which Server.db
// applies (scope.go).
func (s *Server) requireKey(next http.Handler) http.Handler {
	return s.authenticate(next, false)
}

// requireMetricsKey is requireKey for /metrics, which a key for metrics
// alone may read too; metricsScope decides what other keys may.
func (s *Server) requireMetricsKey(next http.Handler) http.Handler {
	return s.authenticate(next, true)
}

// authenticate is requireKey, and with metricsKeys requireMetricsKey.
func (s *Server) authenticate(next http.Handler, metricsKeys bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := bearerToken(r.Header)
		if !ok {
			unauthorized(w)
			return
		}
		k, err := s.admin.Authenticate(r.Context(), secret)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				unauthorized(w)
				return
			}
			s.fail(w, r, err)
			return
		}
		if k.Scope.Metrics && !metricsKeys {
			writeError(w, http.StatusForbidden, string(errMetricsOnly))
			return
		}
		scoped := r.WithContext(withScope(withKey(r.Context(), k), k.Scope))
		next.ServeHTTP(w, scoped)
		// The API's mux sets the route it matched on the request it got,
		// a copy: the metrics (logRequests) label by it.
		r.Pattern = scoped.Pattern
	})
}

// metricsScope answers 403 unless the request's key may read metrics
// (spec §8): /metrics reads no store, so it asks scope.go itself.
func metricsScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := mayReadMetrics(r.Context()); err != nil {
			writeError(w, http.StatusForbidden, err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header. RFC 9110 §11: the scheme is case-insensitive, and one or more
// spaces separate it from the credentials (RFC 6750: "Bearer" 1*SP
// b64token). The header must be given once, with a token that contains no
// white space.
func bearerToken(h http.Header) (string, bool) {
	values := h.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	writeError(w, http.StatusUnauthorized, "Missing or invalid API key.")
}

// secureHeaders sets the headers every response of ours carries. All of them
// are JSON, so nothing may be sniffed, framed, cached or leak a referrer.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}

// limitQuery refuses a query string longer than Options.MaxQueryBytes: no
// filter needs more, and parsing one costs memory.
func (s *Server) limitQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.URL.RawQuery) > s.opts.MaxQueryBytes {
			writeError(w, http.StatusRequestURITooLong, "Query string too long.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// recoverPanics turns a panic in next into a logged 500, so that one bad
// request never takes the server down.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { // net/http stays quiet about this one; let it
				panic(v)
			}
			s.log.ErrorContext(r.Context(), "panic serving request",
				"method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if sw.status != 0 {
				// Part of an answer is out: cut the connection, so the
				// client sees a failure rather than a truncated success.
				panic(http.ErrAbortHandler)
			}
			writeError(sw, http.StatusInternalServerError, "Internal error.")
		}()
		next.ServeHTTP(sw, r)
	})
}

// logRequests logs one line per request: method, path (never the query,
// which can hold search text, nor any header), status and duration. Health
// checks are frequent and dull, so they log at Debug.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			level := slog.LevelInfo
			if r.URL.Path == "/healthz" {
				level = slog.LevelDebug
			}
			s.metrics.observe(r, sw.code(), time.Since(start))
			s.log.LogAttrs(r.Context(), level, "request",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", sw.code()),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			)
		}()
		next.ServeHTTP(sw, r)
	})
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until the header is written
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // 1xx are interim, not the answer
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// code returns the status sent, or the 200 net/http sends for a handler
// that wrote nothing.
func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
