package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"burner/codes"
	"burner/emailjson"
	"burner/message"
	"burner/storage"
)

// The web UI (spec §5): server-rendered pages from html/template, one
// stylesheet and one small script, all embedded. Every page works without
// JavaScript; the script only makes an inbox live.

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// uiCSP is the Content-Security-Policy of the UI's pages: our own script
// and stylesheet only, no inline script, no plugin, no framing by others.
// connect-src lets the script follow the event stream and fetch the page.
// Only the email page shows remote images (emailCSP).
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// emailCSP is uiCSP for the email page, whose srcdoc iframe inherits it: it
// also allows inline styles, because the sanitizer keeps the style
// attributes that mail is laid out with, and https: images, which the
// sanitizer keeps too. Scripts stay blocked twice over: by this policy and
// by the iframe's sandbox, which lacks allow-scripts.
const emailCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' https: data:; " +
	"connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// emailCSPNoRemote is emailCSP without remote images, for ui.remote_images
// = false: loading an image tells its sender who reads the address, from
// where and when. The browser shows a blocked image as its placeholder
// (its alt text), and the page offers a link to load them (?images=1).
const emailCSPNoRemote = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// pageSize is how many emails an inbox page lists.
const pageSize = 50

// maxSourceView is how much of a message the source page shows; the rest
// is a download away.
const maxSourceView = 1 << 20

// webUI is the state of the web UI: parsed templates, static files and
// sessions, built once in New.
type webUI struct {
	s        *Server
	pages    map[string]*template.Template
	static   map[string]staticFile
	sessions *sessions
}

// staticFile is an embedded asset. Pages link it with its hash in the
// query, so that browsers may cache it for good.
type staticFile struct {
	data        []byte
	hash        string
	contentType string
}

// ui returns the handler of the web UI and keeps its state in s.web.
func (s *Server) ui() http.Handler {
	u := &webUI{s: s, static: make(map[string]staticFile), sessions: &sessions{db: s.admin, now: s.opts.Now}}
	s.web = u
	files, _ := fs.ReadDir(staticFS, "static")
	for _, f := range files {
		data, _ := staticFS.ReadFile("static/" + f.Name())
		sum := sha256.Sum256(data)
		u.static[f.Name()] = staticFile{data: data, hash: hex.EncodeToString(sum[:6]), contentType: mime.TypeByExtension(path.Ext(f.Name()))}
	}
	funcs := template.FuncMap{
		"static":  u.staticURL,
		"size":    formatSize,
		"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"iso":     func(t time.Time) string { return t.UTC().Format(emailjson.TimeLayout) },
		"sender":  sender,
		"subject": subjectOf,
		"inbox":   func(local string) string { return "/inbox/" + url.PathEscape(local) },
		"plural":  plural,
		"lines":   func(s string) []string { return strings.Split(s, "\n") },
	}
	u.pages = make(map[string]*template.Template)
	for _, name := range []string{"login", "home", "inbox", "sessions", "email", "source", "clear", "error"} {
		u.pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}

	pages := http.NewServeMux()
	for _, rt := range []struct {
		method, path string
		h            http.HandlerFunc
	}{
		{"GET", "/{$}", u.handleHome},
		{"POST", "/logout", u.handleLogout},
		{"GET", "/inbox", u.handleGoInbox},
		{"GET", "/inbox/{local}", u.handleInbox},
		{"GET", "/inbox/{local}/events", u.handleInboxEvents},
		{"GET", "/inbox/{local}/sessions", u.handleSessions},
		{"GET", "/inbox/{local}/clear", u.handleClearPage},
		{"POST", "/inbox/{local}/clear", u.handleClear},
		{"GET", "/email/{id}", u.handleEmail},
		{"GET", "/email/{id}/raw", u.handleSource},
		{"GET", "/email/{id}/download", u.handleDownload},
		{"GET", "/email/{id}/attachments/{n}", u.handleAttachment},
		{"POST", "/email/{id}/delete", u.handleDelete},
	} {
		pages.HandleFunc(rt.method+" "+rt.path, rt.h)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/{name}", u.handleStatic)
	mux.HandleFunc("GET /login", u.handleLoginPage)
	mux.HandleFunc("POST /login", u.handleLogin)
	mux.HandleFunc("/login", methodNotAllowed("GET, HEAD, POST"))
	// Only the UI's own paths ask for a session; any other path is the
	// JSON 404 and a wrong method the JSON 405 of spec §4, as on the API.
	protected := u.requireSession(pages)
	for p, allow := range map[string]string{
		"/{$}": "GET, HEAD", "/logout": "POST", "/inbox": "GET, HEAD", "/inbox/{local}": "GET, HEAD", "/inbox/{local}/events": "GET, HEAD", "/inbox/{local}/sessions": "GET, HEAD",
		"/inbox/{local}/clear": "GET, HEAD, POST", "/email/{id}": "GET, HEAD", "/email/{id}/raw": "GET, HEAD",
		"/email/{id}/download": "GET, HEAD", "/email/{id}/attachments/{n}": "GET, HEAD", "/email/{id}/delete": "POST",
	} {
		pages.HandleFunc(p, methodNotAllowed(allow))
		mux.Handle(p, protected)
	}
	mux.HandleFunc("/", notFound)

	// The CSRF tokens of the forms are the defence; refusing what the
	// browser itself marks as cross-site (Sec-Fetch-Site, Origin) is a
	// second one.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.render(w, r, http.StatusForbidden, "error", errorPage{Message: "Cross-site requests are refused."})
	}))
	return pageHeaders(cop.Handler(mux))
}

