package boltdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// The email layout:
//
//	emails:   lower(localpart) 0x00 be64(receivedAt unix ms) be64(seq) -> email record
//	ids:      uuid (16 bytes)                                         -> emails key
//	inboxes:  lower(localpart)                                        -> be64(number of emails) be64(newest receivedAt unix ms)
//	contents: be64(content seq)                                       -> content record
//	raw:      be64(content seq)                                       -> the cold section (below)
//
// A local part never contains 0x00, so "alice" 0x00 is a prefix of alice's
// keys only (not of "alice+x" or "alicf"), and within it keys sort by time,
// then by seq, the emails bucket's sequence at commit: listing newest first is
// a seek past the prefix and a walk backwards that reads only what it returns.
// The inboxes bucket counts each inbox's emails, so that the per-inbox cap
// costs no scan and the sweeper visits each inbox once, and holds the
// time of its newest email, so that the recent inboxes (RecentInboxes)
// cost a walk of that bucket, not a seek per inbox (schema 9; before, the
// count alone).
//
// The body, search text, headers and raw source are stored once per message
// and shared by its recipients' emails (a content record counts its
// references), so a message to 100 recipients does not cost 100 copies.
//
// An email record is
//
//	version(1) flags(1) id(16) contentKey(8)
//	    with flagSignature, a uvarint-prefixed signature (match.EmailSignature)
//	    uvarint-prefixed: to, from, fromName, subject
//
// The signature lets a body filter or a search rule an email out from its
// record, without parsing the rest of it or reading its content. It is in
// the email record rather than the content one because there it costs the
// disk its bytes alone: a content record is about half a page, and 64 more
// bytes in each would put one a page rather than two (39 MB per 10,000
// messages instead of 34.5).
//
// and a content record is uvarint(refs) flags(1) and, with flagCompact and
// flagOneBlock (every record written since schema 7), what List and Email
// read, the hot section, in one s2 block (github.com/klauspost/compress/s2):
//
//	uvarint(length of the search text)
//	s2 block, to the end, of
//	    the search text, the Text case-folded, each line once
//	    the body section:
//	        uvarint-prefixed body
//	        uvarint(number of fields) uvarint-prefixed: name, value for each header field
//
// Records written before flagOneBlock (flagCompact alone) hold the search
// text in a uvarint-prefixed s2 block of its own, then the body section in
// an s2 block with the search text as its dictionary, so that a body
// filter decoded the text alone. Signatures now rule out nearly every
// email a filter does not take before its content is read, and s2's
// dictionary encoder (in Go, and a new 32 KB table for every dictionary)
// cost a tenth of a delivery's CPU and a fifth of the bytes it allocated.
//
// The raw value of a compact record holds what only Raw and Content read,
// the cold section, in a zstd frame whose raw dictionary (coldDictID) is
// the hot section decoded, which the raw source mostly repeats:
//
//	uvarint-prefixed plain text
//	uvarint(number of links) uvarint-prefixed link for each
//	the message as received, to the end
//
// A content record without flagCompact was written before (it is read,
// never written): after its flags come a uvarint-prefixed body, the header
// section (names lower-cased, values folded), a uvarint-prefixed plain
// text, the links section and the search text to the end; its raw value
// is the message as received.
const (
	emailVersion   = 1
	flagRead       = 1 << 0
	flagHasSubject = 1 << 1
	flagSignature  = 1 << 2     // email record: a signature follows the content key
	flagHasBody    = 1 << 0     // content record: the message has a body
	flagCompact    = 1 << 1     // content record: s2 blocks, with the cold section in raw
	flagOneBlock   = 1 << 2     // content record: the hot section in one s2 block
	emailFixedLen  = 2 + 16 + 8 // version, flags, id, content key
)

// inboxName returns storage.InboxName(localPart), as an emails key begins.
func inboxName(localPart string) []byte {
	return storage.AppendInboxName(make([]byte, 0, len(localPart)+1), localPart) // room for inboxPrefix's 0x00
}

