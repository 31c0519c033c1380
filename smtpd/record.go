package smtpd

import (
	"bytes"
	"context"
	"crypto/tls"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"burner/storage"
)

// SessionLog keeps the records of SMTP sessions (spec §13.1): smtpd hands
// it each session that reached a RCPT, once when it is open and once at
// its end. A session here is one mail transaction (storage.SMTPSession
// says why). Its methods are called on the SMTP conversation's path, from
// many sessions at once: they must not wait for the store (write in
// batches), and they own the records they are given.
type SessionLog interface {
	// Open hands over the record of a session at the reply to its first
	// RCPT, with EndedAt nil and Outcome "", so that it is listed while it
	// is open.
	Open(rec storage.SMTPSession)
	// Close hands over the final record of a session. delivered means the
	// record was written with its delivery (storage.Message.Session) and
	// needs no write of its own, nor does an Open record of it not yet
	// written; Close may come for such a session without Open. Otherwise
	// Open came first, and the final record replaces the open one: a
	// record with EndedAt set is never to be replaced by one without,
	// since an Open record may still wait in a batch when its final
	// record is written.
	Close(rec storage.SMTPSession, delivered bool)
}

// span is the part of a connection's conversation that one record covers:
// from the first exchange after the previous transaction ended to the end
// of its own.
type span struct {
	id      string // made at its first exchange: the Received field and the final 250 name it
	started time.Time
	lines   []storage.TranscriptLine // at most storage.MaxTranscriptLines
	omitted int                      // exchanges past those in lines
}

// recordState is a session's record in the making.
type recordState struct {
	span
	reached    bool                 // the span reached a RCPT: it is a session of the log's
	rec        *storage.SMTPSession // nil until the span reached a RCPT, or when not recording; its Transcript stays nil (span.lines)
	opened     bool                 // the record was offered to SessionLog.Open
	logged     bool                 // and taken: its end goes to SessionLog.Close
	inData     bool                 // between the 354 and the reply to the data
	dataBytes  int64
	dataFault  string               // the fault rule that answers the data
	faulted    bool                 // a fault rule answered a command
	refused    bool                 // burner refused a recipient or the data
	delivering bool                 // Deliver is running with the record
	stored     *storage.SMTPSession // the record written with the delivery, once Deliver succeeded
	endAfter   bool                 // Reset came before the reply that ends the transaction
	loggedOut  bool                 // the session is over
}

// sessionID returns the id of the session being recorded.
func (ss *session) sessionID() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.begin(ss.srv.now())
	return ss.rs.id
}

// begin starts a span at now unless one is under way; ss.mu is held.
func (ss *session) begin(now time.Time) {
	if ss.rs.id == "" {
		ss.rs.id = uuid.Must(uuid.NewV7()).String() // time-ordered, as email ids are (spec §3)
		ss.rs.started = now.UTC().Truncate(time.Millisecond)
	}
}

// recording reports whether sessions are recorded at all.
func (ss *session) recording() bool { return ss.srv.sessions != nil }

