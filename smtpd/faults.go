package smtpd

import (
	"context"
	"log/slog"
	"time"

	"github.com/emersion/go-smtp"

	"burner/storage"
)

// Faults chooses the fault rule (spec §13.2) that answers in burner's
// place. Its implementation keeps the rules and counts their uses, exactly
// across nodes; smtpd applies what it chooses. A storage.Engine is one.
type Faults interface {
	// ApplyFaultRule returns the first rule in creation order that
	// applies at stage to a message for any of inboxes (inbox names,
	// lower case), and counts that use of it; ok is false when none
	// applies. A spent rule (Used equal to Times, Times not 0) applies no
	// more; a rule with PerMinute applies only to messages beyond that
	// many for the inbox within the last minute.
	//
	// At storage.FaultAtRcpt inboxes holds the one inbox a RCPT names,
	// and ApplyFaultRule is called for every RCPT that burner would
	// accept: one that no rule answers counts toward PerMinute for that
	// inbox (spec §13.2: "each RCPT that named the inbox and was not
	// refused"). At storage.FaultAtData inboxes holds the message's
	// accepted recipients' inboxes. A rule returned has a valid Reply
	// (storage.CleanFaultRule), or none and Disconnect.
	ApplyFaultRule(ctx context.Context, stage storage.FaultStage, inboxes []string) (rule storage.FaultRule, ok bool, err error)
}

// applyFault asks the fault rules whether one answers at stage for
// inboxes. A store that cannot answer applies none: the rules are for
// tests, and must not cost real mail.
func (ss *session) applyFault(stage storage.FaultStage, inboxes []string) (storage.FaultRule, bool) {
	if ss.srv.faults == nil {
		return storage.FaultRule{}, false
	}
	rule, ok, err := ss.srv.faults.ApplyFaultRule(context.Background(), stage, inboxes)
	if err != nil {
		ss.srv.log.Warn("fault rules out of reach: none applied", "err", err, "stage", string(stage))
		return storage.FaultRule{}, false
	}
	if !ok {
		return storage.FaultRule{}, false
	}
	ss.srv.metrics.faults.WithLabelValues(string(stage)).Inc()
	ss.srv.log.LogAttrs(context.Background(), slog.LevelInfo, "fault rule applied", slog.String("session_id", ss.sessionID()),
		slog.String("rule_id", rule.ID), slog.String("stage", string(stage)))
	return rule, true
}

// fault answers as rule says, after its delay: the error for go-smtp to
// send, or a closed connection.
func (ss *session) fault(rule storage.FaultRule) error {
	if rule.Delay > 0 {
		// The session's timeouts still hold: the client's, which a delay
		// is there to test, and ours, which bound reads, not this wait.
		// Shutdown ends it.
		t := time.NewTimer(rule.Delay)
		select {
		case <-t.C:
		case <-ss.srv.quit:
			t.Stop()
		}
	}
	if rule.Disconnect {
		ss.wire.hangUp()
		return errDataAborted // go-smtp's reply to it goes nowhere
	}
	reply, err := storage.ParseFaultReply(rule.Reply)
	if err != nil { // the implementation broke its contract
		ss.srv.log.Error("fault rule with a bad reply: answered 451", "rule_id", rule.ID, "err", err)
		return errTempStorage
	}
	e := &smtp.SMTPError{Code: reply.Code, EnhancedCode: smtp.EnhancedCodeNotSet, Message: reply.Text}
	if reply.Enhanced[0] != 0 {
		e.EnhancedCode = smtp.EnhancedCode(reply.Enhanced)
	}
	if e.Message == "" {
		e.Message = "Try again later"
		if e.Code >= 500 {
			e.Message = "Refused"
		}
	}
	if e.Code == 421 {
		// RFC 5321 §3.8: a 421 ends the session.
		ss.wire.closeAfter = true
	}
	return e
}
