package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"burner/storage"
)

// The answers of spec §8, to the letter.
const (
	inboxForbiddenBody   = `{"error":"This API key may not access this inbox."}`
	readOnlyBody         = `{"error":"This API key is read-only."}`
	metricsForbiddenBody = `{"error":"This API key may not read metrics."}`
	metricsOnlyBody      = `{"error":"This API key may only read metrics."}`
	emailNotFoundBody    = `{"error":"Email not found"}`
	faultNotFoundBody    = `{"error":"Fault not found"}`
)

// The keys of the scope table.
var scopeTestKeys = map[string]storage.Scope{
	"full":      {},
	"scoped":    {Inboxes: []string{"alice", "ci-*"}},
	"readonly":  {ReadOnly: true},
	"scoped-ro": {Inboxes: []string{"ci-*"}, ReadOnly: true},
	"star":      {Inboxes: []string{"*"}},
	"metrics":   {Metrics: true},
}

// scopeCase is one request of the scope table. In path, {in} is the id of
// an email delivered for the case to ci-7, an inbox "scoped" reaches;
// {out} one delivered to bob, which it does not; {unknown} an id no email
// has. status and body (exact, when not "") are the answer.
type scopeCase struct {
	key, method, path string
	status            int
	body              string
}

// scopeTable holds, for every route the public handler registers, what
// each kind of key gets (spec §8). TestScopeTableCoversEveryRoute fails
// when a route is added without its entry here.
var scopeTable = map[string][]scopeCase{
	"GET /api/v1/emails": {
		{"full", "GET", "/api/v1/emails?to=bob", 200, ""},
		{"readonly", "GET", "/api/v1/emails?to=bob", 200, ""},
		{"star", "GET", "/api/v1/emails?to=bob", 200, ""},
		{"scoped", "GET", "/api/v1/emails?to=ci-7", 200, ""},
		{"scoped", "GET", "/api/v1/emails?to=CI-7", 200, ""},
		{"scoped", "GET", "/api/v1/emails?to=alice", 200, "[]"},
		{"scoped", "GET", "/api/v1/emails?to=bob", 403, inboxForbiddenBody},
		{"scoped", "GET", "/api/v1/emails?to=alice%2Bx", 403, inboxForbiddenBody},
		{"scoped", "GET", "/api/v1/emails?to=bob&wait=5", 403, inboxForbiddenBody}, // wait: at once
		{"scoped-ro", "GET", "/api/v1/emails?to=alice", 403, inboxForbiddenBody},
		// The request's own 400 comes first.
		{"scoped", "GET", "/api/v1/emails?to=bob&limit=99", 400, `{"error":"'limit' must be an integer from 1 to 10."}`},
		{"scoped", "GET", "/api/v1/emails", 400, `{"error":"'to' is required."}`},
		{"scoped", "GET", "/api/v1/emails?to=" + strings.Repeat("b", 65), 400, `{"error":"Local part must be at most 64 characters."}`},
		{"metrics", "GET", "/api/v1/emails?to=bob", 403, metricsOnlyBody},
		{"metrics", "GET", "/api/v1/emails?to=bob&limit=99", 403, metricsOnlyBody}, // before the 400: no key of the API
	},
	"GET /api/v1/emails/{id}": {
		{"full", "GET", "/api/v1/emails/{out}", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{in}", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}", 404, emailNotFoundBody},
		{"scoped", "GET", "/api/v1/emails/{unknown}", 404, emailNotFoundBody},
		{"metrics", "GET", "/api/v1/emails/{out}", 403, metricsOnlyBody},
	},
	"DELETE /api/v1/emails/{id}": {
		{"full", "DELETE", "/api/v1/emails/{out}", 204, ""},
		{"star", "DELETE", "/api/v1/emails/{out}", 204, ""},
		{"scoped", "DELETE", "/api/v1/emails/{in}", 204, ""},
		{"scoped", "DELETE", "/api/v1/emails/{out}", 404, emailNotFoundBody},
		{"readonly", "DELETE", "/api/v1/emails/{out}", 403, readOnlyBody},
		{"readonly", "DELETE", "/api/v1/emails/{unknown}", 403, readOnlyBody},
		{"readonly", "DELETE", "/api/v1/emails/not-a-uuid", 403, readOnlyBody},
		{"scoped-ro", "DELETE", "/api/v1/emails/{in}", 403, readOnlyBody},
		{"scoped-ro", "DELETE", "/api/v1/emails/{out}", 403, readOnlyBody}, // read-only before the inbox rule
		{"metrics", "DELETE", "/api/v1/emails/{out}", 403, metricsOnlyBody},
	},
	"DELETE /api/v1/inbox": {
		{"full", "DELETE", "/api/v1/inbox?to=bob", 204, ""},
		{"scoped", "DELETE", "/api/v1/inbox?to=ci-7", 204, ""},
		{"scoped", "DELETE", "/api/v1/inbox?to=bob", 403, inboxForbiddenBody},
		{"readonly", "DELETE", "/api/v1/inbox?to=bob", 403, readOnlyBody},
		{"scoped-ro", "DELETE", "/api/v1/inbox?to=bob", 403, readOnlyBody}, // read-only before the inbox rule
		{"scoped-ro", "DELETE", "/api/v1/inbox", 400, `{"error":"'to' is required."}`},
		{"metrics", "DELETE", "/api/v1/inbox?to=bob", 403, metricsOnlyBody},
	},
	"GET /api/v1/emails/{id}/raw": {
		{"full", "GET", "/api/v1/emails/{out}/raw", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}/raw", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{in}/raw", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}/raw", 404, emailNotFoundBody},
		{"metrics", "GET", "/api/v1/emails/{out}/raw", 403, metricsOnlyBody},
	},
	"GET /api/v1/emails/{id}/attachments": {
		{"full", "GET", "/api/v1/emails/{out}/attachments", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}/attachments", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{in}/attachments", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}/attachments", 404, emailNotFoundBody},
		{"metrics", "GET", "/api/v1/emails/{out}/attachments", 403, metricsOnlyBody},
	},
	"GET /api/v1/emails/{id}/attachments/{n}": {
		{"full", "GET", "/api/v1/emails/{out}/attachments/0", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}/attachments/0", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{in}/attachments/0", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}/attachments/0", 404, emailNotFoundBody},
		{"metrics", "GET", "/api/v1/emails/{out}/attachments/0", 403, metricsOnlyBody},
	},
	"GET /api/v1/emails/{id}/text": {
		{"full", "GET", "/api/v1/emails/{out}/text", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}/text", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{in}/text", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}/text", 404, emailNotFoundBody},
		{"metrics", "GET", "/api/v1/emails/{out}/text", 403, metricsOnlyBody},
	},
	"GET /api/v1/emails/{id}/links": {
		{"full", "GET", "/api/v1/emails/{out}/links", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}/links", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{in}/links", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}/links", 404, emailNotFoundBody},
		{"metrics", "GET", "/api/v1/emails/{out}/links", 403, metricsOnlyBody},
	},
	"GET /api/v1/emails/{id}/codes": {
		{"full", "GET", "/api/v1/emails/{out}/codes", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}/codes", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{in}/codes", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}/codes", 404, emailNotFoundBody},
		{"scoped", "GET", "/api/v1/emails/{out}/codes?pattern=%28", 400, `{"error":"'pattern' must be a valid regular expression."}`},
		{"metrics", "GET", "/api/v1/emails/{out}/codes", 403, metricsOnlyBody},
	},
	"GET /api/v1/emails/{id}/auth": {
		{"full", "GET", "/api/v1/emails/{out}/auth", 200, ""},
		{"readonly", "GET", "/api/v1/emails/{out}/auth?wait=5", 200, ""}, // off: at once
		{"scoped", "GET", "/api/v1/emails/{in}/auth", 200, ""},
		{"scoped", "GET", "/api/v1/emails/{out}/auth", 404, emailNotFoundBody},
		{"scoped", "GET", "/api/v1/emails/{out}/auth?wait=5", 404, emailNotFoundBody}, // at once
		{"scoped", "GET", "/api/v1/emails/{unknown}/auth", 404, emailNotFoundBody},
		// The request's own 400 comes first.
		{"scoped", "GET", "/api/v1/emails/{out}/auth?wait=61", 400, `{"error":"'wait' must be an integer from 1 to 60."}`},
		{"metrics", "GET", "/api/v1/emails/{out}/auth", 403, metricsOnlyBody},
	},
	"GET /api/v1/events": {
		// HEAD: the headers are the answer; a GET that is let in streams on.
		{"full", "HEAD", "/api/v1/events?to=bob", 200, ""},
		{"readonly", "HEAD", "/api/v1/events?to=bob", 200, ""},
		{"scoped", "HEAD", "/api/v1/events?to=ci-7", 200, ""},
		{"scoped", "GET", "/api/v1/events?to=bob", 403, inboxForbiddenBody},
		{"scoped", "GET", "/api/v1/events", 400, `{"error":"'to' is required."}`},
		{"metrics", "GET", "/api/v1/events?to=bob", 403, metricsOnlyBody},
	},
	"GET /api/v1/openapi.json": {
		{"full", "GET", "/api/v1/openapi.json", 200, ""},
		{"scoped", "GET", "/api/v1/openapi.json", 200, ""},
		{"readonly", "GET", "/api/v1/openapi.json", 200, ""},
		{"metrics", "GET", "/api/v1/openapi.json", 403, metricsOnlyBody},
	},
	"GET /api/v1/info": { // any key, which it describes
		{"full", "GET", "/api/v1/info", 200, scopeInfoBody("full", `["*"]`, false)},
		{"star", "GET", "/api/v1/info", 200, scopeInfoBody("star", `["*"]`, false)},
		{"scoped", "GET", "/api/v1/info", 200, scopeInfoBody("scoped", `["alice","ci-*"]`, false)},
		{"readonly", "GET", "/api/v1/info", 200, scopeInfoBody("readonly", `["*"]`, true)},
		{"scoped-ro", "GET", "/api/v1/info", 200, scopeInfoBody("scoped-ro", `["ci-*"]`, true)},
		{"scoped-ro", "HEAD", "/api/v1/info", 200, ""},
		{"metrics", "GET", "/api/v1/info", 403, metricsOnlyBody}, // spec §14: any key but a metrics key
	},
	// spec §13.1: without to, only a key that reads every inbox; a scoped
	// key's view is TestSessionsScoped's.
	"GET /api/v1/sessions": {
		{"metrics", "GET", "/api/v1/sessions", 403, metricsOnlyBody},
		{"full", "GET", "/api/v1/sessions", 200, ""},
		{"readonly", "GET", "/api/v1/sessions", 200, ""},
		{"star", "GET", "/api/v1/sessions", 200, ""},
		{"scoped", "GET", "/api/v1/sessions", 403, inboxForbiddenBody},
		{"scoped-ro", "GET", "/api/v1/sessions", 403, inboxForbiddenBody},
		{"scoped", "GET", "/api/v1/sessions?to=ci-7", 200, "[]"},
		{"scoped-ro", "GET", "/api/v1/sessions?to=ci-7", 200, "[]"},
		{"scoped", "GET", "/api/v1/sessions?to=bob", 403, inboxForbiddenBody},
		{"full", "GET", "/api/v1/sessions?to=bob", 200, "[]"},
		// The request's own 400 comes first.
		{"scoped", "GET", "/api/v1/sessions?limit=101", 400, `{"error":"'limit' must be an integer from 1 to 100."}`},
		{"scoped", "GET", "/api/v1/sessions?to=bob&since=yesterday", 400, `{"error":"'since' must be a Unix timestamp in seconds."}`},
	},
	// spec §13.2: a key that may write arms rules inside its scope; any key
	// lists the rules inside its scope. In path, a body follows a space;
	// {fault-in} is a rule for ci-7, {fault-out} one for bob.
	"GET /api/v1/faults": {
		{"metrics", "GET", "/api/v1/faults", 403, metricsOnlyBody},
		{"full", "GET", "/api/v1/faults", 200, ""},
		{"readonly", "GET", "/api/v1/faults", 200, ""},
		{"scoped", "GET", "/api/v1/faults", 200, ""},
		{"scoped-ro", "HEAD", "/api/v1/faults", 200, ""},
	},
	"POST /api/v1/faults": {
		{"metrics", "POST", `/api/v1/faults {"inbox":"bob","stage":"rcpt","reply":"451"}`, 403, metricsOnlyBody},
		{"full", "POST", `/api/v1/faults {"inbox":"bob","stage":"rcpt","reply":"451"}`, 201, ""},
		{"star", "POST", `/api/v1/faults {"inbox":"*","stage":"data","reply":"550 5.7.1 No"}`, 201, ""},
		{"scoped", "POST", `/api/v1/faults {"inbox":"ci-7","stage":"rcpt","reply":"451"}`, 201, ""},
		{"scoped", "POST", `/api/v1/faults {"inbox":"ci-*","stage":"rcpt","reply":"451"}`, 201, ""},
		{"scoped", "POST", `/api/v1/faults {"inbox":"bob","stage":"rcpt","reply":"451"}`, 403, inboxForbiddenBody},
		{"scoped", "POST", `/api/v1/faults {"inbox":"*","stage":"rcpt","reply":"451"}`, 403, inboxForbiddenBody},
		{"readonly", "POST", `/api/v1/faults {"inbox":"bob","stage":"rcpt","reply":"451"}`, 403, readOnlyBody},
		{"scoped-ro", "POST", `/api/v1/faults {"inbox":"bob","stage":"rcpt","reply":"451"}`, 403, readOnlyBody}, // read-only before the inbox rule
		// The request's own 400 comes first.
		{"readonly", "POST", `/api/v1/faults {"inbox":"bob","stage":"helo","reply":"451"}`, 400, `{"error":"'stage' must be \"rcpt\" or \"data\"."}`},
	},
	"DELETE /api/v1/faults/{id}": {
		{"metrics", "DELETE", "/api/v1/faults/{fault-out}", 403, metricsOnlyBody},
		{"full", "DELETE", "/api/v1/faults/{fault-out}", 204, ""},
		{"scoped", "DELETE", "/api/v1/faults/{fault-in}", 204, ""},
		{"scoped", "DELETE", "/api/v1/faults/{fault-out}", 404, faultNotFoundBody},
		{"scoped", "DELETE", "/api/v1/faults/{unknown}", 404, faultNotFoundBody},
		{"readonly", "DELETE", "/api/v1/faults/{fault-out}", 403, readOnlyBody},
		{"readonly", "DELETE", "/api/v1/faults/{unknown}", 403, readOnlyBody},
		{"scoped-ro", "DELETE", "/api/v1/faults/{fault-out}", 403, readOnlyBody},
	},
	"GET /healthz": { // no key needed, and a key changes nothing
		{"scoped-ro", "GET", "/healthz", 200, `{"status":"ok"}`},
		{"metrics", "GET", "/healthz", 200, `{"status":"ok"}`},
	},
	"GET /metrics": {
		{"full", "GET", "/metrics", 200, ""},
		{"star", "GET", "/metrics", 200, ""},
		{"scoped", "GET", "/metrics", 403, metricsForbiddenBody},
		{"readonly", "GET", "/metrics", 403, metricsForbiddenBody},
		{"scoped-ro", "GET", "/metrics", 403, metricsForbiddenBody},
		{"metrics", "GET", "/metrics", 200, ""},
	},
}