// pageHeaders sets what the UI's answers carry on top of secureHeaders:
// the pages' CSP, and a referrer policy that keeps the Origin header of our
// own forms (which no-referrer would turn into "null") while telling other
// sites nothing.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY") // frame-ancestors, for browsers that predate it
		next.ServeHTTP(w, r)
	})
}

// pageData is what every page template gets.
type pageData struct {
	CSRF     string // the token of the page's forms
	LoggedIn bool   // a session: the page offers to log out
	ReadOnly bool   // the session's key may not delete: no delete or clear controls (spec §8)
	Page     any    // the page's own data
}

// render answers status with the page name showing page.
func (u *webUI) render(w http.ResponseWriter, r *http.Request, status int, name string, page any) {
	v := visitorOf(r)
	var buf bytes.Buffer
	if err := u.pages[name].ExecuteTemplate(&buf, "layout", pageData{CSRF: v.csrf, LoggedIn: v.token != "", ReadOnly: mayDelete(r.Context()) != nil, Page: page}); err != nil {
		// Only a template bug gets here: recoverPanics logs it with its stack.
		panic(fmt.Sprintf("render %s: %v", name, err))
	}
	h := w.Header()
	if p, ok := page.(emailPage); ok {
		if p.RemoteImages {
			h.Set("Content-Security-Policy", emailCSP)
		} else {
			h.Set("Content-Security-Policy", emailCSPNoRemote)
		}
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes()) // an error here means the client is gone
}

// errorPage is a page that says what went wrong.
type errorPage struct {
	Message string
}

// fail answers a failed UI request with an HTML page: fail's mapping, for
// people rather than programs.
func (u *webUI) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		bad    badRequest
		denied forbidden
	)
	switch {
	case errors.As(err, &bad):
		u.render(w, r, http.StatusBadRequest, "error", errorPage{Message: string(bad)})
	case errors.As(err, &denied): // the session's key's scope (scope.go)
		u.render(w, r, http.StatusForbidden, "error", errorPage{Message: string(denied)})
	case errors.Is(err, storage.ErrNotFound):
		u.render(w, r, http.StatusNotFound, "error", errorPage{Message: "Email not found"})
	case errors.Is(err, storage.ErrUnavailable): // spec §10, as the API answers it
		u.s.log.WarnContext(r.Context(), "storage unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", retryAfter)
		u.render(w, r, http.StatusServiceUnavailable, "error", errorPage{Message: "Storage unavailable. Try again in a few seconds."})
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		u.s.log.DebugContext(r.Context(), "request canceled", "method", r.Method, "path", r.URL.Path, "err", err)
	default:
		u.s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		u.render(w, r, http.StatusInternalServerError, "error", errorPage{Message: "Internal error."})
	}
}

