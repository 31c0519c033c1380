package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"burner/storage"
	"burner/storage/storetest"
)

// specRoutes are the routes the server serves, each with a request that
// reaches it ({id} and {n} are filled in by the test). The OpenAPI document
// must describe exactly these.
var specRoutes = map[string]string{
	"GET /api/v1/emails":                      "/api/v1/emails?to=alice",
	"GET /api/v1/emails/{id}":                 "/api/v1/emails/{id}",
	"DELETE /api/v1/emails/{id}":              "/api/v1/emails/{id}",
	"DELETE /api/v1/inbox":                    "/api/v1/inbox?to=alice",
	"GET /api/v1/emails/{id}/raw":             "/api/v1/emails/{id}/raw",
	"GET /api/v1/emails/{id}/attachments":     "/api/v1/emails/{id}/attachments",
	"GET /api/v1/emails/{id}/attachments/{n}": "/api/v1/emails/{id}/attachments/{n}",
	"GET /api/v1/emails/{id}/text":            "/api/v1/emails/{id}/text",
	"GET /api/v1/emails/{id}/links":           "/api/v1/emails/{id}/links",
	"GET /api/v1/emails/{id}/codes":           "/api/v1/emails/{id}/codes",
	"GET /api/v1/emails/{id}/auth":            "/api/v1/emails/{id}/auth",
	"GET /api/v1/events":                      "/api/v1/events?to=alice",
	"GET /api/v1/openapi.json":                "/api/v1/openapi.json",
	"GET /api/v1/info":                        "/api/v1/info",
	"GET /api/v1/sessions":                    "/api/v1/sessions",
	"GET /api/v1/faults":                      "/api/v1/faults",
	"POST /api/v1/faults":                     "/api/v1/faults",
	"DELETE /api/v1/faults/{id}":              "/api/v1/faults/{id}",
	"GET /healthz":                            "/healthz",
	"GET /metrics":                            "/metrics",
}

// specMethods are the operations a path item can hold (OpenAPI 3.1 §4.8.9).
var specMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// unknownID is a UUID that no email has.
const unknownID = "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"

// openAPISpec is the served OpenAPI document with a JSON Schema compiler
// over it, so that a response's schema is compiled where it stands and its
// $refs to #/components resolve.
type openAPISpec struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema // by JSON pointer
	checked  int                           // responses validated
}

// newSpecAPI is newAPI with every optional route on: /metrics too.
func newSpecAPI(t *testing.T) *apiTest {
	t.Helper()
	a := newAPI(t)
	a.srv = httptest.NewServer(New(a.db, Options{Metrics: prometheus.NewRegistry(), Features: Features{Faults: true}}, testLogger(t)).Handler())
	t.Cleanup(a.srv.Close)
	return a
}