// scopeInfoBody is GET /api/v1/info's answer to the key name of the
// scope table, whose server has no options but metrics and faults.
func scopeInfoBody(name, inboxes string, readOnly bool) string {
	return `{"version":"","domains":[],"addressDomain":"","key":{"name":"` + name + `","inboxes":` + inboxes +
		`,"readOnly":` + strconv.FormatBool(readOnly) + `},"limits":{"maxMessageBytes":0,"maxRecipients":0,"maxListLimit":10},` +
		`"features":{"auth":false,"faults":true,"mcp":false,"webhooks":false}}`
}

// scopeAPI is the public handler with metrics and faults on, a key of each kind of
// scopeTestKeys (secrets by kind), and an email with attachments in
// alice's inbox.
func scopeAPI(t *testing.T) (*apiTest, *Server, map[string]string) {
	t.Helper()
	a, s := newAPIOptions(t, Options{Metrics: prometheus.NewRegistry(), Features: Features{Faults: true}}, testLogger(t))
	secrets := make(map[string]string)
	for kind, scope := range scopeTestKeys {
		_, secret, err := a.db.CreateKey(context.Background(), kind, scope)
		if err != nil {
			t.Fatalf("CreateKey(%s): %v", kind, err)
		}
		secrets[kind] = secret
	}
	return a, s, secrets
}

