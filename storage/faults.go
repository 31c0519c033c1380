package storage

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// FaultStage is where a fault rule answers in burner's place (spec §13.2).
type FaultStage string

const (
	// FaultAtRcpt: the RCPT naming a matching inbox gets the rule's reply
	// instead of 250.
	FaultAtRcpt FaultStage = "rcpt"
	// FaultAtData: after the final dot of a message with a matching
	// recipient, the rule's reply instead of 250; nothing is stored and no
	// webhook is sent.
	FaultAtData FaultStage = "data"
)

// FaultRule makes SMTP fail on purpose for some inboxes (spec §13.2). The
// first rule in creation order that applies answers.
type FaultRule struct {
	ID    string
	Inbox string // an inbox pattern as for keys (ParseInboxPattern): alice, ci-*, *
	Stage FaultStage
	// Reply is a 4xx or 5xx code, an optional enhanced status code of the
	// same class and an optional text: "451 4.3.0 Try again later"
	// (ParseFaultReply). It may be "" only when Disconnect is set.
	Reply string
	Times int // the rule is spent after this many uses, counted across nodes; 0: until deleted
	Used  int // uses so far; a spent rule (Used == Times) stays listed and no longer applies
	// Delay is waited before the reply (or the disconnect), 0 to
	// MaxFaultDelay; the session's own timeouts still hold.
	Delay time.Duration
	// Disconnect closes the connection after Delay without a reply: at
	// FaultAtData the client cannot know whether the mail was taken.
	Disconnect bool
	// PerMinute, when not 0, makes the rule apply only to messages beyond
	// that many for the inbox within the last minute, counting each RCPT
	// that named the inbox and was not refused: a receiver's rate limit.
	PerMinute int
	CreatedAt time.Time
	// Config marks a rule armed from the configuration ([[faults.rules]],
	// Engine.ArmFaultRules) rather than through the API.
	Config bool
}

// Spent reports whether r has been used as many times as it may be: it
// stays listed, and no longer applies.
func (r FaultRule) Spent() bool { return r.Times > 0 && r.Used >= r.Times }

// Covers reports whether r's inbox pattern takes the inbox (an InboxName).
func (r FaultRule) Covers(inbox string) bool {
	return Scope{Inboxes: []string{r.Inbox}}.Reaches(inbox)
}

// AppliesTo reports whether r applies at stage to a message for any of
// inboxes; recent says how many RCPTs named an inbox within the last
// minute, and is asked only for a rule with PerMinute (limits).
func (r FaultRule) AppliesTo(stage FaultStage, inboxes []string, recent func(inbox string) (int, error)) (bool, error) {
	if r.Stage != stage || r.Spent() {
		return false, nil
	}
	for _, inbox := range inboxes {
		if !r.Covers(inbox) {
			continue
		}
		n := 0
		if r.PerMinute > 0 {
			var err error
			if n, err = recent(inbox); err != nil {
				return false, err
			}
		}
		if r.limits(stage, n) {
			return true, nil
		}
	}
	return false, nil
}

// Counts reports whether r counts a RCPT for inbox that no rule refused:
// it has PerMinute, is not spent and covers inbox.
func (r FaultRule) Counts(inbox string) bool {
	return r.PerMinute > 0 && !r.Spent() && r.Covers(inbox)
}

// limits reports whether a rule with PerMinute applies at stage to a
// message for an inbox that had recent RCPTs within the last minute, each
// one that named the inbox and was not refused: at FaultAtRcpt the RCPT
// being answered is not counted yet, so the rule answers the (PerMinute+1)th;
// at FaultAtData the message's own RCPT is, so it answers past PerMinute.
// A rule without PerMinute applies to every message.
func (r FaultRule) limits(stage FaultStage, recent int) bool {
	switch {
	case r.PerMinute <= 0:
		return true
	case stage == FaultAtRcpt:
		return recent >= r.PerMinute
	default:
		return recent > r.PerMinute
	}
}

