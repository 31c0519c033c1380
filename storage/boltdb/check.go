package boltdb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"

	bolt "go.etcd.io/bbolt"
)

// Check verifies the file: bbolt's own consistency (every page reachable
// or free, once), then that burner's buckets agree with each other: every
// email record decodes and is indexed by its id, the inbox counts are the
// numbers of emails, each message's reference count is the number of
// emails that share it and it has its raw source, every email's search
// signature is its message's, every attachment index and authentication
// record decodes and belongs to a message, every key has its hash entry,
// every UI session record decodes, the SMTP session log's records decode,
// are counted and indexed, and every fault rule decodes. It reads
// everything, so it takes a while on a large file.
//
// bbolt's check reads the free list, which writers change, so Check holds
// the write lock while it runs: mail waits (it is not refused) until it
// is done. It writes nothing.
func (db *DB) Check(ctx context.Context) (storage.CheckReport, error) {
	if err := ctx.Err(); err != nil {
		return storage.CheckReport{}, err
	}
	// Read-only, the file has no writer at all (bbolt's shared lock keeps
	// them out), so a read transaction is as steady.
	tx, err := db.bolt.Begin(!db.readOnly)
	if err != nil {
		return storage.CheckReport{}, fmt.Errorf("check: %w", err)
	}
	defer tx.Rollback()
	var r storage.CheckReport
	r.FileBytes = tx.Size()
	for err := range tx.Check() {
		r.Problemf("bbolt: %v", err)
	}
	if err := ctx.Err(); err != nil {
		return storage.CheckReport{}, err
	}
	for _, name := range [][]byte{bucketMeta, bucketEmails, bucketIDs, bucketInboxes, bucketContents, bucketRaw, bucketParts, bucketAuth, bucketKeys, bucketKeyHashes} {
		if tx.Bucket(name) == nil {
			r.Problemf("bucket %q is missing", name)
		}
	}
	if !r.OK() {
		return r, nil // too broken to read on
	}
	if v := tx.Bucket(bucketMeta).Get(keySchema); len(v) == 1 {
		r.SchemaVersion = int(v[0])
	}
	if r.SchemaVersion != schemaVersion {
		r.Problemf("schema version is %d, want %d", r.SchemaVersion, schemaVersion)
	}
	checkEmails(tx, &r)
	if err := ctx.Err(); err != nil {
		return storage.CheckReport{}, err
	}
	checkParts(tx, &r)
	checkAuth(tx, &r)
	checkKeys(tx, &r)
	checkSessions(tx, &r)
	checkSMTPLog(tx, &r)
	checkFaults(tx, &r)
	return r, nil
}

// checkSignature checks that the signature of the email record v at key k
// is the one its message makes: a wrong one would hide the email from the
// searches it matches. A record without one (written before signatures)
// has nothing to check.
func checkSignature(contents *bolt.Bucket, k, v []byte, r *storage.CheckReport) {
	ev, err := viewEmail(v)
	if err != nil || ev.sig == nil {
		return // a damaged record is reported where it is decoded
	}
	ct, err := decodeContent(contents.Get(ev.ckey))
	if err != nil {
		return // reported with its message
	}
	var subject *string
	if ev.subject != nil {
		s := string(ev.subject)
		subject = &s
	}
	if want := match.EmailSignature(ct.text, subject, string(ev.fromName), string(ev.from)); !bytes.Equal(ev.sig, want) {
		r.Problemf("email %x: its signature is not its message's, so searches may miss it", k)
	}
}

