package record

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"

	"burner/storage"
)

// A record of the SMTP session log (spec §13.1) is encoded once for both
// engines. It is written for every message delivered, in the delivery's
// commit, so it is kept small:
//
//	version(1) flags(1) s2 block, with the dictionary of its version, of
//	    uvarint(startedAt unix ms) [uvarint(endedAt - startedAt, ms) when flagEnded]
//	    outcome(1): 0 open, 1 delivered, 2 faulted, 3 rejected, 4 aborted
//	    uvarint-prefixed: id, node, client ip, helo, mail from
//	    [uvarint-prefixed: tls version, tls cipher, when flagTLS]
//	    uvarint(number of recipients), for each:
//	        bits(1): rcptInbox, rcptInboxOfAddress, rcptReply
//	        uvarint-prefixed address, [inbox, when rcptInbox], [reply, when rcptReply], fault
//	    [when flagData: bits(1): dataReply; [uvarint-prefixed reply]; uvarint(bytes); uvarint-prefixed fault]
//	    uvarint(number of emails), then 16 bytes each (flagEmailIDs) or each uvarint-prefixed
//	    uvarint(number of transcript lines), then uvarint-prefixed: c, s for each
//
// flags, outside the block, tell an engine what it decides on without
// decoding the rest: flagEnded (the record is final, and an open one must
// not replace it). An inbox that is the InboxName of the address's local
// part (nearly every one) is not written again (rcptInboxOfAddress). The
// session id is kept as text, for the final reply of a delivered session
// names it and the block then holds it once.
//
// The dictionary holds what records share: burner's replies and the
// words of commands. It belongs to the version: a new dictionary is a new
// version, and the old one is kept for the records written with it.
const (
	smtpLogVersion = 1

	flagEnded    = 1 << 0
	flagTLS      = 1 << 1
	flagData     = 1 << 2
	flagEmailIDs = 1 << 3

	rcptInbox          = 1 << 0
	rcptInboxOfAddress = 1 << 1
	rcptReply          = 1 << 2

	dataReply = 1 << 0
)

// smtpLogDict is the s2 dictionary of version 1: the lines most sessions
// hold, the most common last (s2 finds the nearest match first).
var smtpLogDict = s2.MakeDictManual([]byte(
	"550 5.1.1 No such mailbox here"+
		"503 5.5.1 Need MAIL command503 5.5.1 Need RCPT command554 5.5.1 No valid recipients"+
		"500 5.5.2 Syntax errors, command unrecognized"+
		"421 4.4.2 Timeout or error reading the message, closing connection"+
		"451 4.3.0 Temporary storage failure, try again later"+
		"452 4.3.1 Insufficient system storage, try again later"+
		"552 5.3.4 Maximum message size exceeded"+
		"451 4.3.0 Try again later450 4.2.1 Slow down"+
		"STARTTLS220 2.0.0 Ready to start TLSTLS 1.3TLS_AES_128_GCM_SHA256TLS_AES_256_GCM_SHA384TLS 1.2"+
		"BDAT  LAST250 2.0.0 OK,  octets received"+
		"RSET250 2.0.0 OKNOOP250 2.0.0 OKQUIT221 2.0.0  closing connection"+
		"550 5.1.1 Relay access denied: not an inbox domain here"+
		"localhost127.0.0.1"+
		"EHLO 250-localhost\n250-PIPELINING\n250-8BITMIME\n250-ENHANCEDSTATUSCODES\n250-CHUNKING\n250-SMTPUTF8\n"+
		"250-STARTTLS\n250-SIZE 10485760\n250 LIMITS RCPTMAX=100"+
		"MAIL FROM:<250 2.1.0 OK"+
		"RCPT TO:<250 2.1.5 OK"+
		"DATA354 End data with <CR><LF>.<CR><LF>"+
		".250 2.0.0 OK "), 0)

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
	var flags byte
	b := make([]byte, 0, 512)
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
			b = AppendString(b, *r.Reply)
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
			b = AppendString(b, *d.Reply)
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
		b = AppendString(AppendString(b, l.C), l.S)
	}
	out := make([]byte, 2, 2+s2.MaxEncodedLen(len(b)))
	out[0], out[1] = smtpLogVersion, flags
	return append(out, smtpLogDict.EncodeBetter(out[2:cap(out)], b)...), nil
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

// DecodeSMTPSession decodes a record that EncodeSMTPSession made, or
// returns ErrCorruptSMTPSession.
func DecodeSMTPSession(v []byte) (storage.SMTPSession, error) {
	if len(v) < 2 || v[0] != smtpLogVersion {
		return storage.SMTPSession{}, ErrCorruptSMTPSession
	}
	flags := v[1]
	n, err := s2.DecodedLen(v[2:])
	if err != nil || n > 1<<20 {
		return storage.SMTPSession{}, ErrCorruptSMTPSession
	}
	b, err := smtpLogDict.Decode(make([]byte, n), v[2:])
	if err != nil {
		return storage.SMTPSession{}, ErrCorruptSMTPSession
	}
	d := decoder{b: b}
	s := d.session(flags)
	if d.err != nil || len(d.b) != 0 {
		return storage.SMTPSession{}, ErrCorruptSMTPSession
	}
	return s, nil
}

// decoder reads the block of a record; the first fault sets err, and
// every read after it returns zero values.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("short")

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	n, w := binary.Uvarint(d.b)
	if w <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[w:]
	return n
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errShort
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) string() string {
	if d.err != nil {
		return ""
	}
	s, rest, ok := CutString(d.b)
	if !ok {
		d.err = errShort
		return ""
	}
	d.b = rest
	return string(s)
}

// count reads a count of items of at least min bytes each: one beyond
// what is left is damage, not a reason to allocate.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.err = errShort
		return 0
	}
	return int(n)
}

func (d *decoder) session(flags byte) storage.SMTPSession {
	var s storage.SMTPSession
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
		s.TLS = &storage.SMTPTLS{Version: d.string(), Cipher: d.string()}
	}
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
			r.Reply = ptr(d.string())
		}
		r.Fault = d.string()
	}
	if flags&flagData != 0 {
		s.Data = &storage.SMTPData{}
		if d.byte()&dataReply != 0 {
			s.Data.Reply = ptr(d.string())
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
		s.Transcript[i] = storage.TranscriptLine{C: d.string(), S: d.string()}
	}
	return s
}

func ptr(s string) *string { return &s }