// inboxPrefix returns lower(localPart) 0x00, the prefix of the inbox's keys.
func inboxPrefix(localPart string) []byte { return append(inboxName(localPart), 0) }

// prefixEnd returns the first key past every key with prefix (an inbox
// prefix ends in 0x00, which becomes 0x01).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	end[len(end)-1]++
	return end
}

// emailKey returns inbox 0x00 be64(t in unix ms) be64(seq).
func emailKey(inbox []byte, t time.Time, seq uint64) []byte {
	k := make([]byte, 0, len(inbox)+17)
	k = append(k, inbox...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(t.UnixMilli()))
	return binary.BigEndian.AppendUint64(k, seq)
}

// keyInbox returns the inbox name of an emails key (its prefix without 0x00).
func keyInbox(key []byte) []byte { return key[:len(key)-17] }

func keyTime(key []byte) time.Time {
	return record.FromMilli(int64(keyMilli(key)))
}

// keyMilli returns the time of the emails key key, in Unix ms.
func keyMilli(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(key)-16:]) }

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// inboxLen is the length of an inboxes value: the count, then the newest.
const inboxLen = 16

// encodeInbox returns the inboxes value of an inbox of n emails, the
// newest received at newest (Unix ms).
func encodeInbox(n int, newest uint64) []byte {
	v := make([]byte, inboxLen)
	binary.BigEndian.PutUint64(v, uint64(n))
	binary.BigEndian.PutUint64(v[8:], newest)
	return v
}

// decodeInbox returns the count and newest time (Unix ms) of an inboxes
// value, and false when v is not one: then the count is what its first 8
// bytes say, if it has them (a count alone, as schema 8 wrote it), and the
// newest time 0.
func decodeInbox(v []byte) (n int, newest uint64, ok bool) {
	if len(v) < 8 {
		return 0, 0, false
	}
	n = int(binary.BigEndian.Uint64(v))
	if len(v) != inboxLen {
		return n, 0, false
	}
	return n, binary.BigEndian.Uint64(v[8:]), true
}

func encodeEmail(e *storage.Email, id uuid.UUID, ckey, sig []byte) []byte {
	var flags byte
	if len(sig) > 0 {
		flags |= flagSignature
	}
	if e.Read {
		flags |= flagRead
	}
	subject := ""
	if e.Subject != nil {
		flags |= flagHasSubject
		subject = *e.Subject
	}
	b := make([]byte, 0, emailFixedLen+len(e.To)+len(e.From)+len(e.FromName)+len(subject)+len(sig)+10)
	b = append(b, emailVersion, flags)
	b = append(b, id[:]...)
	b = append(b, ckey...)
	if len(sig) > 0 {
		b = record.AppendString(b, sig)
	}
	for _, s := range []string{e.To, e.From, e.FromName, subject} {
		b = record.AppendString(b, s)
	}
	return b
}

// emailView is an email record read in place: its slices point into the
// record, valid only inside the transaction, so that a filter can reject
// an email without allocating.
type emailView struct {
	flags                       byte
	id, ckey                    []byte
	to, from, fromName, subject []byte // subject is nil when the email has none
	sig                         []byte // the signature of its search text, nil when none
}

func viewEmail(rec []byte) (emailView, error) {
	if len(rec) < emailFixedLen || rec[0] != emailVersion {
		return emailView{}, storage.ErrCorrupt
	}
	v := emailView{flags: rec[1], id: rec[2:18], ckey: rec[18:26]}
	rest := rec[emailFixedLen:]
	if v.flags&flagSignature != 0 {
		var ok bool
		if v.sig, rest, ok = record.CutString(rest); !ok || !match.ValidSignature(v.sig) {
			return emailView{}, storage.ErrCorrupt
		}
	}
	for _, f := range []*[]byte{&v.to, &v.from, &v.fromName, &v.subject} {
		var ok bool
		if *f, rest, ok = record.CutString(rest); !ok {
			return emailView{}, storage.ErrCorrupt
		}
	}
	if v.flags&flagHasSubject == 0 {
		v.subject = nil
	}
	return v, nil
}

