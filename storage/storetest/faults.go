package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"burner/storage"
)

func createRule(t *testing.T, db storage.Engine, r storage.FaultRule) storage.FaultRule {
	t.Helper()
	got, err := db.CreateFaultRule(context.Background(), r)
	if err != nil {
		t.Fatalf("CreateFaultRule(%+v): %v", r, err)
	}
	return got
}

// apply applies the rules at stage for inboxes and returns the id of the
// rule that applied, or "".
func apply(t *testing.T, db storage.Engine, stage storage.FaultStage, inboxes ...string) string {
	t.Helper()
	r, ok, err := db.ApplyFaultRule(context.Background(), stage, inboxes)
	if err != nil {
		t.Fatalf("ApplyFaultRule(%s, %v): %v", stage, inboxes, err)
	}
	if !ok {
		return ""
	}
	return r.ID
}

func ruleByID(t *testing.T, db storage.Engine, id string) storage.FaultRule {
	t.Helper()
	rules, err := db.FaultRules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no rule %s among %+v", id, rules)
	return storage.FaultRule{}
}

// testFaultRules: rules created, listed in creation order and deleted;
// the first that applies answers; times counts uses and a spent rule
// stays listed but applies no more; a bad rule names its field.
func testFaultRules(t *testing.T, open Opener) {
	ctx := context.Background()
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := open(t, Config{Now: clock.Now})
	if _, err := db.CreateFaultRule(ctx, storage.FaultRule{Inbox: "a*b", Stage: storage.FaultAtRcpt, Reply: "451"}); !errors.Is(err, storage.ErrBadFaultRule) {
		t.Errorf("CreateFaultRule with a bad pattern: %v, want ErrBadFaultRule", err)
	} else if fe := (*storage.FaultRuleError)(nil); !errors.As(err, &fe) || fe.Field != "inbox" {
		t.Errorf("CreateFaultRule with a bad pattern: %v, want the field inbox named", err)
	}
	three := createRule(t, db, storage.FaultRule{Inbox: " Fail-* ", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 Try again later", Times: 3,
		Delay: 1500 * time.Millisecond, Used: 9, CreatedAt: time.Unix(1, 0)})
	if three.ID == "" || three.Inbox != "fail-*" || three.Used != 0 || !three.CreatedAt.Equal(clock.Now()) || three.Config {
		t.Errorf("CreateFaultRule = %+v; want an id, the pattern cleaned, no use, created now", three)
	}
	clock.Advance(time.Second)
	data := createRule(t, db, storage.FaultRule{Inbox: "fail-1", Stage: storage.FaultAtData, Reply: "554 5.6.0 no", Disconnect: true, PerMinute: 0})
	forever := createRule(t, db, storage.FaultRule{Inbox: "*", Stage: storage.FaultAtRcpt, Reply: "550 5.0.0 never"})
	rules, err := db.FaultRules(ctx)
	if err != nil || len(rules) != 3 || rules[0] != three || rules[1] != data || rules[2] != forever {
		t.Fatalf("FaultRules = %+v, %v; want the three in creation order, as created", rules, err)
	}
	// The first rule in creation order that applies answers, times times.
	for i := range 3 {
		if got := apply(t, db, storage.FaultAtRcpt, "fail-7"); got != three.ID {
			t.Fatalf("use %d at rcpt for fail-7: rule %q, want %s", i+1, got, three.ID)
		}
	}
	if got := ruleByID(t, db, three.ID); got.Used != 3 {
		t.Errorf("the rule of 3 after three uses: %+v, want used 3", got)
	}
	if got := apply(t, db, storage.FaultAtRcpt, "fail-7"); got != forever.ID {
		t.Errorf("a fourth RCPT for fail-7: rule %q, want the next rule %s once the first is spent", got, forever.ID)
	}
	if got := ruleByID(t, db, three.ID); got.Used != 3 || !got.Spent() {
		t.Errorf("the spent rule: %+v, want it listed with used 3", got)
	}
	if got := apply(t, db, storage.FaultAtData, "bob", "fail-1"); got != data.ID {
		t.Errorf("data for bob and fail-1: rule %q, want %s", got, data.ID)
	}
	if got := apply(t, db, storage.FaultAtData, "bob"); got != "" {
		t.Errorf("data for bob alone: rule %q, want none", got)
	}
	if err := db.DeleteFaultRule(ctx, forever.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{forever.ID, "not-an-id", "0195f3b0-0000-7000-8000-000000000000"} {
		if err := db.DeleteFaultRule(ctx, id); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("DeleteFaultRule(%q): %v, want ErrNotFound", id, err)
		}
	}
	if got := apply(t, db, storage.FaultAtRcpt, "fail-7"); got != "" {
		t.Errorf("after the last live rcpt rule is deleted: rule %q, want none", got)
	}
	if got := ruleByID(t, db, data.ID); got.Used != 1 || got.Delay != 0 || !got.Disconnect {
		t.Errorf("the data rule: %+v, want one use and its fields as created", got)
	}
	if got := ruleByID(t, db, three.ID); got.Delay != 1500*time.Millisecond {
		t.Errorf("the delay: %v, want 1.5s as given", got.Delay)
	}
}

