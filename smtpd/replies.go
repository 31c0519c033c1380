package smtpd

import (
	"bytes"
	"strconv"
)

// go-smtp v0.25.1 (conn.go, server.go) writes these replies in words of its
// own, which a Session cannot change (docs/upstream.md asks for a hook).
// reword gives each burner's plain words with the RFC 3463 code that fits,
// as a real MX would; the lines it does not know go out as they are, and
// TestRepliesPinned holds it to the go-smtp in go.mod, so that a go-smtp
// whose words changed fails a test rather than a user. The greeting
// ("220 <host> ESMTP Service Ready", RFC 5321's own words) and the replies
// to commands before EHLO go out before go-smtp makes the Session, and so
// the wire: they stay go-smtp's.
var (
	goEHLO        = []byte("250-Hello ")                                         // EHLO's first line: RFC 5321 §4.1.1.1 wants the server's name there
	goHELO        = []byte("250 2.0.0 Hello ")                                   // the same for HELO, where no enhanced code belongs (RFC 2034 §3)
	goMail        = []byte("250 2.0.0 Roger, accepting mail from <")             // RFC 3463: X.1.0 is about the sender
	goRcpt        = []byte("250 2.0.0 I'll make sure <")                         // X.1.5: the destination is valid
	goData        = []byte("354 Go ahead. End your data with <CR><LF>.<CR><LF>") //
	goQueued      = []byte("250 2.0.0 OK: queued")                               // names no id a sender could quote
	goContinue    = []byte("250 2.0.0 Continue")                                 // a BDAT chunk
	goReset       = []byte("250 2.0.0 Session reset")                            //
	goNoop        = []byte("250 2.0.0 I have successfully done nothing")         //
	goQuit        = []byte("221 2.0.0 Bye")                                      // RFC 5321 §4.2: 221 names the server
	goVrfy        = []byte("252 2.5.0 Cannot VRFY user, but will accept message")
	goNoRcpt      = []byte("502 5.5.1 Missing RCPT TO command.") // 502 is "not implemented"; RFC 5321 §4.3.2 and RFC 2920 §3.1 want 503 or 554
	goNoMail      = []byte("502 5.5.1 Missing MAIL FROM command.")
	goAuthTLS     = []byte("523 5.7.10 TLS is required") // burner has no AUTH at all (spec §2)
	goAuthMech    = []byte("504 5.7.4 Unsupported authentication mechanism")
	goAuthParam   = []byte("502 5.5.4 Missing parameter")
	goIdle        = []byte("421 4.4.2 Idle timeout, bye bye")
	goErrors      = []byte("500 5.5.1 Too many errors. Quiting now") // go-smtp hangs up after it: RFC 5321 §3.8 says 421
	goLongLine    = []byte("500 5.4.0 Too long line, closing connection")
	goConnError   = []byte("421 4.4.0 Connection error, sorry")
	burnerMail    = []byte("250 2.1.0 OK")
	burnerRcpt    = []byte("250 2.1.5 OK")
	burnerData    = []byte("354 End data with <CR><LF>.<CR><LF>")
	burnerOK      = []byte("250 2.0.0 OK")
	burnerVrfy    = []byte("252 2.5.0 Cannot verify users here; RCPT tells which addresses take mail")
	burnerNoMail  = []byte("503 5.5.1 Need MAIL command")
	burnerNoRcpt  = []byte("503 5.5.1 Need RCPT command")
	burnerNoValid = []byte("554 5.5.1 No valid recipients")
	burnerNoAuth  = []byte("503 5.5.1 Authentication not enabled: burner only receives mail")
	burnerLong    = []byte("500 5.5.2 Line too long, closing connection")
)

// reword implements replier: it returns burner's words for line, a line of
// go-smtp's reply to cmd, or nil to send line as it is.
func (ss *session) reword(cmd, line []byte) []byte {
	host := ss.srv.smtp.Domain
	say := func(parts ...string) []byte {
		ss.rbuf = ss.rbuf[:0]
		for _, p := range parts {
			ss.rbuf = append(ss.rbuf, p...)
		}
		return ss.rbuf
	}
	switch verbOf(cmd) {
	case "EHLO":
		if bytes.HasPrefix(line, goEHLO) {
			return say("250-", host)
		}
	case "HELO":
		if bytes.HasPrefix(line, goHELO) {
			return say("250 ", host)
		}
	case "MAIL":
		if bytes.HasPrefix(line, goMail) {
			return burnerMail
		}
	case "RCPT":
		switch {
		case bytes.HasPrefix(line, goRcpt):
			return burnerRcpt
		case bytes.Equal(line, goNoMail):
			return burnerNoMail
		}
	case "DATA", "BDAT", ".":
		switch {
		case bytes.Equal(line, goData):
			return burnerData
		case bytes.Equal(line, goQueued):
			return say(okReply(ss.sessionID()))
		case bytes.Equal(line, goContinue):
			return say("250 2.0.0 OK, ", strconv.FormatInt(bdatSize(cmd), 10), " octets received")
		case bytes.Equal(line, goNoRcpt):
			// RFC 2920 §3.1: after every RCPT was refused, a pipelining
			// sender's DATA gets 554 "no valid recipients".
			switch {
			case !ss.mailGiven:
				return burnerNoMail
			case ss.rcptTried:
				return burnerNoValid
			}
			return burnerNoRcpt
		}
	case "RSET":
		if bytes.Equal(line, goReset) {
			return burnerOK
		}
	case "NOOP":
		if bytes.Equal(line, goNoop) {
			return burnerOK
		}
	case "QUIT":
		if bytes.Equal(line, goQuit) {
			return say("221 2.0.0 ", host, " closing connection")
		}
	case "VRFY":
		if bytes.Equal(line, goVrfy) {
			return burnerVrfy
		}
	case "AUTH":
		if bytes.Equal(line, goAuthTLS) || bytes.Equal(line, goAuthMech) || bytes.Equal(line, goAuthParam) {
			return burnerNoAuth
		}
	}
	// Whatever the command, or none.
	switch {
	case bytes.Equal(line, goIdle):
		return say("421 4.4.2 ", host, " Idle timeout, closing connection")
	case bytes.Equal(line, goErrors):
		return say("421 4.7.0 ", host, " Too many errors, closing connection")
	case bytes.Equal(line, goLongLine):
		return burnerLong
	case bytes.Equal(line, goConnError):
		return say("421 4.4.0 ", host, " Connection error, closing connection")
	}
	return nil
}
