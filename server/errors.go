package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"burner/storage"
)

// badRequest is a validation failure. Its text is the message sent to the
// client, spec §4 to the letter.
type badRequest string

func (e badRequest) Error() string { return string(e) }

// paramError is a request parameter the API refuses (spec §4): a
// badRequest that says which parameter it is about, so that a protocol
// that calls the parameter otherwise (MCP's inbox is the API's to) can
// name its own (named) without comparing messages.
type paramError struct {
	// Param names the parameter as the REST API does ("to", "limit");
	// "" for a rule over several.
	Param string
	// Msg is spec §4's message, to the letter. Where it names Param, it
	// quotes it: 'limit'.
	Msg string
}

func (e *paramError) Error() string { return e.Msg }

// Unwrap makes e a badRequest: fail answers it 400 with Msg.
func (e *paramError) Unwrap() error { return badRequest(e.Msg) }

// named returns e's message for a protocol that calls e.Param name.
func (e *paramError) named(name string) string {
	return strings.Replace(e.Msg, "'"+e.Param+"'", "'"+name+"'", 1)
}

// keyRuleErrors are the refusals of a key's scope or secret: fail answers
// them 400 with their message, and readError finds the message again to
// give the control client the same sentinel. One list, so the two cannot
// drift apart.
var keyRuleErrors = []error{storage.ErrBadInboxPattern, storage.ErrMetricsScope, storage.ErrBadSecret}

// fail answers a failed request. It is the one place where errors become
// HTTP statuses; internal errors are logged, never sent.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		bad      badRequest
		denied   forbidden
		tooLarge *http.MaxBytesError
	)
	switch {
	case errors.As(err, &bad):
		writeError(w, http.StatusBadRequest, string(bad))
	case errors.As(err, &denied): // a key's scope (scope.go)
		writeError(w, http.StatusForbidden, string(denied))
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "Request body too large.")
	case errors.Is(err, errFaultNotFound):
		writeError(w, http.StatusNotFound, "Fault not found")
	case errors.Is(err, storage.ErrTooManyFaultRules):
		writeError(w, http.StatusConflict, fmt.Sprintf("There are %d fault rules already; delete some first.", storage.MaxFaultRules))
	case errors.Is(err, storage.ErrNotFound):
		writeError(w, http.StatusNotFound, "Email not found")
	case errors.Is(err, storage.ErrBadKeyName):
		writeError(w, http.StatusBadRequest, "'name' must be 1 to 64 printable characters.")
	case errors.Is(err, storage.ErrKeyExists):
		writeError(w, http.StatusConflict, "A key with that name already exists.")
	case slices.ContainsFunc(keyRuleErrors, func(rule error) bool { return errors.Is(err, rule) }):
		// A key's scope or secret refused (the control socket): the
		// message names the rule; ControlClient maps it back.
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, storage.ErrUnavailable):
		// The database is down or out of reach (spec §10): the client
		// should come back, and the sender's MTA does (451).
		s.log.WarnContext(r.Context(), "storage unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		unavailable(w)
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away: nobody reads this answer, and it is not our fault.
		s.log.DebugContext(r.Context(), "request canceled", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "Internal error.")
	default:
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "Internal error.")
	}
}

// retryAfter is what a client is told to wait before it asks again while
// the store cannot be reached: a node serves again within 15 s of the
// database's return (spec §10), so a few tries span it.
const retryAfter = "5"

// unavailable answers 503 for a store that cannot be reached (spec §10).
func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", retryAfter)
	writeError(w, http.StatusServiceUnavailable, "Storage unavailable.")
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Bodies are HTML; "<" stays as it is because the JSON type and nosniff
	// already keep a browser from rendering a response as HTML.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a type that cannot be encoded gets here, a programming error:
		// recoverPanics logs it with its stack and answers 500.
		panic(fmt.Sprintf("writeJSON %T: %v", v, err))
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes()) // an error here means the client is gone
}

// writeBytes answers 200 with data of contentType, for the routes that
// serve a message's own bytes rather than JSON.
func writeBytes(w http.ResponseWriter, contentType string, data []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data) // an error here means the client is gone
}

// writeError answers status with {"error": msg}, the shape of every error
// (spec §4).
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

// notFound answers a path we do not serve.
func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, "Not found.")
}

// methodNotAllowed returns a handler for a known path asked with another
// method: a JSON 405 naming the methods that work (RFC 9110 §15.5.6).
func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed.")
	}
}
