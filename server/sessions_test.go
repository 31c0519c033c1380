package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/storetest"
)

func (a *apiTest) writeSessions(recs ...storage.SMTPSession) {
	a.t.Helper()
	if err := a.db.WriteSMTPSessions(context.Background(), recs); err != nil {
		a.t.Fatalf("WriteSMTPSessions: %v", err)
	}
}

// GET /api/v1/sessions answers the records as spec §13.1 shows them,
// newest first; to, limit and since select them.
func TestSessionsRoute(t *testing.T) {
	a := newAPI(t)
	t0 := time.Date(2025, 3, 14, 15, 9, 26, 535e6, time.UTC)
	open := storetest.SMTPSession(storetest.SessionID(1), t0, false, "alice@inbox.test")
	full := storetest.SMTPSession(storetest.SessionID(2), t0.Add(time.Second), true, "alice@inbox.test", "x@elsewhere.test")
	full.Recipients[0].Fault = "rule-1"
	full.Recipients[0].Reply = ptr("451 4.3.0 Try again later")
	full.Outcome = storage.SMTPFaulted
	refused := storetest.SMTPSession(storetest.SessionID(3), t0.Add(2*time.Second), true, "y@elsewhere.test")
	a.writeSessions(open, full, refused)

	res := a.call("GET", "/api/v1/sessions?to=ALICE&limit=1")
	wantJSON(t, "GET /api/v1/sessions?to=ALICE&limit=1", res, http.StatusOK, `[{"id":"`+full.ID+`","startedAt":"2025-03-14T15:09:27.535Z",`+
		`"endedAt":"2025-03-14T15:09:27.540Z","node":"node-a","client":{"ip":"127.0.0.1","helo":"client.test"},"tls":null,`+
		`"mailFrom":"app@sender.test","recipients":[{"address":"alice@inbox.test","inbox":"alice","reply":"451 4.3.0 Try again later","fault":"rule-1"},`+
		`{"address":"x@elsewhere.test","inbox":null,"reply":"550 5.1.1 Relay access denied: not an inbox domain here"}],"data":null,"emails":[],`+
		`"outcome":"faulted","transcript":[{"c":"EHLO client.test","s":"250-localhost\n250 PIPELINING"},{"c":"MAIL FROM:<app@sender.test>","s":"250 2.1.0 OK"},`+
		`{"c":"RCPT TO:<alice@inbox.test>","s":"250 2.1.5 OK"},{"c":"RCPT TO:<x@elsewhere.test>","s":"550 5.1.1 Relay access denied: not an inbox domain here"},`+
		`{"c":"QUIT","s":"221 2.0.0 localhost closing connection"}]}]`)
	ids := func(path string) []string {
		t.Helper()
		res := a.call("GET", path)
		var got []sessionJSON
		if err := json.Unmarshal([]byte(res.body), &got); err != nil || res.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, res.status, res.body)
		}
		out := []string{}
		for _, s := range got {
			out = append(out, s.ID)
		}
		return out
	}
	for path, want := range map[string][]string{
		"/api/v1/sessions":                             {refused.ID, full.ID, open.ID},
		"/api/v1/sessions?to=alice":                    {full.ID, open.ID},
		"/api/v1/sessions?to=bob":                      {},
		"/api/v1/sessions?since=1741964966.535":        {refused.ID, full.ID},
		"/api/v1/sessions?to=alice&since=1741964966.5": {full.ID, open.ID},
		"/api/v1/sessions?limit=100&to=":               {refused.ID, full.ID, open.ID},
	} {
		if got := ids(path); !slices.Equal(got, want) {
			t.Errorf("GET %s: %v, want %v", path, got, want)
		}
	}
	if res := a.call("GET", "/api/v1/sessions?to=alice"); !strings.Contains(res.body, `"endedAt":null`) || !strings.Contains(res.body, `"outcome":null`) {
		t.Errorf("an open session: %s; want endedAt and outcome null", res.body)
	}
	for path, msg := range map[string]string{
		"/api/v1/sessions?limit=0":          "'limit' must be an integer from 1 to 100.",
		"/api/v1/sessions?limit=101":        "'limit' must be an integer from 1 to 100.",
		"/api/v1/sessions?limit=ten":        "'limit' must be an integer from 1 to 100.",
		"/api/v1/sessions?since=-1":         "'since' must be a Unix timestamp in seconds.",
		"/api/v1/sessions?to=a%20b":         "Invalid local part. Only alphanumeric characters and _-+. are allowed.",
		"/api/v1/sessions?to=a%zz&limit=0":  "Invalid local part. Only alphanumeric characters and _-+. are allowed.",
		"/api/v1/sessions?limit=0&since=-1": "'limit' must be an integer from 1 to 100.",
	} {
		wantJSON(t, "GET "+path, a.call("GET", path), http.StatusBadRequest, `{"error":"`+msg+`"}`)
	}
	wantJSON(t, "POST /api/v1/sessions", a.call("POST", "/api/v1/sessions"), http.StatusMethodNotAllowed, notAllowedBody)
}

