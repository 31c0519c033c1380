package server

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"burner/storage"
)

func TestSplitTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"one", []string{"one"}},
		{"  one  two\tthree\n", []string{"one", "two", "three"}},
		{`"two words" three`, []string{"two words", "three"}},
		{`a "  spaced  phrase  " b`, []string{"a", "  spaced  phrase  ", "b"}},
		{`"unclosed phrase runs on`, []string{"unclosed phrase runs on"}},
		{`""`, nil},
		{`a "" b`, []string{"a", "b"}},
		{`foo"bar baz"`, []string{"foobar baz"}},
		{"Straße\u00a0STRASSE", []string{"Straße", "STRASSE"}}, // no-break space separates
		{"bad\xffbyte", []string{"bad\xffbyte"}},
	} {
		if got := splitTerms(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitTerms(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzSplitTerms(f *testing.F) {
	for _, s := range []string{"", "a b", `"a b" c`, `"open`, "x\u00a0y", "bad\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := splitTerms(s)
		n := 0
		for _, term := range terms {
			if term == "" || strings.Contains(term, `"`) {
				t.Fatalf("splitTerms(%q) has term %q: empty or quoted", s, term)
			}
			n += len(term)
		}
		// Terms are the input less quotes and separating spaces.
		if n > len(s) {
			t.Fatalf("splitTerms(%q) = %q: longer than the input", s, terms)
		}
		if fields := strings.Fields(s); !strings.Contains(s, `"`) && !slices.Equal(terms, fields) && len(fields)+len(terms) > 0 {
			t.Fatalf("splitTerms(%q) = %q, want strings.Fields: %q", s, terms, strings.Fields(s))
		}
	})
}

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"0", time.Unix(0, 0)},
		{"+0", time.Unix(0, 0)},
		{"-0", time.Unix(0, 0)},
		{"1741964968", time.Unix(1741964968, 0)},
		{"1741964968.", time.Unix(1741964968, 0)},
		{"1741964968.5", time.Unix(1741964968, 500_000_000)},
		{"1741964968.535", time.Unix(1741964968, 535_000_000)},
		{"1741964968.123456789", time.Unix(1741964968, 123_456_789)}, // every nanosecond kept
		{"1741964968.1234567899", time.Unix(1741964968, 123_456_789)},
		{"0001741964968.000000001", time.Unix(1741964968, 1)},
		{".25", time.Unix(0, 250_000_000)},
		{"1e3", time.Unix(1000, 0)},
		{"1.5E3", time.Unix(1500, 0)},
		{"2.5e-1", time.Unix(0, 250_000_000)},
		{"1e-400", time.Unix(0, 0)},
		{"1e300", time.Unix(maxSince, 0)},
		{"99999999999999999999", time.Unix(maxSince, 0)},
	} {
		got, err := parseTime(tc.in)
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("parseTime(%q) = %v, %v; want %v (UTC)", tc.in, got, err, tc.want.UTC())
		}
	}
	for _, in := range []string{"", "abc", "-1", "-0.001", "NaN", "nan", "Inf", "+Inf", "infinity", "1e400", "0x1p4", "1_0", "1.2.3", ".", "e5", "1e", " 1", "1 ", "١"} {
		if got, err := parseTime(in); err == nil {
			t.Errorf("parseTime(%q) = %v, want an error", in, got)
		}
	}
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"0", "1741964968.535", "1e9", "-1", "NaN", "1e400", ".5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTime(s)
		if err != nil {
			return
		}
		if got.Before(time.Unix(0, 0)) || got.After(time.Unix(maxSince, 0)) {
			t.Fatalf("parseTime(%q) = %v, outside [0, maxSince]", s, got)
		}
		// Short of the nanoseconds cut off and float64's rounding, it is
		// the number written.
		if f, _ := strconv.ParseFloat(s, 64); f < maxSince {
			d := float64(got.Unix()) - f + float64(got.Nanosecond())/1e9
			if tol := 2e-9 + f*1e-15; d > tol || d < -tol {
				t.Fatalf("parseTime(%q) = %v, %g seconds from %v", s, got, d, f)
			}
		}
	})
}

