package apiclient_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apiclient "burner/clients/go"
	"burner/storage"
	"burner/storage/storetest"
)

// clientCall calls one operation through the generated client, with
// arguments that reach a real email, and returns the parsed answer (a
// *apiclient.…Response).
type clientCall func(ctx context.Context, c *apiclient.ClientWithResponses, editors ...apiclient.RequestEditorFn) (any, error)

// clientCalls has a call for every operation of openapi.json, by
// operationId. id is an email with attachments.
func clientCalls(id string) map[string]clientCall {
	return map[string]clientCall{
		"listEmails": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.ListEmailsWithResponse(ctx, &apiclient.ListEmailsParams{To: "alice"}, ed...)
		},
		"getEmail": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.GetEmailWithResponse(ctx, id, ed...)
		},
		"deleteEmail": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.DeleteEmailWithResponse(ctx, unknownID, ed...)
		},
		"clearInbox": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.ClearInboxWithResponse(ctx, &apiclient.ClearInboxParams{To: "nobody"}, ed...)
		},
		"getRawEmail": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.GetRawEmailWithResponse(ctx, id, ed...)
		},
		"listAttachments": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.ListAttachmentsWithResponse(ctx, id, ed...)
		},
		"getAttachment": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.GetAttachmentWithResponse(ctx, id, 0, ed...)
		},
		"getEmailText": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.GetEmailTextWithResponse(ctx, id, ed...)
		},
		"listEmailLinks": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.ListEmailLinksWithResponse(ctx, id, ed...)
		},
		"listEmailCodes": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.ListEmailCodesWithResponse(ctx, id, &apiclient.ListEmailCodesParams{Pattern: ptr(`(\d+)`)}, ed...)
		},
		"getEmailAuth": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			wait := int32(1)
			return c.GetEmailAuthWithResponse(ctx, id, &apiclient.GetEmailAuthParams{Wait: &wait}, ed...)
		},
		// Only for answers that end: a 200 is a stream that does not.
		"streamEvents": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.StreamEventsWithResponse(ctx, &apiclient.StreamEventsParams{To: "alice"}, ed...)
		},
		"getOpenAPI": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.GetOpenAPIWithResponse(ctx, ed...)
		},
		"getInfo": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.GetInfoWithResponse(ctx, ed...)
		},
		"healthz": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.HealthzWithResponse(ctx, ed...)
		},
		"metrics": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.MetricsWithResponse(ctx, ed...)
		},
		"listSessions": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.ListSessionsWithResponse(ctx, &apiclient.ListSessionsParams{}, ed...)
		},
		"listFaults": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.ListFaultsWithResponse(ctx, ed...)
		},
		"createFault": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.CreateFaultWithResponse(ctx, apiclient.CreateFaultJSONRequestBody{Inbox: "nobody", Stage: "rcpt", Reply: ptr("451")}, ed...)
		},
		"deleteFault": func(ctx context.Context, c *apiclient.ClientWithResponses, ed ...apiclient.RequestEditorFn) (any, error) {
			return c.DeleteFaultWithResponse(ctx, unknownID, ed...)
		},
	}
}

// field returns the field name of the parsed answer r, a pointer to a
// struct; generated answers differ in type but name their fields alike
// (JSON401, Headers405).
func field(r any, name string) reflect.Value {
	v := reflect.ValueOf(r)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return reflect.Value{}
	}
	return v.Elem().FieldByName(name)
}

// statusOf returns the status of the parsed answer r.
func statusOf(r any) int {
	if s, ok := r.(interface{ StatusCode() int }); ok {
		return s.StatusCode()
	}
	return 0
}

// decodedError returns the error message of the JSON body the client
// decoded into r's JSON<status> field, or why there is none.
func decodedError(r any, status string) (string, bool) {
	f := field(r, "JSON"+status)
	if !f.IsValid() || f.IsNil() {
		return "", false
	}
	e, ok := f.Elem().Interface().(apiclient.Error)
	return e.Error, ok
}