// MaxFaultRules bounds the rules a store holds, spent ones included: each
// RCPT reads them all while fault injection is on.
const MaxFaultRules = 1000

// ErrTooManyFaultRules means a store holds MaxFaultRules rules already:
// delete some before arming more.
var ErrTooManyFaultRules = errors.New("storage: too many fault rules")

// CleanConfigFaultRules cleans every rule armed from the configuration
// (CleanFaultRule) and returns them with their ids (ConfigFaultRuleIDs):
// what an engine's ArmFaultRules does before it writes.
func CleanConfigFaultRules(rules []FaultRule) ([]FaultRule, []string, error) {
	clean := make([]FaultRule, len(rules))
	for i, r := range rules {
		var err error
		if clean[i], err = CleanFaultRule(r); err != nil {
			return nil, nil, err
		}
	}
	return clean, ConfigFaultRuleIDs(clean), nil
}

// ConfigFaultRuleIDs returns the ids of rules armed from the
// configuration (Engine.ArmFaultRules): each made from the rule's
// content and how many equal rules come before it, so that the same
// configuration arms the same rules at every start of every node, and a
// rule armed already keeps its uses. An id has the form of a UUID
// (version 8), as the ids of rules made through the API do.
func ConfigFaultRuleIDs(rules []FaultRule) []string {
	ids := make([]string, len(rules))
	seen := make(map[string]int)
	for i, r := range rules {
		content := fmt.Sprintf("%q %q %q %d %d %t %d", r.Inbox, r.Stage, r.Reply, r.Times, r.Delay, r.Disconnect, r.PerMinute)
		n := seen[content]
		seen[content] = n + 1
		sum := sha256.Sum256(fmt.Appendf(nil, "burner config fault rule %s #%d", content, n))
		var u uuid.UUID
		copy(u[:], sum[:16])
		u[6] = u[6]&0x0f | 0x80 // version 8: made by the application
		u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
		ids[i] = u.String()
	}
	return ids
}

// ArmPlan is what Engine.ArmFaultRules changes in a store (PlanArm).
type ArmPlan struct {
	Drop  []int       // indexes, in the rules the store has, of those to delete
	Add   []FaultRule // the rules to store, newest last
	Armed []FaultRule // the configured rules the store then has, in creation order
}

// PlanArm plans Engine.ArmFaultRules for a store that has the rules have,
// in creation order, and the configured rules want with their ids
// (CleanConfigFaultRules). A rule armed from the configuration that it no
// longer has is deleted; one it still has stays, with its uses; the rest
// are added, made at now. Rules made through the API are left alone.
func PlanArm(have, want []FaultRule, ids []string, now time.Time) ArmPlan {
	var p ArmPlan
	kept := make(map[string]bool)
	for i, r := range have {
		switch {
		case !r.Config:
		case slices.Contains(ids, r.ID):
			kept[r.ID] = true
			p.Armed = append(p.Armed, r)
		default:
			p.Drop = append(p.Drop, i)
		}
	}
	for i, r := range want {
		if kept[ids[i]] {
			continue
		}
		r.ID, r.Used, r.CreatedAt, r.Config = ids[i], 0, now, true
		p.Add = append(p.Add, r)
	}
	p.Armed = append(p.Armed, p.Add...)
	return p
}

// MaxFaultDelay bounds FaultRule.Delay.
const MaxFaultDelay = 60 * time.Second

// MaxFaultReply bounds FaultRule.Reply, in characters (printable ASCII).
const MaxFaultReply = 200

// ErrBadFaultRule means a fault rule has a field out of range or
// malformed; the error is a *FaultRuleError naming the field.
var ErrBadFaultRule = errors.New("storage: bad fault rule")

// FaultRuleError names the field of a fault rule that is out of range or
// malformed, by its name in the API (inbox, stage, reply, times, delay,
// perMinute), so that a 400 can name it. It matches ErrBadFaultRule.
type FaultRuleError struct {
	Field  string
	Reason string // what the field must be, in words
}