// testFaultRuleTimes: many callers at once take exactly times uses.
func testFaultRuleTimes(t *testing.T, open Opener) {
	db := open(t, Config{})
	r := createRule(t, db, storage.FaultRule{Inbox: "race", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 later", Times: 5})
	var used atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				_, ok, err := db.ApplyFaultRule(context.Background(), storage.FaultAtRcpt, []string{"race"})
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					used.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := used.Load(); n != 5 {
		t.Errorf("40 RCPTs at once took %d uses of a rule of 5, want 5", n)
	}
	if got := ruleByID(t, db, r.ID); got.Used != 5 {
		t.Errorf("the rule after the race: %+v, want used 5", got)
	}
}

// testFaultRulePerMinute: a rule with PerMinute applies only past that
// many RCPTs for an inbox in the last minute, counting those no rule
// refused; each inbox of a pattern counts apart.
func testFaultRulePerMinute(t *testing.T, open Opener) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db := open(t, Config{Now: clock.Now})
	rcpt := createRule(t, db, storage.FaultRule{Inbox: "rl-*", Stage: storage.FaultAtRcpt, Reply: "450 4.2.1 Slow down", PerMinute: 2})
	for i, want := range []string{"", "", rcpt.ID, rcpt.ID} {
		if got := apply(t, db, storage.FaultAtRcpt, "rl-a"); got != want {
			t.Errorf("RCPT %d for rl-a: rule %q, want %q", i+1, got, want)
		}
		clock.Advance(time.Second)
	}
	if got := apply(t, db, storage.FaultAtRcpt, "rl-b"); got != "" {
		t.Errorf("RCPT for rl-b: rule %q, want none (its own count)", got)
	}
	clock.Advance(56500 * time.Millisecond) // the first RCPT of rl-a is a minute old, the second not
	if got := apply(t, db, storage.FaultAtRcpt, "rl-a"); got != "" {
		t.Errorf("RCPT for rl-a a minute after the first: rule %q, want none", got)
	}
	if got := apply(t, db, storage.FaultAtRcpt, "rl-a"); got != rcpt.ID {
		t.Errorf("the next: rule %q, want %s (two in the last minute)", got, rcpt.ID)
	}
	// At data, the message's own RCPT is counted: the third message in a
	// minute is the first past 2.
	data := createRule(t, db, storage.FaultRule{Inbox: "dl", Stage: storage.FaultAtData, Reply: "451 4.7.0 later", PerMinute: 2})
	for i, want := range []string{"", "", data.ID} {
		if got := apply(t, db, storage.FaultAtRcpt, "dl"); got != "" {
			t.Fatalf("RCPT %d for dl: rule %q, want none", i+1, got)
		}
		if got := apply(t, db, storage.FaultAtData, "dl"); got != want {
			t.Errorf("message %d for dl: rule %q, want %q", i+1, got, want)
		}
	}
	// Sweep forgets nothing newer than a minute; that it forgets what
	// is older, which no answer shows, SweepForgetsRCPTs checks.
	if _, err := db.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := apply(t, db, storage.FaultAtData, "dl"); got != data.ID {
		t.Errorf("after a sweep: rule %q, want %s (three RCPTs still count)", got, data.ID)
	}
	clock.Advance(time.Minute)
	if _, err := db.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	apply(t, db, storage.FaultAtRcpt, "dl")
	if got := apply(t, db, storage.FaultAtData, "dl"); got != "" {
		t.Errorf("a minute later: rule %q, want none", got)
	}
}

// testArmFaultRules: the configuration's rules, armed at every start,
// are armed once: one armed already keeps its uses and its place; one no
// longer configured goes; rules made through the API stay.
func testArmFaultRules(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t, Config{})
	a := storage.FaultRule{Inbox: "cfg-a", Stage: storage.FaultAtRcpt, Reply: "451 4.3.0 a", Times: 3}
	b := storage.FaultRule{Inbox: "cfg-b", Stage: storage.FaultAtData, Reply: "550 5.0.0 b"}
	c := storage.FaultRule{Inbox: "cfg-c", Stage: storage.FaultAtRcpt, Disconnect: true}
	api := createRule(t, db, storage.FaultRule{Inbox: "api", Stage: storage.FaultAtRcpt, Reply: "451"})
	armed, err := db.ArmFaultRules(ctx, []storage.FaultRule{a, b, b})
	if err != nil || len(armed) != 3 || !armed[0].Config || armed[1].ID == armed[2].ID {
		t.Fatalf("ArmFaultRules(a, b, b) = %+v, %v; want three configured rules, the two b apart", armed, err)
	}
	ids := storage.ConfigFaultRuleIDs([]storage.FaultRule{a, b, b})
	for i := range ids {
		if armed[i].ID != ids[i] {
			t.Errorf("configured rule %d has id %s, want %s", i, armed[i].ID, ids[i])
		}
	}
	if got := apply(t, db, storage.FaultAtRcpt, "cfg-a"); got != armed[0].ID {
		t.Fatalf("RCPT for cfg-a: rule %q, want %s", got, armed[0].ID)
	}
	// Armed again, as at the next start or on another node.
	again, err := db.ArmFaultRules(ctx, []storage.FaultRule{a, b, b})
	if err != nil || len(again) != 3 || again[0].Used != 1 || again[0].CreatedAt != armed[0].CreatedAt {
		t.Errorf("ArmFaultRules again = %+v, %v; want the same three, a with its use", again, err)
	}
	// A new configuration: a goes, b stays, c comes last.
	again, err = db.ArmFaultRules(ctx, []storage.FaultRule{c, b})
	if err != nil || len(again) != 2 || again[0].ID != armed[1].ID || again[1].Inbox != "cfg-c" {
		t.Errorf("ArmFaultRules(c, b) = %+v, %v; want b, then c", again, err)
	}
	all, err := db.FaultRules(ctx)
	if err != nil || len(all) != 3 || all[0] != api {
		t.Errorf("FaultRules = %+v, %v; want the API's rule first, then b and c", all, err)
	}
	bad := b
	bad.Reply = "250 OK"
	if _, err := db.ArmFaultRules(ctx, []storage.FaultRule{a, bad}); !errors.Is(err, storage.ErrBadFaultRule) {
		t.Errorf("ArmFaultRules with a 250 reply: %v, want ErrBadFaultRule", err)
	}
	// The cap on rules, in one transaction.
	many := make([]storage.FaultRule, storage.MaxFaultRules)
	for i := range many {
		many[i] = storage.FaultRule{Inbox: "many", Stage: storage.FaultAtRcpt, Reply: "451", Times: i + 1}
	}
	if _, err := db.ArmFaultRules(ctx, many); !errors.Is(err, storage.ErrTooManyFaultRules) {
		t.Errorf("ArmFaultRules of %d rules beside the API's: %v, want ErrTooManyFaultRules", len(many), err)
	}
	if all, err := db.FaultRules(ctx); err != nil || len(all) != 3 {
		t.Errorf("after the refused arming: %d rules, %v; want the 3 as they were", len(all), err)
	}
	if r, err := db.Check(ctx); err != nil || !r.OK() {
		t.Errorf("Check = %+v, %v; want no problem", r, err)
	}
}

