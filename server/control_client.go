package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"burner/storage"
)

// ControlClient is the CLI's end of the control socket: it manages a
// running server and answers as the server's store would, with storage's
// types and sentinel errors. The socket carries those types in their
// plain JSON form; both ends are this package, so they cannot drift apart.
type ControlClient struct {
	http *http.Client // for quick requests
	slow *http.Client // for a backup or a check: no time limit
}

// DialControl returns a client of the server whose control socket is at
// path, or an error when no server answers there.
func DialControl(path string) (*ControlClient, error) {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &ControlClient{
		http: &http.Client{Timeout: 10 * time.Second, Transport: tr},
		slow: &http.Client{Transport: tr},
	}, nil
}

// CreateKey is storage.Engine's CreateKey, done by the server.
func (c *ControlClient) CreateKey(ctx context.Context, name string, scope storage.Scope) (storage.Key, string, error) {
	var k createdKey
	body, _ := json.Marshal(struct {
		Name  string        `json:"name"`
		Scope storage.Scope `json:"scope"`
	}{name, scope})
	if err := c.do(ctx, c.http, http.MethodPost, "/keys", body, &k); err != nil {
		return storage.Key{}, "", err
	}
	return k.Key, k.Secret, nil
}

// Keys is storage.Engine's Keys, done by the server.
func (c *ControlClient) Keys(ctx context.Context) ([]storage.Key, error) {
	var ks []storage.Key
	err := c.do(ctx, c.http, http.MethodGet, "/keys", nil, &ks)
	return ks, err
}

// RevokeKey is storage.Engine's RevokeKey, done by the server.
func (c *ControlClient) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	var k storage.Key
	err := c.do(ctx, c.http, http.MethodDelete, "/keys/"+url.PathEscape(idOrName), nil, &k)
	return k, err
}

// Stats is storage.Engine's Stats, done by the server.
func (c *ControlClient) Stats(ctx context.Context) (storage.Stats, error) {
	var s storage.Stats
	err := c.do(ctx, c.http, http.MethodGet, "/stats", nil, &s)
	return s, err
}

// Inboxes is storage.Engine's Inboxes, done by the server.
func (c *ControlClient) Inboxes(ctx context.Context) ([]storage.Inbox, error) {
	var ins []storage.Inbox
	err := c.do(ctx, c.http, http.MethodGet, "/inboxes", nil, &ins)
	return ins, err
}

// Waiting is storage.Engine's Waiting, done by the server.
func (c *ControlClient) Waiting(ctx context.Context) ([]storage.HookWaiting, error) {
	var ws []storage.HookWaiting
	err := c.do(ctx, c.http, http.MethodGet, "/webhooks", nil, &ws)
	return ws, err
}

// Check is storage.Engine's Check, done by the server.
func (c *ControlClient) Check(ctx context.Context) (storage.CheckReport, error) {
	var r storage.CheckReport
	err := c.do(ctx, c.slow, http.MethodGet, "/check", nil, &r)
	return r, err
}

// Snapshot starts a copy of the server's store, taken now. The server
// sends its size first, so that WriteTo can tell a copy cut short (an
// error) from a complete one.
func (c *ControlClient) Snapshot(ctx context.Context) (storage.Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://burner/backup", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.slow.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return &remoteSnapshot{resp: resp}, nil
}

// remoteSnapshot is a snapshot streaming from the server.
type remoteSnapshot struct{ resp *http.Response }

func (s *remoteSnapshot) Size() int64 { return s.resp.ContentLength }

func (s *remoteSnapshot) WriteTo(w io.Writer) (int64, error) {
	n, err := io.Copy(w, s.resp.Body)
	if err != nil {
		return n, fmt.Errorf("control socket: %w", err)
	}
	if n != s.resp.ContentLength {
		return n, fmt.Errorf("control socket: the copy ended after %d of %d bytes", n, s.resp.ContentLength)
	}
	return n, nil
}

func (s *remoteSnapshot) Close() error { return s.resp.Body.Close() }

// do sends a request with body to the server and decodes its answer into
// out.
func (c *ControlClient) do(ctx context.Context, hc *http.Client, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://burner"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return readError(resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	return nil
}

// readError turns an error answer back into the storage error it stands
// for, with the server's message.
func readError(resp *http.Response) error {
	var e struct {
		Error string `json:"error"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e)
	switch resp.StatusCode {
	case http.StatusNotFound:
		return &controlError{e.Error, storage.ErrNotFound}
	case http.StatusNotImplemented: // the server's store lacks an optional ability
		return &controlError{e.Error, errors.ErrUnsupported}
	case http.StatusConflict:
		return &controlError{e.Error, storage.ErrKeyExists}
	case http.StatusBadRequest:
		// The client's requests are well-formed JSON: a 400 is the name,
		// an inbox pattern or a metrics scope with patterns, whose message
		// says so (handleCreateKey).
		for _, sentinel := range keyRuleErrors {
			if strings.Contains(e.Error, sentinel.Error()) {
				return &controlError{e.Error, sentinel}
			}
		}
		return &controlError{e.Error, storage.ErrBadKeyName}
	}
	return fmt.Errorf("server: %s (%s)", e.Error, resp.Status)
}

// controlError is an error answer of the control socket: the server's
// message, and the storage sentinel it maps back to.
type controlError struct {
	msg string
	err error
}

func (e *controlError) Error() string { return e.msg }
func (e *controlError) Unwrap() error { return e.err }

// The CLI finds a hot backup on a client as on an engine.
var _ storage.Snapshotter = (*ControlClient)(nil)