func (e *FaultRuleError) Error() string {
	return "fault rule: " + e.Field + ": " + e.Reason
}

// Is makes errors.Is(err, ErrBadFaultRule) hold.
func (e *FaultRuleError) Is(target error) bool { return target == ErrBadFaultRule }

// CleanFaultRule returns r with its inbox pattern in canonical form
// (ParseInboxPattern) and its reply trimmed, or a *FaultRuleError naming
// the first field that is out of range or malformed. ID, Used and
// CreatedAt are the store's and are not checked.
func CleanFaultRule(r FaultRule) (FaultRule, error) {
	inbox, err := ParseInboxPattern(r.Inbox)
	if err != nil {
		return FaultRule{}, &FaultRuleError{"inbox", "a local part (alice) or a prefix ending in one * (ci-*; * alone is every inbox)"}
	}
	r.Inbox = inbox
	if r.Stage != FaultAtRcpt && r.Stage != FaultAtData {
		return FaultRule{}, &FaultRuleError{"stage", `"rcpt" or "data"`}
	}
	r.Reply = strings.TrimSpace(r.Reply)
	if r.Reply != "" || !r.Disconnect {
		if _, err := ParseFaultReply(r.Reply); err != nil {
			return FaultRule{}, err
		}
	}
	if r.Times < 0 {
		return FaultRule{}, &FaultRuleError{"times", "0 (until deleted) or more"}
	}
	if r.Delay < 0 || r.Delay > MaxFaultDelay {
		return FaultRule{}, &FaultRuleError{"delay", "from 0s to 60s"}
	}
	if r.PerMinute < 0 {
		return FaultRule{}, &FaultRuleError{"perMinute", "0 (every message) or more"}
	}
	return r, nil
}

// SMTPReply is a fault rule's reply in its parts.
type SMTPReply struct {
	Code     int    // 400 to 559
	Enhanced [3]int // RFC 3463 class.subject.detail; all 0 when the reply has none
	Text     string // "" when the reply has none
}

// ParseFaultReply parses a fault rule's reply: a 4xx or 5xx code (RFC
// 5321 §4.2: the second digit 0 to 5), then optionally an enhanced status
// code whose class is the code's first digit (RFC 3463: 4.x.x for 4xx,
// each of subject and detail 1 to 3 digits), then optionally a text; all
// printable ASCII, at most MaxFaultReply characters. An error is a
// *FaultRuleError naming "reply".
func ParseFaultReply(s string) (SMTPReply, error) {
	bad := func(reason string) (SMTPReply, error) {
		return SMTPReply{}, &FaultRuleError{"reply", reason}
	}
	const form = `a 4xx or 5xx code, an optional enhanced status code of the same class and a text: "451 4.3.0 Try again later"`
	if len(s) > MaxFaultReply {
		return bad(fmt.Sprintf("at most %d characters", MaxFaultReply))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return bad("printable ASCII only")
		}
	}
	if len(s) < 3 || s[0] != '4' && s[0] != '5' || s[1] < '0' || s[1] > '5' || s[2] < '0' || s[2] > '9' || len(s) > 3 && s[3] != ' ' {
		return bad(form)
	}
	var r SMTPReply
	r.Code, _ = strconv.Atoi(s[:3])
	rest := strings.TrimLeft(s[3:], " ")
	word, text, _ := strings.Cut(rest, " ")
	if word != "" && word[0] >= '0' && word[0] <= '9' {
		parts := strings.Split(word, ".")
		if len(parts) != 3 {
			return bad(form)
		}
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || p == "" || len(p) > 3 || p[0] == '+' || p[0] == '-' || i == 0 && len(p) != 1 {
				return bad(form)
			}
			r.Enhanced[i] = n
		}
		if r.Enhanced[0] != int(s[0]-'0') {
			return bad("an enhanced status code of the code's class (4.x.x for 4xx, 5.x.x for 5xx)")
		}
		rest = text
	}
	r.Text = strings.TrimSpace(rest)
	return r, nil
}
