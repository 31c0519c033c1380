package server

import (
	"net/http"
	"time"

	"burner/emailjson"
	"burner/storage"
)

// GET /api/v1/sessions (spec §13.1): the SMTP session log, newest first.
// As for a list of emails, one typed request that the REST handler parses
// from the query string and MCP's list_sessions builds from its tool's
// arguments, and one check of it.

// errSessionsLimit is the 400 of a listing's limit; to's and since's are
// the email list's (list.go).
var errSessionsLimit = &paramError{Param: "limit", Msg: "'limit' must be an integer from 1 to 100."}

// sessionsRequest is what a listing of sessions asks for, in the API's
// parameters; a field at its zero value was not given.
type sessionsRequest struct {
	To    string     // an inbox; "" for every session
	Limit *int       // 1 to 100; nil: 20
	Since *time.Time // started after it
	// malformed names the first parameter given in a form its field
	// cannot hold, as listRequest's does.
	malformed string
}

// parseSessionsRequest reads a listing of sessions from a query string.
// It refuses nothing: query does.
func parseSessionsRequest(rawQuery string) sessionsRequest {
	var r sessionsRequest
	to, ok := queryTo(rawQuery)
	r.To = to
	if !ok {
		r.malformed = "to"
	}
	p := newParams(rawQuery, &r.malformed)
	r.Limit = p.integer("limit")
	r.Since = p.unixTime("since")
	return r
}

// query returns the store query r asks for, or the *paramError of its
// first fault: to, then limit, then since.
func (r sessionsRequest) query() (storage.SMTPSessionQuery, error) {
	if r.malformed == "to" {
		return storage.SMTPSessionQuery{}, errToInvalid
	}
	q := storage.SMTPSessionQuery{Limit: storage.DefaultSMTPSessions}
	if r.To != "" {
		if err := checkLocalPart(r.To); err != nil {
			return storage.SMTPSessionQuery{}, err
		}
		q.Inbox = storage.InboxName(r.To)
	}
	if r.malformed == "limit" || r.Limit != nil && (*r.Limit < 1 || *r.Limit > storage.MaxSMTPSessions) {
		return storage.SMTPSessionQuery{}, errSessionsLimit
	}
	if r.Limit != nil {
		q.Limit = *r.Limit
	}
	if r.malformed == "since" {
		return storage.SMTPSessionQuery{}, errSince
	}
	if r.Since != nil {
		q.Since = *r.Since
	}
	return q, nil
}

func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) {
	q, err := parseSessionsRequest(r.URL.RawQuery).query()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sessions, err := s.db.SMTPSessions(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]sessionJSON, len(sessions))
	for i := range sessions {
		out[i] = newSessionJSON(&sessions[i])
	}
	writeJSON(w, http.StatusOK, out)
}

// sessionJSON is a record of the session log as the API shows it (spec
// §13.1).
type sessionJSON struct {
	ID         string          `json:"id"`
	StartedAt  string          `json:"startedAt"`
	EndedAt    *string         `json:"endedAt"`
	Node       string          `json:"node"`
	Client     sessionClient   `json:"client"`
	TLS        *tlsJSON        `json:"tls"`
	MailFrom   string          `json:"mailFrom"`
	Recipients []sessionRcpt   `json:"recipients"`
	Data       *sessionData    `json:"data"`
	Emails     []string        `json:"emails"`
	Outcome    *string         `json:"outcome"` // null while the session is open
	Transcript []transcriptRow `json:"transcript"`
}

type sessionClient struct {
	IP   string `json:"ip"`
	HELO string `json:"helo"`
}

type sessionRcpt struct {
	Address string  `json:"address"`
	Inbox   *string `json:"inbox"`
	Reply   *string `json:"reply"`
	Fault   string  `json:"fault,omitempty"`
}

type sessionData struct {
	Reply *string `json:"reply"`
	Bytes int64   `json:"bytes"`
	Fault string  `json:"fault,omitempty"`
}

type transcriptRow struct {
	C string `json:"c"`
	S string `json:"s"`
}

func newSessionJSON(s *storage.SMTPSession) sessionJSON {
	j := sessionJSON{
		ID:         s.ID,
		StartedAt:  s.StartedAt.UTC().Format(emailjson.TimeLayout),
		Node:       s.Node,
		Client:     sessionClient{IP: s.Client.IP, HELO: s.Client.HELO},
		MailFrom:   s.MailFrom,
		Recipients: make([]sessionRcpt, len(s.Recipients)),
		Emails:     s.Emails,
		Transcript: make([]transcriptRow, len(s.Transcript)),
	}
	if s.EndedAt != nil {
		end := s.EndedAt.UTC().Format(emailjson.TimeLayout)
		j.EndedAt = &end
	}
	if s.TLS != nil {
		j.TLS = &tlsJSON{Version: s.TLS.Version, Cipher: s.TLS.Cipher}
	}
	for i, r := range s.Recipients {
		j.Recipients[i] = sessionRcpt{Address: r.Address, Inbox: r.Inbox, Reply: r.Reply, Fault: r.Fault}
	}
	if s.Data != nil {
		j.Data = &sessionData{Reply: s.Data.Reply, Bytes: s.Data.Bytes, Fault: s.Data.Fault}
	}
	if j.Emails == nil {
		j.Emails = []string{}
	}
	if s.Outcome != "" {
		o := string(s.Outcome)
		j.Outcome = &o
	}
	for i, l := range s.Transcript {
		j.Transcript[i] = transcriptRow{C: l.C, S: l.S}
	}
	return j
}
