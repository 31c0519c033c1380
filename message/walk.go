package message

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"mime"
	"strings"
	"sync"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // registers ISO-8859-x, Windows-125x, … with go-message
	"github.com/emersion/go-message/textproto"
)

// maxDepth bounds how deeply parse follows nested multiparts. Every level
// costs a 4 KiB read buffer in go-message, so a 10 MB message of nothing but
// nested boundaries could otherwise ask for gigabytes; real mail nests about
// three deep (mixed > related > alternative).
const maxDepth = 16

// MaxParts bounds the parts one walk reads, for the text and the files
// alike: anyone can send a message of 200,000 tiny parts, and each costs
// go-message buffers and a header map. Real mail has a few dozen at most.
// A walk for the files that stops here marks its list Partial; about 20 ms
// of CPU for parts of a byte (BenchmarkAttachments).
const MaxParts = 10_000

// maxPooledBuffer bounds the buffers kept for reuse: most mail is far
// smaller, and a pool must not pin a hostile message's memory.
const maxPooledBuffer = 1 << 20

// part is one leaf of a message's MIME tree, as walk classifies it.
type part struct {
	entity
	err   error // go-message's error with the entity: an unknown charset or transfer encoding
	depth int
	// text: the part is the message's own text (see the package doc);
	// otherwise it is a file.
	text bool
	// embedded: a file that is an inline message/rfc822 (or
	// message/global), whose text stands in for the message's when it has
	// none.
	embedded bool
	// name is a file's name as the message gives it, "" when none.
	name string
}

// walker walks a message's MIME tree in order, depth first, and is the one
// place that decides which part is text and which a file. It hands each
// leaf part to text (delivery's reader) or else to file (the attachment
// routes'), which reads its body or not, and returns false to end the
// walk. text is a pointer and not a func so that parsing a message costs
// no closure, walker or textParts on the heap.
type walker struct {
	text    *textParts
	file    func(p part) bool
	parts   int  // multipart parts read, up to MaxParts
	partial bool // stopped at MaxParts with parts unread
	stopped bool // visit returned false
	// html, plain: a text part of that kind came first; a named one after
	// it is a file.
	html, plain bool
}

// walk visits e and, if it is a multipart, its parts. err is the error
// go-message returned with e, which tells whether its charset was decoded.
func (w *walker) walk(e entity, err error, depth int) {
	if strings.HasPrefix(e.mediaType, "multipart/") {
		if depth >= maxDepth {
			return
		}
		mr := textproto.NewMultipartReader(e.Body, e.params["boundary"])
		defaultType := "text/plain"
		if e.mediaType == "multipart/digest" {
			defaultType = "message/rfc822"
		}
		for !w.stopped {
			p, err := mr.NextPart()
			if err != nil {
				// io.EOF, or a structure too broken to go on: keep what
				// the parts before gave.
				return
			}
			if w.parts++; w.parts > MaxParts {
				w.partial = true
				return
			}
			part, err := newEntity(message.Header{Header: p.Header}, p, defaultType)
			w.walk(part, err, depth+1)
		}
		return
	}
	p := part{entity: e, err: err, depth: depth}
	p.text, p.embedded, p.name = w.classify(e)
	more := false
	if w.text != nil {
		more = w.text.visit(w, p)
	} else {
		more = w.file(p)
	}
	if !more {
		w.stopped = true
	}
}

// classify applies the rule of the package doc to the leaf part e: text
// or a file, and a file's name.
func (w *walker) classify(e entity) (text, embedded bool, name string) {
	disp, dparams := parseDisposition(e.Header.Get("Content-Disposition"))
	name = dparams["filename"]
	if name == "" {
		name = e.params["name"]
	}
	// go-message decoded encoded words (RFC 2047) in names, which
	// senders use although RFC 2047 §5 says not to.
	name = decodeHeader(name)
	if disp == "attachment" {
		return false, false, name
	}
	var seen *bool
	switch e.mediaType {
	case "text/html":
		seen = &w.html
	case "text/plain":
		seen = &w.plain
	case "message/rfc822", "message/global":
		return false, true, name
	default:
		return false, false, name
	}
	if name != "" && *seen {
		return false, false, name
	}
	*seen = true
	return true, false, ""
}

// readers holds the bufio.Readers that readEntity reads through, one for
// a message and one for its header block: 4 KiB each, which was a fifth
// of what parsing a newsletter allocated. A pooled reader behaves as a new
// one after Reset, so the body is read in the same chunks as before.
var readers = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