// TestScopeTable walks every route with every kind of key (spec §8), and
// checks that a request without a key still gets the 401 first.
func TestScopeTable(t *testing.T) {
	a, _, secrets := scopeAPI(t)
	// Each answer is as the OpenAPI document says, 403s included. A route
	// it lacks is TestOpenAPIDocument's to report.
	spec := loadOpenAPI(t, a)
	documented, _ := spec.doc["paths"].(map[string]any)
	for _, route := range slices.Sorted(func(yield func(string) bool) {
		for r := range scopeTable {
			if !yield(r) {
				return
			}
		}
	}) {
		for _, tc := range scopeTable[route] {
			in := a.deliver("ci-7@example.com", filesEmail())
			out := a.deliver("bob@example.com", filesEmail())
			faultIn, faultOut := a.arm(storage.FaultRule{Inbox: "ci-7", Stage: storage.FaultAtRcpt, Reply: "451"}),
				a.arm(storage.FaultRule{Inbox: "bob", Stage: storage.FaultAtRcpt, Reply: "451"})
			path := strings.NewReplacer("{in}", in.ID, "{out}", out.ID, "{unknown}", unknownID,
				"{fault-in}", faultIn.ID, "{fault-out}", faultOut.ID).Replace(tc.path)
			path, body, _ := strings.Cut(path, " ")
			what := route + ": " + tc.key + " key, " + tc.method + " " + tc.path
			res := a.callBody(tc.method, path, "Bearer "+secrets[tc.key], body)
			if res.status != tc.status {
				t.Errorf("%s: status %d, want %d (body %s)", what, res.status, tc.status, res.body)
				continue
			}
			if tc.body != "" {
				wantJSON(t, what, res, tc.status, tc.body)
			}
			if _, path, _ := strings.Cut(route, " "); documented[path] != nil && tc.method != "HEAD" {
				spec.validate(t, tc.method, path, res)
			}
			// What a refused request asked for is still there.
			if tc.status >= 400 && strings.Contains(tc.path, "{out}") {
				if _, err := a.db.Email(context.Background(), out.ID); err != nil {
					t.Errorf("%s: refused, yet the email is gone: %v", what, err)
				}
			}
			if tc.status == http.StatusNoContent && tc.method == "DELETE" && strings.Contains(tc.path, "/emails/") {
				id := map[bool]string{true: in.ID, false: out.ID}[strings.Contains(tc.path, "{in}")]
				if _, err := a.db.Email(context.Background(), id); err == nil {
					t.Errorf("%s: 204, yet the email is still there", what)
				}
			}
			switch res := a.callBody(tc.method, path, "", body); {
			case route == "GET /healthz":
			case tc.method == "HEAD": // no body
				if res.status != http.StatusUnauthorized {
					t.Errorf("%s without a key: status %d, want 401", what, res.status)
				}
			default:
				wantUnauthorized(t, what+" without a key", res)
			}
		}
	}
}

