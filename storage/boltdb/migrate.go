package boltdb

import (
	"fmt"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A migration upgrades a data file by one schema version. It runs in one
// transaction, which also records the new version: a crash leaves the file
// at the old version or the new one, never between.
type migration struct {
	name string
	run  func(tx *bolt.Tx) error
}

// migrations[v-1] takes a file from schema version v to v+1, and
// schemaVersion is len(migrations)+1: adding a step is adding its line.
// A step must not use the helpers of the current layout for what it
// reads, since the layout may change again after it.
var migrations = [...]migration{
	// 1 -> 2: from now on records may be compact (records.go, flagCompact);
	// records of version 1 still read as they are, so nothing is rewritten.
	// The step exists so that a burner that knows only version 1, and
	// would misread a compact record, refuses the file instead.
	{"compact records", func(*bolt.Tx) error { return nil }},
	// 2 -> 3: the parts bucket (parts.go) holds attachment indexes. Open
	// creates it after the migrations; the step exists so that a burner
	// that knows only version 2, whose deletions would leave indexes
	// behind (and whose check would call the bucket unknown), refuses
	// the file instead.
	{"attachment index", func(*bolt.Tx) error { return nil }},
	// 3 -> 4: key records may end in a scope (keys.go): the inboxes the
	// key reaches and whether it is read-only. Records of version 3 have
	// none and read as keys that reach every inbox and may delete (SPEC
	// §8), so nothing is rewritten. The step exists so that a burner that
	// knows only version 3, which would ignore the scope and let a scoped
	// key reach everything, refuses the file instead.
	{"key scopes", func(*bolt.Tx) error { return nil }},
	// 4 -> 5: the webhook outbox (outbox.go): the events, eventsdue and
	// eventmsgs buckets, which Open creates after the migrations. The
	// step exists so that a burner that knows only version 4, which would
	// leave the events unsent and never drop them, refuses the file
	// instead.
	{"webhook outbox", func(*bolt.Tx) error { return nil }},
	// 5 -> 6: an event record may hold its message inline (outbox.go,
	// eventInline). Records of version 5 still read as they are, so
	// nothing is rewritten. The step exists so that a burner that knows
	// only version 5, which would call an inline record corrupt, refuses
	// the file instead.
	{"inline webhook events", func(*bolt.Tx) error { return nil }},
}

// migrate brings the file to schema version len(steps)+1. A new file is
// stamped with it; an older one is upgraded one step at a time, each step
// logged; a newer one is refused with ErrSchemaNew.
func migrate(bdb *bolt.DB, steps []migration, log *slog.Logger) error {
	target := len(steps) + 1
	var version int
	err := bdb.Update(func(tx *bolt.Tx) error {
		var err error
		if version, err = readSchema(tx); err != nil || version != 0 {
			return err
		}
		// A new file.
		version = target
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return meta.Put(keySchema, []byte{byte(target)})
	})
	if err != nil {
		return err
	}
	if version > target {
		return fmt.Errorf("data file has schema version %d, but this burner reads versions up to %d: %w", version, target, ErrSchemaNew)
	}
	for ; version < target; version++ {
		step, from, to := steps[version-1], version, version+1
		start := time.Now()
		log.Info("migrating the data file", "from_version", from, "to_version", to, "step", step.name)
		err := bdb.Update(func(tx *bolt.Tx) error {
			if err := step.run(tx); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keySchema, []byte{byte(to)})
		})
		if err != nil {
			return fmt.Errorf("migrate schema version %d to %d (%s): %w", from, to, step.name, err)
		}
		log.Info("data file migrated", "from_version", from, "to_version", to, "step", step.name,
			"duration_ms", time.Since(start).Milliseconds())
	}
	return nil
}