func (u *webUI) staticURL(name string) (string, error) {
	f, ok := u.static[name]
	if !ok {
		return "", fmt.Errorf("no static file %q", name)
	}
	return "/static/" + name + "?v=" + f.hash, nil
}

func (u *webUI) handleStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := u.static[r.PathValue("name")]
	if !ok {
		notFound(w, r)
		return
	}
	if r.URL.Query().Get("v") == f.hash {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	writeBytes(w, f.contentType, f.data)
}

// recentSize is how many inboxes the home page lists at most.
const recentSize = 50

type homePage struct {
	Domains []string
	To      string // what was typed
	Message string // why it was refused
	// The recent inboxes: those of the session's scope, the one with the
	// newest email first, their names starting with Prefix; More when
	// there are others beyond them.
	Inboxes       []storage.Inbox
	More          bool
	Prefix        string
	PrefixMessage string   // why Prefix was refused
	Patterns      []string // a scoped session's patterns, which the list keeps to
}

func (u *webUI) handleHome(w http.ResponseWriter, r *http.Request) {
	p, err := u.homePage(r, strings.TrimSpace(r.URL.Query().Get("prefix")))
	if err != nil {
		u.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if p.PrefixMessage != "" {
		status = http.StatusBadRequest
	}
	u.render(w, r, status, "home", p)
}

// homePage returns the home page with the recent inboxes whose names start
// with prefix (any case): one store call, whatever the number of inboxes.
func (u *webUI) homePage(r *http.Request, prefix string) (homePage, error) {
	p := homePage{Domains: u.domains(), Prefix: prefix}
	if sc, _ := scopeOf(r.Context()); !sc.Everywhere() {
		p.Patterns = sc.Inboxes
	}
	if prefix != "" {
		// A prefix is the start of a local part, with its rules.
		if err := checkLocalPart(prefix); err != nil {
			p.PrefixMessage = err.Error()
			return p, nil
		}
	}
	ins, err := u.s.db.RecentInboxes(r.Context(), storage.InboxQuery{Prefix: prefix, Limit: recentSize + 1})
	if err != nil {
		return homePage{}, err
	}
	if len(ins) > recentSize {
		ins, p.More = ins[:recentSize], true
	}
	p.Inboxes = ins
	return p, nil
}

// handleGoInbox takes the home page's form to the inbox it names.
func (u *webUI) handleGoInbox(w http.ResponseWriter, r *http.Request) {
	typed := strings.TrimSpace(r.URL.Query().Get("to"))
	local := typed
	if err := checkLocalPart(local); err != nil {
		p, perr := u.homePage(r, "")
		if perr != nil {
			u.fail(w, r, perr)
			return
		}
		p.To, p.Message = typed, err.Error()
		u.render(w, r, http.StatusBadRequest, "home", p)
		return
	}
	http.Redirect(w, r, "/inbox/"+url.PathEscape(local), http.StatusSeeOther)
}

// domains returns the inbox domains, as people write them.
func (u *webUI) domains() []string {
	out := make([]string, len(u.s.opts.Domains))
	for i, d := range u.s.opts.Domains {
		out[i] = strings.ToLower(d)
	}
	return out
}

type inboxPage struct {
	Local     string
	Addresses []string // the inbox's full addresses; none when any domain is accepted
	Emails    []storage.Email
	In, Q     string // the filter: which field, what text
	Filtered  bool
	Older     string // the URL of the next page; "" on the last one
	Paged     bool   // not the first page
	Events    string // the event stream's URL; "" when the page is not live
	Here      string // this page's URL, where a deletion comes back to
}

func (u *webUI) handleInbox(w http.ResponseWriter, r *http.Request) {
	local := r.PathValue("local")
	if err := checkLocalPart(local); err != nil {
		u.fail(w, r, err)
		return
	}
	v := r.URL.Query()
	p := inboxPage{Local: local, In: v.Get("in"), Q: v.Get("q"), Here: r.URL.RequestURI()}
	for _, d := range u.domains() {
		p.Addresses = append(p.Addresses, local+"@"+d)
	}
	// The page shows no body: NoBody spares decoding up to 51 of them.
	q := storage.Query{LocalPart: local, Limit: pageSize + 1, BeforeID: v.Get("before"), NoBody: true}
	switch p.In {
	case "subject":
		q.Subject = p.Q
	case "body":
		q.Body = p.Q
	case "from":
		q.From = p.Q // spec §14: the sender's address or name
	default:
		p.In = "search"
		q.Terms = splitTerms(p.Q)
	}
	p.Filtered = strings.TrimSpace(p.Q) != ""
	var err error
	p.Emails, err = u.s.list(r.Context(), q)
	if errors.Is(err, storage.ErrNotFound) && q.BeforeID != "" {
		// The page started at an email deleted since: start from the newest.
		v.Del("before")
		http.Redirect(w, r, pageURL(local, v), http.StatusSeeOther)
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	if len(p.Emails) > pageSize {
		p.Emails = p.Emails[:pageSize]
		v.Set("before", p.Emails[pageSize-1].ID)
		p.Older = pageURL(local, v)
	}
	p.Paged = q.BeforeID != ""
	if !p.Paged {
		p.Events = "/inbox/" + url.PathEscape(local) + "/events"
	}
	u.render(w, r, http.StatusOK, "inbox", p)
}

// pageURL returns the URL of an inbox page with the parameters v.
func pageURL(local string, v url.Values) string {
	s := "/inbox/" + url.PathEscape(local)
	if len(v) > 0 {
		s += "?" + v.Encode()
	}
	return s
}

func (u *webUI) handleInboxEvents(w http.ResponseWriter, r *http.Request) {
	local := r.PathValue("local")
	if err := checkLocalPart(local); err != nil {
		u.fail(w, r, err)
		return
	}
	ctx, wait := u.watchSession(r)
	defer wait()
	u.s.streamEvents(w, r.WithContext(ctx), local)
}

// sessionsPage is an inbox's recent SMTP sessions (spec §13.1), as the
// session's key may see them.
type sessionsPage struct {
	Local    string
	Sessions []storage.SMTPSession
}

// maxShownSessions is how many sessions the page shows: the API has the
// rest.
const maxShownSessions = 50

func (u *webUI) handleSessions(w http.ResponseWriter, r *http.Request) {
	local := r.PathValue("local")
	if err := checkLocalPart(local); err != nil {
		u.fail(w, r, err)
		return
	}
	sessions, err := u.s.db.SMTPSessions(r.Context(), storage.SMTPSessionQuery{Inbox: storage.InboxName(local), Limit: maxShownSessions})
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "sessions", sessionsPage{Local: local, Sessions: sessions})
}

type clearPage struct{ Local string }

func (u *webUI) handleClearPage(w http.ResponseWriter, r *http.Request) {
	local := r.PathValue("local")
	if err := checkLocalPart(local); err != nil {
		u.fail(w, r, err)
		return
	}
	// The page reads no store: it asks what Clear would.
	if err := mayClear(r.Context(), local); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "clear", clearPage{Local: local})
}

