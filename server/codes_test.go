package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"burner/storage"
)

func TestCodesAPI(t *testing.T) {
	a := newAPI(t)
	e := a.deliver("alice@example.com", storage.Message{
		Subject: ptr("Your code 1234"), Raw: []byte("Subject: Your code 1234\r\n\r\n...\r\n"),
		Plain: "Order 4821 has shipped.\nVerification code: 551 082\nhttps://example.com/v/551082",
	})
	base := "/api/v1/emails/" + e.ID + "/codes"
	wantJSON(t, "GET codes", a.call("GET", base), 200, `["1234","551082","4821"]`)
	wantJSON(t, "GET codes with a pattern", a.call("GET", base+"?pattern="+url.QueryEscape(`/v/(\d+)`)), 200, `["551082"]`)
	wantJSON(t, "GET codes with a pattern that matches nothing", a.call("GET", base+"?pattern=xyz"), 200, `[]`)
	res := a.call("HEAD", base)
	if res.status != 200 || res.body != "" || res.header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD codes = %d %q %q, want 200 application/json without a body", res.status, res.header.Get("Content-Type"), res.body)
	}

	none := a.deliver("alice@example.com", storage.Message{Raw: []byte("\r\n\r\n")}) // no subject, no text
	wantJSON(t, "GET codes of an email without any", a.call("GET", "/api/v1/emails/"+none.ID+"/codes"), 200, `[]`)

	const bad = `{"error":"'pattern' must be a valid regular expression."}`
	for _, p := range []string{"(", strings.Repeat("a", 257)} {
		wantJSON(t, "GET codes?pattern="+p, a.call("GET", base+"?pattern="+url.QueryEscape(p)), 400, bad)
	}
	unknown := "/api/v1/emails/8b0e2f0e-6d7c-4b1a-9c39-5c2f0c4d8e11/codes"
	wantJSON(t, "GET codes of an unknown id", a.call("GET", unknown), 404, `{"error":"Email not found"}`)
	costly := a.deliver("alice@example.com", storage.Message{Raw: []byte("\r\n\r\n"), Plain: strings.Repeat("a", 64<<10)})
	wantJSON(t, "GET codes with a pattern that reads the text again at each match",
		a.call("GET", "/api/v1/emails/"+costly.ID+"/codes?pattern="+url.QueryEscape(`a(?:.*b)?`)), 400, bad)
	// spec §8: 401, then the request's own 400, then 404.
	wantJSON(t, "GET codes of an unknown id with a bad pattern", a.call("GET", unknown+"?pattern=("), 400, bad)
	wantUnauthorized(t, "GET codes with a bad pattern and no key", a.callAuth("GET", unknown+"?pattern=(", ""))

	for _, m := range []string{"POST", "PUT", "DELETE"} {
		res := a.call(m, base)
		wantJSON(t, m+" codes", res, http.StatusMethodNotAllowed, notAllowedBody)
		if allow := res.header.Get("Allow"); allow != "GET, HEAD" {
			t.Errorf("%s codes: Allow %q, want GET, HEAD", m, allow)
		}
	}
}

func TestEmailPageCodesAndLinks(t *testing.T) {
	u := newUI(t, Options{})
	u.login()
	e := u.deliver("alice@example.com", storage.Message{
		Subject: ptr("Verify your email"), Body: ptr("<p>Your code is 482 913</p>"), Raw: []byte("Subject: x\r\n\r\nx\r\n"),
		Plain: "Your code is 482 913\nhttps://app.example/confirm?t=1&u=2", Links: []string{"https://app.example/confirm?t=1&u=2"},
	})
	res := u.get("/email/" + e.ID)
	wantPage(t, "GET /email/"+e.ID, res, http.StatusOK, `<code class="copy">482913</code>`,
		`<a href="https://app.example/confirm?t=1&amp;u=2" target="_blank" rel="noopener noreferrer">https://app.example/confirm?t=1&amp;u=2</a>`)
	if i, j := strings.Index(res.body, "482913"), strings.Index(res.body, "<iframe"); i < 0 || j < 0 || i > j {
		t.Errorf("GET /email/%s: the codes are not above the body\n%s", e.ID, res.body)
	}

	plain := u.deliver("alice@example.com", storage.Message{Subject: ptr("Hello"), Body: ptr("<p>Hi</p>"), Plain: "Hi", Raw: []byte("Subject: Hello\r\n\r\nHi\r\n")})
	res = u.get("/email/" + plain.ID)
	wantPage(t, "GET /email/"+plain.ID, res, http.StatusOK, "Hi")
	if strings.Contains(res.body, `class="found"`) {
		t.Errorf("GET /email/%s: a codes and links section for an email without any\n%s", plain.ID, res.body)
	}

	many := make([]string, maxShownLinks+3)
	for i := range many {
		many[i] = fmt.Sprintf("https://e.example/%d", i)
	}
	var text strings.Builder
	for i := range maxShownCodes + 2 {
		fmt.Fprintf(&text, "Code: %d\n", 100000+i)
	}
	lots := u.deliver("alice@example.com", storage.Message{Subject: ptr("Lots"), Body: ptr("<p>x</p>"), Plain: text.String(), Links: many, Raw: []byte("Subject: Lots\r\n\r\nx\r\n")})
	res = u.get("/email/" + lots.ID)
	wantPage(t, "GET /email/"+lots.ID, res, http.StatusOK, fmt.Sprint(100000+maxShownCodes-1), "… and 2 more codes", "… and 3 more links",
		fmt.Sprintf("https://e.example/%d<", maxShownLinks-1))
	if strings.Contains(res.body, fmt.Sprint(100000+maxShownCodes)) || strings.Contains(res.body, fmt.Sprintf("https://e.example/%d<", maxShownLinks)) {
		t.Errorf("GET /email/%s: shows more codes or links than the page keeps\n%s", lots.ID, res.body)
	}
}