// TestScopeTableCoversEveryRoute: every route the public handler
// registers has an entry in scopeTable, and every entry is a route; so a
// route added without deciding what each key gets fails here.
func TestScopeTableCoversEveryRoute(t *testing.T) {
	_, s, _ := scopeAPI(t)
	var routes []string
	for _, p := range s.patterns {
		// Method-less patterns are the 404 and 405 catch-alls, and /api/,
		// the API's own mux, whose patterns are in the list too.
		if strings.Contains(p, " ") {
			routes = append(routes, p)
		}
	}
	slices.Sort(routes)
	var table []string
	for r := range scopeTable {
		table = append(table, r)
	}
	slices.Sort(table)
	if !slices.Equal(routes, table) {
		t.Errorf("the server registers\n%s\nbut the scope table has\n%s", strings.Join(routes, "\n"), strings.Join(table, "\n"))
	}
	for route, cases := range scopeTable {
		method, path, _ := strings.Cut(route, " ")
		kinds := map[string]bool{}
		for _, tc := range cases {
			if tc.method != method && !(method == "GET" && tc.method == "HEAD") {
				t.Errorf("%s: a case asks %s", route, tc.method)
			}
			if !strings.HasPrefix(strings.NewReplacer("{in}", "{id}", "{out}", "{id}", "{unknown}", "{id}", "{fault-in}", "{id}", "{fault-out}", "{id}", "/0", "/{n}").Replace(tc.path), path) &&
				!strings.Contains(tc.path, "not-a-uuid") {
				t.Errorf("%s: a case asks for %s, another route", route, tc.path)
			}
			kinds[tc.key] = true
		}
		if route != "GET /healthz" && !(kinds["full"] && kinds["scoped"] && kinds["readonly"] && kinds["metrics"]) {
			t.Errorf("%s: the table does not try a full, a scoped, a read-only and a metrics key: %v", route, kinds)
		}
	}
}