func (u *webUI) handleClear(w http.ResponseWriter, r *http.Request) {
	local := r.PathValue("local")
	if err := checkLocalPart(local); err != nil {
		u.fail(w, r, err)
		return
	}
	n, err := u.s.db.Clear(r.Context(), local)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.s.log.InfoContext(r.Context(), "inbox cleared", "emails", n)
	http.Redirect(w, r, "/inbox/"+url.PathEscape(local), http.StatusSeeOther)
}

type emailPage struct {
	Email  storage.Email
	Local  string // the inbox it is in
	Srcdoc string // the iframe's document: the body, sanitized at delivery
	// RemoteImages: the page's policy lets the body load https: images.
	RemoteImages bool
	// LoadImages is the URL of this page with remote images, when the
	// body has some and they are blocked.
	LoadImages string
	// Cut: the body was cut at delivery (storage.CutMark); the source
	// has the whole message.
	Cut         bool
	Attachments fileList
	// Codes and Links are what a person debugging a sign-up test looks
	// for first (spec §7, /links): the first few, and how many more.
	Codes, Links         []string
	MoreCodes, MoreLinks int
	// Auth is what the MX saw (spec §12), as the API shows it, and
	// Badges its line of SPF / DKIM / DMARC / TLS words.
	Auth   authJSON
	Badges []authBadge
}