// loadOpenAPI fetches the document through the real handler.
func loadOpenAPI(t *testing.T, a *apiTest) *openAPISpec {
	t.Helper()
	res := a.call("GET", "/api/v1/openapi.json")
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json = %d %q, want 200 application/json", res.status, res.header.Get("Content-Type"))
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(res.body))
	if err != nil {
		t.Fatalf("GET /api/v1/openapi.json: %v", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		t.Fatalf("GET /api/v1/openapi.json is a %T, want an object", doc)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020) // OpenAPI 3.1 §4.8.24: the default dialect
	if err := c.AddResource("mem://openapi.json", doc); err != nil {
		t.Fatalf("AddResource(openapi.json): %v", err)
	}
	return &openAPISpec{doc: m, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

// lookup returns the value at the JSON pointer ptr ("#/a/b~1c/0").
func (s *openAPISpec) lookup(ptr string) (any, bool) {
	return lookupPointer(s.doc, ptr)
}

// lookupPointer returns the value at the JSON pointer ptr in doc.
func lookupPointer(doc any, ptr string) (any, bool) {
	v := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "#"), "/")[1:] {
		var ok bool
		switch c := v.(type) {
		case map[string]any:
			v, ok = c[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
		case []any:
			var i int
			i, ok = parseIndex(tok)
			ok = ok && i < len(c)
			if ok {
				v = c[i]
			}
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}

// parseIndex parses an array index of a JSON pointer (RFC 6901 §4).
func parseIndex(tok string) (int, bool) {
	i, err := strconv.Atoi(tok)
	return i, err == nil && i >= 0 && (tok == "0" || tok[0] != '0')
}

// object returns the object at ptr, following a Reference Object, and the
// pointer where it really is.
func (s *openAPISpec) object(t *testing.T, ptr string) (map[string]any, string) {
	t.Helper()
	for range 10 {
		v, ok := s.lookup(ptr)
		m, isObj := v.(map[string]any)
		if !ok || !isObj {
			t.Fatalf("openapi.json: %s is not an object", ptr)
		}
		ref, isRef := m["$ref"].(string)
		if !isRef {
			return m, ptr
		}
		ptr = ref
	}
	t.Fatalf("openapi.json: %s: $ref loop", ptr)
	return nil, ""
}

// schema compiles the schema at ptr.
func (s *openAPISpec) schema(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	if sch, ok := s.schemas[ptr]; ok {
		return sch
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "#"), "/")
	for i := range toks {
		toks[i] = url.PathEscape(toks[i]) // the compiler unescapes the fragment
	}
	sch, err := s.compiler.Compile("mem://openapi.json#" + strings.Join(toks, "/"))
	if err != nil {
		t.Fatalf("openapi.json: compile schema %s: %v", ptr, err)
	}
	s.schemas[ptr] = sch
	return sch
}

// pointer appends tokens to ptr, escaped (RFC 6901).
func pointer(ptr string, toks ...string) string {
	for _, tok := range toks {
		ptr += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
	}
	return ptr
}

// operations returns the pointers of the operations of the path template
// (all of them when method is ""), in a fixed order.
func (s *openAPISpec) operations(t *testing.T, method, template string) []string {
	t.Helper()
	item, ptr := s.object(t, pointer("#/paths", template))
	var ops []string
	for _, m := range specMethods {
		if _, ok := item[m]; ok && (method == "" || strings.EqualFold(method, m)) {
			ops = append(ops, pointer(ptr, m))
		}
	}
	return ops
}

// validate checks res, the real answer to method on a path of template,
// against the document: its status must be documented for the operation,
// with its required headers valid, its Content-Type documented, and a JSON
// body valid against the documented schema. A method the path does not
// document must be answered 405, as every operation of the path documents.
func (s *openAPISpec) validate(t *testing.T, method, template string, res response) {
	t.Helper()
	what := method + " " + template
	ops := s.operations(t, method, template)
	if len(ops) == 0 {
		if res.status != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, want 405 for a method the document does not list (body %s)", what, res.status, res.body)
			return
		}
		ops = s.operations(t, "", template)
	}
	for _, op := range ops {
		s.validateResponse(t, what, op, res)
	}
	s.checked++
}

func (s *openAPISpec) validateResponse(t *testing.T, what, op string, res response) {
	t.Helper()
	status := strconv.Itoa(res.status)
	responses, _ := s.object(t, pointer(op, "responses"))
	if _, ok := responses[status]; !ok {
		t.Errorf("%s: status %d is not documented at %s (body %s)", what, res.status, op, res.body)
		return
	}
	resp, ptr := s.object(t, pointer(op, "responses", status))
	what = fmt.Sprintf("%s: %d", what, res.status)

	headers, _ := resp["headers"].(map[string]any)
	for name := range headers {
		h, hptr := s.object(t, pointer(ptr, "headers", name))
		values := res.header.Values(name)
		if len(values) == 0 {
			if h["required"] == true {
				t.Errorf("%s: no %s header, which %s requires", what, name, hptr)
			}
			continue
		}
		if _, ok := h["schema"]; ok {
			if err := s.schema(t, pointer(hptr, "schema")).Validate(values[0]); err != nil {
				t.Errorf("%s: header %s: %q does not match %s: %v", what, name, values[0], hptr, err)
			}
		}
	}

	content, _ := resp["content"].(map[string]any)
	ct := res.header.Get("Content-Type")
	if len(content) == 0 {
		if ct != "" || res.body != "" {
			t.Errorf("%s: Content-Type %q and body %q, want none as %s documents", what, ct, res.body, ptr)
		}
		return
	}
	key, ok := documentedMediaType(content, ct)
	if !ok {
		t.Errorf("%s: Content-Type %q is not among %s's %v", what, ct, ptr, slices.Sorted(maps.Keys(content)))
		return
	}
	base, _, _ := mime.ParseMediaType(key)
	if base != "application/json" && !strings.HasSuffix(base, "+json") {
		return // bytes, text or a stream: the media type is the contract
	}
	body, err := jsonschema.UnmarshalJSON(strings.NewReader(res.body))
	if err != nil {
		t.Errorf("%s: body is not JSON: %v\n%s", what, err, res.body)
		return
	}
	schemaPtr := pointer(ptr, "content", key, "schema")
	if err := s.schema(t, schemaPtr).Validate(body); err != nil {
		t.Errorf("%s: body %s does not match %s:\n%v", what, strings.TrimSpace(res.body), schemaPtr, err)
	}
}

// documentedMediaType returns the key of content that documents the
// Content-Type ct: the same type (parameters in the key must be in ct), or
// else a range like */* (RFC 9110 §12.5.1).
func documentedMediaType(content map[string]any, ct string) (string, bool) {
	got, gotParams, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", false
	}
	keys := slices.Sorted(maps.Keys(content))
	for _, ranges := range []bool{false, true} {
		for _, key := range keys {
			want, wantParams, err := mime.ParseMediaType(key)
			if err != nil || strings.Contains(want, "*") != ranges {
				continue
			}
			typ, sub, _ := strings.Cut(want, "/")
			gtyp, gsub, _ := strings.Cut(got, "/")
			if (typ != "*" && typ != gtyp) || (sub != "*" && sub != gsub) {
				continue
			}
			paramsOK := true
			for k, v := range wantParams {
				if !strings.EqualFold(gotParams[k], v) {
					paramsOK = false
				}
			}
			if paramsOK {
				return key, true
			}
		}
	}
	return "", false
}

