package server

import (
	"context"
	"errors"
	"slices"
	"strings"

	"burner/storage"
)

// Scoped API keys (spec §8). This file is the one place that decides what
// a request may reach: emails, the SMTP session log and fault rules (spec
// §13). requireKey and the UI's requireSession put the
// scope of the request's key in its context (withScope); every route
// reaches the store only through Server.db, a scopedStore, whose methods
// ask the scope of the context they are given and refuse a context
// without one. A route therefore cannot forget the rule, and the rules
// come after the route's own validation
// (spec §8's order: 401, 400, then these), because a handler validates
// before it touches the store.

// forbidden is a request its key's scope refuses; its text is the message
// sent, spec §8 to the letter.
type forbidden string

func (e forbidden) Error() string { return string(e) }

const (
	errInboxForbidden   forbidden = "This API key may not access this inbox."
	errReadOnly         forbidden = "This API key is read-only."
	errMetricsForbidden forbidden = "This API key may not read metrics."
	// errMetricsOnly refuses a metrics key (spec §14) everything but
	// /metrics: the API, MCP and the web UI's login.
	errMetricsOnly forbidden = "This API key may only read metrics."
)

type scopeKey struct{}

// withScope returns ctx carrying the scope of the request's key.
func withScope(ctx context.Context, s storage.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// scopeOf returns the scope ctx carries, and false when it carries none:
// a request of the control socket, or work of the server's own, which
// reach the engine through Server.admin, never the scoped store.
func scopeOf(ctx context.Context) (storage.Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(storage.Scope)
	return s, ok
}

// mayReachInbox returns errInboxForbidden when ctx's scope does not reach
// the inbox localPart.
func mayReachInbox(ctx context.Context, localPart string) error {
	if s, ok := scopeOf(ctx); ok && !s.Reaches(localPart) {
		return errInboxForbidden
	}
	return nil
}

// mayReachEmail returns storage.ErrNotFound when ctx's scope does not
// reach the inbox of e: an email outside is not found, so that its
// existence is not revealed.
func mayReachEmail(ctx context.Context, e storage.Email) error {
	if mayReachInbox(ctx, storage.LocalPart(e.To)) != nil {
		return storage.ErrNotFound
	}
	return nil
}

// mayDelete returns errReadOnly when ctx's scope is read-only.
func mayDelete(ctx context.Context) error {
	if s, ok := scopeOf(ctx); ok && s.ReadOnly {
		return errReadOnly
	}
	return nil
}

// mayReadMetrics returns errMetricsForbidden unless ctx's scope is for
// metrics alone (spec §14), or reaches every inbox and may delete:
// metrics count every inbox's mail.
func mayReadMetrics(ctx context.Context) error {
	if s, ok := scopeOf(ctx); ok && !s.Metrics && (s.ReadOnly || !s.Everywhere()) {
		return errMetricsForbidden
	}
	return nil
}

// mayClear returns errReadOnly when ctx's scope is read-only, else
// errInboxForbidden when it does not reach localPart: the read-only rule
// comes first (spec §8).
func mayClear(ctx context.Context, localPart string) error {
	if err := mayDelete(ctx); err != nil {
		return err
	}
	return mayReachInbox(ctx, localPart)
}

// errNoScope is a call of the scoped store whose context carries no
// scope: a fault of the server, never of a request. It fails closed.
var errNoScope = errors.New("the scoped store was called without a scope")

// scopedStore is the store as a request sees it: each method applies the
// scope of its context before the engine's method runs, and refuses a
// context without one (errNoScope). It is not a storage.Engine, and has
// only what the routes of a key do with emails: what a scope has no say
// in (keys, sessions, stats, health) is the admin engine's
// (Server.admin), so that a handler cannot reach it by mistake.
type scopedStore struct {
	db storage.Engine
}

// needScope returns errNoScope unless ctx carries a scope.
func needScope(ctx context.Context) error {
	if _, ok := scopeOf(ctx); !ok {
		return errNoScope
	}
	return nil
}

// checkEmail returns nil when ctx's scope reaches the inbox of email id,
// else storage.ErrNotFound (also when there is no such email). A scope
// that reaches every inbox costs no lookup.
func (s scopedStore) checkEmail(ctx context.Context, id string) error {
	sc, ok := scopeOf(ctx)
	if !ok {
		return errNoScope
	}
	if sc.Everywhere() {
		return nil
	}
	e, err := s.db.Email(ctx, id)
	if err != nil {
		return err
	}
	return mayReachEmail(ctx, e)
}

func (s scopedStore) List(ctx context.Context, q storage.Query) ([]storage.Email, error) {
	if err := needScope(ctx); err != nil {
		return nil, err
	}
	if err := mayReachInbox(ctx, q.LocalPart); err != nil {
		return nil, err
	}
	return s.db.List(ctx, q)
}

// Changed has no context to ask; every waiter lists the inbox before it
// waits, and List refuses.
func (s scopedStore) Changed(localPart string) <-chan struct{} { return s.db.Changed(localPart) }

func (s scopedStore) Email(ctx context.Context, id string) (storage.Email, error) {
	if err := needScope(ctx); err != nil {
		return storage.Email{}, err
	}
	e, err := s.db.Email(ctx, id)
	if err != nil {
		return storage.Email{}, err
	}
	if err := mayReachEmail(ctx, e); err != nil {
		return storage.Email{}, err
	}
	return e, nil
}

func (s scopedStore) Raw(ctx context.Context, id string) ([]byte, error) {
	if err := s.checkEmail(ctx, id); err != nil {
		return nil, err
	}
	return s.db.Raw(ctx, id)
}

func (s scopedStore) Content(ctx context.Context, id string) (storage.Content, error) {
	if err := s.checkEmail(ctx, id); err != nil {
		return storage.Content{}, err
	}
	return s.db.Content(ctx, id)
}

func (s scopedStore) MarkRead(ctx context.Context, id string) error {
	if err := s.checkEmail(ctx, id); err != nil {
		return err
	}
	return s.db.MarkRead(ctx, id)
}

// Delete refuses a read-only scope before it looks for the email: the
// read-only rule comes first, for an unknown id too (spec §8).
func (s scopedStore) Delete(ctx context.Context, id string) error {
	if err := needScope(ctx); err != nil {
		return err
	}
	if err := mayDelete(ctx); err != nil {
		return err
	}
	if err := s.checkEmail(ctx, id); err != nil {
		return err
	}
	return s.db.Delete(ctx, id)
}

// Clear refuses a read-only scope, then an inbox outside the scope.
func (s scopedStore) Clear(ctx context.Context, localPart string) (int, error) {
	if err := needScope(ctx); err != nil {
		return 0, err
	}
	if err := mayClear(ctx, localPart); err != nil {
		return 0, err
	}
	return s.db.Clear(ctx, localPart)
}

func (s scopedStore) Attachments(ctx context.Context, id string) (storage.Attachments, bool, error) {
	if err := s.checkEmail(ctx, id); err != nil {
		return storage.Attachments{}, false, err
	}
	return s.db.Attachments(ctx, id)
}

// PutAttachments stores what a read of the email computed, so it needs
// what that read needed.
func (s scopedStore) PutAttachments(ctx context.Context, id string, a storage.Attachments) error {
	if err := s.checkEmail(ctx, id); err != nil {
		return err
	}
	return s.db.PutAttachments(ctx, id, a)
}

// RecentInboxes lists the inboxes of ctx's scope alone (spec §8: the UI
// never shows an inbox outside it): a scope with patterns narrows q to
// them, and a metrics scope reaches none.
func (s scopedStore) RecentInboxes(ctx context.Context, q storage.InboxQuery) ([]storage.Inbox, error) {
	sc, ok := scopeOf(ctx)
	switch {
	case !ok:
		return nil, errNoScope
	case sc.Metrics:
		return nil, nil
	case !sc.Everywhere():
		q.Patterns = sc.Inboxes
	}
	return s.db.RecentInboxes(ctx, q)
}

func (s scopedStore) Auth(ctx context.Context, id string) (storage.AuthResult, error) {
	if err := s.checkEmail(ctx, id); err != nil {
		return storage.AuthResult{}, err
	}
	return s.db.Auth(ctx, id)
}

// PutAuth stores what a read of the email computed (a lost verdict), so
// it needs what that read needed.
func (s scopedStore) PutAuth(ctx context.Context, ids []string, r storage.AuthResult) error {
	for _, id := range ids {
		if err := s.checkEmail(ctx, id); err != nil {
			return err
		}
	}
	return s.db.PutAuth(ctx, ids, r)
}

// AuthChanged has no context to ask; every waiter reads the record
// before it waits, and Auth refuses.
func (s scopedStore) AuthChanged(id string) <-chan struct{} { return s.db.AuthChanged(id) }

// SMTPSessions lists the session log as ctx's scope may see it (spec
// §13.1): without an inbox only for a scope that reaches every inbox;
// with one, only inside the scope, and each session shows only the
// scope's recipients (hideRecipients).
func (s scopedStore) SMTPSessions(ctx context.Context, q storage.SMTPSessionQuery) ([]storage.SMTPSession, error) {
	sc, ok := scopeOf(ctx)
	if !ok {
		return nil, errNoScope
	}
	if q.Inbox == "" && !sc.Everywhere() {
		return nil, errInboxForbidden
	}
	if err := mayReachInbox(ctx, q.Inbox); err != nil {
		return nil, err
	}
	sessions, err := s.db.SMTPSessions(ctx, q)
	if err != nil || sc.Everywhere() {
		return sessions, err
	}
	for i := range sessions {
		hideRecipients(&sessions[i], sc)
	}
	return sessions, nil
}

// hideRecipients leaves in s only what sc may see of it: the recipients
// of inboxes sc reaches, the emails stored for them, and in the
// transcript, every other RCPT's address as <hidden>.
func hideRecipients(s *storage.SMTPSession, sc storage.Scope) {
	visible := make(map[string]bool)
	var kept []storage.SMTPRecipient
	// Emails are the copies of the accepted recipients, each address once
	// (smtpd stores one copy per mailbox), in order.
	var accepted []bool
	seen := make(map[string]bool)
	for _, r := range s.Recipients {
		ours := r.Inbox != nil && sc.Reaches(*r.Inbox)
		if ours {
			visible[r.Address] = true
			kept = append(kept, r)
		}
		if r.Reply != nil && strings.HasPrefix(*r.Reply, "2") {
			if addr := strings.ToLower(r.Address); !seen[addr] {
				seen[addr] = true
				accepted = append(accepted, ours)
			}
		}
	}
	s.Recipients = kept
	var emails []string
	if len(accepted) == len(s.Emails) {
		for i, id := range s.Emails {
			if accepted[i] {
				emails = append(emails, id)
			}
		}
	}
	s.Emails = emails
	for i, l := range s.Transcript {
		if verb, _, _ := strings.Cut(l.C, " "); !strings.EqualFold(verb, "RCPT") {
			continue
		}
		// What follows the path may name the address again (ORCPT).
		open, close := strings.IndexByte(l.C, '<'), strings.IndexByte(l.C, '>')
		if open < 0 || close < open || !visible[l.C[open+1:close]] {
			s.Transcript[i].C = l.C[:len("RCPT")] + " TO:<hidden>"
		}
	}
}

// CreateFaultRule arms rule for ctx's scope (spec §13.2): a key that may
// write, for inboxes inside its scope.
func (s scopedStore) CreateFaultRule(ctx context.Context, rule storage.FaultRule) (storage.FaultRule, error) {
	sc, ok := scopeOf(ctx)
	if !ok {
		return storage.FaultRule{}, errNoScope
	}
	if err := mayDelete(ctx); err != nil {
		return storage.FaultRule{}, err
	}
	if !sc.ReachesPattern(rule.Inbox) {
		return storage.FaultRule{}, errInboxForbidden
	}
	return s.db.CreateFaultRule(ctx, rule)
}

// FaultRules returns the rules inside ctx's scope.
func (s scopedStore) FaultRules(ctx context.Context) ([]storage.FaultRule, error) {
	sc, ok := scopeOf(ctx)
	if !ok {
		return nil, errNoScope
	}
	rules, err := s.db.FaultRules(ctx)
	if err != nil {
		return nil, err
	}
	out := []storage.FaultRule{}
	for _, r := range rules {
		if sc.ReachesPattern(r.Inbox) {
			out = append(out, r)
		}
	}
	return out, nil
}

// DeleteFaultRule refuses a read-only scope, for an unknown id too (spec
// §8), then answers a rule outside the scope as one that does not exist.
func (s scopedStore) DeleteFaultRule(ctx context.Context, id string) error {
	sc, ok := scopeOf(ctx)
	if !ok {
		return errNoScope
	}
	if err := mayDelete(ctx); err != nil {
		return err
	}
	rules, err := s.db.FaultRules(ctx)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(rules, func(r storage.FaultRule) bool { return r.ID == id && sc.ReachesPattern(r.Inbox) }) {
		return errFaultNotFound
	}
	if err := s.db.DeleteFaultRule(ctx, id); errors.Is(err, storage.ErrNotFound) {
		return errFaultNotFound // deleted meanwhile
	} else if err != nil {
		return err
	}
	return nil
}