// replied takes one exchange from the wire: cmd (nil for a reply to no
// command) and the reply as sent, nil when none came. It keeps the
// conversation's state, logs refusals, and records the exchange.
func (ss *session) replied(cmd, reply []byte) {
	verb := verbOf(cmd)
	code := 0
	if len(reply) >= 3 {
		code, _ = strconv.Atoi(string(reply[:3]))
	}
	challenged := ss.challenged
	ss.challenged = code == 334
	switch verb {
	case "EHLO":
		ss.ehlo = ss.ehlo || code == 250
	case "HELO":
		ss.ehlo = ss.ehlo && code != 250
	case "MAIL":
		ss.mailGiven = ss.mailGiven || code == 250
	case "RCPT":
		ss.rcptTried = ss.mailGiven // RFC 2920 §3.1 counts those of the transaction
	}
	rcptAddr, rcptOurs, rcptFault := ss.rcptAddr, ss.rcptOurs, ss.rcptFault
	ss.rcptAddr, ss.rcptOurs, ss.rcptFault = "", false, ""

	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.srv.now()
	ss.begin(now)
	r := &ss.rs
	dataEnd := r.inData && verb == "" || endsData(verb, code, cmd)
	refused := code >= 400 && (verb == "MAIL" || verb == "RCPT" || dataEnd)
	var c, s string
	if ss.recording() || refused {
		c = transcriptCommand(cmd, challenged)
		s = clip(string(reply))
	}
	if verb == "RCPT" {
		r.reached = true
	}
	if refused {
		// The session log keeps the details.
		ss.srv.log.LogAttrs(context.Background(), slog.LevelInfo, "smtp command refused", slog.String("session_id", r.id),
			slog.String("command", c), slog.String("reply", s))
	}
	if ss.recording() {
		r.add(c, s)
		var sp *string
		if reply != nil {
			sp = &s
		}
		if verb == "RCPT" {
			ss.recordRcpt(cmd, sp, code, rcptAddr, rcptOurs, rcptFault)
		}
		if r.rec != nil && (verb == "DATA" && code == 354 || verb == "BDAT" && r.rec.Data == nil) {
			r.rec.Data = &storage.SMTPData{}
		}
		if r.rec != nil && dataEnd {
			if r.rec.Data == nil {
				r.rec.Data = &storage.SMTPData{} // a DATA refused before any data
			}
			r.rec.Data.Reply, r.rec.Data.Bytes, r.rec.Data.Fault = sp, r.dataBytes, r.dataFault
		}
	}
	switch {
	case verb == "DATA" && code == 354, verb == "BDAT" && !dataEnd:
		r.inData = true
	case dataEnd:
		r.inData = false
		switch {
		case r.dataFault != "":
			r.faulted = true
		case code >= 400 && code != 421: // 421: the data was cut short, not refused
			r.refused = true
		}
	}
	if r.endAfter {
		ss.end(now)
	}
}

// endsData reports whether a reply with code to cmd, whose verb is verb,
// answers a message's data (or refuses DATA outright).
func endsData(verb string, code int, cmd []byte) bool {
	switch verb {
	case "DATA":
		return code != 354
	case ".":
		return true
	case "BDAT":
		return code != 250 || bdatLast(cmd)
	}
	return false
}

// bdatLast reports whether cmd is BDAT with LAST.
func bdatLast(cmd []byte) bool {
	f := bytes.Fields(cmd)
	return len(f) == 3 && bytes.EqualFold(f[2], []byte("LAST"))
}

// recordRcpt records the exchange of a RCPT: the record begins with the
// first. ss.mu is held.
func (ss *session) recordRcpt(cmd []byte, reply *string, code int, addr string, ours bool, fault string) {
	r := &ss.rs
	if r.rec == nil {
		r.rec = ss.newRecord()
	}
	if !ours {
		addr = pathOf(cmd)
	}
	// go-smtp bounds the accepted recipients, not the refused ones.
	if len(r.rec.Recipients) < ss.srv.maxRcpts+100 {
		rcpt := storage.SMTPRecipient{Address: clip(addr), Reply: reply, Fault: fault}
		if inbox, refusal := ss.srv.inboxOf(addr); refusal == nil {
			rcpt.Inbox = &inbox
		}
		r.rec.Recipients = append(r.rec.Recipients, rcpt)
	}
	switch {
	case fault != "":
		r.faulted = true
	case code >= 400:
		r.refused = true
	}
	if !r.opened {
		r.opened = true
		if r.logged = ss.srv.logRate.allow(ss.srv.now()); r.logged {
			ss.srv.sessions.Open(r.record(nil, nil))
		}
	}
}

// newRecord starts the record of the span at its first RCPT; ss.mu is
// held.
func (ss *session) newRecord() *storage.SMTPSession {
	rec := &storage.SMTPSession{ID: ss.rs.id, StartedAt: ss.rs.started, Node: ss.srv.node,
		Client: storage.SMTPClient{IP: addrOf(ss.conn.Conn().RemoteAddr()).String(), HELO: clip(ss.conn.Hostname())}, MailFrom: clip(ss.from)}
	rec.TLS = ss.tlsOf()
	return rec
}

