package record

import (
	"encoding/binary"
	"fmt"

	"burner/storage"
)

// An attachment index is encoded once for every engine, so that both read
// what `burner copy` moves between them as it is:
//
//	version(1) flags(1) uvarint(rules) uvarint(more) uvarint(number of files)
//	for each file: uvarint-prefixed filename, content type, content id; uvarint(size)
//
// flags holds attachmentsPartial when the walk stopped before the end of
// the message. A record of another version reads as no index.
const (
	attachmentsVersion = 1
	attachmentsPartial = 1 << 0
)

// ErrCorruptIndex means an encoded attachment index is damaged. It wraps
// storage.ErrCorrupt, as the damage of any record does.
var ErrCorruptIndex = fmt.Errorf("%w: attachment index", storage.ErrCorrupt)

// EncodeAttachments encodes an attachment index for an engine to store.
func EncodeAttachments(a storage.Attachments) []byte {
	var flags byte
	if a.Partial {
		flags |= attachmentsPartial
	}
	b := []byte{attachmentsVersion, flags}
	b = binary.AppendUvarint(b, uint64(a.Rules))
	b = binary.AppendUvarint(b, uint64(a.More))
	b = binary.AppendUvarint(b, uint64(len(a.Files)))
	for _, f := range a.Files {
		b = AppendString(b, f.Filename)
		b = AppendString(b, f.ContentType)
		b = AppendString(b, f.ContentID)
		b = binary.AppendUvarint(b, uint64(f.Size))
	}
	return b
}

// DecodeAttachments decodes an index that EncodeAttachments made; ok is
// false for a version it does not know (its reader computes the index
// again), and the error ErrCorruptIndex for a damaged record.
func DecodeAttachments(v []byte) (a storage.Attachments, ok bool, err error) {
	if len(v) < 2 {
		return storage.Attachments{}, false, ErrCorruptIndex
	}
	if v[0] != attachmentsVersion {
		return storage.Attachments{}, false, nil
	}
	a.Partial = v[1]&attachmentsPartial != 0
	b := v[2:]
	var nums [3]uint64
	for i := range nums {
		n, w := binary.Uvarint(b)
		if w <= 0 {
			return storage.Attachments{}, false, ErrCorruptIndex
		}
		nums[i], b = n, b[w:]
	}
	rules, more, files := nums[0], nums[1], nums[2]
	// Each file takes at least four bytes: a count beyond that is damage,
	// not a reason to allocate.
	if rules > 1<<31 || more > 1<<31 || files > uint64(len(b))/4 {
		return storage.Attachments{}, false, ErrCorruptIndex
	}
	a.Rules, a.More = int(rules), int(more)
	if files > 0 {
		a.Files = make([]storage.Attachment, files)
	}
	for i := range a.Files {
		var s [3][]byte
		for j := range s {
			var ok bool
			if s[j], b, ok = CutString(b); !ok {
				return storage.Attachments{}, false, ErrCorruptIndex
			}
		}
		size, w := binary.Uvarint(b)
		if w <= 0 || size > 1<<62 {
			return storage.Attachments{}, false, ErrCorruptIndex
		}
		b = b[w:]
		a.Files[i] = storage.Attachment{Filename: string(s[0]), ContentType: string(s[1]), ContentID: string(s[2]), Size: int64(size)}
	}
	if len(b) != 0 {
		return storage.Attachments{}, false, ErrCorruptIndex
	}
	return a, true, nil
}
