package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Fault rules (spec §13.2; storage.Engine) in the table fault_rules
// (migrate.go), which every node reads, so that a rule armed on one node
// applies on all. A use is taken with one UPDATE ... WHERE used < times:
// of two nodes racing for a rule's last use, the database lets one win.
// The RCPTs a rule with per_minute counts are rows of fault_rcpts, kept
// for a minute, and written only for inboxes such a rule covers.

// perMinuteWindow is the window of FaultRule.PerMinute.
const perMinuteWindow = time.Minute

const faultColumns = `seq, id, inbox, stage, reply, times, used, delay, disconnect, per_minute, created_at, config`

// lockFaults serialises the changes to the set of rules (creation, arming),
// so that MaxFaultRules holds across nodes: 'burn' and a number, as
// migrate.go's.
const lockFaults = 0x6275726e00000003

// storedRule is a rule with its seq.
type storedRule struct {
	seq int64
	storage.FaultRule
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// faultRules reads the rules, in creation order; with live, only those
// not spent.
func faultRules(ctx context.Context, q querier, live bool) ([]storedRule, error) {
	sql := `SELECT ` + faultColumns + ` FROM fault_rules ORDER BY seq`
	if live {
		sql = `SELECT ` + faultColumns + ` FROM fault_rules WHERE times = 0 OR used < times ORDER BY seq`
	}
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (storedRule, error) {
		var (
			r       storedRule
			id      uuid.UUID
			stage   string
			delay   int64
			created int64
		)
		err := row.Scan(&r.seq, &id, &r.Inbox, &stage, &r.Reply, &r.Times, &r.Used, &delay, &r.Disconnect, &r.PerMinute, &created, &r.Config)
		r.ID, r.Stage, r.Delay, r.CreatedAt = id.String(), storage.FaultStage(stage), time.Duration(delay), record.FromMilli(created)
		return r, err
	})
}

