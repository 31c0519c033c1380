package server

import (
	"errors"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"burner/storage"
)

// A list, as GET /api/v1/emails and MCP's list_emails and wait_for_email
// ask for it (spec §4, §5): one typed request that the REST handler
// parses from the query string and MCP builds from its tool's arguments,
// and one function, query, that holds the API's rules and messages.

// defaultLimit and maxLimit bound a list (spec §4).
const (
	defaultLimit = 10
	maxLimit     = 10
)

// maxWait bounds a long poll (spec §5).
const maxWait = 60 * time.Second

// The 400s of a list (spec §4), each naming its parameter.
var (
	errToRequired = &paramError{Param: "to", Msg: "'to' is required."}
	errToTooLong  = &paramError{Param: "to", Msg: "Local part must be at most 64 characters."}
	errToInvalid  = &paramError{Param: "to", Msg: "Invalid local part. Only alphanumeric characters and _-+. are allowed."}
	errOneFilter  = &paramError{Msg: "Only one of subject, search, or body may be specified."}
	errLimit      = &paramError{Param: "limit", Msg: "'limit' must be an integer from 1 to 10."}
	errSince      = &paramError{Param: "since", Msg: "'since' must be a Unix timestamp in seconds."}
	errBefore     = &paramError{Param: "before", Msg: "'before' must be a Unix timestamp in seconds."}
	errHeader     = &paramError{Param: "header", Msg: "'header' must be Name:value, like X-Test-Run:42."}
	errWait       = &paramError{Param: "wait", Msg: "'wait' must be an integer from 1 to 60."}
)

// listRequest is what a list asks for, in the API's parameters. A field
// at its zero value was not given (spec §4: an empty parameter counts as
// not given).
type listRequest struct {
	To      string     // the inbox: a local part
	Subject string     // at most one of Subject, Search and Body
	Search  string     // terms and "quoted phrases"
	Body    string     // a substring of the body's text
	Limit   *int       // 1 to 10; nil: 10
	Since   *time.Time // received after it
	Before  *time.Time // received before it
	Header  string     // Name:value, like X-Test-Run:42
	From    string     // a substring of the sender's address or name (spec §14)
	Wait    *int       // seconds, 1 to 60, to hold a list that finds nothing; nil: answer at once
	// malformed names the first parameter given in a form its field
	// cannot hold (limit=ten, since=-1), or "": query refuses it in its
	// turn, so that of several faults the first in the order of the API
	// document is the one told.
	malformed string
}

// listQuery is a list request that query accepted: the store's query and
// how long to wait for a match.
type listQuery struct {
	storage.Query
	wait time.Duration // 0: answer at once
}

// parseListRequest reads a list request from a query string, parsed once.
// It refuses nothing: query does.
func parseListRequest(rawQuery string) listRequest {
	var r listRequest
	to, ok := queryTo(rawQuery)
	r.To = to
	if !ok {
		r.malformed = "to"
	}
	p := newParams(rawQuery, &r.malformed)
	// In the order of the API document, so that malformed is the first.
	r.Subject, r.Search, r.Body = p.v.Get("subject"), p.v.Get("search"), p.v.Get("body")
	r.Limit = p.integer("limit")
	r.Since = p.unixTime("since")
	r.Before = p.unixTime("before")
	r.Header = p.v.Get("header")
	r.From = p.v.Get("from")
	r.Wait = p.integer("wait")
	return r
}

// params reads a request's query parameters into their fields' forms,
// noting in malformed the first one given in a form its field cannot
// hold.
type params struct {
	v         url.Values
	malformed *string
}

func newParams(rawQuery string, malformed *string) params {
	v, _ := url.ParseQuery(rawQuery) // pairs that do not decode are dropped, as r.URL.Query does
	return params{v, malformed}
}

func (p params) bad(param string) {
	if *p.malformed == "" {
		*p.malformed = param
	}
}

// integer reads a decimal integer; nil when absent or malformed.
func (p params) integer(param string) *int {
	s := p.v.Get(param)
	n, ok := decimal(s)
	if s != "" && !ok {
		p.bad(param)
	}
	if !ok {
		return nil
	}
	return &n
}

// unixTime reads a Unix time in seconds (parseTime); nil when absent or
// malformed.
func (p params) unixTime(param string) *time.Time {
	s := p.v.Get(param)
	t, err := parseTime(s)
	if s != "" && err != nil {
		p.bad(param)
	}
	if err != nil {
		return nil
	}
	return &t
}

