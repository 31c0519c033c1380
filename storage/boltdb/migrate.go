package boltdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"burner/storage"

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
// reads, since the layout may change again after it. A new bucket that a
// burner without it may safely ignore needs no step (the sessions bucket,
// sessions.go): Open makes it, and a read-only Open reads its absence as
// an empty bucket.
var migrations = [...]migration{
	// 1 -> 2: from now on records may be compact (codec.go, flagCompact);
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
	// none and read as keys that reach every inbox and may delete (spec
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
	// 6 -> 7: the outbox is the outbox and outboxnew buckets (outbox.go):
	// the events, eventsdue and eventmsgs buckets move into the first, so
	// that a delivery rewrites the pages of one bucket rather than two, and
	// most often of none. Records keep their encoding. With version 7,
	// too, email records may carry a signature (codec.go, flagSignature)
	// and content records may hold their hot section in one block
	// (flagOneBlock); older records read as they are and are searched
	// without a signature until they expire. The version keeps a burner
	// that knows only version 6, which would misread both, out.
	{"outbox buckets", mergeOutbox},
	// 7 -> 8: a key's scope may be for metrics alone (keys.go,
	// scopeMetrics). Records of version 7 have no such flag and read as
	// they are, so nothing is rewritten. The step exists so that a burner
	// that knows only version 7, which would call a metrics key's record
	// corrupt, refuses the file instead.
	{"metrics keys", func(*bolt.Tx) error { return nil }},
	// 8 -> 9: an inbox's value holds the time of its newest email after
	// its count (codec.go), so that the web UI's recent inboxes cost a
	// walk of the inboxes bucket rather than a seek per inbox. The step
	// writes it for every inbox. It also keeps a burner that knows only
	// version 8, which would read the longer values as no count, out.
	{"inbox newest", addInboxNewest},
	// 9 -> 10: the auth bucket (auth.go) holds each message's
	// authentication record (spec §12). Open creates it after the
	// migrations; messages stored before have none and read as status
	// off. The step exists so that a burner that knows only version 9,
	// whose deletions would leave records behind (and whose copy and
	// backup checks would not carry or check them), refuses the file
	// instead.
	{"authentication records", func(*bolt.Tx) error { return nil }},
	// 10 -> 11: the SMTP session log (smtplog.go: the smtplog bucket) and
	// fault rules (faults.go: the faults bucket), which Open
	// creates after the migrations. The step exists so that a burner that
	// knows only version 10 refuses the file: it would deliver without
	// writing the sessions' records, never hold the log to its cap, and
	// leave the armed rules unapplied.
	{"smtp session log and fault rules", func(*bolt.Tx) error { return nil }},
}

// addInboxNewest writes, after the count of each inbox (be64 of version
// 8), the time of its newest email: the be64 Unix ms of the last key of
// the emails bucket under inbox 0x00, which version 8 lays out as name
// 0x00 be64(ms) be64(seq).
func addInboxNewest(tx *bolt.Tx) error {
	inboxes, emails := tx.Bucket([]byte("inboxes")), tx.Bucket([]byte("emails"))
	if inboxes == nil || emails == nil {
		return nil
	}
	// Collect first: a bucket is not written while it is walked.
	type entry struct{ name, value []byte }
	var all []entry
	if err := inboxes.ForEach(func(k, v []byte) error {
		// 16 bytes: a file that has the newest time already (written by
		// a later burner, then marked older) gets it again.
		if len(v) != 8 && len(v) != 16 {
			return fmt.Errorf("inbox %q count %x: %w", k, v, storage.ErrCorrupt)
		}
		all = append(all, entry{bytes.Clone(k), bytes.Clone(v[:8])})
		return nil
	}); err != nil {
		return err
	}
	c := emails.Cursor()
	for _, e := range all {
		prefix := append(e.name[:len(e.name):len(e.name)], 0)
		end := append(e.name[:len(e.name):len(e.name)], 1)
		k, _ := c.Seek(end)
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		var newest []byte
		if len(k) == len(prefix)+16 && bytes.HasPrefix(k, prefix) {
			newest = k[len(prefix) : len(prefix)+8]
		} else {
			newest = make([]byte, 8) // no email: check reports the count
		}
		if err := inboxes.Put(e.name, append(e.value, newest...)); err != nil {
			return err
		}
	}
	return nil
}

// mergeOutbox moves the events, eventsdue and eventmsgs buckets of schema
// version 6 into the outbox bucket of version 7, and removes them: an
// event never retried (no attempt, due at its receivedAt) to the 'n'
// range, any other to the 'r' range with its due key, and each message,
// under its own seq, to the 0x00 range. The messages' sequence goes on in
// outboxnew, which it makes. It reads what it moves with its own code, as
// version 6 wrote it.
func mergeOutbox(tx *bolt.Tx) error {
	events, msgs := tx.Bucket([]byte("events")), tx.Bucket([]byte("eventmsgs"))
	out, err := tx.CreateBucketIfNotExists([]byte("outbox"))
	if err != nil {
		return err
	}
	staged, err := tx.CreateBucketIfNotExists([]byte("outboxnew"))
	if err != nil {
		return err
	}
	if msgs != nil {
		if err := msgs.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return fmt.Errorf("event message key %x: %w", k, storage.ErrCorrupt)
			}
			return out.Put(append([]byte{0}, k...), bytes.Clone(v))
		}); err != nil {
			return err
		}
		if err := staged.SetSequence(max(staged.Sequence(), msgs.Sequence())); err != nil {
			return err
		}
	}
	if events != nil {
		// Version 6: key hook 0x00 be64(receivedAt ms) uuid(16), record
		// version(1) uvarint(attempts) be64(next ms) ...
		if err := events.ForEach(func(k, v []byte) error {
			i := bytes.IndexByte(k, 0)
			if i <= 0 || len(k) != i+1+24 {
				return fmt.Errorf("event key %x: %w", k, storage.ErrCorrupt)
			}
			v = bytes.Clone(v) // the bucket it is in goes
			if len(v) < 1 || v[0] != 1 && v[0] != 2 {
				return fmt.Errorf("event %x: %w", k, storage.ErrCorrupt)
			}
			attempts, w := binary.Uvarint(v[1:])
			if w <= 0 || len(v) < 1+w+8 {
				return fmt.Errorf("event %x: %w", k, storage.ErrCorrupt)
			}
			next, received := v[1+w:1+w+8], k[i+1:i+9]
			key := append(append(bytes.Clone(k[:i+1]), 'n'), k[i+1:]...)
			if attempts == 0 && bytes.Equal(next, received) {
				return out.Put(key, v)
			}
			key[i+1] = 'r'
			if err := out.Put(key, v); err != nil {
				return err
			}
			due := append(append(append(bytes.Clone(k[:i+1]), 'd'), next...), k[i+1:]...)
			return out.Put(due, nil)
		}); err != nil {
			return err
		}
	}
	for _, name := range []string{"events", "eventsdue", "eventmsgs"} {
		if err := tx.DeleteBucket([]byte(name)); err != nil && !errors.Is(err, bolt.ErrBucketNotFound) {
			return err
		}
	}
	return nil
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
