package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"burner/storage"
	"burner/storage/internal/keyring"
	"burner/storage/internal/record"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// keyCache is what a node remembers of keys: the keys it checked, to
// authenticate them while the database cannot be reached (spec §10), and
// the "last used" times not yet written.
type keyCache struct {
	mu      sync.Mutex
	checked map[storage.KeyHash]cachedKey
	usage   keyring.Usage
}

type cachedKey struct {
	key storage.Key
	at  time.Time // when the database last said the key exists
}

// outageGrace is how long a node trusts a key it checked when the
// database cannot be reached. A revocation is seen at once otherwise:
// every Authenticate asks the database.
const outageGrace = 60 * time.Second

const keyColumns = `id, name, created, last_used, inboxes, read_only, metrics`

func scanKey(row pgx.Row) (storage.Key, error) {
	var (
		k             storage.Key
		created, last int64
	)
	if err := row.Scan(&k.ID, &k.Name, &created, &last, &k.Scope.Inboxes, &k.Scope.ReadOnly, &k.Scope.Metrics); err != nil {
		return storage.Key{}, err
	}
	if len(k.Scope.Inboxes) == 0 {
		k.Scope.Inboxes = nil
	}
	k.Created = record.FromMilli(created)
	if last != 0 {
		k.LastUsed = record.FromMilli(last)
	}
	return k, nil
}

// CreateKey makes a new API key called name with scope and returns it
// with its secret, which is never stored. It returns ErrKeyExists when
// the name is taken.
func (db *DB) CreateKey(ctx context.Context, name string, scope storage.Scope) (storage.Key, string, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, "", err
	}
	k, secret, hash, err := keyring.New(name, scope, db.now())
	if err != nil {
		return storage.Key{}, "", err
	}
	if err := db.insertKey(ctx, k, hash); err != nil {
		return storage.Key{}, "", err
	}
	return k, secret, nil
}

// CreateKeyWithSecret makes a new API key called name with scope whose
// secret is secret (storage.ValidSecret, or ErrBadSecret). It returns
// ErrKeyExists when the name is taken or a key has that secret: of nodes
// that start together with one BURNER_KEY, one makes the key.
func (db *DB) CreateKeyWithSecret(ctx context.Context, name string, scope storage.Scope, secret string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	k, hash, err := keyring.WithSecret(name, scope, secret, db.now())
	if err != nil {
		return storage.Key{}, err
	}
	if err := db.insertKey(ctx, k, hash); err != nil {
		return storage.Key{}, err
	}
	return k, nil
}

// insertKey stores the new key k whose secret hashes to hash, or returns
// ErrKeyExists when its name is taken or a key has that hash.
func (db *DB) insertKey(ctx context.Context, k storage.Key, hash storage.KeyHash) error {
	inboxes := k.Scope.Inboxes
	if inboxes == nil {
		inboxes = []string{}
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO keys (id, name, created, hash, inboxes, read_only, metrics) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.Name, k.Created.UnixMilli(), hash[:], inboxes, k.Scope.ReadOnly, k.Scope.Metrics)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && (pgErr.ConstraintName == "keys_name_key" || pgErr.ConstraintName == "keys_hash_key") {
		err = storage.ErrKeyExists
	}
	if err != nil {
		return fmt.Errorf("create key %q: %w", k.Name, db.fail(err))
	}
	return nil
}

// Keys returns every API key, oldest first (then by name).
func (db *DB) Keys(ctx context.Context) ([]storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `SELECT `+keyColumns+` FROM keys ORDER BY created, name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", db.fail(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.Key, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", db.fail(err))
	}
	for i := range out {
		db.keys.usage.Apply(&out[i])
	}
	return out, nil
}

// Key returns the key with id, or ErrNotFound (also once it is revoked).
func (db *DB) Key(ctx context.Context, id string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	k, err := scanKey(db.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM keys WHERE id = $1`, id))
	if err != nil {
		return storage.Key{}, fmt.Errorf("key %q: %w", id, db.fail(notFound(err)))
	}
	db.keys.usage.Apply(&k)
	return k, nil
}