// decodedHeader returns the header name the client parsed into r's
// Headers<status> field.
func decodedHeader(r any, status, name string) (string, bool) {
	f := field(r, "Headers"+status)
	if !f.IsValid() || f.IsNil() {
		return "", false
	}
	h := f.Elem().FieldByName(name)
	if !h.IsValid() || h.Kind() != reflect.String {
		return "", false
	}
	return h.String(), true
}

// clientFor is a client of a.srv; key adds the test's API key.
func clientFor(t *testing.T, a *apiTest, key bool, editors ...apiclient.RequestEditorFn) *apiclient.ClientWithResponses {
	t.Helper()
	opts := []apiclient.ClientOption{apiclient.WithHTTPClient(a.srv.Client())}
	if key {
		opts = append(opts, apiclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+a.key)
			return nil
		}))
	}
	for _, ed := range editors {
		opts = append(opts, apiclient.WithRequestEditorFn(ed))
	}
	c, err := apiclient.NewClientWithResponses(a.srv.URL, opts...)
	if err != nil {
		t.Fatalf("NewClientWithResponses(%s): %v", a.srv.URL, err)
	}
	return c
}

// sentParams records which parameters of which operation the client sent.
type sentParams struct {
	routes *http.ServeMux      // the document's routes, to name a request's operation
	sent   map[string]bool     // "GET /api/v1/emails query since"
	params map[string][]string // route -> its parameters, "query since"
	ops    map[string]string   // route -> operationId
}

func newSentParams(t *testing.T, spec *openAPISpec) *sentParams {
	t.Helper()
	p := &sentParams{routes: http.NewServeMux(), sent: map[string]bool{}, params: map[string][]string{}, ops: map[string]string{}}
	paths, _ := spec.doc["paths"].(map[string]any)
	for path := range paths {
		for _, op := range spec.operations(t, "", path) {
			route := strings.ToUpper(op[strings.LastIndex(op, "/")+1:]) + " " + path
			p.routes.HandleFunc(route, http.NotFound)
			obj, _ := spec.object(t, op)
			p.ops[route], _ = obj["operationId"].(string)
			for _, ptr := range []string{pointer("#/paths", path), op} {
				owner, optr := spec.object(t, ptr)
				list, _ := owner["parameters"].([]any)
				for i := range list {
					param, _ := spec.object(t, pointer(optr, "parameters", strconv.Itoa(i)))
					p.params[route] = append(p.params[route], fmt.Sprintf("%v %v", param["in"], param["name"]))
				}
			}
		}
	}
	return p
}

// record is a RequestEditorFn that notes the parameters of req.
func (p *sentParams) record(_ context.Context, req *http.Request) error {
	_, route := p.routes.Handler(req)
	p.sent[route+" path"] = true
	for name := range req.URL.Query() {
		p.sent[route+" query "+name] = true
	}
	for name := range req.Header {
		p.sent[route+" header "+name] = true
	}
	return nil
}