// TestScopedStoreWithoutScope: the scoped store fails closed for a
// context without a scope (the server's own work and the control socket
// reach the engine as admin), and serves one with a scope.
func TestScopedStoreWithoutScope(t *testing.T) {
	a, s, _ := scopeAPI(t)
	e := a.deliver("bob@example.com", filesEmail())
	ctx := context.Background()
	if _, err := s.db.Email(ctx, e.ID); !errors.Is(err, errNoScope) {
		t.Errorf("Email without a scope: %v, want errNoScope", err)
	}
	if _, err := s.db.List(ctx, storage.Query{LocalPart: "bob"}); !errors.Is(err, errNoScope) {
		t.Errorf("List without a scope: %v, want errNoScope", err)
	}
	if _, err := s.db.Raw(ctx, e.ID); !errors.Is(err, errNoScope) {
		t.Errorf("Raw without a scope: %v, want errNoScope", err)
	}
	if err := s.db.Delete(ctx, e.ID); !errors.Is(err, errNoScope) {
		t.Errorf("Delete without a scope: %v, want errNoScope", err)
	}
	if _, err := s.db.Clear(ctx, "bob"); !errors.Is(err, errNoScope) {
		t.Errorf("Clear without a scope: %v, want errNoScope", err)
	}
	if _, err := s.db.RecentInboxes(ctx, storage.InboxQuery{}); !errors.Is(err, errNoScope) {
		t.Errorf("RecentInboxes without a scope: %v, want errNoScope", err)
	}
	if ins, err := s.db.RecentInboxes(withScope(ctx, storage.Scope{Metrics: true}), storage.InboxQuery{}); err != nil || len(ins) != 0 {
		t.Errorf("RecentInboxes with a metrics scope = %+v, %v; want none", ins, err)
	}
	if _, err := a.db.Email(ctx, e.ID); err != nil {
		t.Errorf("the email is gone after the refused calls: %v", err)
	}
	if _, err := s.db.Email(withScope(ctx, storage.Scope{}), e.ID); err != nil {
		t.Errorf("Email with a full scope: %v", err)
	}
	if _, err := s.db.Email(withScope(ctx, storage.Scope{Inboxes: []string{"ci-*"}}), e.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Email with scope ci-*: %v, want ErrNotFound", err)
	}
}

