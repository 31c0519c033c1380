// Package webhook is where mail leaves burner (spec §9): the worker that
// POSTs each email of the inboxes a hook covers to the hook's URL, signed
// as Standard Webhooks says, from the outbox the store writes in the
// commit of the email; with its retries, leases and metrics. It needs of
// the store only its storage.Outbox, and of the API only the shape of an
// email (emailjson).
package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"burner/storage"
)

// Hook is one [[webhooks]] entry of the configuration (spec §9): where
// the emails of some inboxes go, and the secret their requests are
// signed with.
type Hook struct {
	URL     string   // http or https
	Inboxes []string // patterns as a key's (spec §8); none: every inbox
	Secret  string   // whsec_ and the base64 of 24 to 64 bytes
}

// ID returns the name of the hook in the outbox, the logs and /metrics:
// the URL's host and the first 8 hex digits of the URL's SHA-256, such as
// hooks.example.com-1a2b3c4d. It stays the same while the URL does, so
// that events written before a restart are the hook's after it, and it
// shows no path or query, where some receivers keep a token.
func (h Hook) ID() string {
	sum := sha256.Sum256([]byte(h.URL))
	host := "hook"
	if u, err := url.Parse(h.URL); err == nil && u.Host != "" {
		host = strings.ToLower(u.Host)
	}
	return host + "-" + hex.EncodeToString(sum[:4])
}

// StorageHook returns h as a store knows it, which writes its events in
// the commit of their emails. Check h first.
func (h Hook) StorageHook() storage.Hook {
	return storage.Hook{ID: h.ID(), Scope: storage.Scope{Inboxes: h.Inboxes}}
}

// Check returns every problem of h, each naming the key at fault.
func (h Hook) Check() []error {
	var errs []error
	if u, err := url.Parse(h.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: %q is not an http:// or https:// URL", h.URL))
	}
	for _, p := range h.Inboxes {
		if _, err := storage.ParseInboxPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("inboxes: %w", err))
		}
	}
	if _, err := ParseSecret(h.Secret); err != nil {
		errs = append(errs, err)
	}
	return errs
}
