package main

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
	"time"
)

// certificate is a TLS certificate and its key, read from PEM files.
// Handshakes read it through tlsConfig, so that reload (at SIGHUP) changes
// it for the connections that follow, while those already up keep theirs.
type certificate struct {
	certFile, keyFile string
	current           atomic.Pointer[tls.Certificate]
}

// loadCertificate reads the pair of files once, so that a bad pair stops
// burner at start rather than at the first handshake.
func loadCertificate(certFile, keyFile string) (*certificate, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the files again. On error the certificate in use stays.
func (c *certificate) reload() error {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("load certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	c.current.Store(&cert)
	return nil
}

// notAfter returns when the certificate in use expires.
func (c *certificate) notAfter() time.Time {
	if leaf := c.current.Load().Leaf; leaf != nil {
		return leaf.NotAfter
	}
	return time.Time{}
}

// tlsConfig returns a server configuration that serves the certificate
// current at each handshake.
func (c *certificate) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.current.Load(), nil
		},
	}
}