// RevokeKey deletes the key whose id, or else whose name, is idOrName, and
// returns it; ErrNotFound when there is none. Every node refuses it from
// its next request: Authenticate asks the database each time.
func (db *DB) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	k, err := scanKey(db.pool.QueryRow(ctx, `DELETE FROM keys WHERE id = (
		SELECT id FROM keys WHERE id = $1 UNION ALL SELECT id FROM keys WHERE name = $1 LIMIT 1)
		RETURNING `+keyColumns, idOrName))
	if err != nil {
		return storage.Key{}, fmt.Errorf("revoke key %q: %w", idOrName, db.fail(notFound(err)))
	}
	db.keys.usage.Forget(&k)
	db.keys.mu.Lock()
	for h, c := range db.keys.checked {
		if c.key.ID == k.ID {
			delete(db.keys.checked, h)
		}
	}
	db.keys.mu.Unlock()
	return k, nil
}

// Authenticate returns the key whose secret is secret, or ErrNotFound,
// and notes its use in memory: "last used" is written at most once a
// minute (Options.UsageFlushInterval). When the database cannot be
// reached, a key this node checked in the last minute is taken from
// memory (spec §10); other keys fail with storage.ErrUnavailable.
func (db *DB) Authenticate(ctx context.Context, secret string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	if !keyring.Plausible(secret) {
		return storage.Key{}, fmt.Errorf("authenticate: %w", storage.ErrNotFound)
	}
	hash := keyring.Hash(secret)
	now := record.Milli(db.now())
	k, err := db.keyByHash(ctx, hash)
	db.keys.mu.Lock()
	defer db.keys.mu.Unlock()
	switch {
	case err == nil:
		db.keys.checked[hash] = cachedKey{key: k, at: time.Now()}
	case errors.Is(err, storage.ErrUnavailable):
		c, ok := db.keys.checked[hash]
		if !ok || time.Since(c.at) > outageGrace {
			return storage.Key{}, fmt.Errorf("authenticate: %w", err)
		}
		k = c.key
	default:
		delete(db.keys.checked, hash)
		return storage.Key{}, fmt.Errorf("authenticate: %w", err)
	}
	k.LastUsed = now
	if !db.readOnly { // inspection writes nothing, usage included
		db.keys.usage.Note(k.ID, now)
	}
	return k, nil
}

// KeyBySecret returns the key whose secret is secret, or ErrNotFound, as
// Authenticate does but without noting a use. It asks the database each
// time: storage.ErrUnavailable when it cannot be reached.
func (db *DB) KeyBySecret(ctx context.Context, secret string) (storage.Key, error) {
	if err := ctx.Err(); err != nil {
		return storage.Key{}, err
	}
	if !keyring.Plausible(secret) {
		return storage.Key{}, fmt.Errorf("key by secret: %w", storage.ErrNotFound)
	}
	k, err := db.keyByHash(ctx, keyring.Hash(secret))
	if err != nil {
		return storage.Key{}, fmt.Errorf("key by secret: %w", err)
	}
	db.keys.usage.Apply(&k)
	return k, nil
}

// keyByHash returns the key whose secret hashes to hash, as the database
// holds it, or ErrNotFound.
func (db *DB) keyByHash(ctx context.Context, hash storage.KeyHash) (storage.Key, error) {
	k, err := scanKey(db.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM keys WHERE hash = $1`, hash[:]))
	return k, db.fail(notFound(err))
}

func (db *DB) flushUsageEvery(ctx context.Context, every time.Duration) {
	defer db.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failed flush keeps the times for the next tick.
			_ = db.flushUsage(ctx)
		}
	}
}

// flushUsage writes the "last used" times noted since the last flush, in
// one statement. On failure it keeps them for the next try.
func (db *DB) flushUsage(ctx context.Context) error {
	pending := db.keys.usage.Take()
	db.keys.mu.Lock()
	// The outage cache only needs keys checked recently.
	for h, c := range db.keys.checked {
		if time.Since(c.at) > outageGrace {
			delete(db.keys.checked, h)
		}
	}
	db.keys.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	ids := make([]string, 0, len(pending))
	times := make([]int64, 0, len(pending))
	for id, t := range pending {
		ids = append(ids, id)
		times = append(times, t.UnixMilli())
	}
	_, err := db.pool.Exec(ctx, `UPDATE keys SET last_used = greatest(keys.last_used, u.t)
		FROM unnest($1::text[], $2::bigint[]) AS u(id, t) WHERE keys.id = u.id`, ids, times)
	if err != nil {
		db.keys.usage.Restore(pending)
		return fmt.Errorf("flush key usage: %w", db.fail(err))
	}
	return nil
}