// authBadge is one word of the email page's line of authentication
// results: its label, its word, and the class that colours it.
type authBadge struct {
	Label, Word, Class string
}

// authBadges returns the line the email page shows of a: SPF, DKIM (pass
// when a signature passed, none when there is none, else the first's
// word), DMARC and TLS; the verdicts say "pending" until they are in,
// and are left out when burner does not verify.
func authBadges(a authJSON) []authBadge {
	var out []authBadge
	switch a.Status {
	case string(storage.AuthPending):
		for _, l := range []string{"SPF", "DKIM", "DMARC"} {
			out = append(out, authBadge{l, "pending", "badge-none"})
		}
	case string(storage.AuthDone):
		dkim := "none"
		for i, d := range a.DKIM {
			if i == 0 || d.Result == string(storage.AuthPass) {
				dkim = d.Result
			}
			if dkim == string(storage.AuthPass) {
				break
			}
		}
		out = append(out, authBadge{"SPF", a.SPF.Result, badgeClass(a.SPF.Result)},
			authBadge{"DKIM", dkim, badgeClass(dkim)}, authBadge{"DMARC", a.DMARC.Result, badgeClass(a.DMARC.Result)})
	}
	if a.TLS != nil {
		return append(out, authBadge{"TLS", a.TLS.Version, "badge-pass"})
	}
	return append(out, authBadge{"TLS", "none", "badge-none"})
}

// badgeClass colours a result word: pass green, fail red, what a later
// try or a record's owner may change amber, none grey.
func badgeClass(word string) string {
	switch storage.AuthValue(word) {
	case storage.AuthPass:
		return "badge-pass"
	case storage.AuthFail:
		return "badge-fail"
	case storage.AuthSoftFail, storage.AuthTempError, storage.AuthPermError:
		return "badge-warn"
	}
	return "badge-none"
}

// maxShownCodes and maxShownLinks bound the email page's lists: a mail of
// a thousand links would bury the body; the API has them all.
const (
	maxShownCodes = 10
	maxShownLinks = 20
)

