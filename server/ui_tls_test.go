package server

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestUIRequireTLS(t *testing.T) {
	u := newUI(t, Options{RequireTLS: true})
	// serve sends one request straight to the handler, from remote.
	serve := func(method, path, remote string, header map[string]string, viaTLS bool) *httptest.ResponseRecorder {
		var body *strings.Reader
		if method == "POST" {
			body = strings.NewReader(url.Values{"key": {u.key}}.Encode())
		} else {
			body = strings.NewReader("")
		}
		req := httptest.NewRequest(method, path, body)
		req.RemoteAddr = remote
		if method == "POST" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if viaTLS {
			req.TLS = &tls.ConnectionState{}
		}
		rec := httptest.NewRecorder()
		u.s.Handler().ServeHTTP(rec, req)
		return rec
	}
	const far, near = "203.0.113.9:5555", "127.0.0.1:5555"
	for _, tc := range []struct {
		what           string
		method, remote string
		header         map[string]string
		viaTLS         bool
		refused        bool
	}{
		{"plain HTTP from afar", "GET", far, nil, false, true},
		{"a login POST over plain HTTP", "POST", far, nil, false, true},
		{"TLS of our own", "GET", far, nil, true, false},
		{"a TLS proxy", "GET", far, map[string]string{"X-Forwarded-Proto": "https"}, false, false},
		{"a plain proxy", "GET", far, map[string]string{"X-Forwarded-Proto": "http"}, false, true},
		{"this machine (an SSH tunnel)", "GET", near, nil, false, false},
		{"::1", "GET", "[::1]:5555", nil, false, false},
		{"a plain proxy on this machine", "GET", near, map[string]string{"X-Forwarded-For": "198.51.100.7"}, false, true},
		{"a proxy on this machine that says nothing, POST", "POST", near, map[string]string{"Origin": "http://mail.example.com"}, false, true},
		{"a tunnel, POST", "POST", near, map[string]string{"Origin": "http://localhost:8080"}, false, false},
	} {
		rec := serve(tc.method, "/login", tc.remote, tc.header, tc.viaTLS)
		refused := rec.Code == http.StatusForbidden && strings.Contains(rec.Body.String(), "Logging in needs HTTPS")
		if refused != tc.refused {
			t.Errorf("%s: %s /login = %d, refused %v, want %v\n%s", tc.what, tc.method, rec.Code, refused, tc.refused, rec.Body)
		}
		if refused && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "style-src 'self'") {
			t.Errorf("%s: the refusal has CSP %q, want the UI's", tc.what, rec.Header().Get("Content-Security-Policy"))
		}
	}
	// Only the login page: the rest sends to it, as before.
	if rec := serve("GET", "/", far, nil, false); rec.Code != http.StatusSeeOther {
		t.Errorf("GET / over plain HTTP = %d, want 303 to the login page", rec.Code)
	}
	// Through the real listener (loopback), login works.
	u.login()

	// Without the option, plain HTTP from afar gets the login page.
	plain := newUI(t, Options{})
	req := httptest.NewRequest("GET", "/login", nil)
	req.RemoteAddr = far
	rec := httptest.NewRecorder()
	plain.s.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("GET /login without require_tls = %d, want 200", rec.Code)
	}
}
