package record

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"

	"burner/storage"
)

// A record of the SMTP session log (spec §13.1) is encoded once for both
// engines. It is written for every message delivered, in the delivery's
// commit, so it is kept small and quick to make:
//
//	version(1) flags(1) body, or with flagS2 an s2 block of the body:
//	    uvarint(startedAt unix ms) [uvarint(endedAt - startedAt, ms) when flagEnded]
//	    outcome(1): 0 open, 1 delivered, 2 faulted, 3 rejected, 4 aborted
//	    uvarint-prefixed: id, node, client ip, helo, mail from
//	    [uvarint-prefixed: tls version, tls cipher, when flagTLS]
//	    uvarint(number of recipients), for each:
//	        bits(1): rcptInbox, rcptInboxOfAddress, rcptReply
//	        uvarint-prefixed address, [inbox, when rcptInbox], [reply as lines, when rcptReply], fault
//	    [when flagData: bits(1): dataReply; [reply as lines]; uvarint(bytes); uvarint-prefixed fault]
//	    uvarint(number of emails), then 16 bytes each (flagEmailIDs) or each uvarint-prefixed
//	    uvarint(number of transcript lines), then for each: c as lines, s as lines
//
// A text "as lines" is uvarint(number of lines) and, for each (a reply's
// lines are joined by "\n"), a uvarint code: 0 and the line
// uvarint-prefixed; k, 1 ≤ k ≤ len(smtpLogLines), the k-th of
// smtpLogLines, the lines that repeat from session to session (burner's
// replies, and an EHLO reply's capabilities); or one of the lines made of
// the record's own fields (lineEHLO "EHLO <helo>", lineMail "MAIL
// FROM:<mail from>", lineOK "250 2.0.0 OK <id>", and lineRcpt, followed
// by uvarint(k), "RCPT TO:<the k-th recipient's address>"). A delivered
// session's record is then about 200 bytes without any compression; a
// body over s2Above bytes (a long transcript) is an s2 block. (s2 with a
// dictionary of the repeated lines compressed a typical record as well,
// but cleared a 64 KB table at each call: 30 µs a record.)
//
// flags, outside the body, tell an engine what it decides on without
// decoding the rest: flagEnded (the record is final, and an open one must
// not replace it). An inbox that is the InboxName of the address's local
// part (nearly every one) is not written again (rcptInboxOfAddress).
//
// smtpLogLines belongs to the version: a line is only ever added at its
// end, and changing one is a new version.
const (
	smtpLogVersion = 1

	flagEnded    = 1 << 0
	flagTLS      = 1 << 1
	flagData     = 1 << 2
	flagEmailIDs = 1 << 3
	flagS2       = 1 << 4

	rcptInbox          = 1 << 0
	rcptInboxOfAddress = 1 << 1
	rcptReply          = 1 << 2

	dataReply = 1 << 0

	// s2Above is the body size from which a record is compressed.
	s2Above = 1024
)

// smtpLogLines are the lines of version 1's table, from code 1.
var smtpLogLines = [...]string{
	"250-PIPELINING", "250-8BITMIME", "250-ENHANCEDSTATUSCODES", "250-CHUNKING", "250-SMTPUTF8", "250-STARTTLS",
	"250-SIZE 10485760", "250 LIMITS RCPTMAX=100", "250-LIMITS RCPTMAX=100", "250 SIZE 10485760",
	"250 2.1.0 OK", "250 2.1.5 OK", "354 End data with <CR><LF>.<CR><LF>", "250 2.0.0 OK",
	"DATA", ".", "QUIT", "RSET", "NOOP", "STARTTLS", "220 2.0.0 Ready to start TLS",
	"550 5.1.1 Relay access denied: not an inbox domain here", "550 5.1.1 No such mailbox here",
	"554 5.5.1 No valid recipients", "503 5.5.1 Need MAIL command", "503 5.5.1 Need RCPT command",
	"451 4.3.0 Temporary storage failure, try again later", "452 4.3.1 Insufficient system storage, try again later",
	"421 4.4.2 Timeout or error reading the message, closing connection", "552 5.3.4 Maximum message size exceeded",
	"503 5.5.1 Authentication not enabled: burner only receives mail",
	"252 2.5.0 Cannot verify users here; RCPT tells which addresses take mail", "500 5.5.2 Line too long, closing connection",
	"451 4.3.0 Try again later", "450 4.2.1 Slow down",
}