// SweepForgetsRCPTs checks that Sweep forgets the RCPTs a rule with
// PerMinute counted once they are a minute old, and none newer. counted
// returns how many the engine holds: the rules' answers cannot show it,
// as an RCPT a minute old no longer counts whether it is held or not.
// db runs on clock.
func SweepForgetsRCPTs(t *testing.T, db storage.Engine, clock *Clock, counted func() int) {
	t.Helper()
	ctx := context.Background()
	createRule(t, db, storage.FaultRule{Inbox: "dl", Stage: storage.FaultAtData, Reply: "451 4.7.0 later", PerMinute: 2})
	apply(t, db, storage.FaultAtRcpt, "dl")
	apply(t, db, storage.FaultAtRcpt, "other") // no rule counts it
	clock.Advance(time.Second)
	apply(t, db, storage.FaultAtRcpt, "dl")
	if n := counted(); n != 2 {
		t.Fatalf("after two RCPTs for dl and one for other: %d counted, want 2", n)
	}
	clock.Advance(time.Minute - time.Second)
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := counted(); n != 1 {
		t.Errorf("a minute after the first RCPT, after a sweep: %d counted, want 1", n)
	}
	clock.Advance(time.Second)
	if _, err := db.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := counted(); n != 0 {
		t.Errorf("a minute after the last RCPT, after a sweep: %d counted, want 0", n)
	}
}
