package main

import (
	"strings"
	"testing"
)

// TestHealth runs "burner health" against a running burner, found through
// the config file's http.listen, and against a port nobody listens on.
func TestHealth(t *testing.T) {
	ta := startApp(t, "")
	addr := ta.httpLn.Addr().String()
	cfgFile := writeConfig(t, "[http]\nlisten = \""+addr+"\"\n")
	out, err := runCmd(t, "health", "--config", cfgFile)
	if err != nil || !strings.Contains(out, "http://"+addr+"/healthz: 200 OK") {
		t.Errorf("burner health with http.listen = %s: %q, %v; want 200 OK and no error", addr, out, err)
	}
	ta.stopNow()
	out, err = runCmd(t, "health", "--http", addr)
	if err == nil {
		t.Errorf("burner health --http %s after the server stopped: %q, no error; want one", addr, out)
	}
}

func TestHealthURL(t *testing.T) {
	for _, tc := range []struct {
		listen string
		https  bool
		want   string
	}{
		{":8080", false, "http://127.0.0.1:8080/healthz"},
		{"0.0.0.0:8080", false, "http://127.0.0.1:8080/healthz"},
		{"[::]:8443", true, "https://[::1]:8443/healthz"},
		{"127.0.0.1:8080", false, "http://127.0.0.1:8080/healthz"},
		{"burner.example.com:443", true, "https://burner.example.com:443/healthz"},
	} {
		if got := healthURL(tc.listen, tc.https); got != tc.want {
			t.Errorf("healthURL(%q, %v) = %q, want %q", tc.listen, tc.https, got, tc.want)
		}
	}
}