// frameHead starts the iframe's document. The body was sanitized at
// delivery; the sandbox and the CSP are the second and third layers.
// Links open outside the frame and send no referrer.
const frameHead = `<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
	`<base target="_blank"><link rel="stylesheet" href="%s"></head><body>`

// handleEmail shows one email and marks it read: the read flag means
// "viewed in the UI" (spec §3).
func (u *webUI) handleEmail(w http.ResponseWriter, r *http.Request) {
	e, _, ok := u.emailAndRaw(w, r)
	if !ok {
		return
	}
	// A HEAD views nothing, and an email read already costs no write.
	if r.Method == http.MethodGet && !e.Read {
		if err := u.s.db.MarkRead(r.Context(), e.ID); err != nil {
			u.fail(w, r, err)
			return
		}
		e.Read = true
	}
	p := emailPage{Email: e, Local: storage.LocalPart(e.To)}
	if e.Body != nil {
		css, _ := u.staticURL("frame.css")
		p.Srcdoc = fmt.Sprintf(frameHead, css) + *e.Body + "</body></html>"
		p.Cut = strings.HasSuffix(*e.Body, storage.CutMark)
		// The sanitizer keeps images only in <img> (no CSS url()): a body
		// without one loads nothing from elsewhere and needs no notice.
		p.RemoteImages = u.s.opts.RemoteImages || r.URL.Query().Get("images") == "1"
		if !p.RemoteImages && strings.Contains(*e.Body, "<img") {
			p.LoadImages = "/email/" + url.PathEscape(e.ID) + "?images=1"
		}
	}
	files, err := u.s.attachmentList(r.Context(), e.ID)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	p.Attachments = newFileList(files)
	c, err := u.s.db.Content(r.Context(), e.ID)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	found := codes.Find(e.Subject, c.Plain)
	p.Codes, p.MoreCodes = found[:min(len(found), maxShownCodes)], max(len(found)-maxShownCodes, 0)
	p.Links, p.MoreLinks = c.Links[:min(len(c.Links), maxShownLinks)], max(len(c.Links)-maxShownLinks, 0)
	a, err := u.s.auth(r.Context(), e.ID, 0, e.ReceivedAt)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	p.Auth = newAuthJSON(a)
	p.Badges = authBadges(p.Auth)
	u.render(w, r, http.StatusOK, "email", p)
}

// emailAndRaw reads the email of the request's {id} and its source, or
// answers the failure and returns false.
func (u *webUI) emailAndRaw(w http.ResponseWriter, r *http.Request) (storage.Email, []byte, bool) {
	id := r.PathValue("id")
	e, err := u.s.db.Email(r.Context(), id)
	if err != nil {
		u.fail(w, r, err)
		return storage.Email{}, nil, false
	}
	raw, err := u.s.db.Raw(r.Context(), id)
	if err != nil {
		u.fail(w, r, err)
		return storage.Email{}, nil, false
	}
	return e, raw, true
}

type sourcePage struct {
	Email     storage.Email
	Source    string
	Truncated bool
}

// handleSource shows the message as received, as escaped text.
func (u *webUI) handleSource(w http.ResponseWriter, r *http.Request) {
	e, raw, ok := u.emailAndRaw(w, r)
	if !ok {
		return
	}
	p := sourcePage{Email: e}
	if len(raw) > maxSourceView {
		raw, p.Truncated = raw[:maxSourceView], true
	}
	p.Source = strings.ToValidUTF8(string(raw), string(utf8.RuneError))
	u.render(w, r, http.StatusOK, "source", p)
}

// handleDownload serves the message as received, as a file.
func (u *webUI) handleDownload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	raw, err := u.s.db.Raw(r.Context(), id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	writeAttachment(w, message.File{Filename: id + ".eml", ContentType: "message/rfc822", Data: raw})
}

// handleAttachment serves one file of a message, always as a download and
// sandboxed: an HTML or SVG file from a stranger must not run as our page.
func (u *webUI) handleAttachment(w http.ResponseWriter, r *http.Request) {
	raw, err := u.s.db.Raw(r.Context(), r.PathValue("id"))
	if err != nil {
		u.fail(w, r, err)
		return
	}
	a, ok := attachmentN(raw, r.PathValue("n"))
	if !ok {
		u.render(w, r, http.StatusNotFound, "error", errorPage{Message: "Attachment not found"})
		return
	}
	writeAttachment(w, a)
}

// handleDelete deletes one email and goes back to the page it was deleted
// from (the form's "next"), or else to the start page.
func (u *webUI) handleDelete(w http.ResponseWriter, r *http.Request) {
	if err := u.s.db.Delete(r.Context(), r.PathValue("id")); err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, localNext(r.PostForm.Get("next")), http.StatusSeeOther)
}

// formatSize writes n bytes for people.
func formatSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1000)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
	}
}

// sender names who sent e.
func sender(e storage.Email) string {
	switch {
	case e.FromName != "":
		return e.FromName
	case e.From != "":
		return e.From
	}
	return "(no sender)"
}

func subjectOf(e storage.Email) string {
	if e.Subject == nil || strings.TrimSpace(*e.Subject) == "" {
		return "(no subject)"
	}
	return *e.Subject
}