// scopeUI is the UI, logged in with a new key of scope.
func scopeUI(t *testing.T, scope storage.Scope) *uiTest {
	t.Helper()
	u := newUI(t, Options{})
	_, secret, err := u.db.CreateKey(context.Background(), "session", scope)
	if err != nil {
		t.Fatal(err)
	}
	res := u.post("/login", url.Values{"csrf": {u.csrf("/login")}, "key": {secret}, "next": {"/"}})
	if res.status != http.StatusSeeOther {
		t.Fatalf("POST /login: %d\n%s", res.status, res.body)
	}
	return u
}

// TestUIScopedSession: a session of a scoped key sees and opens only its
// inboxes (spec §8): an inbox outside answers 403 with the API's message,
// an email outside is not found, and nothing outside can be deleted.
func TestUIScopedSession(t *testing.T) {
	u := scopeUI(t, storage.Scope{Inboxes: []string{"ci-*"}})
	in := u.deliver("ci-7@example.com", filesEmail())
	out := u.deliver("bob@example.com", filesEmail())
	token := u.csrf("/inbox/ci-7")

	wantPage(t, "GET its inbox", u.get("/inbox/ci-7"), 200, "/email/"+in.ID)
	wantPage(t, "GET its email", u.get("/email/"+in.ID), 200, `action="/email/`+in.ID+`/delete"`)
	// The page's event stream is for its script: it answers as the API.
	wantJSON(t, "GET bob's event stream", u.get("/inbox/bob/events"), http.StatusForbidden, inboxForbiddenBody)
	for _, path := range []string{"/inbox/bob", "/inbox/BOB", "/inbox/bob/clear"} {
		res := u.get(path)
		wantPage(t, "GET "+path, res, http.StatusForbidden, "This API key may not access this inbox.")
		if strings.Contains(res.body, out.ID) {
			t.Errorf("GET %s shows bob's email", path)
		}
	}
	wantPage(t, "POST clear bob", u.post("/inbox/bob/clear", url.Values{"csrf": {token}}), http.StatusForbidden, "This API key may not access this inbox.")
	for _, path := range []string{"/email/" + out.ID, "/email/" + out.ID + "/raw", "/email/" + out.ID + "/download", "/email/" + out.ID + "/attachments/0"} {
		wantPage(t, "GET "+path, u.get(path), http.StatusNotFound, "Email not found")
	}
	wantPage(t, "POST delete bob's email", u.post("/email/"+out.ID+"/delete", url.Values{"csrf": {token}}), http.StatusNotFound, "Email not found")
	if _, err := u.db.Email(context.Background(), out.ID); err != nil {
		t.Errorf("bob's email is gone after the scoped session's refusals: %v", err)
	}
	if e, _ := u.db.Email(context.Background(), out.ID); e.Read {
		t.Error("the scoped session marked bob's email read")
	}
	wantRedirect(t, "POST delete its email", u.post("/email/"+in.ID+"/delete", url.Values{"csrf": {token}, "next": {"/inbox/ci-7"}}), "/inbox/ci-7")
	if _, err := u.db.Email(context.Background(), in.ID); err == nil {
		t.Error("its own email is still there after deleting it")
	}
}

