package boltdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// Fault rules (spec §13.2; storage.Engine). The layout:
//
//	faults: be64(seq) -> version(1) flags(1) uvarint: times, used, perMinute, delay (ns), createdAt (unix ms)
//	                     uvarint-prefixed: id, inbox, stage, reply
//
// seq is the bucket's sequence at creation: the keys are in creation
// order, which decides which rule applies first. flags holds
// faultDisconnect and faultConfig. Rules are few (storage.MaxFaultRules),
// so a lookup by id reads them all.
//
// The RCPTs a rule with PerMinute counts are kept in memory: one process
// has the file, so its count is exact.

var bucketFaults = []byte("faults")

const (
	faultVersion    = 1
	faultDisconnect = 1 << 0
	faultConfig     = 1 << 1
)

func encodeFaultRule(r storage.FaultRule) []byte {
	var flags byte
	if r.Disconnect {
		flags |= faultDisconnect
	}
	if r.Config {
		flags |= faultConfig
	}
	b := []byte{faultVersion, flags}
	for _, n := range [...]int64{int64(r.Times), int64(r.Used), int64(r.PerMinute), int64(r.Delay), r.CreatedAt.UnixMilli()} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	for _, s := range [...]string{r.ID, r.Inbox, string(r.Stage), r.Reply} {
		b = record.AppendString(b, s)
	}
	return b
}

func decodeFaultRule(v []byte) (storage.FaultRule, error) {
	if len(v) < 2 || v[0] != faultVersion {
		return storage.FaultRule{}, storage.ErrCorrupt
	}
	r := storage.FaultRule{Disconnect: v[1]&faultDisconnect != 0, Config: v[1]&faultConfig != 0}
	b := v[2:]
	var nums [5]int64
	for i := range nums {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > 1<<62 {
			return storage.FaultRule{}, storage.ErrCorrupt
		}
		nums[i], b = int64(n), b[w:]
	}
	if nums[0] > 1<<31 || nums[1] > 1<<31 || nums[2] > 1<<31 {
		return storage.FaultRule{}, storage.ErrCorrupt
	}
	r.Times, r.Used, r.PerMinute, r.Delay, r.CreatedAt = int(nums[0]), int(nums[1]), int(nums[2]), time.Duration(nums[3]), record.FromMilli(nums[4])
	var s [4][]byte
	for i := range s {
		var ok bool
		if s[i], b, ok = record.CutString(b); !ok {
			return storage.FaultRule{}, storage.ErrCorrupt
		}
	}
	if len(b) != 0 {
		return storage.FaultRule{}, storage.ErrCorrupt
	}
	r.ID, r.Inbox, r.Stage, r.Reply = string(s[0]), string(s[1]), storage.FaultStage(s[2]), string(s[3])
	return r, nil
}

// storedRule is a rule with its key.
type storedRule struct {
	key []byte
	storage.FaultRule
}

// faultRules reads every rule of tx, in creation order.
func faultRules(tx *bolt.Tx) ([]storedRule, error) {
	b := tx.Bucket(bucketFaults)
	if b == nil {
		return nil, nil
	}
	var out []storedRule
	err := b.ForEach(func(k, v []byte) error {
		r, err := decodeFaultRule(v)
		if err != nil {
			return fmt.Errorf("fault rule %x: %w", k, err)
		}
		out = append(out, storedRule{bytes.Clone(k), r})
		return nil
	})
	return out, err
}

// addFaultRule stores r, with its id set, as the newest rule, unless
// *n, the number of rules there are, has reached MaxFaultRules; it counts
// r in *n.
func addFaultRule(tx *bolt.Tx, r storage.FaultRule, n *int) error {
	if *n >= storage.MaxFaultRules {
		return storage.ErrTooManyFaultRules
	}
	b := tx.Bucket(bucketFaults)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	*n++
	return b.Put(be64(seq), encodeFaultRule(r))
}