// recordSignature returns the signature of an email record, in place: nil
// when it has none.
func recordSignature(rec []byte) ([]byte, error) {
	if len(rec) < emailFixedLen || rec[0] != emailVersion {
		return nil, storage.ErrCorrupt
	}
	if rec[1]&flagSignature == 0 {
		return nil, nil
	}
	sig, _, ok := record.CutString(rec[emailFixedLen:])
	if !ok || !match.ValidSignature(sig) {
		return nil, storage.ErrCorrupt
	}
	return sig, nil
}

// email returns the Email of the record at key, without its body.
func (v *emailView) email(key []byte) storage.Email {
	e := storage.Email{
		ID:         uuid.UUID(v.id).String(),
		To:         string(v.to),
		From:       string(v.from),
		FromName:   string(v.fromName),
		ReceivedAt: keyTime(key),
		Read:       v.flags&flagRead != 0,
	}
	if v.subject != nil {
		s := string(v.subject)
		e.Subject = &s
	}
	return e
}

// decodeEmail decodes an email record (without its body) and returns the key
// of its content record.
func decodeEmail(key, rec []byte) (storage.Email, []byte, error) {
	v, err := viewEmail(rec)
	if err != nil || len(key) < 17 {
		return storage.Email{}, nil, storage.ErrCorrupt
	}
	return v.email(key), bytes.Clone(v.ckey), nil
}

// recordContentKey returns the content key of an email record.
func recordContentKey(rec []byte) []byte { return rec[18:26] }

// recordID returns the id of an email record.
func recordID(rec []byte) []byte { return rec[2:18] }

// encodeContent returns the content record of msg, stored for refs emails,
// its raw value, and the signature of its emails' records.
func encodeContent(refs int, msg *storage.Message) (rec, raw, sig []byte) {
	flags := byte(flagCompact | flagOneBlock)
	body := ""
	if msg.Body != nil {
		flags |= flagHasBody
		body = *msg.Body
	}
	// hot is the search text and the body section: the record's s2 block,
	// and the dictionary of the raw value. Both are made of it here, so
	// its buffer serves the next message.
	buf := getScratch()
	defer putScratch(buf)
	hot := match.AppendSearchText(slices.Grow(buf.b[:0], len(msg.Text)+len(body)+64*len(msg.Headers)+32), msg.Text)
	text := hot[:len(hot):len(hot)]
	hot = record.AppendString(hot, body)
	// Header fields as given: the raw source, compressed with hot as its
	// dictionary, holds them in the same case.
	hot = record.AppendHeaders(hot, msg.Headers)
	buf.b = hot

	// The record is encoded in a scratch buffer of the s2 block's bound
	// and copied out at its size, under half of that bound.
	out := getScratch()
	defer putScratch(out)
	rec = binary.AppendUvarint(slices.Grow(out.b[:0], 24+s2.MaxEncodedLen(len(hot))), uint64(refs))
	rec = append(rec, flags)
	rec = binary.AppendUvarint(rec, uint64(len(text)))
	// The better encoder: the block is decoded far more often than it is
	// encoded, and a few percent smaller keeps more records two to a page.
	block := s2.EncodeBetter(rec[len(rec):cap(rec)], hot)
	out.b = rec[:len(rec)+len(block)]
	return bytes.Clone(out.b), encodeCold(hot, msg), match.EmailSignature(text, msg.Subject, msg.FromName, msg.From)
}

// scratch is a buffer an encoding works in and copies out of: a
// newsletter's hot section and compressed cold section are about 6 KB a
// message that the collector need not see.
type scratch struct{ b []byte }

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// maxScratch bounds the buffers kept for reuse: one huge message must not
// pin its size.
const maxScratch = 256 << 10

func getScratch() *scratch { return scratches.Get().(*scratch) }

func putScratch(s *scratch) {
	if cap(s.b) <= maxScratch {
		s.b = s.b[:0]
		scratches.Put(s)
	}
}