// checkEmails checks the emails bucket against ids, inboxes, contents and
// raw (codec.go documents the layout).
func checkEmails(tx *bolt.Tx, r *storage.CheckReport) {
	ids, contents, raw := tx.Bucket(bucketIDs), tx.Bucket(bucketContents), tx.Bucket(bucketRaw)
	counts := make(map[string]int)    // inbox -> emails counted
	newest := make(map[string][]byte) // inbox -> the key of its newest email
	refs := make(map[[8]byte]uint64)  // content key -> emails that point to it
	tx.Bucket(bucketEmails).ForEach(func(k, v []byte) error {
		r.Emails++
		if len(k) < 18 || k[len(k)-17] != 0 {
			r.Problemf("email key %x is malformed", k)
			return nil
		}
		inbox := keyInbox(k)
		if !storage.ValidLocalPart(string(inbox)) || !bytes.Equal(inbox, inboxName(string(inbox))) {
			r.Problemf("email key %x names no valid inbox", k)
		}
		counts[string(inbox)]++
		newest[string(inbox)] = k // keys sort by time within an inbox
		e, ckey, err := decodeEmail(k, v)
		if err != nil {
			r.Problemf("email %x: %v", k, err)
			return nil
		}
		if got := ids.Get(recordID(v)); !bytes.Equal(got, k) {
			r.Problemf("email %s: the ids index points to %x, not to its key %x", e.ID, got, k)
		}
		refs[[8]byte(ckey)]++
		checkSignature(contents, k, v, r)
		return nil
	})
	tx.Bucket(bucketIDs).ForEach(func(id, key []byte) error {
		rec := tx.Bucket(bucketEmails).Get(key)
		if len(id) != 16 || rec == nil || len(rec) < emailFixedLen || !bytes.Equal(recordID(rec), id) {
			r.Problemf("ids entry %x points to %x, which is not that email", id, key)
		}
		return nil
	})
	if n := ids.Stats().KeyN; n != r.Emails {
		r.Problemf("the ids index has %d entries for %d emails", n, r.Emails)
	}
	tx.Bucket(bucketInboxes).ForEach(func(inbox, v []byte) error {
		r.Inboxes++
		got, at, ok := decodeInbox(v)
		if want := counts[string(inbox)]; got != want || !ok {
			r.Problemf("inbox %q counts %d emails (%x) but holds %d", inbox, got, v, want)
		} else if k := newest[string(inbox)]; k != nil && keyMilli(k) != at {
			r.Problemf("inbox %q says its newest email came at %d ms, but it came at %d ms", inbox, at, keyMilli(k))
		}
		delete(counts, string(inbox))
		return nil
	})
	for inbox, n := range counts {
		r.Problemf("inbox %q holds %d emails but has no count", inbox, n)
	}
	contents.ForEach(func(ckey, v []byte) error {
		r.Messages++
		n, w := contentRefs(v)
		if w <= 0 || len(ckey) != 8 {
			r.Problemf("message %x: unreadable record", ckey)
			return nil
		}
		if _, err := decodeContent(v); err != nil {
			r.Problemf("message %x: %v", ckey, err)
		}
		if want := refs[[8]byte(ckey)]; n != want {
			r.Problemf("message %x counts %d references but %d emails point to it", ckey, n, want)
		}
		delete(refs, [8]byte(ckey))
		if raw.Get(ckey) == nil {
			r.Problemf("message %x has no raw source", ckey)
		}
		return nil
	})
	for ckey, n := range refs {
		r.Problemf("%d emails point to message %x, which does not exist", n, ckey)
	}
	raw.ForEach(func(ckey, _ []byte) error {
		if contents.Get(ckey) == nil {
			r.Problemf("raw source %x belongs to no message", ckey)
		}
		return nil
	})
}

// checkKeys checks that keys and keyhashes (keys.go) index each other.
func checkKeys(tx *bolt.Tx, r *storage.CheckReport) {
	hashes := tx.Bucket(bucketKeyHashes)
	tx.Bucket(bucketKeys).ForEach(func(id, v []byte) error {
		r.Keys++
		k, hash, err := decodeKey(id, v)
		if err != nil {
			r.Problemf("key %q: %v", id, err)
			return nil
		}
		if got := hashes.Get(hash); !bytes.Equal(got, id) {
			r.Problemf("key %q (%s): its hash points to %q", k.ID, k.Name, got)
		}
		return nil
	})
	hashes.ForEach(func(hash, id []byte) error {
		v := tx.Bucket(bucketKeys).Get(id)
		if v == nil || len(hash) != sha256.Size {
			r.Problemf("key hash %x points to key %q, which does not exist", hash, id)
			return nil
		}
		if _, h, err := decodeKey(id, v); err == nil && !bytes.Equal(h, hash) {
			r.Problemf("key hash %x points to key %q, whose hash differs", hash, id)
		}
		return nil
	})
}

// checkParts checks that every attachment index decodes and belongs to a
// stored message.
func checkParts(tx *bolt.Tx, r *storage.CheckReport) {
	contents := tx.Bucket(bucketContents)
	tx.Bucket(bucketParts).ForEach(func(ckey, v []byte) error {
		if contents.Get(ckey) == nil {
			r.Problemf("attachment index %x belongs to no message", ckey)
			return nil
		}
		if _, _, err := record.DecodeAttachments(v); err != nil {
			r.Problemf("attachment index %x: %v", ckey, err)
		}
		return nil
	})
}