// insertFaultRule stores r, its id set, as the newest rule, unless the
// store holds MaxFaultRules; tx holds lockFaults.
func insertFaultRule(ctx context.Context, tx pgx.Tx, r storage.FaultRule) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM fault_rules`).Scan(&n); err != nil {
		return err
	}
	if n >= storage.MaxFaultRules {
		return storage.ErrTooManyFaultRules
	}
	_, err := tx.Exec(ctx, `INSERT INTO fault_rules (id, inbox, stage, reply, times, used, delay, disconnect, per_minute, created_at, config)
		VALUES ($1, $2, $3, $4, $5, 0, $6, $7, $8, $9, $10)`,
		r.ID, r.Inbox, string(r.Stage), r.Reply, r.Times, int64(r.Delay), r.Disconnect, r.PerMinute, r.CreatedAt.UnixMilli(), r.Config)
	return err
}

// lockFaultRules takes lockFaults for the rest of tx.
func lockFaultRules(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(lockFaults))
	return err
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
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := lockFaultRules(ctx, tx); err != nil {
			return err
		}
		return insertFaultRule(ctx, tx, r)
	})
	if err != nil {
		return storage.FaultRule{}, fmt.Errorf("create fault rule: %w", db.fail(err))
	}
	return r, nil
}

// FaultRules returns every rule in creation order (storage.Engine).
func (db *DB) FaultRules(ctx context.Context) ([]storage.FaultRule, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rules, err := faultRules(ctx, db.pool, false)
	if err != nil {
		return nil, fmt.Errorf("fault rules: %w", db.fail(err))
	}
	return rulesOf(rules), nil
}

// rulesOf returns the rules of stored, without their seqs.
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
	uid, err := storage.ParseID(id)
	if err != nil {
		return fmt.Errorf("delete fault rule %s: %w", id, err)
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM fault_rules WHERE id = $1`, uid)
	if err != nil {
		return fmt.Errorf("delete fault rule %s: %w", id, db.fail(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete fault rule %s: %w", id, storage.ErrNotFound)
	}
	return nil
}

// ArmFaultRules makes rules the configured rules (storage.Engine), under
// lockFaults: nodes that start together arm them one after the other,
// and find them armed.
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
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := lockFaultRules(ctx, tx); err != nil {
			return err
		}
		have, err := faultRules(ctx, tx, false)
		if err != nil {
			return err
		}
		plan = storage.PlanArm(rulesOf(have), want, ids, now)
		for _, i := range plan.Drop {
			if _, err := tx.Exec(ctx, `DELETE FROM fault_rules WHERE seq = $1`, have[i].seq); err != nil {
				return err
			}
		}
		for _, r := range plan.Add {
			if err := insertFaultRule(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("arm fault rules: %w", db.fail(err))
	}
	return plan.Armed, nil
}

// ApplyFaultRule returns the first rule that applies, and counts its use
// (storage.Engine): it reads the rules that are not spent, takes the first
// that applies with an UPDATE that fails when another node took its last
// use first, and then goes on to the next.
func (db *DB) ApplyFaultRule(ctx context.Context, stage storage.FaultStage, inboxes []string) (storage.FaultRule, bool, error) {
	if err := ctx.Err(); err != nil {
		return storage.FaultRule{}, false, err
	}
	r, ok, err := db.applyFaultRule(ctx, stage, inboxes)
	if err != nil {
		return storage.FaultRule{}, false, fmt.Errorf("apply fault rule: %w", db.fail(err))
	}
	return r, ok, nil
}

func (db *DB) applyFaultRule(ctx context.Context, stage storage.FaultStage, inboxes []string) (storage.FaultRule, bool, error) {
	rules, err := faultRules(ctx, db.pool, true)
	if err != nil || len(rules) == 0 {
		return storage.FaultRule{}, false, err
	}
	now := db.now()
	recent := make(map[string]int) // by inbox, counted once
	count := func(inbox string) (int, error) {
		if n, ok := recent[inbox]; ok {
			return n, nil
		}
		var n int
		err := db.pool.QueryRow(ctx, `SELECT count(*) FROM fault_rcpts WHERE inbox = $1 AND at > $2`,
			inbox, now.Add(-perMinuteWindow).UnixMilli()).Scan(&n)
		recent[inbox] = n
		return n, err
	}
	for _, r := range rules {
		applies, err := r.AppliesTo(stage, inboxes, count)
		if err != nil {
			return storage.FaultRule{}, false, err
		}
		if !applies {
			continue
		}
		err = db.pool.QueryRow(ctx, `UPDATE fault_rules SET used = used + 1 WHERE seq = $1 AND (times = 0 OR used < times) RETURNING used`,
			r.seq).Scan(&r.Used)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // spent or deleted meanwhile, on this node or another
		}
		if err != nil {
			return storage.FaultRule{}, false, err
		}
		return r.FaultRule, true, nil
	}
	if stage == storage.FaultAtRcpt && slices.ContainsFunc(rules, func(r storedRule) bool { return r.Counts(inboxes[0]) }) {
		if _, err := db.pool.Exec(ctx, `INSERT INTO fault_rcpts (inbox, at) VALUES ($1, $2)`, inboxes[0], now.UnixMilli()); err != nil {
			return storage.FaultRule{}, false, err
		}
	}
	return storage.FaultRule{}, false, nil
}

// forgetRCPTs deletes the RCPTs counted more than a minute ago: the
// sweeper's share, for inboxes no RCPT names again.
func (db *DB) forgetRCPTs(ctx context.Context) error {
	_, err := db.pool.Exec(ctx, `DELETE FROM fault_rcpts WHERE at <= $1`, db.now().Add(-perMinuteWindow).UnixMilli())
	return err
}

// checkFaults checks that every fault rule is one CleanFaultRule accepts.
func checkFaults(ctx context.Context, tx pgx.Tx, r *storage.CheckReport) error {
	rules, err := faultRules(ctx, tx, false)
	if err != nil {
		return err
	}
	for _, rule := range rules {
		if _, err := storage.CleanFaultRule(rule.FaultRule); err != nil {
			r.Problemf("fault rule %s: %v", rule.ID, err)
		}
	}
	return nil
}