// tlsOf names the TLS version and cipher suite of the session's
// connection; nil without TLS. Naming the cipher suite costs a dozen
// allocations (tls.CipherSuiteName builds its tables each call): a
// message's delivery asks once.
func (ss *session) tlsOf() *storage.TLS {
	st, ok := ss.conn.TLSConnectionState()
	if !ok {
		return nil
	}
	return &storage.TLS{Version: tls.VersionName(st.Version), Cipher: tls.CipherSuiteName(st.CipherSuite)}
}

// add adds an exchange to the span's transcript.
func (sp *span) add(c, s string) {
	if len(sp.lines) < storage.MaxTranscriptLines {
		sp.lines = append(sp.lines, storage.TranscriptLine{C: c, S: s})
		return
	}
	sp.omitted++
}

// record returns a copy of the record as it stands, its transcript with
// last added, ended at end (nil: open); ss.rs.rec is not nil.
func (r *recordState) record(end *time.Time, last *storage.TranscriptLine) storage.SMTPSession {
	rec := *r.rec
	rec.Recipients = append([]storage.SMTPRecipient(nil), rec.Recipients...)
	if rec.Data != nil {
		d := *rec.Data
		rec.Data = &d
	}
	lines, omitted := r.lines, r.omitted
	if last != nil {
		if len(lines) < storage.MaxTranscriptLines {
			lines = append(lines[:len(lines):len(lines)], *last)
		} else {
			omitted++
		}
	}
	if omitted > 0 {
		// spec §13.1: the last entry says how many were left out.
		rec.Transcript = append(append([]storage.TranscriptLine(nil), lines[:storage.MaxTranscriptLines-1]...),
			storage.TranscriptLine{C: "...", S: strconv.Itoa(omitted+1) + " more exchanges left out"})
	} else {
		rec.Transcript = append([]storage.TranscriptLine(nil), lines...)
	}
	if end != nil {
		t := end.UTC().Truncate(time.Millisecond)
		rec.EndedAt = &t
		switch {
		case len(rec.Emails) > 0:
			rec.Outcome = storage.SMTPDelivered
		case r.faulted:
			rec.Outcome = storage.SMTPFaulted
		case r.refused:
			rec.Outcome = storage.SMTPRejected
		default:
			rec.Outcome = storage.SMTPAborted
		}
	}
	return rec
}

// end ends the record of the span, if it reached a RCPT, and hands it to
// the session log; then the next span begins with the next exchange.
// ss.mu is held.
func (ss *session) end(now time.Time) {
	r := &ss.rs
	if r.rec != nil && ss.recording() {
		switch {
		case r.stored != nil:
			ss.srv.sessions.Close(*r.stored, true)
		case r.logged:
			ss.srv.sessions.Close(r.record(&now, nil), false)
		default:
			ss.srv.metrics.unlogged.Inc()
		}
	}
	ss.rs = recordState{loggedOut: r.loggedOut}
}

// transactionOver is told by Reset that the transaction is over: the
// record ends once the reply being written is out (RSET and EHLO reset
// before their reply, DATA after). A span that never reached a RCPT goes
// on, so that the record that follows has the EHLO.
func (ss *session) transactionOver() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case !ss.rs.reached:
	case ss.wire.open:
		ss.rs.endAfter = true
	default:
		ss.end(ss.srv.now())
	}
}