// coldDictID names the dictionary of raw values in their zstd frames.
const coldDictID = 1

// minColdDict is the shortest hot section used as a dictionary.
const minColdDict = 16

// coldWindow is the zstd window of raw values: enough to reach from any
// part of a message's cold section to its dictionary, unless the message is
// huge. The default (8 MB) made each encoder 9 MB; this one, 1.7 MB.
const coldWindow = 128 << 10

// zstd coders are costly to make (their tables and window take 1.7 MB) and
// cheap to reset: a few are kept for reuse, in free lists that a garbage
// collection does not empty (as it empties a sync.Pool), so that ingest
// does not make new ones at every cycle.
var (
	coldEncoders = make(chan *zstd.Encoder, 4)
	coldDecoders = make(chan *zstd.Decoder, 2)
)

func getColdEncoder() *zstd.Encoder {
	select {
	case e := <-coldEncoders:
		return e
	default:
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(coldWindow),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(err) // only invalid options fail, and these are constant
	}
	return e
}

func putColdEncoder(e *zstd.Encoder) {
	select {
	case coldEncoders <- e:
	default:
	}
}

func getColdDecoder() *zstd.Decoder {
	select {
	case d := <-coldDecoders:
		return d
	default:
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(err)
	}
	return d
}

func putColdDecoder(d *zstd.Decoder) {
	select {
	case coldDecoders <- d:
	default:
	}
}

// encodeCold returns the raw value of msg: its cold section, compressed
// by zstd with hot (the text and body section) as a raw dictionary, which
// the raw source mostly repeats.
func encodeCold(hot []byte, msg *storage.Message) []byte {
	head := getScratch()
	defer putScratch(head)
	head.b = record.AppendString(head.b, msg.Plain)
	head.b = record.AppendStrings(head.b, msg.Links)

	e := getColdEncoder()
	defer putColdEncoder(e)
	// The frame is written into a scratch buffer and copied out at its
	// size, about a seventh of what it compresses.
	out := getScratch()
	defer putScratch(out)
	w := &appendWriter{b: out.b}
	// The stream, not EncodeAll: EncodeAll encodes with another of the
	// Encoder's block encoders than the one ResetWithOptions just gave the
	// dictionary, and each builds and copies a 256 KB table for a new
	// dictionary (a tenth of a message's CPU, twice). Always a dictionary:
	// an encoder that changes between none and one is made anew.
	if err := e.ResetWithOptions(w, zstd.WithEncoderDictRaw(coldDictID, coldDict(hot))); err != nil {
		panic(err) // a raw dictionary of any content is valid
	}
	// Writes to w do not fail, so neither do these.
	e.Write(head.b)
	e.Write(msg.Raw)
	e.Close()
	out.b = w.b
	w.b = nil // the encoder keeps w until its next use
	return bytes.Clone(out.b)
}

// appendWriter appends what is written to b.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// coldDict returns the dictionary of a raw value: its hot section, or a
// constant one for a hot section too short to serve.
func coldDict(hot []byte) []byte {
	if len(hot) < minColdDict {
		return []byte("burner: a message without text")
	}
	return hot
}

// content is a decoded content record. Its slices point into the record or
// into the buffer it was decoded to; List copies a body only once the
// email matches.
type content struct {
	text    []byte // case-folded search text
	body    []byte // nil when the message has none
	headers []byte // the encoded header section, for matchHeader
	hot     []byte // a compact record's text and body section, decoded: the dictionary of its raw value
	plain   []byte // old records only: compact ones keep it in the raw value
	links   []byte // old records only: the encoded links section

	hasBody bool
	section []byte // the body section of a record before flagOneBlock, still compressed (nil once decoded)
	pending []byte // the body section of a flagOneBlock record, decoded, not yet parsed
}

// decodeContent decodes a content record, into new buffers.
func decodeContent(rec []byte) (content, error) {
	c, buf, err := decodeText(rec, nil)
	if err != nil {
		return content{}, err
	}
	_, err = c.decodeSection(buf)
	return c, err
}