// TestListRequestErrors: each fault of a list is a *paramError that names
// its parameter as the API does, with spec §4's message, and fail's
// badRequest; of several faults, the first in the API document's order is
// the one told, whether it is a value out of range or one of the wrong
// form.
func TestListRequestErrors(t *testing.T) {
	for _, tc := range []struct {
		query, param, msg string
	}{
		{"", "to", "'to' is required."},
		{"to=%zz", "to", "Invalid local part. Only alphanumeric characters and _-+. are allowed."},
		{"to=a%20b", "to", "Invalid local part. Only alphanumeric characters and _-+. are allowed."},
		{"to=" + strings.Repeat("a", 65), "to", "Local part must be at most 64 characters."},
		{"to=a&subject=x&search=y", "", "Only one of subject, search, or body may be specified."},
		{"to=a&limit=0", "limit", "'limit' must be an integer from 1 to 10."},
		{"to=a&limit=ten", "limit", "'limit' must be an integer from 1 to 10."},
		{"to=a&since=-1", "since", "'since' must be a Unix timestamp in seconds."},
		{"to=a&before=x", "before", "'before' must be a Unix timestamp in seconds."},
		{"to=a&header=nocolon", "header", "'header' must be Name:value, like X-Test-Run:42."},
		{"to=a&wait=61", "wait", "'wait' must be an integer from 1 to 60."},
		{"to=a&wait=x", "wait", "'wait' must be an integer from 1 to 60."},
		// Several faults: the first in the document's order.
		{"limit=x&to=", "to", "'to' is required."},
		{"to=a&subject=x&body=y&limit=x", "", "Only one of subject, search, or body may be specified."},
		{"to=a&wait=x&limit=99&since=x", "limit", "'limit' must be an integer from 1 to 10."},
		{"to=a&wait=x&before=1&since=x", "since", "'since' must be a Unix timestamp in seconds."},
		{"to=a&wait=0&header=x&before=x", "before", "'before' must be a Unix timestamp in seconds."},
		{"to=a&wait=x&header=x", "header", "'header' must be Name:value, like X-Test-Run:42."},
	} {
		_, err := parseListRequest(tc.query).query()
		var (
			param *paramError
			bad   badRequest
		)
		if !errors.As(err, &param) || param.Param != tc.param || param.Msg != tc.msg {
			t.Errorf("parseListRequest(%q).query() = %#v, want a *paramError of %q: %q", tc.query, err, tc.param, tc.msg)
		}
		if !errors.As(err, &bad) || string(bad) != tc.msg {
			t.Errorf("parseListRequest(%q).query() = %v, want the badRequest %q", tc.query, err, tc.msg)
		}
	}
}

// TestListRequestBuilt: a request built field by field, as MCP builds
// it, asks for the query that the API's query string for it does.
func TestListRequestBuilt(t *testing.T) {
	limit, wait := 3, 5
	since := time.Unix(1741964968, 535_000_000).UTC()
	built := listRequest{To: "alice+x", Search: `"two words" three`, Limit: &limit, Since: &since, Header: "From:shop", From: "Shop", Wait: &wait}
	got, err := built.query()
	if err != nil {
		t.Fatalf("%+v.query(): %v", built, err)
	}
	const raw = "to=alice+x&search=%22two+words%22+three&limit=3&since=1741964968.535&header=From:shop&from=Shop&wait=5"
	want, err := parseListRequest(raw).query()
	if err != nil {
		t.Fatalf("parseListRequest(%q).query(): %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%+v.query() = %+v, want %+v, the query of %q", built, got, want, raw)
	}
	if got.Limit != 3 || got.wait != 5*time.Second || !slices.Equal(got.Terms, []string{"two words", "three"}) || got.From != "Shop" ||
		got.Header == nil || *got.Header != (storage.Header{Name: "From", Value: "shop"}) {
		t.Errorf("%+v.query() = %+v", built, got)
	}
}

// TestToolQueryFrom: MCP's from is the API's from (spec §14: the sender's
// address or name), not a header filter on From.
func TestToolQueryFrom(t *testing.T) {
	q, err := toolQuery("alice", "code", "", "Shop", nil, nil)
	if err != nil || q.From != "Shop" || q.Header != nil || q.Subject != "code" {
		t.Errorf("toolQuery(alice, subject code, from Shop) = %+v, %v; want From Shop and no header filter", q, err)
	}
}

// TestParamErrorNamed: a protocol that calls a parameter otherwise gets
// the message with its own name, and the messages that name no
// parameter as they are.
func TestParamErrorNamed(t *testing.T) {
	for _, tc := range []struct {
		err  *paramError
		want string
	}{
		{errToRequired, "'inbox' is required."},
		{errToInvalid, errToInvalid.Msg},
		{errToTooLong, errToTooLong.Msg},
	} {
		if got := tc.err.named("inbox"); got != tc.want {
			t.Errorf("%q.named(inbox) = %q, want %q", tc.err.Msg, got, tc.want)
		}
	}
	if got := errWait.named("timeout_s"); got != "'timeout_s' must be an integer from 1 to 60." {
		t.Errorf("errWait.named(timeout_s) = %q", got)
	}
}

// TestUnixSeconds: MCP's since, a JSON number, counts to the digit that
// the agent wrote, as the API's text does.
func TestUnixSeconds(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want time.Time
	}{
		{0, time.Unix(0, 0)},
		{1741964968.535, time.Unix(1741964968, 535_000_000)},
		{1741964968.123456, time.Unix(1741964968, 123_456_000)},
		{1e3, time.Unix(1000, 0)},
		{0.000001, time.Unix(0, 1000)},
	} {
		if got, err := unixSeconds(tc.f); err != nil || !got.Equal(tc.want) {
			t.Errorf("unixSeconds(%v) = %v, %v; want %v", tc.f, got, err, tc.want.UTC())
		}
	}
	// As the API's text does: the same instant for the digits written.
	for _, f := range []float64{1741964968.535, 1e300} {
		text := strconv.FormatFloat(f, 'f', -1, 64)
		got, err := unixSeconds(f)
		want, werr := parseTime(text)
		if err != nil || werr != nil || !got.Equal(want) {
			t.Errorf("unixSeconds(%v) = %v, %v; want parseTime(%q) = %v, %v", f, got, err, text, want, werr)
		}
	}
	if got, err := unixSeconds(-0.5); err == nil {
		t.Errorf("unixSeconds(-0.5) = %v, want an error", got)
	}
	if got, _ := unixSeconds(1741964968.535); got.Nanosecond() != 535_000_000 {
		t.Errorf("unixSeconds(1741964968.535) = %v, want its 535 ms to the nanosecond", got)
	}
}
