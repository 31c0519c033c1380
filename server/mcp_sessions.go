package server

import (
	"context"
	"strconv"
	"strings"

	"burner/storage"
)

// MCP's list_sessions (spec §13.1): the SMTP session log, for an agent
// that asks why a mail did not arrive. It builds the API's
// sessionsRequest from its arguments, so that the scope and the checks
// are GET /api/v1/sessions's. What a client said (its HELO name, the
// addresses, its commands, and the replies that repeat them) is fenced.

// mcpTranscriptLines bounds the transcript a session shows in MCP: its
// last lines, where a failure is.
const mcpTranscriptLines = 30

type listSessionsIn struct {
	Inbox string   `json:"inbox,omitempty" jsonschema:"the inbox: the local part of the address, or the whole address; without it every session, for a key that reads every inbox"`
	Since *float64 `json:"since,omitempty" jsonschema:"only sessions started after this Unix time, in seconds"`
	Limit *int     `json:"limit,omitempty" jsonschema:"at most this many, 1 to 100 (default 20); a long list is cut to fit the result"`
}

// mcpSession is a session as list_sessions gives it: the API's fields,
// the client's words cut to mcpMaxField characters and the transcript to
// its last mcpTranscriptLines lines.
type mcpSession struct {
	ID         string          `json:"id" jsonschema:"the session's id, which the final 250 and the Received field name"`
	StartedAt  string          `json:"startedAt" jsonschema:"ISO 8601, UTC"`
	EndedAt    *string         `json:"endedAt" jsonschema:"null while the session is open"`
	Outcome    *string         `json:"outcome" jsonschema:"delivered, faulted, rejected or aborted; null while the session is open"`
	ClientIP   string          `json:"clientIp"`
	HELO       string          `json:"helo" jsonschema:"the name the client gave, as it wrote it"`
	MailFrom   string          `json:"mailFrom" jsonschema:"the envelope sender, as the client wrote it"`
	Recipients []sessionRcpt   `json:"recipients" jsonschema:"each RCPT and burner's reply; fault is the id of the fault rule that answered"`
	Data       *sessionData    `json:"data" jsonschema:"the reply to the message's data; null when DATA was never reached"`
	Emails     []string        `json:"emails" jsonschema:"the ids of the emails stored, for read_email"`
	Transcript []transcriptRow `json:"transcript" jsonschema:"the last commands and replies"`
	LeftOut    int             `json:"transcriptLeftOut,omitempty" jsonschema:"earlier transcript lines left out"`
}

type listSessionsOut struct {
	Sessions []mcpSession `json:"sessions" jsonschema:"newest first"`
	LeftOut  int          `json:"sessionsLeftOut,omitempty" jsonschema:"the older sessions left out to keep the result under 64 KB; ask again with a smaller limit or a since"`
	inbox    string       // as asked, for the text; "" for every session
}

func newMCPSession(s *storage.SMTPSession) mcpSession {
	// Only the last lines are shown: the earlier ones are not converted.
	short, leftOut := *s, 0
	if n := len(short.Transcript); n > mcpTranscriptLines {
		leftOut, short.Transcript = n-mcpTranscriptLines, short.Transcript[n-mcpTranscriptLines:]
	}
	j := newSessionJSON(&short)
	m := mcpSession{ID: j.ID, StartedAt: j.StartedAt, EndedAt: j.EndedAt, Outcome: j.Outcome, ClientIP: j.Client.IP,
		HELO: capField(j.Client.HELO), MailFrom: capField(j.MailFrom), Recipients: j.Recipients, Data: j.Data, Emails: j.Emails}
	for i := range m.Recipients {
		m.Recipients[i].Address = capField(m.Recipients[i].Address)
		m.Recipients[i].Reply = capFieldPtr(m.Recipients[i].Reply)
	}
	if m.Data != nil {
		m.Data.Reply = capFieldPtr(m.Data.Reply)
	}
	m.Transcript, m.LeftOut = j.Transcript, leftOut
	for i, l := range m.Transcript {
		m.Transcript[i] = transcriptRow{C: capField(l.C), S: capField(l.S)}
	}
	return m
}

