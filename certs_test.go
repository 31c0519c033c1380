package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// writeCert writes a self-signed certificate for localhost with serial
// number serial to certFile and keyFile, each replaced at once (as certbot
// does), and returns the certificate.
func writeCert(t *testing.T, certFile, keyFile string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path+".new", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// syncBuffer is a log destination that tests can read while burner writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func serial(state tls.ConnectionState) int64 {
	if len(state.PeerCertificates) == 0 {
		return -1
	}
	return state.PeerCertificates[0].SerialNumber.Int64()
}

// TestTLSAndReload: STARTTLS on the SMTP port and HTTPS on the HTTP port,
// from certificate files; SIGHUP swaps in new files for new connections,
// and connections already up go on with the old certificate.
func TestTLSAndReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writeCert(t, certFile, keyFile, 1)
	cfgFile := writeConfig(t, fmt.Sprintf(`data = %q
[smtp]
listen = "127.0.0.1:0"
domains = ["inbox.test"]
tls_cert = %[2]q
tls_key = %[3]q
[http]
listen = "127.0.0.1:0"
tls_cert = %[2]q
tls_key = %[3]q
[ui]
require_tls = true
`, filepath.Join(t.TempDir(), "burner.db"), certFile, keyFile))
	var logs syncBuffer
	ta := startAppConfig(t, cfgFile, &logs)
	smtpAddr, httpsURL := ta.smtpLn.Addr().String(), "https://"+ta.httpLn.Addr().String()

	pool := x509.NewCertPool()
	pool.AddCert(first)
	tlsConfig := func() *tls.Config { return &tls.Config{RootCAs: pool, ServerName: "localhost"} }

	// SMTP: STARTTLS is offered on the plain port, and mail comes in over it.
	plain, err := smtp.Dial(smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Hello("client.test"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := plain.Extension("STARTTLS"); !ok {
		t.Error("EHLO does not offer STARTTLS")
	}
	plain.Close()
	old, err := smtp.DialStartTLS(smtpAddr, tlsConfig())
	if err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	defer old.Close()
	if err := old.Noop(); err != nil { // the handshake happens at the first command after STARTTLS
		t.Fatal(err)
	}
	if state, ok := old.TLSConnectionState(); !ok || serial(state) != 1 {
		t.Errorf("STARTTLS served serial %d, want 1", serial(state))
	}
	if err := old.SendMail("a@sender.test", []string{"tls@inbox.test"}, strings.NewReader("Subject: secret\r\n\r\nhi\r\n")); err != nil {
		t.Fatalf("SendMail over STARTTLS: %v", err)
	}

	// HTTPS, with a connection kept alive.
	oldHTTP := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig()}}
	defer oldHTTP.CloseIdleConnections()
	get := func(c *http.Client, path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", httpsURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+ta.key)
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, body
	}
	res, body := get(oldHTTP, "/api/v1/emails?to=tls")
	var emails []map[string]any
	if json.Unmarshal(body, &emails); res.StatusCode != 200 || len(emails) != 1 || serial(*res.TLS) != 1 {
		t.Fatalf("GET over HTTPS = %d %s, serial %d", res.StatusCode, body, serial(*res.TLS))
	}
	if _, raw := get(oldHTTP, fmt.Sprintf("/api/v1/emails/%s/raw", emails[0]["id"])); !bytes.Contains(raw, []byte("with ESMTPS")) {
		t.Errorf("the stored message does not say it came over TLS:\n%s", raw)
	}
	// ui.require_tls: over HTTPS the login page is served.
	if res, body := get(oldHTTP, "/login"); res.StatusCode != 200 || bytes.Contains(body, []byte("needs HTTPS")) {
		t.Errorf("GET /login over HTTPS with ui.require_tls = %d\n%s", res.StatusCode, body)
	}

	// Renew: new files, SIGHUP.
	second := writeCert(t, certFile, keyFile, 2)
	pool.AddCert(second)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig(), DisableKeepAlives: true}}
		if res, _ := get(c, "/healthz"); serial(*res.TLS) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after SIGHUP new HTTPS connections still get the old certificate; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Errorf("the reload was not logged:\n%s", logs.String())
	}
	// Connections up before the reload were not dropped and keep theirs.
	if res, _ := get(oldHTTP, "/healthz"); res.StatusCode != 200 || serial(*res.TLS) != 1 {
		t.Errorf("the kept-alive HTTPS connection: %d, serial %d; want it still up, with serial 1", res.StatusCode, serial(*res.TLS))
	}
	if err := old.SendMail("a@sender.test", []string{"tls@inbox.test"}, strings.NewReader("Subject: again\r\n\r\nhi\r\n")); err != nil {
		t.Errorf("SendMail on the SMTP connection from before the reload: %v", err)
	}
	fresh, err := smtp.DialStartTLS(smtpAddr, tlsConfig())
	if err != nil {
		t.Fatal(err)
	}
	fresh.Noop()
	if state, _ := fresh.TLSConnectionState(); serial(state) != 2 {
		t.Errorf("a new STARTTLS after the reload got serial %d, want 2", serial(state))
	}
	fresh.Close()

	// A broken renewal is logged, and the certificate in use stays.
	os.WriteFile(certFile, []byte("not a certificate"), 0o600)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	for !strings.Contains(logs.String(), "TLS certificate reload failed") {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("a failed reload was not logged:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig(), DisableKeepAlives: true}}
	if res, _ := get(c, "/healthz"); serial(*res.TLS) != 2 {
		t.Errorf("after a failed reload, serial %d, want 2 still", serial(*res.TLS))
	}
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ file, want string }{
		{"[http]\ntls_cert = \"c.pem\"\n", "http.tls_cert and http.tls_key: set both or neither"},
		{fmt.Sprintf("data = %q\n[http]\nlisten = \"127.0.0.1:0\"\ntls_cert = \"missing.pem\"\ntls_key = \"missing.key\"\n[smtp]\nlisten = \"127.0.0.1:0\"\n",
			filepath.Join(dir, "a.db")), "http.tls_cert: load certificate missing.pem"},
		{fmt.Sprintf("data = %q\n[smtp]\nlisten = \"127.0.0.1:0\"\ntls_cert = \"missing.pem\"\ntls_key = \"missing.key\"\n[http]\nlisten = \"127.0.0.1:0\"\n",
			filepath.Join(dir, "b.db")), "smtp.tls_cert: load certificate missing.pem"},
	} {
		cfg, err := serveConfig(writeConfig(t, tc.file))
		if err == nil {
			_, err = start(context.Background(), cfg, slog.New(slog.DiscardHandler), io.Discard)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: %v, want %q", tc.file, err, tc.want)
		}
	}
}
