package server

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"burner/emailjson"
	"burner/storage"
)

// defaultLimit and maxLimit bound a list (spec §4).
const (
	defaultLimit = 10
	maxLimit     = 10
)

func (s *Server) handleListEmails(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	emails, err := s.listWaiting(w, r, q.Query, q.wait)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeEmails(w, emails)
}

// listBuffers holds the buffers writeEmails encodes into.
var listBuffers = sync.Pool{New: func() any { return new([]byte) }}

// writeEmails answers 200 with emails as a JSON array of emailjson.Email,
// the bytes writeJSON would write ([] rather than null when empty), with
// emailjson.Append: a list is the API's hottest answer.
func writeEmails(w http.ResponseWriter, emails []storage.Email) {
	bp := listBuffers.Get().(*[]byte)
	// Bodies are most of a list's bytes and escape mostly to themselves:
	// growing the buffer once spares a list of ten large bodies the
	// copies of a buffer that doubles on its way to 10 MB.
	size := 2
	for i := range emails {
		size += 256 + len(emails[i].To) + len(emails[i].From) + len(emails[i].FromName)
		if emails[i].Subject != nil {
			size += len(*emails[i].Subject)
		}
		if emails[i].Body != nil {
			size += len(*emails[i].Body) + len(*emails[i].Body)/16
		}
	}
	b := slices.Grow((*bp)[:0], size)
	b = append(b, '[')
	for i := range emails {
		if i > 0 {
			b = append(b, ',')
		}
		b = emailjson.Append(b, &emails[i])
	}
	b = append(b, ']', '\n') // json.Encoder ends each value with a newline
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b) // an error here means the client is gone
	if cap(b) <= 1<<20 {
		*bp = b
		listBuffers.Put(bp)
	}
}

// decimal parses s, which must be decimal digits alone: strconv.Atoi
// would also take a sign, so that limit=%2B5 passed while limit=+5 (a
// space, once decoded) did not. ok is false for anything else, and for a
// number too large for an int.
func decimal(s string) (n int, ok bool) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// maxWait bounds a long poll (spec §5).
const maxWait = 60 * time.Second

// waitParam returns the long poll a list asks for with wait=N (seconds, 1
// to 60); 0 when it asks for none.
func waitParam(v url.Values) (time.Duration, error) {
	w := v.Get("wait")
	if w == "" {
		return 0, nil
	}
	n, ok := decimal(w)
	if !ok || n < 1 || time.Duration(n)*time.Second > maxWait {
		return 0, badRequest("'wait' must be an integer from 1 to 60.")
	}
	return time.Duration(n) * time.Second, nil
}

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

func (s *Server) handleGetEmail(w http.ResponseWriter, r *http.Request) {
	e, err := s.db.Email(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err) // ErrNotFound also for an id that is not a UUID (spec §4)
		return
	}
	writeJSON(w, http.StatusOK, emailjson.New(e))
}

func (s *Server) handleDeleteEmail(w http.ResponseWriter, r *http.Request) {
	if err := s.db.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleClearInbox(w http.ResponseWriter, r *http.Request) {
	to, err := localPart(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.db.Clear(r.Context(), to); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent) // whether or not there was anything to clear
}

// listRequest is a list request's query and its long poll (wait=N).
type listRequest struct {
	storage.Query
	wait time.Duration // 0: answer at once
}

// listQuery validates the parameters of a list request, parsing the query
// string once. When several are wrong it reports the first in the order of
// the API document: the inbox, then the filters, then limit and since, then
// the extensions (before, header, wait). A parameter with an empty value counts as
// not given (spec §4).
func listQuery(rawQuery string) (listRequest, error) {
	to, err := localPart(rawQuery)
	if err != nil {
		return listRequest{}, err
	}
	v, _ := url.ParseQuery(rawQuery) // pairs that do not decode are dropped, as r.URL.Query does
	q := listRequest{Query: storage.Query{LocalPart: to, Limit: defaultLimit}}
	subject, search, body := v.Get("subject"), v.Get("search"), v.Get("body")
	given := 0
	for _, f := range []string{subject, search, body} {
		if f != "" {
			given++
		}
	}
	if given > 1 {
		return listRequest{}, badRequest("Only one of subject, search, or body may be specified.")
	}
	q.Subject, q.Body = subject, body
	if search != "" {
		// A search of white space alone has no terms and filters nothing.
		q.Terms = splitTerms(search)
	}
	if l := v.Get("limit"); l != "" {
		n, ok := decimal(l)
		if !ok || n < 1 || n > maxLimit {
			return listRequest{}, badRequest("'limit' must be an integer from 1 to 10.")
		}
		q.Limit = n
	}
	if since := v.Get("since"); since != "" {
		if q.Since, err = parseSince(since); err != nil {
			return listRequest{}, err
		}
	}
	if before := v.Get("before"); before != "" {
		if q.Before, err = parseTime(before); err != nil {
			return listRequest{}, badRequest("'before' must be a Unix timestamp in seconds.")
		}
	}
	if h := v.Get("header"); h != "" {
		if q.Header, err = parseHeaderFilter(h); err != nil {
			return listRequest{}, err
		}
	}
	if q.wait, err = waitParam(v); err != nil {
		return listRequest{}, err
	}
	return q, nil
}

// parseHeaderFilter parses header=Name:value (spec §5): a header field
// name (RFC 5322 §2.2: printable ASCII but the colon) and a value to find
// in it, possibly empty, which matches any message that has the field.
func parseHeaderFilter(h string) (*storage.Header, error) {
	name, value, ok := strings.Cut(h, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return nil, badRequest("'header' must be Name:value, like X-Test-Run:42.")
	}
	return &storage.Header{Name: name, Value: strings.TrimSpace(value)}, nil
}

// localPart returns the inbox a request names in its "to" parameter.
//
// A literal "+" in "to" is kept as "+", not read as a space: "+" belongs
// to local parts (alice+x) and a space never does, so `?to=alice+x` typed
// by hand means the inbox alice+x. "%20" is still a space, and refused.
func localPart(rawQuery string) (string, error) {
	to := ""
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, val, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err != nil || key != "to" {
			continue
		}
		var err error // the first "to" counts, as with url.Values.Get
		if to, err = url.PathUnescape(val); err != nil {
			return "", badRequest("Invalid local part. Only alphanumeric characters and _-+. are allowed.")
		}
		break
	}
	return to, checkLocalPart(to)
}