func (s *Server) toolListSessions(ctx context.Context, in listSessionsIn) (listSessionsOut, error) {
	var r sessionsRequest
	if in.Inbox != "" {
		inbox, err := s.inboxArg(in.Inbox)
		if err != nil {
			return listSessionsOut{}, err
		}
		r.To = inbox
	}
	r.Limit = in.Limit
	r.Since = sinceArg(in.Since, &r.malformed)
	q, err := r.query()
	if err != nil {
		return listSessionsOut{}, err
	}
	sessions, err := s.db.SMTPSessions(ctx, q)
	if err != nil {
		return listSessionsOut{}, err
	}
	out := listSessionsOut{Sessions: make([]mcpSession, len(sessions)), inbox: r.To}
	for i := range sessions {
		out.Sessions[i] = newMCPSession(&sessions[i])
	}
	out.fit()
	return out, nil
}

// fit keeps the sessions the text has room for and counts the rest: the
// structured content carries what the text says, under its cap (spec §11).
func (o *listSessionsOut) fit() {
	f := newFence()
	room := mcpMaxResult - len(o.header(f)) - 200 // the note of what was left out
	for i, s := range o.Sessions {
		n := len(sessionText(f, i+1, s))
		if n > room {
			o.LeftOut, o.Sessions = len(o.Sessions)-i, o.Sessions[:i]
			return
		}
		room -= n
	}
}

// where names the inbox the sessions are of.
func (o listSessionsOut) where() string {
	if o.inbox == "" {
		return "every inbox"
	}
	return o.inbox
}

// header is the first line of the text.
func (o listSessionsOut) header(f fence) string {
	return plural(len(o.Sessions), "SMTP session") + " for " + o.where() + ", newest first. " + f.notice() + "\n"
}

func (o listSessionsOut) text(f fence) string {
	if len(o.Sessions) == 0 && o.LeftOut == 0 {
		return "No SMTP sessions for " + o.where() + " in the session log.\n"
	}
	var b strings.Builder
	b.WriteString(o.header(f))
	for i, s := range o.Sessions {
		b.WriteString(sessionText(f, i+1, s))
	}
	if o.LeftOut > 0 {
		b.WriteString(strconv.Itoa(o.LeftOut) + " more sessions left out to fit; ask again with a smaller limit or a since.\n")
	}
	return b.String()
}

// sessionText is what list_sessions says of one session: burner's facts
// unfenced, the client's words fenced.
func sessionText(f fence, n int, s mcpSession) string {
	var b strings.Builder
	const in = "   "
	outcome, ended := "open", "open"
	if s.Outcome != nil {
		outcome = *s.Outcome
	}
	if s.EndedAt != nil {
		ended = *s.EndedAt
	}
	b.WriteString(strconv.Itoa(n) + ". session " + s.ID + ": " + outcome + "\n")
	b.WriteString(in + "started: " + s.StartedAt + ", ended: " + ended + "\n")
	b.WriteString(in + "client: " + s.ClientIP + " " + f.inline(s.HELO) + "\n")
	b.WriteString(in + "mail from: " + f.inline(s.MailFrom) + "\n")
	for _, r := range s.Recipients {
		reply := "(connection closed, no reply)"
		if r.Reply != nil {
			reply = f.inline(*r.Reply)
		}
		b.WriteString(in + "rcpt: " + f.inline(r.Address) + " -> " + reply)
		if r.Fault != "" {
			b.WriteString(" (fault rule " + r.Fault + ")")
		}
		b.WriteString("\n")
	}
	if d := s.Data; d != nil {
		reply := "(no reply: the connection closed)"
		if d.Reply != nil {
			reply = f.inline(*d.Reply)
		}
		b.WriteString(in + "data: " + strconv.FormatInt(d.Bytes, 10) + " bytes -> " + reply)
		if d.Fault != "" {
			b.WriteString(" (fault rule " + d.Fault + ")")
		}
		b.WriteString("\n")
	}
	if len(s.Emails) > 0 {
		b.WriteString(in + "emails stored: " + strings.Join(s.Emails, ", ") + "\n")
	}
	if len(s.Transcript) > 0 {
		var t strings.Builder
		if s.LeftOut > 0 {
			t.WriteString("(" + strconv.Itoa(s.LeftOut) + " earlier lines left out)\n")
		}
		for _, l := range s.Transcript {
			if l.C != "" {
				t.WriteString("C: " + oneLine(l.C) + "\n")
			}
			for line := range strings.SplitSeq(l.S, "\n") {
				if line != "" {
					t.WriteString("S: " + oneLine(line) + "\n")
				}
			}
		}
		b.WriteString(in + "transcript:\n" + f.block(t.String()))
	}
	return b.String()
}