// The codes of the lines made of a record's own fields, after
// smtpLogLines'.
const (
	lineEHLO = uint64(len(smtpLogLines)) + 1 + iota
	lineMail
	lineOK
	lineRcpt
)

// smtpLogLineCode is smtpLogLines' codes by line.
var smtpLogLineCode = func() map[string]uint64 {
	m := make(map[string]uint64, len(smtpLogLines))
	for i, l := range smtpLogLines {
		m[l] = uint64(i + 1)
	}
	return m
}()

// ErrCorruptSMTPSession means an encoded session record is damaged. It
// wraps storage.ErrCorrupt, as the damage of any record does.
var ErrCorruptSMTPSession = fmt.Errorf("%w: smtp session record", storage.ErrCorrupt)

var outcomes = [...]storage.SMTPOutcome{"", storage.SMTPDelivered, storage.SMTPFaulted, storage.SMTPRejected, storage.SMTPAborted}

// EncodeSMTPSession encodes s for an engine to store. s.ID must be a
// UUID (storage.ParseID), as smtpd makes them, and its times at or after
// 1970; else an error.
func EncodeSMTPSession(s *storage.SMTPSession) ([]byte, error) {
	if _, err := storage.ParseID(s.ID); err != nil {
		return nil, fmt.Errorf("smtp session %q: the id is not a UUID", s.ID)
	}
	started := s.StartedAt.UnixMilli()
	if started < 0 || s.EndedAt != nil && s.EndedAt.UnixMilli() < started {
		return nil, fmt.Errorf("smtp session %s: times out of order", s.ID)
	}
	outcome := -1
	for i, o := range outcomes {
		if o == s.Outcome {
			outcome = i
		}
	}
	if outcome < 0 {
		return nil, fmt.Errorf("smtp session %s: unknown outcome %q", s.ID, s.Outcome)
	}
	// The replies of recipients and data come before the recipients are
	// read: no lineRcpt.
	e, plain := lineEncoder{s: s, rcpts: true}, lineEncoder{s: s}
	var flags byte
	b := make([]byte, 2, 320)
	b = binary.AppendUvarint(b, uint64(started))
	if s.EndedAt != nil {
		flags |= flagEnded
		b = binary.AppendUvarint(b, uint64(s.EndedAt.UnixMilli()-started))
	}
	b = append(b, byte(outcome))
	for _, f := range [...]string{s.ID, s.Node, s.Client.IP, s.Client.HELO, s.MailFrom} {
		b = AppendString(b, f)
	}
	if s.TLS != nil {
		flags |= flagTLS
		b = AppendString(AppendString(b, s.TLS.Version), s.TLS.Cipher)
	}
	b = binary.AppendUvarint(b, uint64(len(s.Recipients)))
	for _, r := range s.Recipients {
		var bits byte
		switch {
		case r.Inbox == nil:
		case *r.Inbox == storage.InboxName(storage.LocalPart(r.Address)):
			bits |= rcptInboxOfAddress
		default:
			bits |= rcptInbox
		}
		if r.Reply != nil {
			bits |= rcptReply
		}
		b = AppendString(append(b, bits), r.Address)
		if bits&rcptInbox != 0 {
			b = AppendString(b, *r.Inbox)
		}
		if r.Reply != nil {
			b = plain.append(b, *r.Reply)
		}
		b = AppendString(b, r.Fault)
	}
	if d := s.Data; d != nil {
		flags |= flagData
		var bits byte
		if d.Reply != nil {
			bits |= dataReply
		}
		b = append(b, bits)
		if d.Reply != nil {
			b = plain.append(b, *d.Reply)
		}
		b = AppendString(binary.AppendUvarint(b, uint64(max(d.Bytes, 0))), d.Fault)
	}
	b = binary.AppendUvarint(b, uint64(len(s.Emails)))
	if canonicalIDs(s.Emails) {
		flags |= flagEmailIDs
		for _, id := range s.Emails {
			u, _ := uuid.Parse(id)
			b = append(b, u[:]...)
		}
	} else {
		for _, id := range s.Emails {
			b = AppendString(b, id)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.Transcript)))
	for _, l := range s.Transcript {
		b = e.append(e.append(b, l.C), l.S)
	}
	b[0] = smtpLogVersion
	if len(b)-2 > s2Above {
		flags |= flagS2
		out := make([]byte, 2, 2+s2.MaxEncodedLen(len(b)-2))
		out[0], out[1] = smtpLogVersion, flags
		return append(out, s2.Encode(out[2:cap(out)], b[2:])...), nil
	}
	b[1] = flags
	return b, nil
}

