package server

import (
	"context"
	"testing"

	"burner/storage"
)

// TestInfo asks GET /api/v1/info with keys of every kind of a server
// configured as serve configures it, and wants the settings and each
// key's scope, exactly (spec §14).
func TestInfo(t *testing.T) {
	for _, tc := range []struct {
		name          string
		domains       []string
		addressDomain string
		wantDomains   string
		wantAddress   string
	}{
		{"domains", []string{"inbox.test", "other.test"}, "mcp.test", `["inbox.test","other.test"]`, "inbox.test"},
		{"any domain", nil, "mcp.test", `[]`, "mcp.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newAPIOptions(t, Options{
				Version:         "1.2.3",
				Domains:         tc.domains,
				AddressDomain:   tc.addressDomain,
				MaxMessageBytes: 5 << 20,
				MaxRecipients:   7,
				Features:        Features{MCP: true, Webhooks: true},
			}, testLogger(t))
			settings := `{"version":"1.2.3","domains":` + tc.wantDomains + `,"addressDomain":"` + tc.wantAddress + `","key":`
			limits := `,"limits":{"maxMessageBytes":5242880,"maxRecipients":7,"maxListLimit":10},` +
				`"features":{"auth":false,"faults":false,"mcp":true,"webhooks":true}}`
			for _, k := range []struct {
				name  string
				scope storage.Scope
				key   string
			}{
				{"everything", storage.Scope{}, `{"name":"everything","inboxes":["*"],"readOnly":false}`},
				{"ci", storage.Scope{Inboxes: []string{"CI-*", "alice"}, ReadOnly: true}, `{"name":"ci","inboxes":["ci-*","alice"],"readOnly":true}`},
				{"alice", storage.Scope{Inboxes: []string{"alice"}}, `{"name":"alice","inboxes":["alice"],"readOnly":false}`},
			} {
				_, secret, err := a.db.CreateKey(context.Background(), k.name, k.scope)
				if err != nil {
					t.Fatalf("CreateKey(%s): %v", k.name, err)
				}
				res := a.callAuth("GET", "/api/v1/info", "Bearer "+secret)
				wantJSON(t, "GET /api/v1/info with the key "+k.name, res, 200, settings+k.key+limits)
			}
		})
	}
}

// TestInfoRevokedKey: a revoked key learns nothing, not even its name.
func TestInfoRevokedKey(t *testing.T) {
	a := newAPI(t)
	_, secret, err := a.db.CreateKey(context.Background(), "gone", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.RevokeKey(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	wantUnauthorized(t, "GET /api/v1/info with a revoked key", a.callAuth("GET", "/api/v1/info", "Bearer "+secret))
}
