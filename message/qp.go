package message

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
)

// qpReader decodes quoted-printable exactly as Go's mime/quotedprintable
// Reader does, which go-message uses: the same bytes, the same errors at
// the same places, the same quirks (a soft break "=\n", an "=" not
// followed by two hex digits taken literally, a line longer than the
// 4 KiB bufio buffer ending the body with bufio.ErrBufferFull). It reads a
// line as that Reader reads it, and then copies each run of bytes that
// decode to themselves at once, where that Reader takes a byte at a time
// through a switch: decoding the HTML of a newsletter was 7% of the
// instructions of its delivery. FuzzQPReader holds it to the original.
type qpReader struct {
	br   *bufio.Reader
	rerr error  // the last read error, or the error of the line being decoded
	line []byte // what is left of the line being decoded
}

// qpReaders holds the readers of bodies done with (release), with their
// 4 KiB buffers.
var qpReaders = sync.Pool{New: func() any { return &qpReader{br: bufio.NewReaderSize(nil, qpBufferSize)} }}

// qpBufferSize is the size of the buffer of a mime/quotedprintable Reader
// (bufio's default), which bounds a line: the same, to end a body where it
// ends it.
const qpBufferSize = 4096

func newQPReader(r io.Reader) *qpReader {
	q := qpReaders.Get().(*qpReader)
	q.br.Reset(r)
	return q
}

// release gives q back for reuse: nothing may read from it any more.
func (q *qpReader) release() {
	q.br.Reset(nil)
	q.rerr, q.line = nil, nil
	qpReaders.Put(q)
}

var (
	qpCRLF = []byte("\r\n")
	qpLF   = []byte("\n")
)

// qpLiteral[b] says that b, met in a line, decodes to itself: what
// mime/quotedprintable's Reader copies without a word (tab, CR, LF,
// printable ASCII but "=", and every byte from 0x80). The rest are "=" and
// the bytes it refuses.
var qpLiteral = func() (t [256]bool) {
	for b := range 256 {
		t[b] = b == '\t' || b == '\r' || b == '\n' || b >= 0x80 || b >= ' ' && b <= '~' && b != '='
	}
	return t
}()

func (q *qpReader) Read(p []byte) (n int, err error) {
	for len(p) > 0 {
		if len(q.line) == 0 {
			if q.rerr != nil {
				return n, q.rerr
			}
			q.nextLine()
			continue
		}
		s := q.line[:min(len(q.line), len(p))]
		run := len(s)
		for i, c := range s {
			if !qpLiteral[c] {
				run = i
				break
			}
		}
		if run > 0 {
			copy(p, q.line[:run])
			p, q.line, n = p[run:], q.line[run:], n+run
			continue
		}
		b := q.line[0]
		if b != '=' {
			return n, fmt.Errorf("quotedprintable: invalid unescaped byte 0x%02x in body", b)
		}
		b, err = qpHexByte(q.line[1:])
		if err != nil {
			if len(q.line) < 2 || q.line[1] == '\r' || q.line[1] == '\n' {
				return n, err
			}
			b = '=' // not followed by two hex digits: taken as it is
		} else {
			q.line = q.line[2:]
		}
		p[0] = b
		p, q.line, n = p[1:], q.line[1:], n+1
	}
	return n, nil
}

// nextLine reads the next line into q.line as mime/quotedprintable does:
// trailing white space dropped, a soft line break removed, and the line's
// own end, CRLF or LF, kept.
func (q *qpReader) nextLine() {
	q.line, q.rerr = q.br.ReadSlice('\n')
	hasLF := bytes.HasSuffix(q.line, qpLF)
	hasCR := bytes.HasSuffix(q.line, qpCRLF)
	whole := q.line
	q.line = bytes.TrimRightFunc(whole, isQPDiscardWhitespace)
	if bytes.HasSuffix(q.line, []byte("=")) {
		rightStripped := bytes.TrimLeft(whole[len(q.line):], " \t")
		q.line = q.line[:len(q.line)-1]
		if !bytes.HasPrefix(rightStripped, qpLF) && !bytes.HasPrefix(rightStripped, qpCRLF) &&
			!(len(rightStripped) == 0 && len(q.line) > 0 && q.rerr == io.EOF) {
			q.rerr = fmt.Errorf("quotedprintable: invalid bytes after =: %q", rightStripped)
		}
	} else if hasLF {
		if hasCR {
			q.line = append(q.line, '\r', '\n')
		} else {
			q.line = append(q.line, '\n')
		}
	}
}

func isQPDiscardWhitespace(r rune) bool {
	switch r {
	case '\n', '\r', ' ', '\t':
		return true
	}
	return false
}

func qpFromHex(b byte) (byte, error) {
	switch {
	case b >= '0' && b <= '9':
		return b - '0', nil
	case b >= 'A' && b <= 'F':
		return b - 'A' + 10, nil
	case b >= 'a' && b <= 'f': // badly encoded, and accepted
		return b - 'a' + 10, nil
	}
	return 0, fmt.Errorf("quotedprintable: invalid hex byte 0x%02x", b)
}

func qpHexByte(v []byte) (b byte, err error) {
	if len(v) < 2 {
		return 0, io.ErrUnexpectedEOF
	}
	var hb, lb byte
	if hb, err = qpFromHex(v[0]); err != nil {
		return 0, err
	}
	if lb, err = qpFromHex(v[1]); err != nil {
		return 0, err
	}
	return hb<<4 | lb, nil
}