// query returns the store query r asks for, or the *paramError of its
// first fault in the order of the API document: the inbox, then the
// filters, then limit and since, then the extensions (before, header,
// from, wait; from takes any text, so it refuses nothing). It is the one
// check of a list, the API's and MCP's.
func (r listRequest) query() (listQuery, error) {
	if r.malformed == "to" {
		return listQuery{}, errToInvalid
	}
	if err := checkLocalPart(r.To); err != nil {
		return listQuery{}, err
	}
	given := 0
	for _, f := range []string{r.Subject, r.Search, r.Body} {
		if f != "" {
			given++
		}
	}
	if given > 1 {
		return listQuery{}, errOneFilter
	}
	q := listQuery{Query: storage.Query{LocalPart: r.To, Limit: defaultLimit, Subject: r.Subject, Body: r.Body}}
	if r.Search != "" {
		// A search of white space alone has no terms and filters nothing.
		q.Terms = splitTerms(r.Search)
	}
	if r.malformed == "limit" || r.Limit != nil && (*r.Limit < 1 || *r.Limit > maxLimit) {
		return listQuery{}, errLimit
	}
	if r.Limit != nil {
		q.Limit = *r.Limit
	}
	if r.malformed == "since" {
		return listQuery{}, errSince
	}
	if r.Since != nil {
		q.Since = *r.Since
	}
	if r.malformed == "before" {
		return listQuery{}, errBefore
	}
	if r.Before != nil {
		q.Before = *r.Before
	}
	if r.Header != "" {
		h, err := parseHeaderFilter(r.Header)
		if err != nil {
			return listQuery{}, err
		}
		q.Header = h
	}
	// Spec §14: combinable with every filter, subject, search and body
	// included (it is not one of the three of errOneFilter).
	q.From = r.From
	if r.malformed == "wait" {
		return listQuery{}, errWait
	}
	if r.Wait != nil {
		wait, err := waitSeconds(*r.Wait)
		if err != nil {
			return listQuery{}, err
		}
		q.wait = wait
	}
	return q, nil
}

// waitSeconds is a wait of n seconds, 1 to 60 (spec §5), for a list and
// for an email's verdict (spec §12); else errWait.
func waitSeconds(n int) (time.Duration, error) {
	if n < 1 || time.Duration(n)*time.Second > maxWait {
		return 0, errWait
	}
	return time.Duration(n) * time.Second, nil
}

// parseHeaderFilter parses header=Name:value (spec §5): a header field
// name (RFC 5322 §2.2: printable ASCII but the colon) and a value to find
// in it, possibly empty, which matches any message that has the field.
func parseHeaderFilter(h string) (*storage.Header, error) {
	name, value, ok := strings.Cut(h, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return nil, errHeader
	}
	return &storage.Header{Name: name, Value: strings.TrimSpace(value)}, nil
}

// localPart returns the inbox a request names in its "to" parameter, or
// the API's 400.
func localPart(rawQuery string) (string, error) {
	to, ok := queryTo(rawQuery)
	if !ok {
		return "", errToInvalid
	}
	return to, checkLocalPart(to)
}

// queryTo returns the first "to" of a query string, as url.Values.Get
// would, but for "+": a literal "+" in "to" is kept as "+", not read as a
// space, for "+" belongs to local parts (alice+x) and a space never does,
// so `?to=alice+x` typed by hand means the inbox alice+x. "%20" is still
// a space, and refused. The bool is false when its value does not decode.
func queryTo(rawQuery string) (string, bool) {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, val, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err != nil || key != "to" {
			continue
		}
		to, err := url.PathUnescape(val)
		return to, err == nil
	}
	return "", true
}

// checkLocalPart validates an inbox name, with the API's messages (spec
// §4); the web UI checks what people type with it too.
func checkLocalPart(to string) error {
	switch {
	case to == "":
		return errToRequired
	case utf8.RuneCountInString(to) > storage.MaxLocalPart:
		return errToTooLong
	case !storage.ValidLocalPart(to):
		return errToInvalid
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

// maxSince is where since stops mattering: no email is received after it
// (year 36812). Larger values are clamped to it, so that converting them to
// a time.Time cannot overflow.
const maxSince = 1 << 40

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

// sinceArg is a tool's since, a JSON number of Unix seconds, as a
// request's field: nil when not given; nil and "since" in malformed when
// it is no time.
func sinceArg(since *float64, malformed *string) *time.Time {
	if since == nil {
		return nil
	}
	t, err := unixSeconds(*since)
	if err != nil {
		*malformed = "since"
		return nil
	}
	return &t
}

// unixSeconds returns the time of a Unix time in seconds given as a
// number (MCP's since) as parseTime reads it from the API's text: the
// shortest decimal that is f, which is what the agent wrote in its JSON,
// so that its every digit counts as in the API's since.
func unixSeconds(f float64) (time.Time, error) {
	return parseTime(strconv.FormatFloat(f, 'f', -1, 64))
}
