package boltdb

import (
	"context"
	"encoding/binary"
	"fmt"

	"burner/storage"

	bolt "go.etcd.io/bbolt"
)

// The parts layout:
//
//	parts: be64(content seq) -> attachment index
//
// It is keyed like contents and raw, so the emails of one message share one
// index, and deleteEmail drops it with the last reference to the content.
// An index is computed by its reader (the server walks the MIME tree; this
// package imports no MIME parser) the first time a message's files are
// asked for, so that delivery pays nothing for it. An index is
//
//	version(1) flags(1) uvarint(rules) uvarint(more) uvarint(number of files)
//	for each file: uvarint-prefixed filename, content type, content id; uvarint(size)
//
// version is partsVersion; a record of another version reads as no index,
// so that its reader computes it again and overwrites it. flags has
// partsPartial when the walk stopped before the end of the message. rules
// is the reader's own version of how it finds files (Attachments.Rules).
const (
	partsVersion = 1
	partsPartial = 1 << 0
)

// Attachments returns the stored attachment index of the message of email
// id, and false when none is stored yet. It returns ErrNotFound when there
// is no email with id.
func (db *DB) Attachments(ctx context.Context, id string) (storage.Attachments, bool, error) {
	var (
		a  storage.Attachments
		ok bool
	)
	err := db.view(ctx, id, func(tx *bolt.Tx, _, rec []byte) error {
		v := tx.Bucket(bucketParts).Get(recordContentKey(rec))
		if v == nil {
			return nil
		}
		var err error
		a, ok, err = decodeParts(v)
		return err
	})
	if err != nil {
		return storage.Attachments{}, false, fmt.Errorf("attachments %s: %w", id, err)
	}
	return a, ok, nil
}

// PutAttachments stores a as the attachment index of the message of email
// id, for every email that shares the message. It returns ErrNotFound when
// there is no email with id (it may have been deleted since its source was
// read), and an error wrapping ErrFull when the file has no room for it, as
// Deliver would: an index is a convenience, and mail comes first.
func (db *DB) PutAttachments(ctx context.Context, id string, a storage.Attachments) error {
	v := encodeParts(a)
	if err := db.checkRoom(len(v)); err != nil {
		return fmt.Errorf("put attachments %s: %w", id, err)
	}
	err := db.update(ctx, id, func(tx *bolt.Tx, _, rec []byte) error {
		return tx.Bucket(bucketParts).Put(recordContentKey(rec), v)
	})
	if err != nil {
		return fmt.Errorf("put attachments %s: %w", id, err)
	}
	return nil
}

func encodeParts(a storage.Attachments) []byte {
	var flags byte
	if a.Partial {
		flags |= partsPartial
	}
	b := []byte{partsVersion, flags}
	b = binary.AppendUvarint(b, uint64(a.Rules))
	b = binary.AppendUvarint(b, uint64(a.More))
	b = binary.AppendUvarint(b, uint64(len(a.Files)))
	for _, f := range a.Files {
		b = appendString(b, f.Filename)
		b = appendString(b, f.ContentType)
		b = appendString(b, f.ContentID)
		b = binary.AppendUvarint(b, uint64(f.Size))
	}
	return b
}

// decodeParts decodes an index; ok is false for a version it does not
// know, and the error errCorrupt for a damaged record.
func decodeParts(v []byte) (a storage.Attachments, ok bool, err error) {
	if len(v) < 2 {
		return storage.Attachments{}, false, errCorrupt
	}
	if v[0] != partsVersion {
		return storage.Attachments{}, false, nil
	}
	a.Partial = v[1]&partsPartial != 0
	b := v[2:]
	var nums [3]uint64
	for i := range nums {
		n, w := binary.Uvarint(b)
		if w <= 0 {
			return storage.Attachments{}, false, errCorrupt
		}
		nums[i], b = n, b[w:]
	}
	rules, more, files := nums[0], nums[1], nums[2]
	// Each file takes at least four bytes: a count beyond that is damage,
	// not a reason to allocate.
	if rules > 1<<31 || more > 1<<31 || files > uint64(len(b))/4 {
		return storage.Attachments{}, false, errCorrupt
	}
	a.Rules, a.More = int(rules), int(more)
	if files > 0 {
		a.Files = make([]storage.Attachment, files)
	}
	for i := range a.Files {
		var s [3][]byte
		for j := range s {
			var ok bool
			if s[j], b, ok = cutString(b); !ok {
				return storage.Attachments{}, false, errCorrupt
			}
		}
		size, w := binary.Uvarint(b)
		if w <= 0 || size > 1<<62 {
			return storage.Attachments{}, false, errCorrupt
		}
		b = b[w:]
		a.Files[i] = storage.Attachment{Filename: string(s[0]), ContentType: string(s[1]), ContentID: string(s[2]), Size: int64(size)}
	}
	if len(b) != 0 {
		return storage.Attachments{}, false, errCorrupt
	}
	return a, true, nil
}