// fetch sends a request (with the test's key when key is set) and returns
// the answer. The body of an event stream is not read: the request is
// canceled once its header is in.
func (a *apiTest) fetch(method, path string, key bool) response {
	a.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.srv.URL+path, nil)
	if err != nil {
		a.t.Fatalf("NewRequest(%s %s): %v", method, path, err)
	}
	if key {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") == "text/event-stream" {
		return response{status: res.StatusCode, header: res.Header}
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: string(body)}
}

// fillPath fills the {id} and {n} of a route's request.
func fillPath(path, id string) string {
	return strings.NewReplacer("{id}", id, "{n}", "0").Replace(path)
}

func TestOpenAPIDocument(t *testing.T) {
	a := newSpecAPI(t)
	spec := loadOpenAPI(t, a)
	if v := spec.doc["openapi"]; v != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", v)
	}
	if res := a.call("GET", "/api/v1/openapi.json"); res.body != string(openAPI) {
		t.Errorf("GET /api/v1/openapi.json is not the embedded openapi.json")
	}

	paths, ok := spec.doc["paths"].(map[string]any)
	if !ok {
		t.Fatalf("openapi.json has no paths")
	}
	var documented []string
	for path := range paths {
		for _, op := range spec.operations(t, "", path) {
			documented = append(documented, strings.ToUpper(op[strings.LastIndex(op, "/")+1:])+" "+path)
		}
	}
	slices.Sort(documented)
	served := slices.Sorted(maps.Keys(specRoutes))
	if !slices.Equal(documented, served) {
		t.Errorf("openapi.json documents\n%s\nwant the routes the server serves\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}

	// Each route is really served: neither the catch-all 404 nor a 405.
	for _, route := range served {
		method, _, _ := strings.Cut(route, " ")
		res := a.fetch(method, fillPath(specRoutes[route], unknownID), true)
		if res.status == http.StatusMethodNotAllowed || (res.status == http.StatusNotFound && res.body == notFoundBody+"\n") {
			t.Errorf("%s: %d %s, want the route served", route, res.status, res.body)
		}
	}

	// Every operation lists the answers any request can get, and every
	// schema in it compiles with its $refs resolved.
	for _, route := range documented {
		method, path, _ := strings.Cut(route, " ")
		op, ptr := spec.object(t, spec.operations(t, method, path)[0])
		responses, _ := spec.object(t, pointer(ptr, "responses"))
		want := []string{"405", "414", "500"}
		if sec, ok := op["security"].([]any); !ok || len(sec) > 0 {
			want = append(want, "401")
		}
		for _, status := range want {
			if _, ok := responses[status]; !ok {
				t.Errorf("%s does not document a %s response", route, status)
			}
		}
		for status := range responses {
			resp, rptr := spec.object(t, pointer(ptr, "responses", status))
			content, _ := resp["content"].(map[string]any)
			for media := range content {
				spec.schema(t, pointer(rptr, "content", media, "schema"))
			}
		}
	}
}

// filesEmail is a message with two attachments, a header for the header
// filter, and links.
func filesEmail() storage.Message {
	return storage.Message{
		From: "a@example.com", FromName: "A", Subject: ptr("files"), Body: ptr("<p>see attached</p>"),
		Text: "see attached", Plain: "see attached", Links: []string{"https://a.example/1"},
		Headers: []storage.Header{{Name: "X-Test-Run", Value: "42"}}, Raw: []byte(filesMessage),
	}
}

func TestResponsesMatchOpenAPI(t *testing.T) {
	a := newSpecAPI(t)
	spec := loadOpenAPI(t, a)
	files := a.deliver("alice@example.com", filesEmail())
	bare := a.deliver("alice@example.com", storage.Message{Raw: []byte("\r\n")}) // no subject, no body: nulls
	gone := a.deliver("bob@example.com", storage.Message{Subject: ptr("to delete")})
	verified := a.deliverAuth("carol@example.com", specAuth)
	bareAuth := specAuth
	bareAuth.Envelope.TLS, bareAuth.PTR, bareAuth.DKIM, bareAuth.DMARC.Policy = nil, "", nil, ""
	unsigned := a.deliverAuth("carol@example.com", bareAuth) // nulls and []
	pending := a.deliverAuth("carol@example.com", storage.AuthResult{Status: storage.AuthPending, Envelope: specAuth.Envelope})
	// The session log, with an open session and one with every part.
	open := storetest.SMTPSession(storetest.SessionID(1), a.clock.Now(), false, "alice@example.com")
	full := storetest.SMTPSession(storetest.SessionID(2), a.clock.Now(), true, "alice@inbox.test", "x@elsewhere.test")
	full.TLS = &storage.TLS{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256"}
	full.Recipients[0].Fault = "f"
	full.Data = &storage.SMTPData{Reply: ptr("451 4.3.0 later"), Bytes: 12, Fault: "f"}
	full.Emails, full.Outcome = []string{files.ID}, storage.SMTPFaulted
	if err := a.db.WriteSMTPSessions(context.Background(), []storage.SMTPSession{open, full}); err != nil {
		t.Fatal(err)
	}
	rule := a.arm(storage.FaultRule{Inbox: "alice", Stage: storage.FaultAtData, Disconnect: true, Delay: 1500 * time.Millisecond})
	const long65 = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

	for _, c := range []struct {
		status                int
		method, template, url string
	}{
		{200, "GET", "/api/v1/emails", "/api/v1/emails?to=alice"},
		{200, "GET", "/api/v1/emails", "/api/v1/emails?to=nobody"},
		{200, "GET", "/api/v1/emails", "/api/v1/emails?to=ALICE&subject=FILES&limit=1&since=1.5"},
		{200, "GET", "/api/v1/emails", "/api/v1/emails?to=alice&body=attached&header=X-Test-Run:42"},
		{200, "GET", "/api/v1/emails", "/api/v1/emails?to=alice&search=%22see+attached%22&wait=1"},
		{400, "GET", "/api/v1/emails", "/api/v1/emails"},
		{400, "GET", "/api/v1/emails", "/api/v1/emails?to=a@b"},
		{400, "GET", "/api/v1/emails", "/api/v1/emails?to=" + long65},
		{400, "GET", "/api/v1/emails", "/api/v1/emails?to=alice&subject=a&body=b"},
		{400, "GET", "/api/v1/emails", "/api/v1/emails?to=alice&limit=11"},
		{400, "GET", "/api/v1/emails", "/api/v1/emails?to=alice&since=-1"},
		{400, "GET", "/api/v1/emails", "/api/v1/emails?to=alice&header=nocolon"},
		{400, "GET", "/api/v1/emails", "/api/v1/emails?to=alice&wait=61"},
		{200, "GET", "/api/v1/emails/{id}", "/api/v1/emails/" + files.ID},
		{200, "GET", "/api/v1/emails/{id}", "/api/v1/emails/" + bare.ID},
		{404, "GET", "/api/v1/emails/{id}", "/api/v1/emails/" + unknownID},
		{404, "GET", "/api/v1/emails/{id}", "/api/v1/emails/not-a-uuid"},
		{204, "DELETE", "/api/v1/emails/{id}", "/api/v1/emails/" + gone.ID},
		{404, "DELETE", "/api/v1/emails/{id}", "/api/v1/emails/" + gone.ID},
		{204, "DELETE", "/api/v1/inbox", "/api/v1/inbox?to=nobody"},
		{400, "DELETE", "/api/v1/inbox", "/api/v1/inbox?to="},
		{400, "DELETE", "/api/v1/inbox", "/api/v1/inbox?to=b%20b"},
		{400, "DELETE", "/api/v1/inbox", "/api/v1/inbox?to=" + long65},
		{200, "GET", "/api/v1/emails/{id}/raw", "/api/v1/emails/" + files.ID + "/raw"},
		{200, "GET", "/api/v1/emails/{id}/attachments", "/api/v1/emails/" + files.ID + "/attachments"},
		{200, "GET", "/api/v1/emails/{id}/attachments", "/api/v1/emails/" + bare.ID + "/attachments"},
		{200, "GET", "/api/v1/emails/{id}/attachments/{n}", "/api/v1/emails/" + files.ID + "/attachments/0"},
		{200, "GET", "/api/v1/emails/{id}/attachments/{n}", "/api/v1/emails/" + files.ID + "/attachments/1"},
		{404, "GET", "/api/v1/emails/{id}/attachments/{n}", "/api/v1/emails/" + files.ID + "/attachments/2"},
		{404, "GET", "/api/v1/emails/{id}/attachments/{n}", "/api/v1/emails/" + unknownID + "/attachments/0"},
		{200, "GET", "/api/v1/emails/{id}/text", "/api/v1/emails/" + files.ID + "/text"},
		{200, "GET", "/api/v1/emails/{id}/links", "/api/v1/emails/" + files.ID + "/links"},
		{200, "GET", "/api/v1/emails/{id}/links", "/api/v1/emails/" + bare.ID + "/links"},
		{200, "GET", "/api/v1/emails/{id}/codes", "/api/v1/emails/" + files.ID + "/codes"},
		{400, "GET", "/api/v1/emails/{id}/codes", "/api/v1/emails/" + files.ID + "/codes?pattern=("},
		{200, "GET", "/api/v1/emails/{id}/auth", "/api/v1/emails/" + files.ID + "/auth"},
		{200, "GET", "/api/v1/emails/{id}/auth", "/api/v1/emails/" + verified.ID + "/auth"},
		{200, "GET", "/api/v1/emails/{id}/auth", "/api/v1/emails/" + unsigned.ID + "/auth?wait=1"},
		{200, "GET", "/api/v1/emails/{id}/auth", "/api/v1/emails/" + pending.ID + "/auth"},
		{400, "GET", "/api/v1/emails/{id}/auth", "/api/v1/emails/" + files.ID + "/auth?wait=0"},
		{404, "GET", "/api/v1/emails/{id}/auth", "/api/v1/emails/" + unknownID + "/auth"},
		{200, "GET", "/api/v1/events", "/api/v1/events?to=alice"},
		{400, "GET", "/api/v1/events", "/api/v1/events?to=a%40b"},
		{200, "GET", "/api/v1/openapi.json", "/api/v1/openapi.json"},
		{200, "GET", "/api/v1/info", "/api/v1/info"},
		{200, "GET", "/healthz", "/healthz"},
		{200, "GET", "/metrics", "/metrics"},
		{200, "GET", "/api/v1/sessions", "/api/v1/sessions"},
		{200, "GET", "/api/v1/sessions", "/api/v1/sessions?to=alice&limit=100&since=1.5"},
		{400, "GET", "/api/v1/sessions", "/api/v1/sessions?limit=0"},
		{400, "GET", "/api/v1/sessions", "/api/v1/sessions?to=a@b"},
		{400, "GET", "/api/v1/sessions", "/api/v1/sessions?since=-1"},
		{200, "GET", "/api/v1/faults", "/api/v1/faults"},
		{204, "DELETE", "/api/v1/faults/{id}", "/api/v1/faults/" + rule.ID},
		{404, "DELETE", "/api/v1/faults/{id}", "/api/v1/faults/" + rule.ID},
	} {
		res := a.fetch(c.method, c.url, true)
		if res.status != c.status {
			t.Errorf("%s %s: status %d, want %d (body %s)", c.method, c.url, res.status, c.status, res.body)
		}
		spec.validate(t, c.method, c.template, res)
	}

	// POST /api/v1/faults, with a body.
	for _, c := range []struct {
		status int
		body   string
	}{
		{201, `{"inbox":"alice","stage":"rcpt","reply":"451 4.3.0 later","times":2,"delay":"2s","perMinute":3}`},
		{400, `{"inbox":"alice","stage":"rcpt","reply":"451","times":-1}`},
		{400, `[]`},
	} {
		res := a.callBody("POST", "/api/v1/faults", "Bearer "+a.key, c.body)
		if res.status != c.status {
			t.Errorf("POST /api/v1/faults %s: status %d, want %d (body %s)", c.body, res.status, c.status, res.body)
		}
		spec.validate(t, "POST", "/api/v1/faults", res)
	}

	// The health check is 503 while the SMTP listener is down.
	down := *a
	down.srv = httptest.NewServer(New(a.db, Options{Ready: func() error { return errors.New("smtp: not listening") }}, testLogger(t)).Handler())
	defer down.srv.Close()
	spec.validate(t, "GET", "/healthz", wantStatus(t, "GET /healthz with SMTP down", 503, down.fetch("GET", "/healthz", false)))

	// The answers every route gives: 401 without a key (unless the route
	// needs none), 414 for a long query, and 405 for another method.
	padding := "pad=" + strings.Repeat("x", 4<<10)
	notAllowed := map[string]bool{} // templates asked with PUT
	for route, path := range specRoutes {
		method, template, _ := strings.Cut(route, " ")
		path = fillPath(path, files.ID)
		if op, _ := spec.object(t, spec.operations(t, method, template)[0]); op["security"] == nil {
			spec.validate(t, method, template, wantStatus(t, route+" without a key", 401, a.fetch(method, path, false)))
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		spec.validate(t, method, template, wantStatus(t, route+" with a long query", 414, a.fetch(method, path+sep+padding, true)))
		if !notAllowed[template] {
			notAllowed[template] = true
			spec.validate(t, "PUT", template, wantStatus(t, "PUT "+template, 405, a.fetch("PUT", path, true)))
		}
	}

	// A storage failure is a 500 (or 503 for the health check).
	a.db.Close()
	for route, path := range specRoutes {
		method, template, _ := strings.Cut(route, " ")
		res := a.fetch(method, fillPath(path, files.ID), true)
		if template != "/healthz" {
			wantStatus(t, route+" with the data file closed", 500, res)
		}
		spec.validate(t, method, template, res)
	}
	t.Logf("validated %d responses against openapi.json", spec.checked)
}

// wantStatus reports an answer of another status than want, and returns
// it for validation.
func wantStatus(t *testing.T, what string, want int, res response) response {
	t.Helper()
	if res.status != want {
		t.Errorf("%s: status %d, want %d (body %s)", what, res.status, want, res.body)
	}
	return res
}

// generatorProblems walks the whole document for what code generators rely
// on and JSON Schema validation does not catch:
//   - every number has format double and every integer int32 or int64: a
//     bare number becomes a float32 in a generated Go client, which holds a
//     Unix time only to 128 seconds;
//   - every header and parameter schema has a type: a generated client
//     cannot bind a header of unknown type, and fails on the whole answer;
//   - every property an object requires is one it defines.
func generatorProblems(doc map[string]any) []string {
	var problems []string
	report := func(ptr, format string, args ...any) {
		problems = append(problems, ptr+": "+fmt.Sprintf(format, args...))
	}
	// resolve follows local $refs from v, returning where it ends.
	resolve := func(ptr string, v any) (string, map[string]any) {
		for range 10 {
			m, _ := v.(map[string]any)
			ref, ok := m["$ref"].(string)
			if !ok || !strings.HasPrefix(ref, "#/") {
				return ptr, m
			}
			ptr = ref
			v, _ = lookupPointer(doc, ref)
		}
		return ptr, nil
	}
	var defines func(ptr string, schema map[string]any, name string, depth int) bool
	defines = func(ptr string, schema map[string]any, name string, depth int) bool {
		if props, ok := schema["properties"].(map[string]any); ok && props[name] != nil {
			return true
		}
		if depth > 10 {
			return false
		}
		if ref, ok := schema["$ref"].(string); ok {
			v, _ := lookupPointer(doc, ref)
			target, _ := v.(map[string]any)
			if defines(ref, target, name, depth+1) {
				return true
			}
		}
		all, _ := schema["allOf"].([]any)
		for i, sub := range all {
			m, _ := sub.(map[string]any)
			if defines(pointer(ptr, "allOf", strconv.Itoa(i)), m, name, depth+1) {
				return true
			}
		}
		return false
	}
	checkSchema := func(ptr string, m map[string]any) {
		var types []any
		switch typ := m["type"].(type) {
		case string:
			types = []any{typ}
		case []any:
			types = typ
		}
		format, _ := m["format"].(string)
		if slices.Contains(types, "number") && format != "double" {
			report(ptr, "a number of format %q, want double", format)
		}
		if slices.Contains(types, "integer") && format != "int32" && format != "int64" {
			report(ptr, "an integer of format %q, want int32 or int64", format)
		}
		if required, ok := m["required"].([]any); ok {
			for _, name := range required {
				if s, _ := name.(string); !defines(ptr, m, s, 0) {
					report(ptr, "requires the property %v, which it does not define", name)
				}
			}
		}
	}
	// typed checks that a header's or a parameter's schema has a type.
	typed := func(ptr string, v any) {
		ptr, obj := resolve(ptr, v)
		if obj == nil {
			report(ptr, "not an object")
			return
		}
		if _, ok := obj["content"]; ok && obj["schema"] == nil {
			return // described by a media type, not a schema
		}
		sptr, schema := resolve(pointer(ptr, "schema"), obj["schema"])
		if schema["type"] == nil {
			report(sptr, "a schema without a type")
		}
	}

	// The whole document, for schemas: the keys of these objects are names,
	// not keywords, so a property may be called "default".
	names := map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "dependentSchemas": true,
		"paths": true, "responses": true, "content": true, "headers": true, "schemas": true,
		"parameters": true, "securitySchemes": true, "requestBodies": true, "links": true,
		"callbacks": true, "encoding": true, "pathItems": true, "webhooks": true,
	}
	// Values of these keywords are data, not schemas.
	data := map[string]bool{"example": true, "examples": true, "default": true, "const": true, "enum": true}
	var walk func(ptr, key string, v any)
	walk = func(ptr, key string, v any) {
		switch v := v.(type) {
		case []any:
			for i, e := range v {
				walk(pointer(ptr, strconv.Itoa(i)), "", e)
			}
		case map[string]any:
			if !names[key] {
				checkSchema(ptr, v)
			}
			for k, e := range v {
				if !names[key] && (data[k] || strings.HasPrefix(k, "x-")) {
					continue
				}
				walk(pointer(ptr, k), k, e)
			}
		}
	}
	walk("#", "", doc)

	// Headers and parameters, wherever the document defines them.
	components, _ := doc["components"].(map[string]any)
	headers, _ := components["headers"].(map[string]any)
	for name, h := range headers {
		typed(pointer("#/components/headers", name), h)
	}
	params, _ := components["parameters"].(map[string]any)
	for name, p := range params {
		typed(pointer("#/components/parameters", name), p)
	}
	checkResponses := func(ptr string, responses map[string]any) {
		for status, r := range responses {
			rptr, resp := resolve(pointer(ptr, status), r)
			hs, _ := resp["headers"].(map[string]any)
			for name, h := range hs {
				typed(pointer(rptr, "headers", name), h)
			}
		}
	}
	responses, _ := components["responses"].(map[string]any)
	checkResponses("#/components/responses", responses)
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		iptr, obj := resolve(pointer("#/paths", path), item)
		for _, key := range append([]string{""}, specMethods...) {
			optr, op := iptr, obj
			if key != "" {
				if op, _ = obj[key].(map[string]any); op == nil {
					continue
				}
				optr = pointer(iptr, key)
			}
			ps, _ := op["parameters"].([]any)
			for i, p := range ps {
				typed(pointer(optr, "parameters", strconv.Itoa(i)), p)
			}
			if key != "" {
				rs, _ := op["responses"].(map[string]any)
				checkResponses(pointer(optr, "responses"), rs)
			}
		}
	}
	slices.Sort(problems)
	return slices.Compact(problems)
}

func TestOpenAPIForGenerators(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	for _, p := range generatorProblems(doc) {
		t.Errorf("openapi.json: %s", p)
	}
	license, _ := doc["info"].(map[string]any)["license"].(map[string]any)
	if license["name"] != "MIT" || license["identifier"] != "MIT" {
		t.Errorf("openapi.json: info.license = %v, want MIT, as LICENSE", license)
	}
}

// The checks find each kind of problem, wherever it is, and only those.
func TestGeneratorProblems(t *testing.T) {
	const doc = `{
	  "paths": {
	    "/a": {
	      "parameters": [{"name": "n", "in": "path", "schema": {"type": "integer"}}],
	      "get": {
	        "parameters": [
	          {"name": "since", "in": "query", "schema": {"type": "number", "minimum": 0}},
	          {"name": "ok", "in": "query", "schema": {"type": ["number", "null"], "format": "double"}},
	          {"name": "bare", "in": "query", "schema": {"minimum": 0}},
	          {"name": "h", "in": "header", "content": {"text/plain": {"schema": {"type": "string"}}}}
	        ],
	        "responses": {
	          "default": {
	            "description": "",
	            "headers": {"Allow": {"schema": {"const": "GET"}}, "X-Ok": {"$ref": "#/components/headers/Ok"}},
	            "content": {"application/json": {"schema": {
	              "type": "object", "required": ["a", "b"], "properties": {"a": {"type": "integer", "format": "int64"}}
	            }}}
	          },
	          "401": {"$ref": "#/components/responses/R"}
	        }
	      }
	    }
	  },
	  "components": {
	    "headers": {
	      "Ok": {"schema": {"$ref": "#/components/schemas/S"}},
	      "Bad": {"schema": {"$ref": "#/components/schemas/Bare"}}
	    },
	    "responses": {"R": {"description": "", "headers": {"WWW-Authenticate": {"schema": {"const": "Bearer"}}}}},
	    "schemas": {
	      "S": {"type": "string"},
	      "Bare": {"const": "x"},
	      "Sub": {"$ref": "#/components/schemas/Obj", "required": ["default", "c"]},
	      "Obj": {
	        "type": "object", "required": ["default"],
	        "properties": {"default": {"type": "number", "format": "float"}, "examples": {"type": "integer", "format": "int32"}},
	        "examples": [{"type": "number"}]
	      }
	    }
	  }
	}`
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`#/components/responses/R/headers/WWW-Authenticate/schema: a schema without a type`,
		`#/components/schemas/Bare: a schema without a type`,
		`#/components/schemas/Obj/properties/default: a number of format "float", want double`,
		`#/components/schemas/Sub: requires the property c, which it does not define`,
		`#/paths/~1a/get/parameters/0/schema: a number of format "", want double`,
		`#/paths/~1a/get/parameters/2/schema: a schema without a type`,
		`#/paths/~1a/get/responses/default/content/application~1json/schema: requires the property b, which it does not define`,
		`#/paths/~1a/get/responses/default/headers/Allow/schema: a schema without a type`,
		`#/paths/~1a/parameters/0/schema: an integer of format "", want int32 or int64`,
	}
	if got := generatorProblems(m); !slices.Equal(got, want) {
		t.Errorf("generatorProblems found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
