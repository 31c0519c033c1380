package commit

import (
	"errors"

	"burner/storage"

	"github.com/google/uuid"
)

// Verdict is one PutAuth's share of a commit: the authentication record
// (spec §12) of the message of its emails, which waits in a Later for a
// commit that writes it, and whose PutAuth waits for that commit.
type Verdict struct {
	IDs []uuid.UUID
	Rec []byte // record.EncodeAuth's
	// Found and Err are the commit's to set before Done: whether a
	// message of IDs was still stored, and the commit's error, which is
	// errAbandoned until the commit says otherwise, even after a panic.
	Found     bool
	Err       error
	committed chan struct{}
}

var errAbandoned = errors.New("commit abandoned")

// NewVerdict returns the verdict rec for the emails of ids that are ids
// at all, or ErrNotFound when none is.
func NewVerdict(ids []string, rec []byte) (*Verdict, error) {
	v := &Verdict{Rec: rec, Err: errAbandoned, committed: make(chan struct{})}
	for _, id := range ids {
		if uid, err := storage.ParseID(id); err == nil {
			v.IDs = append(v.IDs, uid)
		}
	}
	if len(v.IDs) == 0 {
		return nil, storage.ErrNotFound
	}
	return v, nil
}

// Done tells v's PutAuth that its commit has run; a commit calls it once
// for each verdict it took, deferred.
func (v *Verdict) Done() { close(v.committed) }

// Wait returns once v's commit has run: its error, or ErrNotFound when no
// message of v was still stored.
func (v *Verdict) Wait() error {
	<-v.committed
	if v.Err == nil && !v.Found {
		return storage.ErrNotFound
	}
	return v.Err
}

// Notify wakes the waiters of v's emails in n (ChangedID).
func (v *Verdict) Notify(n *Notifier) {
	for _, id := range v.IDs {
		n.Notify(id.String())
	}
}
