package record

import (
	"errors"
	"fmt"
	"testing"

	"burner/storage"
)

func TestAttachmentsEncoding(t *testing.T) {
	full := EncodeAttachments(storage.Attachments{Files: []storage.Attachment{{Filename: "a", ContentType: "b", ContentID: "c", Size: 1 << 40}}, More: 1})
	// Every cut of a sound record is damage, never a panic or a short index.
	for n := range len(full) {
		if _, ok, err := DecodeAttachments(full[:n]); ok || !errors.Is(err, ErrCorruptIndex) {
			t.Errorf("DecodeAttachments(first %d of %d bytes) = %v, %v; want ErrCorruptIndex", n, len(full), ok, err)
		}
	}
	if _, ok, err := DecodeAttachments(append(full, 0)); ok || !errors.Is(err, ErrCorruptIndex) {
		t.Errorf("decodeParts with a trailing byte = %v, %v; want ErrCorruptIndex", ok, err)
	}
	// A count of files the record cannot hold is refused before allocating.
	if _, _, err := DecodeAttachments([]byte{attachmentsVersion, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}); !errors.Is(err, ErrCorruptIndex) {
		t.Errorf("decodeParts of a huge count = %v, want ErrCorruptIndex", err)
	}
	// Another version reads as no index, to be computed again.
	other := append([]byte{attachmentsVersion + 1}, full[1:]...)
	if a, ok, err := DecodeAttachments(other); ok || err != nil {
		t.Errorf("decodeParts of version %d = %+v, %v, %v; want no index and no error", attachmentsVersion+1, a, ok, err)
	}
	if got := fmt.Sprintf("%x", EncodeAttachments(storage.Attachments{Partial: true, Rules: 2, More: 300})); got != "010102ac0200" {
		t.Errorf("encodeParts = %s, want 010102ac0200 (the documented layout)", got)
	}
}
