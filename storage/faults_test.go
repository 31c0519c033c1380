package storage

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCleanFaultRule(t *testing.T) {
	ok := FaultRule{Inbox: " Fail-* ", Stage: FaultAtRcpt, Reply: " 451 4.3.0 Try again later ", Times: 3, Delay: 60 * time.Second, PerMinute: 2}
	got, err := CleanFaultRule(ok)
	if err != nil {
		t.Fatalf("CleanFaultRule(%+v): %v", ok, err)
	}
	if got.Inbox != "fail-*" || got.Reply != "451 4.3.0 Try again later" || got.Times != 3 || got.Delay != time.Minute || got.PerMinute != 2 {
		t.Errorf("CleanFaultRule(%+v) = %+v, want the pattern lower-cased and the reply trimmed", ok, got)
	}
	if _, err := CleanFaultRule(FaultRule{Inbox: "*", Stage: FaultAtData, Disconnect: true}); err != nil {
		t.Errorf("a disconnect without a reply: %v, want it valid", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*FaultRule)
		field string
	}{
		{"no inbox", func(r *FaultRule) { r.Inbox = "" }, "inbox"},
		{"bad pattern", func(r *FaultRule) { r.Inbox = "a*b" }, "inbox"},
		{"bad characters", func(r *FaultRule) { r.Inbox = "al!ce" }, "inbox"},
		{"no stage", func(r *FaultRule) { r.Stage = "" }, "stage"},
		{"unknown stage", func(r *FaultRule) { r.Stage = "mail" }, "stage"},
		{"no reply", func(r *FaultRule) { r.Reply = "" }, "reply"},
		{"2xx reply", func(r *FaultRule) { r.Reply = "250 OK" }, "reply"},
		{"negative times", func(r *FaultRule) { r.Times = -1 }, "times"},
		{"negative delay", func(r *FaultRule) { r.Delay = -time.Second }, "delay"},
		{"delay over 60s", func(r *FaultRule) { r.Delay = 60*time.Second + time.Millisecond }, "delay"},
		{"negative perMinute", func(r *FaultRule) { r.PerMinute = -1 }, "perMinute"},
		{"a disconnect's bad reply", func(r *FaultRule) { r.Disconnect = true; r.Reply = "hang up" }, "reply"},
	} {
		r := ok
		tc.edit(&r)
		_, err := CleanFaultRule(r)
		var fe *FaultRuleError
		if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, ErrBadFaultRule) {
			t.Errorf("%s: CleanFaultRule(%+v) = %v, want a FaultRuleError naming %q", tc.name, r, err, tc.field)
		}
	}
}

func TestParseFaultReply(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  SMTPReply
	}{
		{"451 4.3.0 Try again later", SMTPReply{451, [3]int{4, 3, 0}, "Try again later"}},
		{"550 5.1.1 No such user", SMTPReply{550, [3]int{5, 1, 1}, "No such user"}},
		{"450 4.2.1 Slow down", SMTPReply{450, [3]int{4, 2, 1}, "Slow down"}},
		{"421", SMTPReply{Code: 421}},
		{"554 Transaction failed", SMTPReply{Code: 554, Text: "Transaction failed"}},
		{"452 4.123.456", SMTPReply{452, [3]int{4, 123, 456}, ""}},
		{"451  4.3.0   spaced  out ", SMTPReply{451, [3]int{4, 3, 0}, "spaced  out"}},
		{"552 " + strings.Repeat("x", 196), SMTPReply{Code: 552, Text: strings.Repeat("x", 196)}},
	} {
		got, err := ParseFaultReply(tc.reply)
		if err != nil || got != tc.want {
			t.Errorf("ParseFaultReply(%q) = %+v, %v; want %+v", tc.reply, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		"", "250 2.0.0 OK", "354 go on", "600 x", "45", "4511 x", "451x", "461 4.0.0 bad second digit",
		"451 5.3.0 wrong class", "550 4.1.1 wrong class", "451 4.3 two parts", "451 4.3.0.1 four", "451 44.3.0 class of two digits",
		"451 4.1234.0 long subject", "451 4.-3.0 sign", "451 4..0 empty", "451 4.3.0 t\u00e9xt", "451 4.3.0 tab\there",
		"552 " + strings.Repeat("x", 197),
	} {
		_, err := ParseFaultReply(bad)
		var fe *FaultRuleError
		if !errors.As(err, &fe) || fe.Field != "reply" {
			t.Errorf("ParseFaultReply(%q) = %v, want a FaultRuleError naming reply", bad, err)
		}
	}
}
