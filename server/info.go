package server

import (
	"context"
	"net/http"

	"burner/storage"
)

// GET /api/v1/info (spec §14): what a client needs to pick an address
// and a prefix inside its key's scope, and what this burner offers. The
// client libraries' fixtures read it before each test's inbox.

// Features says which optional parts of burner are on; GET /api/v1/info
// reports them. main sets each from the configuration.
type Features struct {
	Auth     bool // the authentication results of received mail (spec §12)
	Faults   bool // fault injection on the wire (spec §13.2)
	MCP      bool // /mcp (spec §11)
	Webhooks bool // at least one [[webhooks]] entry (spec §9)
}

type infoJSON struct {
	Version       string       `json:"version"`
	Domains       []string     `json:"domains"`
	AddressDomain string       `json:"addressDomain"`
	Key           infoKeyJSON  `json:"key"`
	Limits        infoLimits   `json:"limits"`
	Features      featuresJSON `json:"features"`
}

type infoKeyJSON struct {
	Name     string   `json:"name"`
	Inboxes  []string `json:"inboxes"`
	ReadOnly bool     `json:"readOnly"`
}

type infoLimits struct {
	MaxMessageBytes int64 `json:"maxMessageBytes"`
	MaxRecipients   int   `json:"maxRecipients"`
	MaxListLimit    int   `json:"maxListLimit"`
}

type featuresJSON struct {
	Auth     bool `json:"auth"`
	Faults   bool `json:"faults"`
	MCP      bool `json:"mcp"`
	Webhooks bool `json:"webhooks"`
}

// handleInfo answers the server's settings a client needs and the
// request's key as it stands: its name, its patterns (["*"] for a key
// that reaches every inbox, so that a client takes the first pattern
// alike for every key) and its mode. It reads no store: requireKey has
// looked the key up already.
func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	k, _ := keyOf(r.Context())
	inboxes := k.Scope.Inboxes
	if len(inboxes) == 0 {
		inboxes = []string{storage.AllInboxes}
	}
	domains := s.opts.Domains
	if domains == nil {
		domains = []string{}
	}
	f := s.opts.Features
	writeJSON(w, http.StatusOK, infoJSON{
		Version:       s.opts.Version,
		Domains:       domains,
		AddressDomain: s.addressDomain(),
		Key:           infoKeyJSON{Name: k.Name, Inboxes: inboxes, ReadOnly: k.Scope.ReadOnly},
		Limits: infoLimits{
			MaxMessageBytes: s.opts.MaxMessageBytes,
			MaxRecipients:   s.opts.MaxRecipients,
			MaxListLimit:    maxLimit,
		},
		Features: featuresJSON{Auth: f.Auth, Faults: f.Faults, MCP: f.MCP, Webhooks: f.Webhooks},
	})
}

type keyCtxKey struct{}

// withKey returns ctx carrying the request's API key, for GET
// /api/v1/info; its scope travels apart (withScope), as the UI's
// sessions carry a scope without a key.
func withKey(ctx context.Context, k storage.Key) context.Context {
	return context.WithValue(ctx, keyCtxKey{}, k)
}

// keyOf returns the key ctx carries, and false when it carries none.
func keyOf(ctx context.Context) (storage.Key, bool) {
	k, ok := ctx.Value(keyCtxKey{}).(storage.Key)
	return k, ok
}