// sessionOver ends the session's record, with the command that got no
// reply (a fault rule hung up, the client left). A span that never
// reached a RCPT is handed to the next session on the connection (after
// STARTTLS), through the limitConn.
func (ss *session) sessionOver() {
	if ss.wire.open && ss.wire.cmd != nil {
		ss.replied(ss.wire.cmd, nil)
		ss.wire.open = false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.rs.loggedOut = true
	switch {
	case ss.rs.delivering: // delivered ends it
	case ss.rs.reached:
		ss.end(ss.srv.now())
	case ss.limit != nil && ss.rs.id != "":
		ss.limit.carry = ss.rs.span
	}
}

// dataRead notes how many octets of message data came.
func (ss *session) dataRead(n int64) {
	ss.mu.Lock()
	ss.rs.dataBytes = n
	ss.mu.Unlock()
}

// dataFault notes the fault rule that answers the data.
func (ss *session) dataFault(ruleID string) {
	ss.mu.Lock()
	ss.rs.dataFault = ruleID
	ss.mu.Unlock()
}

// delivering returns the final record of a session about to store its
// message of n octets, to be written with the delivery: it assumes the
// 250; nil when none is kept.
func (ss *session) delivering(n int64) *storage.SMTPSession {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	r := &ss.rs
	if r.rec == nil || !ss.recording() {
		return nil
	}
	r.delivering = true
	ok := okReply(r.id)
	now := ss.srv.now()
	// The command the 250 will answer: the final dot, or BDAT ... LAST
	// (whose go-smtp waits for this Data before it reads on).
	rec := r.record(&now, &storage.TranscriptLine{C: transcriptCommand(ss.wire.cmd, false), S: ok})
	if rec.Data == nil {
		rec.Data = &storage.SMTPData{}
	}
	rec.Data.Reply, rec.Data.Bytes = &ok, n
	rec.Outcome = storage.SMTPDelivered
	return &rec
}

// delivered takes the outcome of Deliver for rec (from delivering): ids
// are the emails stored, kept by the record as they are.
func (ss *session) delivered(rec *storage.SMTPSession, ids []string, err error) {
	if rec == nil {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	r := &ss.rs
	r.delivering = false
	if err == nil {
		rec.Emails = ids
		r.stored = rec
		r.rec.Emails = rec.Emails
		if r.logged {
			// The rate bounds sessions that store no mail (spec §13.1):
			// this one's record is the delivery's, so its token goes back.
			ss.srv.logRate.refund()
		}
	}
	if r.loggedOut {
		ss.end(ss.srv.now())
	}
}

// okReply is the reply to a message stored: it names the session, so that
// a sender's log leads to the session log and to the emails.
func okReply(id string) string { return "250 2.0.0 OK " + id }

// verbOf returns the command word of cmd in upper case, for the commands
// burner tells apart; "" for none, "?" for others.
func verbOf(cmd []byte) string {
	if cmd == nil {
		return ""
	}
	v := cmd
	if i := bytes.IndexByte(cmd, ' '); i >= 0 {
		v = cmd[:i]
	}
	for _, verb := range [...]string{"MAIL", "RCPT", "DATA", "BDAT", "RSET", "EHLO", "HELO", "NOOP", "QUIT", "VRFY", "AUTH", "STARTTLS", "."} {
		if len(v) == len(verb) && bytes.EqualFold(v, []byte(verb)) {
			return verb
		}
	}
	return "?"
}

// transcriptCommand is cmd as the transcript shows it: never an AUTH
// secret (spec §13.1), be it the initial response on the AUTH line or a
// line sent after a 334 challenge.
func transcriptCommand(cmd []byte, afterChallenge bool) string {
	switch {
	case cmd == nil:
		return ""
	case afterChallenge:
		return "<hidden>"
	case verbOf(cmd) == "AUTH":
		if f := bytes.Fields(cmd); len(f) > 1 {
			return clip("AUTH " + string(f[1]))
		}
	}
	return clip(string(cmd))
}

// clip makes s fit a transcript (and a JSON string): valid UTF-8, at most
// storage.MaxTranscriptText octets, a cut marked with "...".
func clip(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= storage.MaxTranscriptText {
		return s
	}
	n := storage.MaxTranscriptText - 3
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// pathOf returns the address of a RCPT line that go-smtp refused before
// Rcpt saw it: what is between its first < and the > after it; "" when
// there is none.
func pathOf(cmd []byte) string {
	i := bytes.IndexByte(cmd, '<')
	if i < 0 {
		return ""
	}
	j := bytes.IndexByte(cmd[i:], '>')
	if j < 0 {
		return ""
	}
	return string(cmd[i+1 : i+j])
}

// rateLimit lets through rate events a second, as many at once: a token
// bucket. A negative rate lets everything through.
type rateLimit struct {
	rate float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newRateLimit(rate float64) *rateLimit {
	return &rateLimit{rate: rate, tokens: rate}
}

// refund gives back a token taken by allow, up to the bucket's size.
func (l *rateLimit) refund() {
	if l.rate < 0 {
		return
	}
	l.mu.Lock()
	l.tokens = min(l.rate, l.tokens+1)
	l.mu.Unlock()
}

// allow takes a token at now, if there is one.
func (l *rateLimit) allow(now time.Time) bool {
	if l.rate < 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = min(l.rate, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