// countFaultRules returns the number of rules in tx.
func countFaultRules(tx *bolt.Tx) int {
	n := 0
	c := tx.Bucket(bucketFaults).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// CreateFaultRule stores rule as the newest rule (storage.Engine).
func (db *DB) CreateFaultRule(ctx context.Context, rule storage.FaultRule) (storage.FaultRule, error) {
	if err := ctx.Err(); err != nil {
		return storage.FaultRule{}, err
	}
	r, err := storage.CleanFaultRule(rule)
	if err != nil {
		return storage.FaultRule{}, err
	}
	r.ID, r.Used, r.CreatedAt, r.Config = record.NewID().String(), 0, record.Milli(db.now()), false
	if err := db.bolt.Update(func(tx *bolt.Tx) error { n := countFaultRules(tx); return addFaultRule(tx, r, &n) }); err != nil {
		return storage.FaultRule{}, fmt.Errorf("create fault rule: %w", err)
	}
	return r, nil
}

// FaultRules returns every rule in creation order (storage.Engine).
func (db *DB) FaultRules(ctx context.Context) ([]storage.FaultRule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var rules []storedRule
	err := db.bolt.View(func(tx *bolt.Tx) error {
		var err error
		rules, err = faultRules(tx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fault rules: %w", err)
	}
	return rulesOf(rules), nil
}

// rulesOf returns the rules of stored, without their keys.
func rulesOf(stored []storedRule) []storage.FaultRule {
	out := make([]storage.FaultRule, len(stored))
	for i, r := range stored {
		out[i] = r.FaultRule
	}
	return out
}

// DeleteFaultRule deletes the rule with id, or returns ErrNotFound
// (storage.Engine).
func (db *DB) DeleteFaultRule(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		rules, err := faultRules(tx)
		if err != nil {
			return err
		}
		for _, r := range rules {
			if r.ID == id {
				return tx.Bucket(bucketFaults).Delete(r.key)
			}
		}
		return storage.ErrNotFound
	})
	if err != nil {
		return fmt.Errorf("delete fault rule %s: %w", id, err)
	}
	return nil
}

// ArmFaultRules makes rules the configured rules (storage.Engine).
func (db *DB) ArmFaultRules(ctx context.Context, rules []storage.FaultRule) ([]storage.FaultRule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	want, ids, err := storage.CleanConfigFaultRules(rules)
	if err != nil {
		return nil, err
	}
	now := record.Milli(db.now())
	var plan storage.ArmPlan
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		have, err := faultRules(tx)
		if err != nil {
			return err
		}
		plan = storage.PlanArm(rulesOf(have), want, ids, now)
		for _, i := range plan.Drop {
			if err := tx.Bucket(bucketFaults).Delete(have[i].key); err != nil {
				return err
			}
		}
		n := len(have) - len(plan.Drop)
		for _, r := range plan.Add {
			if err := addFaultRule(tx, r, &n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("arm fault rules: %w", err)
	}
	return plan.Armed, nil
}

// ApplyFaultRule returns the first rule that applies, and counts its use
// (storage.Engine). It reads the rules in a read transaction and writes
// only the use of the rule that applies, so that a RCPT that no rule
// answers costs no commit.
func (db *DB) ApplyFaultRule(ctx context.Context, stage storage.FaultStage, inboxes []string) (storage.FaultRule, bool, error) {
	if err := ctx.Err(); err != nil {
		return storage.FaultRule{}, false, err
	}
	now := db.now()
	for range storage.MaxFaultRules + 1 { // each round, one rule is spent or none applies
		var rules []storedRule
		if err := db.bolt.View(func(tx *bolt.Tx) error {
			var err error
			rules, err = faultRules(tx)
			return err
		}); err != nil {
			return storage.FaultRule{}, false, fmt.Errorf("apply fault rule: %w", err)
		}
		r, ok := db.rcpts.choose(rules, stage, inboxes, now)
		if !ok {
			if stage == storage.FaultAtRcpt {
				db.rcpts.note(rules, inboxes[0], now)
			}
			return storage.FaultRule{}, false, nil
		}
		used, err := db.useFaultRule(r.key)
		if err != nil {
			return storage.FaultRule{}, false, fmt.Errorf("apply fault rule %s: %w", r.ID, err)
		}
		if used {
			r.Used++
			return r.FaultRule, true, nil
		}
		// Spent or deleted meanwhile: choose again.
	}
	return storage.FaultRule{}, false, errors.New("apply fault rule: the rules changed under every try")
}

// useFaultRule counts a use of the rule at key, in one transaction,
// unless it is gone or spent; it reports whether it did.
func (db *DB) useFaultRule(key []byte) (bool, error) {
	var used bool
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		used = false
		b := tx.Bucket(bucketFaults)
		v := b.Get(key)
		if v == nil {
			return nil
		}
		r, err := decodeFaultRule(v)
		if err != nil {
			return err
		}
		if r.Spent() {
			return nil
		}
		r.Used++
		used = true
		return b.Put(key, encodeFaultRule(r))
	})
	return used, err
}

// rcptCounter holds, for each inbox a rule with PerMinute covers, when
// the RCPTs that named it and were not refused came, for the last minute.
type rcptCounter struct {
	mu sync.Mutex
	at map[string][]time.Time
}

// recent returns how many RCPTs for inbox came within the minute before
// now, forgetting older ones. c.mu is held.
func (c *rcptCounter) recent(inbox string, now time.Time) int {
	times := c.at[inbox]
	i := 0
	for i < len(times) && now.Sub(times[i]) >= time.Minute {
		i++
	}
	if i == len(times) {
		delete(c.at, inbox)
		return 0
	}
	c.at[inbox] = times[i:]
	return len(times) - i
}

// choose returns the first of rules, in creation order, that applies at
// stage to a message for any of inboxes at now.
func (c *rcptCounter) choose(rules []storedRule, stage storage.FaultStage, inboxes []string, now time.Time) (storedRule, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	recent := func(inbox string) (int, error) { return c.recent(inbox, now), nil }
	for _, r := range rules {
		if ok, _ := r.AppliesTo(stage, inboxes, recent); ok {
			return r, true
		}
	}
	return storedRule{}, false
}

// note counts a RCPT for inbox that no rule refused, when a rule counts
// it (FaultRule.Counts).
func (c *rcptCounter) note(rules []storedRule, inbox string, now time.Time) {
	if !slices.ContainsFunc(rules, func(r storedRule) bool { return r.Counts(inbox) }) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = make(map[string][]time.Time)
	}
	c.at[inbox] = append(c.at[inbox], now)
}

// forget drops the counts older than a minute at now: the sweeper's
// share, for inboxes no RCPT names again.
func (c *rcptCounter) forget(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for inbox := range c.at {
		c.recent(inbox, now)
	}
}

// checkFaults checks that every fault rule decodes, and is one
// CleanFaultRule accepts.
func checkFaults(tx *bolt.Tx, r *storage.CheckReport) {
	b := tx.Bucket(bucketFaults)
	if b == nil {
		r.Problemf("bucket %q is missing", bucketFaults)
		return
	}
	b.ForEach(func(k, v []byte) error {
		rule, err := decodeFaultRule(v)
		if err != nil {
			r.Problemf("fault rule %x: %v", k, err)
			return nil
		}
		if _, err := storage.CleanFaultRule(rule); err != nil {
			r.Problemf("fault rule %s: %v", rule.ID, err)
		}
		return nil
	})
}
