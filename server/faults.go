package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"burner/emailjson"
	"burner/storage"
)

// POST, GET and DELETE /api/v1/faults (spec §13.2): fault rules, which
// make SMTP fail on purpose. Off unless Options.Features.Faults, and then
// every route answers 404 as an unknown path does.

// errFaultNotFound answers a rule that does not exist, or is outside the
// key's scope (its existence is not revealed).
var errFaultNotFound = errors.New("Fault not found")

// maxFaultBody bounds the body of POST /api/v1/faults: a rule is a few
// hundred bytes.
const maxFaultBody = 16 << 10

// faultJSON is a rule as the API shows it (spec §13.2).
type faultJSON struct {
	ID         string `json:"id"`
	Inbox      string `json:"inbox"`
	Stage      string `json:"stage"`
	Reply      string `json:"reply"`
	Times      int    `json:"times"`
	Used       int    `json:"used"`
	Delay      string `json:"delay"` // a Go duration: "0s", "1.5s"
	Disconnect bool   `json:"disconnect"`
	PerMinute  int    `json:"perMinute"`
	CreatedAt  string `json:"createdAt"`
}

func newFaultJSON(r storage.FaultRule) faultJSON {
	return faultJSON{ID: r.ID, Inbox: r.Inbox, Stage: string(r.Stage), Reply: r.Reply, Times: r.Times, Used: r.Used,
		Delay: r.Delay.String(), Disconnect: r.Disconnect, PerMinute: r.PerMinute, CreatedAt: r.CreatedAt.UTC().Format(emailjson.TimeLayout)}
}

// faultsOn answers 404, as for a path burner does not serve, unless fault
// injection is on.
func (s *Server) faultsOn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Features.Faults {
			notFound(w, r)
			return
		}
		next(w, r)
	}
}

func (s *Server) handleCreateFault(w http.ResponseWriter, r *http.Request) {
	rule, err := parseFaultRule(http.MaxBytesReader(w, r.Body, maxFaultBody))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	created, err := s.db.CreateFaultRule(r.Context(), rule)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, newFaultJSON(created))
}

func (s *Server) handleListFaults(w http.ResponseWriter, r *http.Request) {
	rules, err := s.db.FaultRules(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]faultJSON, len(rules))
	for i, rule := range rules {
		out[i] = newFaultJSON(rule)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleDeleteFault(w http.ResponseWriter, r *http.Request) {
	if err := s.db.DeleteFaultRule(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// faultFields are the fields of a rule a client sends, in the order of
// spec §13.2, which is the order their faults are told in.
var faultFields = []string{"inbox", "stage", "reply", "times", "delay", "disconnect", "perMinute"}

// errFaultDelay refuses a delay that is no string as well as one that is
// no duration: either way the client needs the same hint.
var errFaultDelay = &paramError{Param: "delay", Msg: `'delay' must be a duration from "0s" to "60s", like "1.5s".`}

// parseFaultRule reads a rule from a JSON object, or returns the 400 of
// its first fault: a body that is no object, an unknown field, a field of
// the wrong type, a field missing or out of range (storage.CleanFaultRule),
// each named.
func parseFaultRule(body io.Reader) (storage.FaultRule, error) {
	raw, err := io.ReadAll(body)
	if err != nil {
		return storage.FaultRule{}, err
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		return storage.FaultRule{}, badRequest("The body must be a JSON object: a fault rule.")
	}
	for name := range fields {
		if !slices.Contains(faultFields, name) {
			return storage.FaultRule{}, &paramError{Param: name, Msg: fmt.Sprintf("'%s' is not a field of a fault rule; they are %s.", name, strings.Join(faultFields, ", "))}
		}
	}
	var r storage.FaultRule
	str := func(name string, dst *string, required bool) error {
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			if required {
				return &paramError{Param: name, Msg: fmt.Sprintf("'%s' is required.", name)}
			}
			return nil
		}
		if json.Unmarshal(v, dst) != nil {
			return &paramError{Param: name, Msg: fmt.Sprintf("'%s' must be a string.", name)}
		}
		return nil
	}
	integer := func(name string, dst *int) error {
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			return nil
		}
		// Digits alone: json.Number would take "3" (a string) too.
		i, err := strconv.ParseInt(string(v), 10, 32)
		if err != nil || i < 0 {
			return &paramError{Param: name, Msg: fmt.Sprintf("'%s' must be a whole number from 0.", name)}
		}
		*dst = int(i)
		return nil
	}
	var stage, delay string
	for _, step := range []func() error{
		func() error { return str("inbox", &r.Inbox, true) },
		func() error { return str("stage", &stage, true) },
		func() error { return str("reply", &r.Reply, false) },
		func() error { return integer("times", &r.Times) },
		func() error {
			if err := str("delay", &delay, false); err != nil {
				return errFaultDelay
			}
			return nil
		},
		func() error {
			v, ok := fields["disconnect"]
			if ok && string(v) != "null" && json.Unmarshal(v, &r.Disconnect) != nil {
				return &paramError{Param: "disconnect", Msg: "'disconnect' must be true or false."}
			}
			return nil
		},
		func() error { return integer("perMinute", &r.PerMinute) },
	} {
		if err := step(); err != nil {
			return storage.FaultRule{}, err
		}
	}
	r.Stage = storage.FaultStage(stage)
	if delay != "" {
		d, err := time.ParseDuration(delay)
		if err != nil {
			return storage.FaultRule{}, errFaultDelay
		}
		r.Delay = d
	}
	clean, err := storage.CleanFaultRule(r)
	var fe *storage.FaultRuleError
	if errors.As(err, &fe) {
		return storage.FaultRule{}, &paramError{Param: fe.Field, Msg: fmt.Sprintf("'%s' must be %s.", fe.Field, fe.Reason)}
	}
	return clean, err
}