// decodeText decodes the search text of a content record into buf, grown
// as needed, and returns buf: a body filter reads nothing more. The rest
// is decoded by decodeSection. An old record is decoded whole, in place.
func decodeText(rec, buf []byte) (content, []byte, error) {
	_, w := binary.Uvarint(rec)
	if w <= 0 || len(rec) < w+1 {
		return content{}, buf, storage.ErrCorrupt
	}
	flags := rec[w]
	rest := rec[w+1:]
	c := content{hasBody: flags&flagHasBody != 0}
	if flags&flagCompact == 0 {
		err := c.decodeOld(rest)
		return c, buf, err
	}
	if flags&flagOneBlock != 0 {
		return c.decodeOneBlock(rest, buf)
	}
	return c.decodeTwoBlocks(rest, buf)
}

// decodeOneBlock decodes the hot section of a flagOneBlock record, rest
// after its flags, into buf, grown as needed, and returns buf.
func (c *content) decodeOneBlock(rest, buf []byte) (content, []byte, error) {
	t, w := binary.Uvarint(rest)
	if w <= 0 {
		return content{}, buf, storage.ErrCorrupt
	}
	block := rest[w:]
	n, err := s2.DecodedLen(block)
	if err != nil {
		return content{}, buf, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	if cap(buf) < n {
		buf = make([]byte, 0, n+4096)
	}
	dec, err := s2.Decode(buf[:cap(buf)], block)
	if err != nil {
		return content{}, buf, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	if t > uint64(len(dec)) {
		return content{}, buf, storage.ErrCorrupt
	}
	c.text, c.pending, c.hot = dec[:t:t], dec[t:], dec
	return *c, buf, nil
}

// decodeSection decodes the body and headers of a compact record after its
// text, which decodeText left at the start of buf, and returns buf (grown
// when it had no room). It does nothing for an old record.
func (c *content) decodeSection(buf []byte) ([]byte, error) {
	if c.pending != nil {
		dec := c.pending
		c.pending = nil
		return buf, c.parseSection(dec)
	}
	if c.section == nil {
		return buf, nil
	}
	return c.decodeOldSection(buf)
}

// parseSection reads the body and headers of a decoded body section.
func (c *content) parseSection(dec []byte) error {
	var ok bool
	rest := dec
	if c.body, rest, ok = record.CutString(rest); !ok {
		return storage.ErrCorrupt
	}
	if c.headers, rest, ok = record.CutHeaders(rest); !ok || len(rest) != 0 {
		return storage.ErrCorrupt
	}
	if !c.hasBody {
		c.body = nil
	}
	return nil
}

// cold is what a message's raw value holds beyond the hot section.
type cold struct {
	plain []byte
	links []byte // the encoded links section (record.AppendStrings)
	raw   []byte // the message as received
}

// decodeCold decodes the raw value v of the content c, which decodeContent
// decoded. The slices it returns are new (a compact record) or point into
// v (an old one, whose raw value is the message itself).
func decodeCold(c *content, v []byte) (cold, error) {
	if c.hot == nil {
		return cold{plain: c.plain, links: c.links, raw: v}, nil
	}
	d := getColdDecoder()
	defer putColdDecoder(d)
	if err := d.ResetWithOptions(nil, zstd.WithDecoderDictRaw(coldDictID, coldDict(c.hot))); err != nil {
		return cold{}, err
	}
	dec, err := d.DecodeAll(v, nil)
	if err != nil {
		return cold{}, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	var (
		out cold
		ok  bool
	)
	if out.plain, dec, ok = record.CutString(dec); !ok {
		return cold{}, storage.ErrCorrupt
	}
	if out.links, out.raw, ok = record.CutStrings(dec); !ok {
		return cold{}, storage.ErrCorrupt
	}
	return out, nil
}

// contentRefs returns the reference count of a content record and the
// length of its encoding.
func contentRefs(rec []byte) (uint64, int) { return binary.Uvarint(rec) }

// bodyString copies a body out of a transaction; nil stays nil.
func bodyString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}
