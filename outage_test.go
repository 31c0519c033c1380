package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"burner/smtpd"
	"burner/storage"
)

// unreachable is a Deliverer whose database is out of reach, as an engine
// reports it. The real outage (PostgreSQL stopped under load) is the
// engine's test (storage/postgres/outage_test.go); this one checks what
// smtpd makes of the error every engine returns for it.
type unreachable struct{}

func (unreachable) Deliver(context.Context, *storage.Message, []string) ([]storage.Email, error) {
	return nil, fmt.Errorf("deliver: dial tcp 10.0.0.5:5432: connect: connection refused: %w", storage.ErrUnavailable)
}

// spec §10: when the database cannot be reached, the end of DATA gets
// 451 4.3.0, so that the sender keeps the message and retries.
func TestUnreachableStoreIs451(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mta := smtpd.New(unreachable{}, smtpd.Options{Hostname: "mx.test"}, slog.New(slog.NewTextHandler(t.Output(), nil)))
	done := make(chan error, 1)
	go func() { done <- mta.Serve(ln) }()
	t.Cleanup(func() {
		mta.Shutdown(context.Background())
		<-done
	})
	c, err := smtp.Dial(ln.Addr().String())
	if err != nil {
		t.Fatalf("smtp.Dial: %v", err)
	}
	defer c.Close()
	err = c.SendMail("a@sender.test", []string{"alice@inbox.test"}, strings.NewReader("Subject: hi\r\n\r\nhello\r\n"))
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 451 || se.EnhancedCode != (smtp.EnhancedCode{4, 3, 0}) {
		t.Fatalf("SendMail to a store out of reach: %v, want 451 4.3.0", err)
	}
}