// getReader returns a pooled bufio.Reader reading from r; putReader gives
// it back once nothing reads from it any more.
func getReader(r io.Reader) *bufio.Reader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return br
}

func putReader(br *bufio.Reader) {
	br.Reset(nil)
	readers.Put(br)
}

// blocks holds headerBlock's buffers: a header block is copied out of
// them by textproto.ReadHeader and cleanHeader, never kept.
var blocks = sync.Pool{New: func() any { return new([]byte) }}

// entity is a message or part with its Content-Type as contentType reads
// it, read once for newEntity and walk alike.
type entity struct {
	*message.Entity
	mediaType string
	params    map[string]string
	qp        *qpReader // what decodes Body's quoted-printable, nil when it is not
}

// maxHeaderBytes bounds a header, as go-message's reader does: a header
// larger than 1 MiB is no mail.
const maxHeaderBytes = 1 << 20

// errHeaderTooBig is readEntity's error for a header over maxHeaderBytes.
var errHeaderTooBig = errors.New("header exceeds 1 MiB")

// readEntity reads a message (the whole message, or one embedded in a
// message/rfc822 part) from br and returns its header as written and the
// entity, whose body decodes its transfer encoding and charset as it is
// read (see newEntity) from br. Header lines go-message rejects are
// handled as cleanHeader says. The error is go-message's, and may report
// an unknown charset on a usable entity; the entity's Entity is nil only
// when the header could not be read at all.
func readEntity(br *bufio.Reader) (message.Header, entity, error) {
	buf := blocks.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledBuffer {
			blocks.Put(buf)
		}
	}()
	block, err := headerBlock(br, (*buf)[:0])
	*buf = block
	if err != nil {
		return message.Header{}, entity{}, err
	}
	var body io.Reader = br
	th, err := readHeader(block)
	if err != nil && err != io.EOF {
		var rest []byte
		block, rest = cleanHeader(block)
		if th, err = readHeader(block); err != nil && err != io.EOF {
			return message.Header{}, entity{}, err
		}
		if len(rest) > 0 {
			body = io.MultiReader(bytes.NewReader(rest), br)
		}
	}
	h := message.Header{Header: th}
	e, err := newEntity(h, body, "text/plain")
	return h, e, err
}

// readHeader reads the header block with go-message, which copies what it
// keeps: the reader goes back to the pool.
func readHeader(block []byte) (textproto.Header, error) {
	br := getReader(bytes.NewReader(block))
	defer putReader(br)
	return textproto.ReadHeader(br)
}

// headerBlock reads the header from br, appending it to block: the lines
// up to and including the first blank one, or all of them if none is
// blank.
func headerBlock(br *bufio.Reader, block []byte) ([]byte, error) {
	lineStart := true
	for {
		line, err := br.ReadSlice('\n')
		blank := lineStart && (string(line) == "\n" || string(line) == "\r\n")
		block = append(block, line...)
		if len(block) > maxHeaderBytes {
			return nil, errHeaderTooBig
		}
		switch {
		case err == bufio.ErrBufferFull:
			lineStart = false
			continue
		case err == io.EOF:
			return block, nil
		case err != nil:
			return nil, err
		case blank:
			return block, nil
		}
		lineStart = true
	}
}

// newEntity returns the entity of header h and body, which is not yet
// decoded. Its Content-Type is read by contentType, with defaultType for
// none, and when go-message would read it otherwise (an RFC 2231 parameter
// in a charset Go's mime package does not decode, a comment, a duplicate
// parameter) go-message is handed what contentType read, so that the two
// agree on the boundary and the charset. US-ASCII under any of its names
// reaches go-message as us-ascii, which it passes through for toUTF8.
//
// The entity carries the media type and parameters read here; a header
// handed to go-message rewritten reads back as the same type and the same
// boundary and charset (formatMediaType keeps both), so they are not read
// again.
func newEntity(h message.Header, body io.Reader, defaultType string) (entity, error) {
	v := h.Get("Content-Type")
	mediaType, params := contentType(v, defaultType)
	// goType is the media type go-message reads from the header it is
	// given: the value itself when it does not parse.
	goType := ""
	if v != "" || mediaType != "text/plain" {
		t, p, err := mime.ParseMediaType(v)
		goType = t
		if err != nil {
			goType = v
		}
		if err != nil || t != mediaType || !maps.Equal(p, params) {
			if f := formatMediaType(mediaType, params); f != "" {
				h = h.Copy()
				h.Set("Content-Type", f)
				goType = mediaType
			}
		}
	}
	if isUTF16(params["charset"]) {
		// go-message would read it big-endian: the text walk reads it
		// instead (decodeUTF16), from the bytes go-message leaves
		// undecoded without a charset.
		p := maps.Clone(params)
		delete(p, "charset")
		h = h.Copy()
		h.Set("Content-Type", formatMediaType(mediaType, p))
	}
	// Quoted-printable is decoded by qpReader, as go-message would decode
	// it (it decodes no multipart): go-message is given the Content-Type
	// alone, and the entity keeps the header.
	var qp *qpReader
	given := h
	if !strings.HasPrefix(goType, "multipart/") && strings.ToLower(h.Get("Content-Transfer-Encoding")) == "quoted-printable" {
		qp = newQPReader(body)
		body = qp
		given = message.Header{}
		if ct := h.Get("Content-Type"); ct != "" {
			given.Set("Content-Type", ct)
		}
	}
	e, err := message.New(given, body)
	if qp != nil {
		e.Header = h
	}
	return entity{Entity: e, mediaType: mediaType, params: params, qp: qp}, err
}

