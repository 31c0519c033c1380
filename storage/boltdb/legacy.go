package boltdb

import (
	"fmt"

	"burner/storage"
	"burner/storage/internal/record"

	"github.com/klauspost/compress/s2"
)

// The content records of earlier schemas, which are read and never
// written (see codec.go for the layout of each): a record without
// flagCompact, decoded whole and in place, and a compact one without
// flagOneBlock, whose search text and body section are two s2 blocks, the
// text the dictionary of the section. A file keeps them until their
// emails go: rewriting them would cost an upgrade a pass over every
// message, for records that read as well as new ones.

// decodeOld decodes the rest of an old record: after its flags, a
// uvarint-prefixed body, the header section, a uvarint-prefixed plain
// text, the links section and the search text to the end.
func (c *content) decodeOld(rest []byte) error {
	var ok bool
	if c.body, rest, ok = record.CutString(rest); !ok {
		return storage.ErrCorrupt
	}
	if c.headers, rest, ok = record.CutHeaders(rest); !ok {
		return storage.ErrCorrupt
	}
	if c.plain, rest, ok = record.CutString(rest); !ok {
		return storage.ErrCorrupt
	}
	if c.links, rest, ok = record.CutStrings(rest); !ok {
		return storage.ErrCorrupt
	}
	c.text = rest
	if !c.hasBody {
		c.body = nil
	}
	return nil
}

// decodeTwoBlocks decodes the search text of a compact record written
// before flagOneBlock, rest after its flags, into buf, grown as needed,
// and returns buf; decodeOldSection decodes the rest.
func (c *content) decodeTwoBlocks(rest, buf []byte) (content, []byte, error) {
	block, section, ok := record.CutString(rest)
	if !ok {
		return content{}, buf, storage.ErrCorrupt
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return content{}, buf, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	if cap(buf) < n {
		buf = make([]byte, 0, 2*n+4096) // room for the section after it
	}
	if c.text, err = s2.Decode(buf[:cap(buf)], block); err != nil {
		return content{}, buf, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	c.section = section
	return *c, buf, nil
}

// decodeOldSection decodes the body section that decodeTwoBlocks left
// compressed, after the text at the start of buf, and returns buf (grown
// when it had no room).
func (c *content) decodeOldSection(buf []byte) ([]byte, error) {
	n, err := s2.DecodedLen(c.section)
	if err != nil {
		return buf, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	t := len(c.text)
	if cap(buf) < t+n {
		grown := make([]byte, t, t+n+4096)
		copy(grown, c.text)
		buf, c.text = grown, grown[:t:t]
	}
	var dec []byte
	if d := textDict(c.text); d != nil {
		dec, err = d.Decode(buf[t:cap(buf)], c.section)
	} else {
		dec, err = s2.Decode(buf[t:cap(buf)], c.section)
	}
	if err != nil {
		return buf, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	if err := c.parseSection(dec); err != nil {
		return buf, err
	}
	c.hot = buf[:t+len(dec)]
	c.section = nil
	return buf, nil
}

// textDict returns the s2 dictionary of the body section of a record
// written before flagOneBlock: the search text, or its last
// s2.MaxDictSize bytes; nil when it is too short to be one.
func textDict(text []byte) *s2.Dict {
	if len(text) < s2.MinDictSize {
		return nil
	}
	if len(text) > s2.MaxDictSize {
		text = text[len(text)-s2.MaxDictSize:]
	}
	return s2.MakeDictManual(text, 0)
}
