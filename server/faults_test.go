package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"burner/storage"
)

// arm creates rule in the store behind the API.
func (a *apiTest) arm(rule storage.FaultRule) storage.FaultRule {
	a.t.Helper()
	r, err := a.db.CreateFaultRule(context.Background(), rule)
	if err != nil {
		a.t.Fatalf("CreateFaultRule(%+v): %v", rule, err)
	}
	return r
}

func newFaultsAPI(t *testing.T) *apiTest {
	t.Helper()
	a, _ := newAPIOptions(t, Options{Features: Features{Faults: true}}, testLogger(t))
	return a
}

// POST /api/v1/faults answers 201 with the rule as spec §13.2 shows it;
// GET lists it, with its uses; DELETE removes it, then answers 404.
func TestFaultsRoutes(t *testing.T) {
	a := newFaultsAPI(t)
	res := a.callBody("POST", "/api/v1/faults", "Bearer "+a.key, `{"inbox": "Fail-*", "stage": "rcpt", "reply": "451 4.3.0 Try again later", "times": 3}`)
	created := a.clock.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	rules, err := a.db.FaultRules(context.Background())
	if err != nil || len(rules) != 1 {
		t.Fatalf("FaultRules after the POST = %+v, %v; want one rule", rules, err)
	}
	id := rules[0].ID
	want := `{"id":"` + id + `","inbox":"fail-*","stage":"rcpt","reply":"451 4.3.0 Try again later","times":3,"used":0,` +
		`"delay":"0s","disconnect":false,"perMinute":0,"createdAt":"` + created + `"}`
	wantJSON(t, "POST /api/v1/faults", res, http.StatusCreated, want)
	a.db.ApplyFaultRule(context.Background(), storage.FaultAtRcpt, []string{"fail-1"})
	res = a.call("GET", "/api/v1/faults")
	wantJSON(t, "GET /api/v1/faults", res, http.StatusOK, "["+strings.Replace(want, `"used":0`, `"used":1`, 1)+"]")

	res = a.callBody("POST", "/api/v1/faults", "Bearer "+a.key, `{"inbox":"slow","stage":"data","delay":"1.5s","disconnect":true,"perMinute":2}`)
	if res.status != http.StatusCreated || !strings.Contains(res.body, `"reply":"","times":0,"used":0,"delay":"1.5s","disconnect":true,"perMinute":2`) {
		t.Errorf("POST of a disconnect rule: %d %s", res.status, res.body)
	}
	wantNoContent(t, "DELETE /api/v1/faults/{id}", a.call("DELETE", "/api/v1/faults/"+id))
	wantJSON(t, "DELETE again", a.call("DELETE", "/api/v1/faults/"+id), http.StatusNotFound, `{"error":"Fault not found"}`)
	wantJSON(t, "DELETE of no id", a.call("DELETE", "/api/v1/faults/nope"), http.StatusNotFound, `{"error":"Fault not found"}`)
	wantJSON(t, "PUT /api/v1/faults", a.call("PUT", "/api/v1/faults"), http.StatusMethodNotAllowed, notAllowedBody)
	wantJSON(t, "GET /api/v1/faults/{id}", a.call("GET", "/api/v1/faults/"+id), http.StatusMethodNotAllowed, notAllowedBody)
}

