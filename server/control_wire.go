package server

import (
	"time"

	"burner/storage"
)

// The control socket's wire types, shared by the handlers here and by the
// CLI's client in main, so that the two ends cannot drift apart. Times are
// written like the API's receivedAt.

// ControlKey is an API key on the control socket. Key, the secret, is
// only in the answer to a creation (SPEC §1: shown once).
type ControlKey struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Created  string  `json:"created"`
	LastUsed *string `json:"lastUsed"` // null when never used
	Key      string  `json:"key,omitempty"`
}

// ControlStats is storage.Stats on the control socket.
type ControlStats struct {
	Emails    int     `json:"emails"`
	Inboxes   int     `json:"inboxes"`
	Keys      int     `json:"keys"`
	FileBytes int64   `json:"fileBytes"`
	Oldest    *string `json:"oldest"` // null without emails
}

// ControlInbox is a storage.Inbox on the control socket.
type ControlInbox struct {
	Name   string `json:"name"`
	Emails int    `json:"emails"`
	Newest string `json:"newest"`
}

// ControlCheck is a storage.CheckReport on the control socket.
type ControlCheck struct {
	SchemaVersion int      `json:"schemaVersion"`
	FileBytes     int64    `json:"fileBytes"`
	Emails        int      `json:"emails"`
	Inboxes       int      `json:"inboxes"`
	Messages      int      `json:"messages"`
	Keys          int      `json:"keys"`
	Problems      []string `json:"problems"`
	More          int      `json:"more"`
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// optionalTime writes a time that may be zero (never) as null.
func optionalTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}

// parseTime reads a time of ours; "" and null are the zero time.
func parseTime(s *string) time.Time {
	if s == nil {
		return time.Time{}
	}
	t, _ := time.Parse(timeLayout, *s)
	return t
}

func newControlKey(k storage.Key) ControlKey {
	return ControlKey{ID: k.ID, Name: k.Name, Created: formatTime(k.Created), LastUsed: optionalTime(k.LastUsed)}
}

// Storage returns the key as storage describes it.
func (k ControlKey) Storage() storage.Key {
	return storage.Key{ID: k.ID, Name: k.Name, Created: parseTime(&k.Created), LastUsed: parseTime(k.LastUsed)}
}

func newControlStats(st storage.Stats) ControlStats {
	return ControlStats{Emails: st.Emails, Inboxes: st.Inboxes, Keys: st.Keys, FileBytes: st.FileBytes, Oldest: optionalTime(st.Oldest)}
}

// Storage returns the figures as storage describes them.
func (s ControlStats) Storage() storage.Stats {
	return storage.Stats{Emails: s.Emails, Inboxes: s.Inboxes, Keys: s.Keys, FileBytes: s.FileBytes, Oldest: parseTime(s.Oldest)}
}

func newControlInbox(in storage.Inbox) ControlInbox {
	return ControlInbox{Name: in.Name, Emails: in.Emails, Newest: formatTime(in.Newest)}
}

// Storage returns the inbox as storage describes it.
func (in ControlInbox) Storage() storage.Inbox {
	return storage.Inbox{Name: in.Name, Emails: in.Emails, Newest: parseTime(&in.Newest)}
}

func newControlCheck(r storage.CheckReport) ControlCheck {
	problems := r.Problems
	if problems == nil {
		problems = []string{}
	}
	return ControlCheck{
		SchemaVersion: r.SchemaVersion, FileBytes: r.FileBytes, Emails: r.Emails, Inboxes: r.Inboxes,
		Messages: r.Messages, Keys: r.Keys, Problems: problems, More: r.More,
	}
}

// Storage returns the report as storage describes it.
func (c ControlCheck) Storage() storage.CheckReport {
	return storage.CheckReport{
		SchemaVersion: c.SchemaVersion, FileBytes: c.FileBytes, Emails: c.Emails, Inboxes: c.Inboxes,
		Messages: c.Messages, Keys: c.Keys, Problems: c.Problems, More: c.More,
	}
}
