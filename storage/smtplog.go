package storage

import (
	"slices"
	"time"
)

// SMTPSession is the record of one SMTP session as the session log keeps
// it (spec §13.1). A session here is one mail transaction: from the first
// exchange after the previous transaction ended (the connection's start
// for the first one, so its transcript holds EHLO and STARTTLS) to the
// reply to its data, or a RSET, a new EHLO, QUIT or the connection's end.
// A connection that sends three messages makes three records, each with
// its own id, one MAIL FROM and one data reply, as the spec's record has;
// the 250 that ends a message names the id of its record. Only a session
// that reached a RCPT command is recorded. (Not Session: that is a web UI
// session.)
type SMTPSession struct {
	ID        string     // a UUID, version 7, made when the session starts; the final 250 and the Received field name it
	StartedAt time.Time  // UTC, to the millisecond (Milli): when its first exchange was answered
	EndedAt   *time.Time // UTC, to the millisecond; nil while the session is open
	Node      string     // the node that took the connection (spec §10); "" on one machine without a name
	Client    SMTPClient
	TLS       *TLS   // nil when the session was not under TLS
	MailFrom  string // the reverse path of MAIL FROM, without brackets; "" for the null sender or no MAIL
	// Recipients holds each RCPT command of the session in order, refused
	// ones too, repeats too.
	Recipients []SMTPRecipient
	Data       *SMTPData   // nil when DATA (or BDAT) was never reached
	Emails     []string    // the ids of the emails the session stored, in the order of its accepted recipients
	Outcome    SMTPOutcome // "" while the session is open
	// Transcript holds the session's commands and burner's replies, at
	// most MaxTranscriptLines of them, each side at most
	// MaxTranscriptText octets: never message data, never an AUTH secret.
	Transcript []TranscriptLine
}

// SMTPClient is who spoke to burner in a session.
type SMTPClient struct {
	IP   string // the peer's address, without the port
	HELO string // the name the client gave in EHLO or HELO
}

// SMTPRecipient is one RCPT command of a session and burner's reply.
type SMTPRecipient struct {
	Address string // as the client gave it, without brackets
	// Inbox is the inbox the address names (InboxName of its local part);
	// nil when the address is outside the inbox domains or not one the
	// API could list (such a RCPT is refused).
	Inbox *string
	// Reply is the reply as sent ("250 2.1.5 OK"); nil when a fault rule
	// closed the connection instead.
	Reply *string
	Fault string // the id of the fault rule that answered; "" when burner did
}

// SMTPData is what became of a session's message data.
type SMTPData struct {
	// Reply is the reply to the data (or to a DATA refused before any
	// data, "554 5.5.1 No valid recipients"); nil when the session ended
	// without one (a fault rule's disconnect, or the client left).
	Reply *string
	Bytes int64  // octets of message data received, burner's Received field not counted
	Fault string // the id of the fault rule that answered; "" when burner did
}

// SMTPOutcome is how a session ended (spec §13.1), decided in this order.
type SMTPOutcome string

const (
	SMTPDelivered SMTPOutcome = "delivered" // it stored at least one email
	SMTPFaulted   SMTPOutcome = "faulted"   // else, a fault rule answered a command
	SMTPRejected  SMTPOutcome = "rejected"  // else, burner refused a recipient or the data
	SMTPAborted   SMTPOutcome = "aborted"   // else: the client left, reset or timed out
)

// TranscriptLine is one exchange: a command and the reply to it.
type TranscriptLine struct {
	// C is the command line without its CRLF. An AUTH line keeps only the
	// mechanism; a line sent after a 334 challenge is "<hidden>"; "." is
	// the end of a message's data. "" for a reply that answers no command
	// (an idle timeout).
	C string
	// S is the reply as sent, its lines joined by "\n"; "" when none came
	// (the connection closed first).
	S string
}

// MaxTranscriptLines bounds a session's transcript (spec §13.1): past it,
// the last line says how many exchanges were left out.
const MaxTranscriptLines = 200

// MaxTranscriptText bounds each side of a transcript line, in octets
// (spec §13.1: 512 characters; a cut is marked with "...").
const MaxTranscriptText = 512

// SMTPSessionQuery selects records of the session log (spec §13.1),
// newest first.
type SMTPSessionQuery struct {
	// Inbox, when not "", lists only the sessions that named that inbox
	// (an InboxName) in a RCPT, accepted or refused; "" lists every
	// session, those that named no inbox too.
	Inbox string
	Since time.Time // when not zero, only sessions started strictly after it
	Limit int       // at most this many; 0 means DefaultSMTPSessions
}

// DefaultSMTPSessions and MaxSMTPSessions bound a listing of the session
// log (spec §13.1: limit 1 to 100, 20 when not given).
const (
	DefaultSMTPSessions = 20
	MaxSMTPSessions     = 100
)

// Inboxes returns the inboxes the session's RCPTs named, accepted or
// refused, each once, in the order first named: what
// SMTPSessionQuery.Inbox finds a session by.
func (s *SMTPSession) Inboxes() []string {
	var out []string
	for _, r := range s.Recipients {
		if r.Inbox != nil && !slices.Contains(out, *r.Inbox) {
			out = append(out, *r.Inbox)
		}
	}
	return out
}