// Every field out of range or of the wrong type is a 400 naming it, and
// nothing is stored.
func TestFaultsValidation(t *testing.T) {
	a := newFaultsAPI(t)
	for _, tc := range []struct{ body, msg string }{
		{`[]`, "The body must be a JSON object: a fault rule."},
		{`{"inbox":"a"} {}`, "The body must be a JSON object: a fault rule."},
		{`not json`, "The body must be a JSON object: a fault rule."},
		{`{"stage":"rcpt","reply":"451"}`, "'inbox' is required."},
		{`{"inbox":5,"stage":"rcpt","reply":"451"}`, "'inbox' must be a string."},
		{`{"inbox":"a*b","stage":"rcpt","reply":"451"}`, "'inbox' must be a local part (alice) or a prefix ending in one * (ci-*; * alone is every inbox)."},
		{`{"inbox":"a","reply":"451"}`, "'stage' is required."},
		{`{"inbox":"a","stage":"helo","reply":"451"}`, `'stage' must be "rcpt" or "data".`},
		{`{"inbox":"a","stage":"rcpt"}`, `'reply' must be a 4xx or 5xx code, an optional enhanced status code of the same class and a text: "451 4.3.0 Try again later".`},
		{`{"inbox":"a","stage":"rcpt","reply":"250 OK"}`, `'reply' must be a 4xx or 5xx code, an optional enhanced status code of the same class and a text: "451 4.3.0 Try again later".`},
		{`{"inbox":"a","stage":"rcpt","reply":"451 5.3.0 x"}`, "'reply' must be an enhanced status code of the code's class (4.x.x for 4xx, 5.x.x for 5xx)."},
		{`{"inbox":"a","stage":"rcpt","reply":"451 é"}`, "'reply' must be printable ASCII only."},
		{`{"inbox":"a","stage":"rcpt","reply":"451 ` + strings.Repeat("x", 200) + `"}`, "'reply' must be at most 200 characters."},
		{`{"inbox":"a","stage":"rcpt","reply":451}`, "'reply' must be a string."},
		{`{"inbox":"a","stage":"rcpt","reply":"451","times":-1}`, "'times' must be a whole number from 0."},
		{`{"inbox":"a","stage":"rcpt","reply":"451","times":1.5}`, "'times' must be a whole number from 0."},
		{`{"inbox":"a","stage":"rcpt","reply":"451","times":"3"}`, "'times' must be a whole number from 0."},
		{`{"inbox":"a","stage":"rcpt","reply":"451","delay":"61s"}`, "'delay' must be from 0s to 60s."},
		{`{"inbox":"a","stage":"rcpt","reply":"451","delay":"soon"}`, `'delay' must be a duration from "0s" to "60s", like "1.5s".`},
		{`{"inbox":"a","stage":"rcpt","reply":"451","delay":5}`, `'delay' must be a duration from "0s" to "60s", like "1.5s".`},
		{`{"inbox":"a","stage":"rcpt","reply":"451","disconnect":"yes"}`, "'disconnect' must be true or false."},
		{`{"inbox":"a","stage":"rcpt","reply":"451","perMinute":-2}`, "'perMinute' must be a whole number from 0."},
		{`{"inbox":"a","stage":"rcpt","reply":"451","per_minute":2}`, "'per_minute' is not a field of a fault rule; they are inbox, stage, reply, times, delay, disconnect, perMinute."},
	} {
		res := a.callBody("POST", "/api/v1/faults", "Bearer "+a.key, tc.body)
		wantJSON(t, "POST "+tc.body, res, http.StatusBadRequest, fmt.Sprintf(`{"error":%q}`, tc.msg))
	}
	res := a.callBody("POST", "/api/v1/faults", "Bearer "+a.key, `{"inbox":"a","stage":"rcpt","reply":"451 `+strings.Repeat("x", 20<<10)+`"}`)
	if res.status != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of a 20 KB body: %d %s, want 413", res.status, res.body)
	}
	if rules, err := a.db.FaultRules(context.Background()); err != nil || len(rules) != 0 {
		t.Errorf("after the refused POSTs the store holds %+v, %v; want no rule", rules, err)
	}
}

// A key sees the rules inside its scope only.
func TestFaultsScoped(t *testing.T) {
	a := newFaultsAPI(t)
	in := a.arm(storage.FaultRule{Inbox: "ci-7", Stage: storage.FaultAtRcpt, Reply: "451"})
	a.arm(storage.FaultRule{Inbox: "bob", Stage: storage.FaultAtRcpt, Reply: "451"})
	a.arm(storage.FaultRule{Inbox: "*", Stage: storage.FaultAtRcpt, Reply: "451"})
	_, secret, err := a.db.CreateKey(context.Background(), "ci", storage.Scope{Inboxes: []string{"ci-*"}, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	res := a.callAuth("GET", "/api/v1/faults", "Bearer "+secret)
	if res.status != http.StatusOK || strings.Count(res.body, `"id"`) != 1 || !strings.Contains(res.body, in.ID) {
		t.Errorf("GET /api/v1/faults with a key for ci-*: %d %s; want the ci-7 rule alone", res.status, res.body)
	}
}

// With faults.enabled = false every fault route answers 404, as a path
// burner does not serve.
func TestFaultsOff(t *testing.T) {
	a := newAPI(t)
	for _, req := range [][3]string{
		{"GET", "/api/v1/faults", ""},
		{"POST", "/api/v1/faults", `{"inbox":"a","stage":"rcpt","reply":"451"}`},
		{"DELETE", "/api/v1/faults/" + unknownID, ""},
		{"PUT", "/api/v1/faults", ""},
	} {
		wantJSON(t, req[0]+" "+req[1]+" with faults off", a.callBody(req[0], req[1], "Bearer "+a.key, req[2]), http.StatusNotFound, notFoundBody)
	}
	if rules, err := a.db.FaultRules(context.Background()); err != nil || len(rules) != 0 {
		t.Errorf("the store holds %+v, %v; want no rule", rules, err)
	}
}