// formatMediaType formats a Content-Type value, keeping only the
// parameters that matter to parsing when others cannot be written.
func formatMediaType(mediaType string, params map[string]string) string {
	if f := mime.FormatMediaType(mediaType, params); f != "" {
		return f
	}
	some := map[string]string{}
	for _, k := range []string{"boundary", "charset"} {
		if v, ok := params[k]; ok {
			some[k] = v
		}
	}
	return mime.FormatMediaType(mediaType, some)
}

// cleanHeader returns the header block with the lines that go-message
// would reject removed (lines without a colon, keys with bytes outside RFC
// 5322 §2.2 ftext, continuation lines that continue nothing), ended by a
// blank line, and the body text the block turned out to hold. A bad line
// ends the header, as in readers, when no field follows it before a blank
// line: the sender left out the blank line and the body begins there.
// Otherwise it is dropped, so that one junk line does not cost the From
// and Subject around it; an mbox "From " line first is always dropped.
func cleanHeader(block []byte) (header, body []byte) {
	var lines [][]byte
	for rest := block; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		lines = append(lines, line)
	}
	ended := len(lines) > 0 && len(bytes.TrimRight(lines[len(lines)-1], "\r\n")) == 0
	// fieldAfter[i]: a field line follows line i in a header that ends
	// with a blank line.
	fieldAfter := make([]bool, len(lines)+1)
	for i := len(lines) - 1; i >= 0; i-- {
		fieldAfter[i] = ended && (fieldAfter[i+1] || (i+1 < len(lines) && validFieldLine(bytes.TrimRight(lines[i+1], "\r\n"))))
	}
	out := make([]byte, 0, len(block)+2)
	kept := false // whether the last field line was kept, for its continuations
	for i, line := range lines {
		content := bytes.TrimRight(line, "\r\n")
		switch {
		case len(content) == 0: // the blank line that ends the header
			return append(out, line...), nil
		case content[0] == ' ' || content[0] == '\t':
			if kept {
				out = append(out, line...)
			}
		case validFieldLine(content):
			kept = true
			out = append(out, line...)
		case (i == 0 && bytes.HasPrefix(content, []byte("From "))) || fieldAfter[i]:
			kept = false
		default:
			return append(out, '\r', '\n'), bytes.Join(lines[i:], nil)
		}
	}
	return out, nil
}

// validFieldLine reports whether line starts with a field name and a colon.
// RFC 5322 §2.2: a field name is printable ASCII except the colon; spaces
// before the colon occur in the wild and go-message accepts them.
func validFieldLine(line []byte) bool {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return false
	}
	name := bytes.TrimRight(line[:i], " \t")
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c < 33 || c > 126 {
			return false
		}
	}
	return true
}

// contentType returns the lower-case media type of the Content-Type value
// v and its parameters (see parseMediaType). When only the parameters are
// broken (a duplicate charset, say), the type before them still counts.
// With no Content-Type a part is defaultType: text/plain (RFC 2045 §5.2),
// or message/rfc822 in a digest (RFC 2046 §5.1.5); one that does not parse
// is text/plain. Every name of US-ASCII is given as us-ascii.
func contentType(v, defaultType string) (string, map[string]string) {
	if strings.TrimSpace(v) == "" {
		return defaultType, nil
	}
	t, params, ok := parseMediaType(v)
	if !ok {
		return "text/plain", nil
	}
	if cs, ok := params["charset"]; ok && cs != "us-ascii" && isASCIICharset(cs) {
		params["charset"] = "us-ascii"
	}
	return t, params
}
