package server

import (
	"net"
	"net/http"
	"net/url"
)

// requireTLSMessage is what the login page says to a browser that came
// over plain HTTP when ui.require_tls is set.
const requireTLSMessage = "Logging in needs HTTPS: an API key must not cross the network in clear text. " +
	"Open this page with https://, or ask the administrator (ui.require_tls)."

// loginOverTLS wraps the web UI when Options.RequireTLS is set: the login
// page, which takes an API key, refuses a browser that reached us over
// plain HTTP. TLS is ours (http.tls_cert) or a proxy's that says so with
// X-Forwarded-Proto: https. A browser on this machine talking to us
// directly, say at the end of an SSH tunnel, is exempt: loopback traffic
// never crosses the network.
func (s *Server) loginOverTLS(next http.Handler) http.Handler {
	if !s.opts.RequireTLS || s.opts.Public {
		return next
	}
	refuse := pageHeaders(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.DebugContext(r.Context(), "login refused over plain http", "remote", r.RemoteAddr)
		s.web.render(w, r, http.StatusForbidden, "error", errorPage{Message: requireTLSMessage})
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" && !overTLS(r) && !localBrowser(r) {
			refuse.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// localBrowser reports whether r comes straight from a browser on this
// machine: a loopback peer, no proxy header, and, when the browser says
// where its page came from (Origin, sent with every form POST), a
// loopback origin too. A proxy on this machine that forwards plain HTTP
// from elsewhere fails the last two tests.
func localBrowser(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || !isLoopback(host) {
		return false
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !isLoopback(u.Hostname()) {
			return false
		}
	}
	return true
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