// lineEncoder writes a record's texts as lines, with the codes of the
// lines made of the record's own fields.
type lineEncoder struct {
	s     *storage.SMTPSession
	rcpts bool // lineRcpt may be used
}

// append appends text as lines.
func (e lineEncoder) append(b []byte, text string) []byte {
	b = binary.AppendUvarint(b, uint64(strings.Count(text, "\n")+1))
	for line := range strings.SplitSeq(text, "\n") {
		b = e.appendLine(b, line)
	}
	return b
}

func (e lineEncoder) appendLine(b []byte, line string) []byte {
	if code, ok := smtpLogLineCode[line]; ok {
		return binary.AppendUvarint(b, code)
	}
	s := e.s
	if rest, ok := strings.CutPrefix(line, "RCPT TO:<"); ok && e.rcpts && strings.HasSuffix(rest, ">") {
		addr := rest[:len(rest)-1]
		for k, r := range s.Recipients {
			if r.Address == addr {
				return binary.AppendUvarint(binary.AppendUvarint(b, lineRcpt), uint64(k))
			}
		}
	}
	switch {
	case len(line) == 5+len(s.Client.HELO) && line[:5] == "EHLO " && line[5:] == s.Client.HELO:
		return binary.AppendUvarint(b, lineEHLO)
	case len(line) == 12+len(s.MailFrom) && line[:11] == "MAIL FROM:<" && line[11:len(line)-1] == s.MailFrom && line[len(line)-1] == '>':
		return binary.AppendUvarint(b, lineMail)
	case len(line) == 13+len(s.ID) && line[:13] == "250 2.0.0 OK " && line[13:] == s.ID:
		return binary.AppendUvarint(b, lineOK)
	}
	return AppendString(append(b, 0), line)
}

// canonicalIDs reports whether each of ids is a UUID in the canonical
// form a UUID's String gives back, so that it may be kept in 16 bytes.
func canonicalIDs(ids []string) bool {
	for _, id := range ids {
		u, err := uuid.Parse(id)
		if err != nil || u.String() != id {
			return false
		}
	}
	return true
}

// SMTPSessionEnded reports whether the encoded record v is final, from its
// flags alone; ErrCorruptSMTPSession when v is no record.
func SMTPSessionEnded(v []byte) (bool, error) {
	if len(v) < 2 || v[0] != smtpLogVersion {
		return false, ErrCorruptSMTPSession
	}
	return v[1]&flagEnded != 0, nil
}

// SMTPSessionInboxes returns the inboxes the encoded record v names
// (storage.SMTPSession.Inboxes), reading no more of it than its
// recipients, or ErrCorruptSMTPSession: for an engine that indexes
// records by inbox.
func SMTPSessionInboxes(v []byte) ([]string, error) {
	d, flags, err := body(v)
	if err != nil {
		return nil, err
	}
	var s storage.SMTPSession
	d.header(&s, flags)
	d.recipients(&s)
	if d.err != nil {
		return nil, ErrCorruptSMTPSession
	}
	return s.Inboxes(), nil
}

// body returns a decoder of v's body, and v's flags.
func body(v []byte) (*decoder, byte, error) {
	if len(v) < 2 || v[0] != smtpLogVersion {
		return nil, 0, ErrCorruptSMTPSession
	}
	flags, b := v[1], v[2:]
	if flags&flagS2 != 0 {
		n, err := s2.DecodedLen(b)
		if err != nil || n > 1<<20 {
			return nil, 0, ErrCorruptSMTPSession
		}
		if b, err = s2.Decode(make([]byte, n), b); err != nil {
			return nil, 0, ErrCorruptSMTPSession
		}
	}
	return &decoder{reader: reader{b: b}}, flags, nil
}