// A scoped key sees its inboxes' recipients alone: the others are left
// out of recipients and emails, and their RCPT lines read <hidden>.
func TestSessionsScoped(t *testing.T) {
	a := newAPI(t)
	s := storetest.SMTPSession(storetest.SessionID(1), time.Now(), true, "ci-1@inbox.test", "bob@inbox.test", "x@elsewhere.test", "CI-1@inbox.test")
	s.Emails, s.Outcome = []string{"0195f3b0-0000-7000-8000-00000000000a", "0195f3b0-0000-7000-8000-00000000000b"}, storage.SMTPDelivered
	s.Transcript = append(s.Transcript, storage.TranscriptLine{C: "RCPT TO:<bob@inbox.test> ORCPT=rfc822;bob@inbox.test", S: "250 2.1.5 OK"},
		storage.TranscriptLine{C: "RCPT bob", S: "501 5.5.4 Syntax error"},
		storage.TranscriptLine{C: "rcpt to:<bob@inbox.test>", S: "250 2.1.5 OK"})
	a.writeSessions(s)
	_, secret, err := a.db.CreateKey(context.Background(), "ci", storage.Scope{Inboxes: []string{"ci-*"}})
	if err != nil {
		t.Fatal(err)
	}
	res := a.callAuth("GET", "/api/v1/sessions?to=ci-1", "Bearer "+secret)
	var got []sessionJSON
	if err := json.Unmarshal([]byte(res.body), &got); err != nil || len(got) != 1 {
		t.Fatalf("GET /api/v1/sessions?to=ci-1 with a key for ci-*: %d %s", res.status, res.body)
	}
	var addrs []string
	for _, r := range got[0].Recipients {
		addrs = append(addrs, r.Address)
	}
	if want := []string{"ci-1@inbox.test", "CI-1@inbox.test"}; !slices.Equal(addrs, want) {
		t.Errorf("recipients %v, want %v", addrs, want)
	}
	if want := []string{"0195f3b0-0000-7000-8000-00000000000a"}; !reflect.DeepEqual(got[0].Emails, want) {
		t.Errorf("emails %v, want ci-1's alone, %v", got[0].Emails, want)
	}
	var rcpts []string
	for _, l := range got[0].Transcript {
		if strings.HasPrefix(l.C, "RCPT") {
			rcpts = append(rcpts, l.C)
		}
	}
	want := []string{"RCPT TO:<ci-1@inbox.test>", "RCPT TO:<hidden>", "RCPT TO:<hidden>", "RCPT TO:<CI-1@inbox.test>", "RCPT TO:<hidden>", "RCPT TO:<hidden>"}
	if !slices.Equal(rcpts, want) {
		t.Errorf("RCPT lines %q, want %q", rcpts, want)
	}
	// The verb is matched in any case, as a client may write it.
	if !slices.ContainsFunc(got[0].Transcript, func(l transcriptRow) bool { return l.C == "rcpt TO:<hidden>" }) {
		t.Errorf("transcript %v: the lower-case RCPT line is not hidden", got[0].Transcript)
	}
	if strings.Contains(res.body, "bob") || strings.Contains(res.body, "elsewhere") {
		t.Errorf("the scoped view names another inbox's recipient: %s", res.body)
	}
	// The full key sees it all.
	if res := a.call("GET", "/api/v1/sessions?to=ci-1"); !strings.Contains(res.body, "bob@inbox.test") {
		t.Errorf("the full key's view: %s; want every recipient", res.body)
	}
}
