package server

import (
	"context"

	"burner/storage"
)

// Scoped API keys (spec §8). This file is the one place that decides what
// a request may reach. requireKey and the UI's requireSession put the
// scope of the request's key in its context (withScope); every route
// reaches the store only through Server.db, a scopedStore, whose methods
// ask the scope of the context they are given. A route therefore cannot
// forget the rule, and the rules come after the route's own validation
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
)

type scopeKey struct{}

// withScope returns ctx carrying the scope of the request's key.
func withScope(ctx context.Context, s storage.Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// scopeOf returns the scope ctx carries, and false when it carries none:
// a request of the control socket, or work of the server's own, which are
// not limited.
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

// mayReadMetrics returns errMetricsForbidden unless ctx's scope reaches
// every inbox and may delete: metrics count every inbox's mail.
func mayReadMetrics(ctx context.Context) error {
	if s, ok := scopeOf(ctx); ok && (s.ReadOnly || !s.Everywhere()) {
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

// scopedStore is the store as a request sees it: each method applies the
// scope of its context before the engine's method runs. It names every
// method of storage.Store rather than embedding one, so that a method
// added to the interface must be decided here before the server builds.
type scopedStore struct {
	db storage.Engine
}

// checkEmail returns nil when ctx's scope reaches the inbox of email id,
// else storage.ErrNotFound (also when there is no such email). A scope
// that reaches every inbox costs no lookup.
func (s scopedStore) checkEmail(ctx context.Context, id string) error {
	if sc, ok := scopeOf(ctx); !ok || sc.Everywhere() {
		return nil
	}
	e, err := s.db.Email(ctx, id)
	if err != nil {
		return err
	}
	return mayReachEmail(ctx, e)
}

func (s scopedStore) Deliver(ctx context.Context, msg *storage.Message, to []string) ([]storage.Email, error) {
	return s.db.Deliver(ctx, msg, to)
}

func (s scopedStore) List(ctx context.Context, q storage.Query) ([]storage.Email, error) {
	if err := mayReachInbox(ctx, q.LocalPart); err != nil {
		return nil, err
	}
	return s.db.List(ctx, q)
}

// Changed has no context to ask; every waiter lists the inbox before it
// waits, and List refuses.
func (s scopedStore) Changed(localPart string) <-chan struct{} { return s.db.Changed(localPart) }

func (s scopedStore) Email(ctx context.Context, id string) (storage.Email, error) {
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

// The keys are the control socket's and the login's business: the API has
// no route to them, and a scope does not limit them.

func (s scopedStore) CreateKey(ctx context.Context, name string, scope storage.Scope) (storage.Key, string, error) {
	return s.db.CreateKey(ctx, name, scope)
}

func (s scopedStore) Keys(ctx context.Context) ([]storage.Key, error) { return s.db.Keys(ctx) }

func (s scopedStore) Key(ctx context.Context, id string) (storage.Key, error) {
	return s.db.Key(ctx, id)
}

func (s scopedStore) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	return s.db.RevokeKey(ctx, idOrName)
}

func (s scopedStore) Authenticate(ctx context.Context, secret string) (storage.Key, error) {
	return s.db.Authenticate(ctx, secret)
}

// Stats counts every inbox: only a scope that reaches all may see it.
func (s scopedStore) Stats(ctx context.Context) (storage.Stats, error) {
	if err := mayReadMetrics(ctx); err != nil {
		return storage.Stats{}, err
	}
	return s.db.Stats(ctx)
}

// Inboxes returns only the inboxes ctx's scope reaches.
func (s scopedStore) Inboxes(ctx context.Context) ([]storage.Inbox, error) {
	all, err := s.db.Inboxes(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := scopeOf(ctx)
	if !ok || sc.Everywhere() {
		return all, nil
	}
	var out []storage.Inbox
	for _, in := range all {
		if sc.Reaches(in.Name) {
			out = append(out, in)
		}
	}
	return out, nil
}

// Sweep deletes in every inbox: no route sweeps, and no scope short of a
// full one may.
func (s scopedStore) Sweep(ctx context.Context) (int, error) {
	if err := mayDelete(ctx); err != nil {
		return 0, err
	}
	if sc, ok := scopeOf(ctx); ok && !sc.Everywhere() {
		return 0, errInboxForbidden
	}
	return s.db.Sweep(ctx)
}

func (s scopedStore) CheckWritable(ctx context.Context) error { return s.db.CheckWritable(ctx) }

func (s scopedStore) Close() error { return s.db.Close() }