// TestOpenAPIClient calls every operation of openapi.json through the Go
// client oapi-codegen generates from it (this package),
// against the real handler and data file, and checks what the client
// decodes: the 2xx answers and errors of each route, and for every
// operation the 401 and the 405 with their headers.
func TestOpenAPIClient(t *testing.T) {
	a := newSpecAPI(t)
	spec := loadOpenAPI(t, a)
	ctx := t.Context()
	files := a.deliver("alice@example.com", filesEmail())
	bare := a.deliver("alice@example.com", storage.Message{Raw: []byte("\r\n")})
	third := a.deliver("alice@example.com", storage.Message{Subject: ptr("third")})
	sent := newSentParams(t, spec)
	c := clientFor(t, a, true, sent.record)

	t.Run("every operation", func(t *testing.T) {
		calls := clientCalls(files.ID)
		anonymous := clientFor(t, a, false)
		put := func(_ context.Context, req *http.Request) error {
			req.Method = http.MethodPut // no path of the document answers PUT
			return nil
		}
		for _, route := range slices.Sorted(maps.Keys(sent.ops)) {
			id := sent.ops[route]
			call, ok := calls[id]
			if !ok {
				t.Errorf("%s (%s) has no call in clientCalls", route, id)
				continue
			}
			delete(calls, id)
			if m := reflect.ValueOf(c).MethodByName(strings.ToUpper(id[:1]) + id[1:] + "WithResponse"); !m.IsValid() {
				t.Errorf("the generated client has no method for %s (%s)", route, id)
			}
			method, path, _ := strings.Cut(route, " ")
			op, ptr := spec.object(t, spec.operations(t, method, path)[0])

			if sec, ok := op["security"].([]any); !ok || len(sec) > 0 {
				res, err := call(ctx, anonymous)
				if err != nil {
					t.Errorf("%s without a key: the client failed: %v", route, err)
				} else if msg, _ := decodedError(res, "401"); statusOf(res) != 401 || msg != "Missing or invalid API key." {
					t.Errorf("%s without a key: status %d, decoded error %q; want 401 Missing or invalid API key.", route, statusOf(res), msg)
				} else if h, _ := decodedHeader(res, "401", "WWWAuthenticate"); h != "Bearer" {
					t.Errorf("%s without a key: decoded WWW-Authenticate %q, want Bearer", route, h)
				}
			}

			_, notAllowed := spec.object(t, pointer(ptr, "responses", "405"))
			schema, _ := spec.object(t, pointer(notAllowed, "headers", "Allow", "schema"))
			res, err := call(ctx, c, put)
			if err != nil {
				t.Errorf("PUT %s: the client failed: %v", path, err)
			} else if msg, _ := decodedError(res, "405"); statusOf(res) != 405 || msg != "Method not allowed." {
				t.Errorf("PUT %s: status %d, decoded error %q; want 405 Method not allowed.", path, statusOf(res), msg)
			} else if h, _ := decodedHeader(res, "405", "Allow"); h != schema["const"] {
				t.Errorf("PUT %s: decoded Allow %q, want %v as the document says", path, h, schema["const"])
			}
		}
		for id := range calls {
			t.Errorf("clientCalls has %s, which openapi.json does not document", id)
		}
	})

	t.Run("listEmails", func(t *testing.T) {
		// since as a float64: the receivedAt of the first email to the
		// millisecond; a float32 would round it to 128 seconds and let
		// the first email through.
		since := float64(files.ReceivedAt.UnixMilli()) / 1000
		res, err := c.ListEmailsWithResponse(ctx, &apiclient.ListEmailsParams{To: "ALICE", Since: &since})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("ListEmails(since=%v) = %v, %v; want 200", since, answer(res), err)
		}
		if got, want := emailIDs(*res.JSON200), []string{third.ID, bare.ID}; !slices.Equal(got, want) {
			t.Errorf("ListEmails(since=%v) = %v, want %v", since, got, want)
		}
		// before the receivedAt of the second of those: the first email
		// and nothing newer.
		before := float64(bare.ReceivedAt.UnixMilli()) / 1000
		res, err = c.ListEmailsWithResponse(ctx, &apiclient.ListEmailsParams{To: "alice", Before: &before})
		if err != nil || res.JSON200 == nil {
			t.Fatalf("ListEmails(before=%v) = %v, %v; want 200", before, answer(res), err)
		}
		if got, want := emailIDs(*res.JSON200), []string{files.ID}; !slices.Equal(got, want) {
			t.Errorf("ListEmails(before=%v) = %v, want %v", before, got, want)
		}
		limit, wait := int32(1), int32(1)
		subject, body, search, header, from := "FILES", "attached", `"see attached"`, "X-Test-Run:42", "A@EXAMPLE"
		for _, p := range []apiclient.ListEmailsParams{
			{To: "alice", Subject: &subject, Limit: &limit},
			{To: "alice", Body: &body, Header: &header},
			{To: "alice", Search: &search, Wait: &wait},
			{To: "alice", From: &from},
		} {
			res, err := c.ListEmailsWithResponse(ctx, &p)
			if err != nil || res.JSON200 == nil || len(*res.JSON200) != 1 {
				t.Fatalf("ListEmails(%+v) = %v, %v; want 200 and one email", p, answer(res), err)
			}
			if got, want := (*res.JSON200)[0], wantEmail(files); !reflect.DeepEqual(got, want) {
				t.Errorf("ListEmails(%+v) = %+v, want %+v", p, got, want)
			}
		}
		res, err = c.ListEmailsWithResponse(ctx, &apiclient.ListEmailsParams{To: "a@b"})
		if err != nil || res.JSON400 == nil || res.JSON400.Error != "Invalid local part. Only alphanumeric characters and _-+. are allowed." {
			t.Errorf("ListEmails(to=a@b) = %v, %v; want 400 Invalid local part", answer(res), err)
		}
	})

	t.Run("getEmailAuth", func(t *testing.T) {
		r := storage.AuthResult{
			Status:                storage.AuthDone,
			Envelope:              storage.Envelope{ClientIP: netip.MustParseAddr("203.0.113.7"), Helo: "mail.example.com", MailFrom: "bounce@example.com"},
			SPF:                   storage.SPFResult{Result: storage.AuthSoftFail, Domain: "example.com"},
			DKIM:                  []storage.DKIMResult{{Result: storage.AuthFail, Domain: "example.com", Selector: "s1", Error: "body hash did not verify"}},
			DMARC:                 storage.DMARCResult{Result: storage.AuthNone, Domain: "example.com"},
			AuthenticationResults: "mx; spf=softfail",
		}
		e := a.deliver("carol@example.com", storage.Message{Raw: []byte("\r\n"), Auth: &r})
		res, err := c.GetEmailAuthWithResponse(ctx, e.ID, nil)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("GetEmailAuth = %v, %v; want 200", answer(res), err)
		}
		got := res.JSON200
		if got.Status != apiclient.Done || got.Client.Ip != "203.0.113.7" || got.Client.Ptr != nil || got.Tls != nil || got.MailFrom != "bounce@example.com" ||
			got.Spf == nil || got.Spf.Result != apiclient.AuthSpfResultSoftfail || len(got.Dkim) != 1 || got.Dkim[0].Error == nil ||
			*got.Dkim[0].Error != "body hash did not verify" || got.Dmarc == nil || got.Dmarc.Policy != nil ||
			got.AuthenticationResults == nil || *got.AuthenticationResults != "mx; spf=softfail" {
			t.Errorf("GetEmailAuth = %+v; want the record stored", got)
		}
		wait := int32(61)
		res, err = c.GetEmailAuthWithResponse(ctx, e.ID, &apiclient.GetEmailAuthParams{Wait: &wait})
		if err != nil || res.JSON400 == nil || res.JSON400.Error != "'wait' must be an integer from 1 to 60." {
			t.Errorf("GetEmailAuth(wait=61) = %v, %v; want 400", answer(res), err)
		}
	})

	t.Run("getEmail", func(t *testing.T) {
		for _, e := range []storage.Email{files, bare} {
			res, err := c.GetEmailWithResponse(ctx, e.ID)
			if err != nil || res.JSON200 == nil {
				t.Fatalf("GetEmail(%s) = %v, %v; want 200", e.ID, answer(res), err)
			}
			if want := wantEmail(e); !reflect.DeepEqual(*res.JSON200, want) {
				t.Errorf("GetEmail(%s) = %+v, want %+v", e.ID, *res.JSON200, want)
			}
		}
		res, err := c.GetEmailWithResponse(ctx, unknownID)
		if err != nil || res.JSON404 == nil || res.JSON404.Error != "Email not found" {
			t.Errorf("GetEmail(unknown) = %v, %v; want 404 Email not found", answer(res), err)
		}
	})

	t.Run("content", func(t *testing.T) {
		raw, err := c.GetRawEmailWithResponse(ctx, files.ID)
		if err != nil || raw.StatusCode() != 200 || raw.ContentType() != "message/rfc822" || string(raw.Body) != filesMessage {
			t.Errorf("GetRawEmail = %v, %v; want 200 message/rfc822 and the message", answer(raw), err)
		}
		list, err := c.ListAttachmentsWithResponse(ctx, files.ID)
		want := []apiclient.Attachment{
			{Index: 0, Filename: "page.html", ContentType: "text/html", Size: 25},
			{Index: 1, Filename: "report.pdf", ContentType: "application/pdf", Size: 8},
		}
		if err != nil || list.JSON200 == nil || !slices.Equal(*list.JSON200, want) {
			t.Errorf("ListAttachments = %v, %v; want 200 %+v", answer(list), err, want)
		}
		file, err := c.GetAttachmentWithResponse(ctx, files.ID, 1)
		if err != nil || file.StatusCode() != 200 || string(file.Body) != "%PDF-1.4" || file.ContentType() != "application/pdf" ||
			!strings.HasPrefix(file.HTTPResponse.Header.Get("Content-Disposition"), "attachment") {
			t.Errorf("GetAttachment(1) = %v, %v; want 200 the PDF as a download", answer(file), err)
		}
		missing, err := c.GetAttachmentWithResponse(ctx, files.ID, 2)
		if err != nil || missing.JSON404 == nil || missing.JSON404.Error != "Attachment not found" {
			t.Errorf("GetAttachment(2) = %v, %v; want 404 Attachment not found", answer(missing), err)
		}
		text, err := c.GetEmailTextWithResponse(ctx, files.ID)
		if err != nil || text.StatusCode() != 200 || string(text.Body) != "see attached" {
			t.Errorf("GetEmailText = %v, %v; want 200 see attached", answer(text), err)
		}
		links, err := c.ListEmailLinksWithResponse(ctx, files.ID)
		if err != nil || links.JSON200 == nil || !slices.Equal(*links.JSON200, []string{"https://a.example/1"}) {
			t.Errorf("ListEmailLinks = %v, %v; want 200 [https://a.example/1]", answer(links), err)
		}
	})

	t.Run("streamEvents", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// The stream does not end, so it is read as it comes, not parsed whole.
		last := third.ID
		res, err := c.StreamEvents(ctx, &apiclient.StreamEventsParams{To: "alice", LastEventID: &last})
		if err != nil {
			t.Fatalf("StreamEvents: %v", err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("StreamEvents = %d %q, want 200 text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
		}
		r := bufio.NewReader(res.Body)
		if line, err := r.ReadString('\n'); err != nil || line != "retry: 2000\n" {
			t.Fatalf("stream starts %q, %v", line, err)
		}
		next := a.deliver("alice@example.com", storage.Message{Subject: ptr("live")})
		ev := readEvent(t, r)
		var e apiclient.Email
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil || ev.id != next.ID || !reflect.DeepEqual(e, wantEmail(next)) {
			t.Errorf("event %+v (%v), want the email %+v", ev, err, wantEmail(next))
		}
		bad, err := c.StreamEventsWithResponse(ctx, &apiclient.StreamEventsParams{To: "a@b"})
		if err != nil || bad.JSON400 == nil || bad.JSON400.Error != "Invalid local part. Only alphanumeric characters and _-+. are allowed." {
			t.Errorf("StreamEvents(to=a@b) = %v, %v; want 400 Invalid local part", answer(bad), err)
		}
	})

	t.Run("operations", func(t *testing.T) {
		doc, err := c.GetOpenAPIWithResponse(ctx)
		if err != nil || doc.JSON200 == nil || doc.JSON200.Openapi != apiclient.N310 || !doc.JSON200.Openapi.Valid() {
			t.Fatalf("GetOpenAPI = %v, %v; want 200 an OpenAPI 3.1.0 document", answer(doc), err)
		}
		if license, _ := doc.JSON200.Info["license"].(map[string]any); license["identifier"] != "MIT" || len(doc.JSON200.Paths) != len(spec.doc["paths"].(map[string]any)) {
			t.Errorf("GetOpenAPI: info.license %v and %d paths, want MIT and %d", license, len(doc.JSON200.Paths), len(spec.doc["paths"].(map[string]any)))
		}
		info, err := c.GetInfoWithResponse(ctx)
		if err != nil || info.JSON200 == nil || info.JSON200.Key.Name != "test" || !slices.Equal(info.JSON200.Key.Inboxes, []string{"*"}) ||
			info.JSON200.Key.ReadOnly || info.JSON200.Limits.MaxListLimit != 10 || info.JSON200.Domains == nil {
			t.Errorf("GetInfo = %v, %v; want 200 the key test, reaching every inbox, and the limits", answer(info), err)
		}
		health, err := c.HealthzWithResponse(ctx)
		if err != nil || health.JSON200 == nil || health.JSON200.Status != apiclient.Ok {
			t.Errorf("Healthz = %v, %v; want 200 ok", answer(health), err)
		}
		metrics, err := c.MetricsWithResponse(ctx)
		if err != nil || metrics.StatusCode() != 200 || !strings.HasPrefix(metrics.ContentType(), "text/plain") || !strings.Contains(string(metrics.Body), "# TYPE ") {
			t.Errorf("Metrics = %v, %v; want 200 Prometheus text", answer(metrics), err)
		}
	})

	t.Run("wire", func(t *testing.T) {
		times, delay := int32(2), "1.5s"
		armed, err := c.CreateFaultWithResponse(ctx, apiclient.CreateFaultJSONRequestBody{
			Inbox: "Alice", Stage: "rcpt", Reply: ptr("451 4.3.0 Try again later"), Times: &times, Delay: &delay})
		if err != nil || armed.JSON201 == nil || armed.JSON201.Inbox != "alice" || armed.JSON201.Times != 2 || armed.JSON201.Delay != "1.5s" ||
			armed.JSON201.Stage != "rcpt" || armed.JSON201.Used != 0 {
			t.Fatalf("CreateFault = %v, %v; want 201 the rule", answer(armed), err)
		}
		bad, err := c.CreateFaultWithResponse(ctx, apiclient.CreateFaultJSONRequestBody{Inbox: "alice", Stage: "helo"})
		if err != nil || bad.JSON400 == nil || bad.JSON400.Error != `'stage' must be "rcpt" or "data".` {
			t.Errorf("CreateFault(stage helo) = %v, %v; want 400 naming stage", answer(bad), err)
		}
		list, err := c.ListFaultsWithResponse(ctx)
		if err != nil || list.JSON200 == nil || len(*list.JSON200) != 1 || (*list.JSON200)[0] != *armed.JSON201 {
			t.Errorf("ListFaults = %v, %v; want the rule", answer(list), err)
		}
		s := storetest.SMTPSession("0195f3b0-0000-7000-8000-000000000001", a.clock.Now(), true, "alice@inbox.test", "x@elsewhere.test")
		s.Recipients[0].Fault, s.Outcome = armed.JSON201.Id, storage.SMTPFaulted
		if err := a.db.WriteSMTPSessions(ctx, []storage.SMTPSession{s}); err != nil {
			t.Fatal(err)
		}
		limit, to := int32(5), "alice"
		since := float64(s.StartedAt.UnixMilli()-1) / 1000
		sessions, err := c.ListSessionsWithResponse(ctx, &apiclient.ListSessionsParams{To: &to, Limit: &limit, Since: &since})
		if err != nil || sessions.JSON200 == nil || len(*sessions.JSON200) != 1 {
			t.Fatalf("ListSessions(alice) = %v, %v; want 200 one session", answer(sessions), err)
		}
		got := (*sessions.JSON200)[0]
		if got.Id != s.ID || got.Outcome == nil || *got.Outcome != "faulted" || len(got.Recipients) != 2 || got.Recipients[0].Fault == nil ||
			*got.Recipients[0].Fault != armed.JSON201.Id || got.Recipients[1].Inbox != nil || got.Data != nil || got.Tls != nil || len(got.Transcript) != len(s.Transcript) {
			t.Errorf("ListSessions(alice) = %+v, want the faulted session", got)
		}
		limit = 101
		tooMany, err := c.ListSessionsWithResponse(ctx, &apiclient.ListSessionsParams{Limit: &limit})
		if err != nil || tooMany.JSON400 == nil || tooMany.JSON400.Error != "'limit' must be an integer from 1 to 100." {
			t.Errorf("ListSessions(limit=101) = %v, %v; want 400 naming limit", answer(tooMany), err)
		}
		del, err := c.DeleteFaultWithResponse(ctx, armed.JSON201.Id)
		if err != nil || del.StatusCode() != 204 {
			t.Errorf("DeleteFault = %v, %v; want 204", answer(del), err)
		}
		del, err = c.DeleteFaultWithResponse(ctx, armed.JSON201.Id)
		if err != nil || del.JSON404 == nil || del.JSON404.Error != "Fault not found" {
			t.Errorf("DeleteFault again = %v, %v; want 404 Fault not found", answer(del), err)
		}
	})

	// Deleting comes last: the email is gone for the others.
	t.Run("delete", func(t *testing.T) {
		del, err := c.DeleteEmailWithResponse(ctx, bare.ID)
		if err != nil || del.StatusCode() != 204 || len(del.Body) != 0 {
			t.Fatalf("DeleteEmail = %v, %v; want 204", answer(del), err)
		}
		del, err = c.DeleteEmailWithResponse(ctx, bare.ID)
		if err != nil || del.JSON404 == nil || del.JSON404.Error != "Email not found" {
			t.Errorf("DeleteEmail again = %v, %v; want 404 Email not found", answer(del), err)
		}
		cleared, err := c.ClearInboxWithResponse(ctx, &apiclient.ClearInboxParams{To: "Alice"})
		if err != nil || cleared.StatusCode() != 204 {
			t.Fatalf("ClearInbox = %v, %v; want 204", answer(cleared), err)
		}
		list, err := c.ListEmailsWithResponse(ctx, &apiclient.ListEmailsParams{To: "alice"})
		if err != nil || list.JSON200 == nil || len(*list.JSON200) != 0 {
			t.Errorf("ListEmails after ClearInbox = %v, %v; want 200 []", answer(list), err)
		}
		bad, err := c.ClearInboxWithResponse(ctx, &apiclient.ClearInboxParams{To: strings.Repeat("a", 65)})
		if err != nil || bad.JSON400 == nil || bad.JSON400.Error != "Local part must be at most 64 characters." {
			t.Errorf("ClearInbox(to=65 characters) = %v, %v; want 400 Local part must be at most 64 characters.", answer(bad), err)
		}
	})

	// Every parameter the document lists was sent through the client: a
	// new one needs a call here.
	for _, route := range slices.Sorted(maps.Keys(sent.params)) {
		for _, param := range sent.params[route] {
			in, name, _ := strings.Cut(param, " ")
			switch in {
			case "path":
				name = "" // every request has them all
			case "header":
				name = http.CanonicalHeaderKey(name)
			}
			if !sent.sent[strings.TrimSpace(route+" "+in+" "+name)] {
				t.Errorf("%s: parameter %s was never sent through the client", route, param)
			}
		}
	}
}

// answer describes the parsed answer r for a failure message.
func answer(r any) string {
	a, ok := r.(interface {
		StatusCode() int
		GetBody() []byte
	})
	if !ok || reflect.ValueOf(r).IsNil() {
		return fmt.Sprintf("%T(nil)", r)
	}
	return fmt.Sprintf("%d %q", a.StatusCode(), a.GetBody())
}

// wantEmail is e as the generated client decodes it.
func wantEmail(e storage.Email) apiclient.Email {
	return apiclient.Email{
		Id: e.ID, ToAddress: e.To, FromAddress: e.From, FromName: e.FromName,
		Subject: e.Subject, Body: e.Body, ReceivedAt: e.ReceivedAt.UTC().Format(timeLayout), Read: e.Read,
	}
}

// emailIDs returns the ids of emails, in order.
func emailIDs(emails []apiclient.Email) []string {
	ids := make([]string, len(emails))
	for i, e := range emails {
		ids[i] = e.Id
	}
	return ids
}