// TestUIReadOnlySession: a read-only session shows no delete or clear
// control, and those forms answer 403 with the API's message.
func TestUIReadOnlySession(t *testing.T) {
	u := scopeUI(t, storage.Scope{ReadOnly: true})
	e := u.deliver("alice@example.com", filesEmail())
	inbox := u.get("/inbox/alice")
	wantPage(t, "GET the inbox", inbox, 200, "/email/"+e.ID)
	email := u.get("/email/" + e.ID)
	wantPage(t, "GET the email", email, 200, "View source")
	for what, body := range map[string]string{"inbox": inbox.body, "email": email.body} {
		for _, control := range []string{"/delete", "/clear", ">Delete<"} {
			if strings.Contains(body, control) {
				t.Errorf("the %s page of a read-only session has %q", what, control)
			}
		}
	}
	token := csrfRE.FindStringSubmatch(inbox.body)[1]
	wantPage(t, "GET the clear page", u.get("/inbox/alice/clear"), http.StatusForbidden, "This API key is read-only.")
	wantPage(t, "POST clear", u.post("/inbox/alice/clear", url.Values{"csrf": {token}}), http.StatusForbidden, "This API key is read-only.")
	wantPage(t, "POST delete", u.post("/email/"+e.ID+"/delete", url.Values{"csrf": {token}}), http.StatusForbidden, "This API key is read-only.")
	wantPage(t, "POST delete of no email", u.post("/email/"+unknownID+"/delete", url.Values{"csrf": {token}}), http.StatusForbidden, "This API key is read-only.")
	if _, err := u.db.Email(context.Background(), e.ID); err != nil {
		t.Errorf("the email is gone after a read-only session's refusals: %v", err)
	}

	// A full session on the same UI has the controls.
	full := newUI(t, Options{})
	full.login()
	f := full.deliver("alice@example.com", filesEmail())
	wantPage(t, "GET the inbox, full key", full.get("/inbox/alice"), 200, `action="/email/`+f.ID+`/delete"`, `/inbox/alice/clear"`)
}