// checkLocalPart validates an inbox name, with the API's messages (spec
// §4); the web UI checks what people type with it too.
func checkLocalPart(to string) error {
	switch {
	case to == "":
		return badRequest("'to' is required.")
	case utf8.RuneCountInString(to) > storage.MaxLocalPart:
		return badRequest("Local part must be at most 64 characters.")
	case !storage.ValidLocalPart(to):
		return badRequest("Invalid local part. Only alphanumeric characters and _-+. are allowed.")
	}
	return nil
}

// splitTerms splits a search into its terms: runs of non-space characters,
// where a double-quoted stretch (spaces and all) belongs to the term it is
// in, as in a shell. An unclosed quote runs to the end. Quotes are not part
// of a term, and empty terms are dropped.
func splitTerms(s string) []string {
	var (
		terms  []string
		term   strings.Builder
		quoted bool
	)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			quoted = !quoted
		case unicode.IsSpace(r) && !quoted:
			if term.Len() > 0 {
				terms = append(terms, term.String())
				term.Reset()
			}
		default:
			term.WriteString(s[i : i+n]) // the bytes as given, even when not UTF-8
		}
		i += n
	}
	if term.Len() > 0 {
		terms = append(terms, term.String())
	}
	return terms
}

// maxSince is where since stops mattering: no email is received after it
// (year 36812). Larger values are clamped to it, so that converting them to
// a time.Time cannot overflow.
const maxSince = 1 << 40

// parseSince parses since with parseTime, or returns its 400.
func parseSince(s string) (time.Time, error) {
	t, err := parseTime(s)
	if err != nil {
		return time.Time{}, badRequest("'since' must be a Unix timestamp in seconds.")
	}
	return t, nil
}

// errBadTime is parseTime's answer to what is not a time; its callers
// name the parameter.
var errBadTime = errors.New("not a Unix timestamp in seconds")

// parseTime parses a Unix time in seconds for since and before (spec §4,
// §5): at least 0, with an optional fraction, written in decimal,
// optionally with an exponent; else errBadTime. A plain decimal keeps all
// of its digits down to the nanosecond; float64 would lose the last few
// hundred nanoseconds of a current time.
func parseTime(s string) (time.Time, error) {
	// Leaves out what ParseFloat would also take: hex, underscores, Inf, NaN.
	if strings.Trim(s, "0123456789.eE+-") != "" {
		return time.Time{}, errBadTime
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 { // err: bad syntax, or out of range like 1e400
		return time.Time{}, errBadTime
	}
	if f >= maxSince {
		return time.Unix(maxSince, 0).UTC(), nil
	}
	if strings.ContainsAny(s, "eE") {
		sec := math.Floor(f)
		return time.Unix(int64(sec), int64((f-sec)*1e9)).UTC(), nil
	}
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "+"), ".")
	var sec, nsec int64
	if whole != "" {
		// ParseFloat accepted it and it is below maxSince, so it fits.
		sec, _ = strconv.ParseInt(whole, 10, 64)
	}
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9] // nanoseconds are all a time.Time holds
		}
		nsec, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Unix(sec, nsec).UTC(), nil
}
