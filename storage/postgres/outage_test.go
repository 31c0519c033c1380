package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"burner/storage"
	"burner/storage/postgres"

	"github.com/jackc/pgx/v5"
)

// proxy forwards loopback TCP connections to the PostgreSQL server, and
// can cut them all and refuse new ones: a database that cannot be
// reached, without stopping the server other tests use.
type proxy struct {
	ln     net.Listener
	target func() (net.Conn, error)

	mu    sync.Mutex
	down  bool
	conns []net.Conn
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, dbURL string) (*proxy, string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	host, port := cfg.Host, cfg.Port
	target := func() (net.Conn, error) {
		if filepath.IsAbs(host) {
			return net.Dial("unix", filepath.Join(host, ".s.PGSQL."+strconv.Itoa(int(port))))
		}
		return net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("host", "127.0.0.1")
	q.Set("port", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return p, u.String()
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := p.target()
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(s, c); s.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, s); c.Close() }()
	}
}

// cut closes every connection and refuses new ones until restore.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// TestOutage: while the database cannot be reached, calls fail with
// ErrUnavailable (SMTP 451, API 503), every waiter wakes, a key checked
// in the last minute still authenticates; the node recovers by itself.
func TestOutage(t *testing.T) {
	ctx := context.Background()
	p, dbURL := newProxy(t, testDatabase(t))
	db := openDB(t, dbURL, postgres.Options{})
	_, secret, err := db.CreateKey(ctx, "ci", storage.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	kept := deliverTo(t, db, "before", "o@x.org")[0]
	waiting := db.Changed("o")

	p.cut()
	waitClosed(t, waiting, 5*time.Second, "Changed(o) when the database is lost")
	msg := &storage.Message{Subject: ptr("during"), Raw: []byte("x")}
	if _, err := db.Deliver(ctx, msg, []string{"o@x.org"}); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Deliver while the database is unreachable: %v, want ErrUnavailable", err)
	}
	if _, err := db.List(ctx, storage.Query{LocalPart: "o"}); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("List while the database is unreachable: %v, want ErrUnavailable", err)
	}
	if _, err := db.Email(ctx, kept.ID); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Email while the database is unreachable: %v, want ErrUnavailable", err)
	}
	if err := db.CheckWritable(ctx); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("CheckWritable while the database is unreachable: %v, want ErrUnavailable", err)
	}
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Errorf("Authenticate of a key checked a moment ago, while the database is unreachable: %v", err)
	}
	if _, err := db.Authenticate(ctx, storage.KeyPrefix+"unknown"); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Authenticate of an unknown key while the database is unreachable: %v, want ErrUnavailable", err)
	}

	p.restore()
	deadline := time.Now().Add(15 * time.Second) // spec §10: serves again within 15 s
	for {
		_, err := db.Deliver(ctx, &storage.Message{Subject: ptr("after"), Raw: []byte("x")}, []string{"o@x.org"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Deliver 15 s after the database came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // polling with a deadline: the pool reconnects on demand
	}
	got, err := db.List(ctx, storage.Query{LocalPart: "o", NoBody: true})
	if err != nil || len(got) != 2 || *got[0].Subject != "after" || got[1].ID != kept.ID {
		t.Errorf("List(o) after the outage = %+v, %v; want after, before", got, err)
	}
	// The listener is back too: a delivery of another node wakes this one.
	// The first wake-up may be the listener's own, when it reconnects, so
	// two in a row must come.
	other := openDB(t, dbURL, postgres.Options{})
	deadline = time.Now().Add(15 * time.Second)
	for woken := 0; woken < 2; {
		ch := db.Changed("o")
		deliverTo(t, other, "from B", "o@x.org")
		select {
		case <-ch:
			woken++
		case <-time.After(time.Second):
			woken = 0
		}
		if time.Now().After(deadline) {
			t.Fatal("no wake-up from another node 15 s after the database came back")
		}
	}
}