// DecodeSMTPSession decodes a record that EncodeSMTPSession made, or
// returns ErrCorruptSMTPSession.
func DecodeSMTPSession(v []byte) (storage.SMTPSession, error) {
	d, flags, err := body(v)
	if err != nil {
		return storage.SMTPSession{}, err
	}
	s := d.session(flags)
	if d.err != nil || len(d.b) != 0 {
		return storage.SMTPSession{}, ErrCorruptSMTPSession
	}
	return s, nil
}

// decoder reads the body of a record; the first fault sets err, and
// every read after it returns zero values.
type decoder struct {
	reader
	s *storage.SMTPSession // the record as read so far, for the lines made of its fields
}

// lines reads a text that lineEncoder.append wrote.
func (d *decoder) lines() string {
	n := d.count(1)
	if n == 1 { // most are one line: no builder
		return d.line()
	}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.line())
	}
	return b.String()
}

func (d *decoder) line() string {
	s := d.s
	switch code := d.uvarint(); {
	case code == 0:
		return d.string()
	case code <= uint64(len(smtpLogLines)):
		return smtpLogLines[code-1]
	case code == lineEHLO:
		return "EHLO " + s.Client.HELO
	case code == lineMail:
		return "MAIL FROM:<" + s.MailFrom + ">"
	case code == lineOK:
		return "250 2.0.0 OK " + s.ID
	case code == lineRcpt:
		if k := d.uvarint(); k < uint64(len(s.Recipients)) {
			return "RCPT TO:<" + s.Recipients[k].Address + ">"
		}
	}
	d.err = errShort
	return ""
}

func (d *decoder) session(flags byte) storage.SMTPSession {
	var s storage.SMTPSession
	d.header(&s, flags)
	d.recipients(&s)
	d.rest(&s, flags)
	return s
}

// header reads the record's fields before its recipients.
func (d *decoder) header(s *storage.SMTPSession, flags byte) {
	d.s = s
	started := int64(d.uvarint())
	s.StartedAt = FromMilli(started)
	if flags&flagEnded != 0 {
		t := FromMilli(started + int64(d.uvarint()))
		s.EndedAt = &t
	}
	if o := int(d.byte()); o < len(outcomes) {
		s.Outcome = outcomes[o]
	} else {
		d.err = errShort
	}
	s.ID, s.Node, s.Client.IP, s.Client.HELO, s.MailFrom = d.string(), d.string(), d.string(), d.string(), d.string()
	if flags&flagTLS != 0 {
		s.TLS = &storage.TLS{Version: d.string(), Cipher: d.string()}
	}
}

// recipients reads the record's recipients.
func (d *decoder) recipients(s *storage.SMTPSession) {
	if n := d.count(3); n > 0 {
		s.Recipients = make([]storage.SMTPRecipient, n)
	}
	for i := range s.Recipients {
		r := &s.Recipients[i]
		bits := d.byte()
		r.Address = d.string()
		switch {
		case bits&rcptInbox != 0:
			r.Inbox = ptr(d.string())
		case bits&rcptInboxOfAddress != 0:
			r.Inbox = ptr(storage.InboxName(storage.LocalPart(r.Address)))
		}
		if bits&rcptReply != 0 {
			r.Reply = ptr(d.lines())
		}
		r.Fault = d.string()
	}
}

// rest reads the record's fields after its recipients.
func (d *decoder) rest(s *storage.SMTPSession, flags byte) {
	if flags&flagData != 0 {
		s.Data = &storage.SMTPData{}
		if d.byte()&dataReply != 0 {
			s.Data.Reply = ptr(d.lines())
		}
		s.Data.Bytes = int64(d.uvarint())
		s.Data.Fault = d.string()
	}
	per := 1
	if flags&flagEmailIDs != 0 {
		per = 16
	}
	if n := d.count(per); n > 0 {
		s.Emails = make([]string, n)
	}
	for i := range s.Emails {
		if flags&flagEmailIDs == 0 {
			s.Emails[i] = d.string()
			continue
		}
		if d.err != nil || len(d.b) < 16 {
			d.err = errShort
			break
		}
		s.Emails[i] = uuid.UUID(d.b[:16]).String()
		d.b = d.b[16:]
	}
	if n := d.count(2); n > 0 {
		s.Transcript = make([]storage.TranscriptLine, n)
	}
	for i := range s.Transcript {
		s.Transcript[i] = storage.TranscriptLine{C: d.lines(), S: d.lines()}
	}
}

func ptr(s string) *string { return &s }
