package apiclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"burner/server"
	"burner/storage"
	"burner/storage/boltdb"
	"burner/storage/storetest"
)

// The helpers of server's own tests that TestOpenAPIClient uses, written
// again over server's exported API: this module is apart so that
// oapi-codegen and its runtime stay out of burner's go.mod.

// apiTest is the real public handler, with every optional route on, over a
// real data file with a fake clock, and a valid API key.
type apiTest struct {
	t     testing.TB
	db    *boltdb.DB
	clock *storetest.Clock
	srv   *httptest.Server
	key   string
}

func newSpecAPI(t *testing.T) *apiTest {
	t.Helper()
	c := storetest.NewClock(time.Date(2025, 3, 14, 15, 9, 26, 535_000_000, time.UTC))
	db, err := boltdb.Open(filepath.Join(t.TempDir(), "burner.db"), boltdb.Options{Now: c.Now})
	if err != nil {
		t.Fatalf("boltdb.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	_, key, err := db.CreateKey(context.Background(), "test", storage.Scope{})
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv := httptest.NewServer(server.New(db, server.Options{Now: c.Now, Metrics: prometheus.NewRegistry(), Features: server.Features{Faults: true}}, log).Handler())
	t.Cleanup(srv.Close)
	return &apiTest{t: t, db: db, clock: c, srv: srv, key: key}
}

// deliver stores m for to one second after the previous delivery, so that
// every email has its own known receivedAt.
func (a *apiTest) deliver(to string, m storage.Message) storage.Email {
	a.t.Helper()
	a.clock.Advance(time.Second)
	emails, err := a.db.Deliver(context.Background(), &m, []string{to})
	if err != nil {
		a.t.Fatalf("Deliver(%q): %v", to, err)
	}
	return emails[0]
}

func ptr(s string) *string { return &s }

// unknownID is a UUID that no email has.
const unknownID = "8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11"

const filesMessage = "From: a@example.com\r\nSubject: files\r\nMIME-Version: 1.0\r\n" +
	"Content-Type: multipart/mixed; boundary=b\r\n\r\n" +
	"--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n" +
	"--b\r\nContent-Type: text/html\r\nContent-Disposition: attachment; filename=\"page.html\"\r\n\r\n<script>alert(1)</script>\r\n" +
	"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"report.pdf\"\r\n\r\n%PDF-1.4\r\n" +
	"--b--\r\n"

func filesEmail() storage.Message {
	return storage.Message{
		From: "a@example.com", FromName: "A", Subject: ptr("files"), Body: ptr("<p>see attached</p>"),
		Text: "see attached", Plain: "see attached", Links: []string{"https://a.example/1"},
		Headers: []storage.Header{{Name: "X-Test-Run", Value: "42"}}, Raw: []byte(filesMessage),
	}
}

// sseEvent is one event of a stream.
type sseEvent struct{ id, event, data string }

func readEvent(t *testing.T, r *bufio.Reader) sseEvent {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && ev.id != "":
			return ev
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
}

// openAPISpec is the served OpenAPI document.
type openAPISpec struct {
	doc map[string]any
}

// loadOpenAPI fetches the document through the real handler.
func loadOpenAPI(t *testing.T, a *apiTest) *openAPISpec {
	t.Helper()
	req, _ := http.NewRequest("GET", a.srv.URL+"/api/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	res, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("GET /api/v1/openapi.json: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json = %d %q, want 200 application/json", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil {
		t.Fatalf("GET /api/v1/openapi.json: %v", err)
	}
	return &openAPISpec{doc: doc}
}

// lookup returns the value at the JSON pointer ptr ("#/a/b~1c/0").
func (s *openAPISpec) lookup(ptr string) (any, bool) {
	var v any = s.doc
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

// pointer appends tokens to ptr, escaped (RFC 6901).
func pointer(ptr string, toks ...string) string {
	for _, tok := range toks {
		ptr += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
	}
	return ptr
}

// specMethods are the operations a path item can hold (OpenAPI 3.1 §4.8.9).
var specMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

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

// timeLayout is spec §3's receivedAt: ISO 8601, UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z"
