package mailauth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"burner/storage"
)

// newTestVerifier returns a Verifier asking the DNS server of opts.Resolver, shut down at the
// end of the test.
func newTestVerifier(t testing.TB, opts Options, done Done) *Verifier {
	t.Helper()
	if opts.Hostname == "" {
		opts.Hostname = "mx.burner.test"
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if tt, ok := t.(*testing.T); ok {
		log = slog.New(slog.NewTextHandler(tt.Output(), nil))
	}
	v := New(opts, done, log)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := v.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return v
}

// envelope returns an envelope from ip with helo and mailFrom, no TLS.
func envelope(ip, helo, mailFrom string) storage.Envelope {
	env := storage.Envelope{Helo: helo, MailFrom: mailFrom}
	if ip != "" {
		env.ClientIP = netip.MustParseAddr(ip)
	}
	return env
}
