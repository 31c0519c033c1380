package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"burner/storage"
)

// The control socket serves the CLI while `burner serve` holds the data
// file. Its answers are storage's types as JSON, decoded by ControlClient
// (control_client.go), the other end.

// createdKey answers a key creation: the key, and its secret, shown this
// once (spec §1).
type createdKey struct {
	storage.Key
	Secret string
}

// maxControlBody bounds a control request body; {"name": "...", "scope":
// ...} is small.
const maxControlBody = 64 << 10

func (s *Server) controlRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /keys", s.handleCreateKey)
	mux.HandleFunc("GET /keys", s.handleListKeys)
	mux.HandleFunc("/keys", methodNotAllowed("GET, HEAD, POST"))
	// The CLI path-escapes the segment, so a name may hold any character.
	mux.HandleFunc("DELETE /keys/{idOrName}", s.handleRevokeKey)
	mux.HandleFunc("/keys/{idOrName}", methodNotAllowed("DELETE"))
	// Administration (control_admin.go).
	for path, h := range map[string]http.HandlerFunc{
		"/backup": s.handleBackup, "/stats": s.handleStats, "/inboxes": s.handleInboxes, "/check": s.handleCheck,
		"/webhooks": s.handleWaiting,
	} {
		mux.HandleFunc("GET "+path, h)
		mux.HandleFunc(path, methodNotAllowed("GET, HEAD"))
	}
	mux.HandleFunc("/", notFound)
	return mux
}

func (s *Server) handleCreateKey(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name  string        `json:"name"`
		Scope storage.Scope `json:"scope"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	k, secret, err := s.admin.CreateKey(r.Context(), req.Name, req.Scope)
	if err != nil {
		// ErrKeyExists: 409; ErrBadKeyName, ErrBadInboxPattern and
		// ErrMetricsScope: 400, whose message ControlClient maps back.
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "api key created", "key_id", k.ID, "key_name", k.Name,
		"key_inboxes", k.Scope.Inboxes, "key_read_only", k.Scope.ReadOnly, "key_metrics", k.Scope.Metrics)
	writeJSON(w, http.StatusCreated, createdKey{Key: k, Secret: secret})
}

func (s *Server) handleListKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := s.admin.Keys(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, keys)
}

func (s *Server) handleRevokeKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.admin.RevokeKey(r.Context(), r.PathValue("idOrName"))
	if errors.Is(err, storage.ErrNotFound) {
		// fail's ErrNotFound speaks of emails; this one is a key.
		writeError(w, http.StatusNotFound, "No such key.")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "api key revoked", "key_id", k.ID, "key_name", k.Name)
	writeJSON(w, http.StatusOK, k)
}

// decodeJSON decodes the request body, one JSON object of at most
// maxControlBody bytes with no unknown fields, into v. It returns a
// badRequest or an *http.MaxBytesError.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, err = dec.Token(); errors.Is(err, io.EOF) {
			return nil
		}
	}
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return err
	}
	return badRequest("Invalid JSON body.")
}
