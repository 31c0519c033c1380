package smtpd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/textproto"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/emersion/go-smtp"
)

// wire reads a session's input in place of go-smtp's line reader. go-smtp
// v0.25.1 gets four things wrong on the wire that no Session can see
// (docs/upstream.md has them as bug reports, each with a reproducer):
//   - its end-of-data state machine loses the line start after a bare CR
//     (stateCR on '\r' goes to stateData), so DATA ending in "\r\r\n.\r\n"
//     waits for a "." that never comes, until data_timeout;
//   - its line limit, applied to data too, fails every later read of the
//     connection, so a long data line can only be a 421;
//   - BDAT copies the chunk with io.Copy from an io.LimitReader, which takes
//     a disconnect in the middle of the chunk for its end: the Session reads
//     a clean EOF and the cut-off message would be stored;
//   - SIZE is parsed as a 32-bit number, so a larger one is a 501, not 552.
//
// So the session puts a wire under go-smtp's bufio.Reader (reached through
// the unexported Conn.text; see textConn). In command mode the wire hands
// go-smtp one command line per read, never more, so go-smtp's buffer is
// empty whenever a command ends and the wire sees every command: it refuses
// long lines, rewrites a SIZE over the limit to one go-smtp answers 552, and
// passes a BDAT chunk through counted, turning an early EOF into
// io.ErrUnexpectedEOF. DATA is read by the Session straight from in (see
// readData), after which the wire hands go-smtp's own data reader the end
// marker it waits for. Without the wire the daemon does not serve at all
// (errNoWire): go-smtp's own reader would store cut-off BDAT mail.
//
// go-smtp's replies pass through the wire too, under its writer (see
// Write): go-smtp v0.25.1 hard-codes its success texts ("Roger, accepting
// mail from", "I'll make sure ... gets this", "OK: queued"), and a Session
// cannot change them; the wire sends each reply in burner's words (see
// reword) and tells the session each exchange, a command and its reply, for
// the session log.
//
// The wire sits above TLS: after STARTTLS go-smtp builds a new reader and a
// new session, and the new session takes a new wire.
type wire struct {
	in      *bufio.Reader // the connection, plaintext
	maxLine int           // octets of a command line, not counting its CRLF
	maxSize int64         // the SIZE limit

	line  []byte // the command line being handed over, reused
	out   []byte // what go-smtp reads next: the rest of line, or the end marker
	chunk int64  // octets of a BDAT chunk still to pass
	err   error  // sticky: smtp.ErrTooLongLine

	// Writing. go-smtp writes from one goroutine at a time (its command
	// loop, or DATA's Session.Data within it); a BDAT Session.Data, which
	// runs on a goroutine of its own, writes nothing and may only hang up.
	conn  net.Conn        // the connection, plaintext
	tc    *textproto.Conn // go-smtp's, to write a reply of burner's own in turn
	sess  replier         // nil in tests of the reader alone
	cmd   []byte          // the command line the reply being written answers, without its EOL; nil before the first reply
	open  bool            // cmd awaits (the rest of) its reply
	hello string          // the name given in the EHLO or HELO that go-smtp read before the wire
	wbuf  []byte          // what go-smtp wrote of a line before its CRLF
	obuf  []byte          // the lines of the reply going out, reused
	reply []byte          // the reply so far, its lines joined by "\n", reused
	// closeAfter hangs up once the reply being written is out: a 421 of a
	// fault rule, which a real MX follows by closing (RFC 5321 §3.8).
	closeAfter bool
	hungUp     atomic.Bool // the connection was closed on purpose: nothing more is read or written
}

// replier is what the wire asks of its session and tells it.
type replier interface {
	// reword returns the line burner sends in place of line, a line of
	// go-smtp's reply to cmd; nil to send line as it is. The result is
	// used before the next call.
	reword(cmd, line []byte) []byte
	// replied tells of one exchange: cmd (nil for a reply that answers no
	// command: an idle timeout) and the whole reply as sent, its lines
	// joined by "\n". Neither is kept by the wire past the call.
	replied(cmd, reply []byte)
}

// textField locates go-smtp's per-connection text reader and writer,
// unexported in v0.25.1: the one reach into go-smtp, for both.
var textField, textFieldOK = func() (reflect.StructField, bool) {
	f, ok := reflect.TypeFor[smtp.Conn]().FieldByName("text")
	return f, ok && f.Type == reflect.TypeFor[*textproto.Conn]()
}()

// errNoWire is why the daemon refuses to serve when go-smtp's reader is out
// of reach: falling back to it would store cut-off BDAT mail.
var errNoWire = errors.New("smtpd: go-smtp's connection reader (the unexported smtp.Conn.text, a *textproto.Conn in v0.25.1) is out of reach, " +
	"so burner cannot install its SMTP wire (smtpd/wire.go); go-smtp's own reader stores cut-off BDAT mail, so burner will not serve SMTP with it: " +
	"build with the go-smtp version in go.mod, or port wire.go to the new one")

// checkWire returns errNoWire unless go-smtp's reader is where textConn
// looks for it.
func checkWire() error {
	if !textFieldOK {
		return errNoWire
	}
	return nil
}

func textConn(c *smtp.Conn) *textproto.Conn {
	return *(**textproto.Conn)(unsafe.Add(unsafe.Pointer(c), textField.Offset))
}

// newWire puts a wire under c's reader and writer; checkWire must have
// passed. Whatever go-smtp has read ahead but not used yet goes first.
// go-smtp makes the Session, and so the wire, when it has read EHLO or
// HELO and not yet answered it: the wire's first reply answers that
// command, which it takes as verb (EHLO or HELO, told by the reply) and
// c.Hostname().
func newWire(c *smtp.Conn, maxLine int, maxSize int64, sess replier) *wire {
	tc := textConn(c)
	var src io.Reader = c.Conn()
	if n := tc.R.Buffered(); n > 0 {
		ahead, _ := tc.R.Peek(n)
		src = io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), src)
	}
	// The buffer holds any command line within the limit, so a longer one
	// is known before any of it is handed over: go-smtp would take a part
	// of a line followed by an error for a whole command.
	w := &wire{in: bufio.NewReaderSize(src, max(4096, maxLine+2)), maxLine: maxLine, maxSize: maxSize,
		conn: c.Conn(), tc: tc, sess: sess, hello: c.Hostname(), open: true}
	tc.R.Reset(w)
	// textproto flushes after each line, and has nothing buffered between
	// replies: Reset loses nothing.
	tc.W.Reset(w)
	return w
}

func (w *wire) Read(p []byte) (int, error) {
	if w.hungUp.Load() {
		return 0, net.ErrClosed // go-smtp ends the session quietly
	}
	if len(w.out) == 0 && w.chunk == 0 {
		if err := w.nextLine(); err != nil {
			return 0, err
		}
	}
	if len(w.out) > 0 {
		n := copy(p, w.out)
		w.out = w.out[n:]
		return n, nil
	}
	if int64(len(p)) > w.chunk {
		p = p[:w.chunk]
	}
	n, err := w.in.Read(p)
	w.chunk -= int64(n)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // RFC 3030: the chunk was cut short
	}
	return n, err
}

// nextLine takes the next command line into out.
func (w *wire) nextLine() error {
	if w.err != nil {
		return w.err
	}
	line, err := w.in.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(trimEOL(line)) > w.maxLine {
		w.err = smtp.ErrTooLongLine // go-smtp answers 500 and hangs up
		return w.err
	}
	if len(line) == 0 {
		return err
	}
	// A last line without its LF (err is io.EOF) is handed over; the next
	// read returns the EOF.
	w.line = append(w.line[:0], line...)
	w.line = w.capSize(w.line)
	w.out = w.line
	w.chunk = bdatSize(w.line)
	w.command(trimEOL(line))
	return nil
}

// command notes cmd as the command the next reply answers.
func (w *wire) command(cmd []byte) {
	w.cmd = append(w.cmd[:0], cmd...)
	w.open = true
}

// Write takes go-smtp's replies, a line at a time (textproto flushes
// after each), and sends each line in burner's words. An error is the
// connection's.
func (w *wire) Write(p []byte) (int, error) {
	if w.hungUp.Load() {
		return len(p), nil // closed on purpose: no reply goes out
	}
	n := len(p)
	if len(w.wbuf) > 0 {
		w.wbuf = append(w.wbuf, p...)
		p = w.wbuf
	}
	for {
		i := bytes.Index(p, []byte("\r\n"))
		if i < 0 {
			break
		}
		if err := w.writeLine(p[:i]); err != nil {
			w.wbuf = w.wbuf[:0]
			return 0, err
		}
		p = p[i+2:]
	}
	// A line longer than textproto's buffer comes in parts.
	w.wbuf = append(w.wbuf[:0], p...)
	return n, nil
}

// writeLine sends one line of a reply, reworded, and tells the session
// of the exchange when the reply is complete.
func (w *wire) writeLine(line []byte) error {
	if w.cmd == nil {
		// The first reply answers the EHLO or HELO read before the wire:
		// go-smtp answers EHLO with several lines, HELO with one.
		verb := "HELO "
		if len(line) > 3 && line[3] == '-' {
			verb = "EHLO "
		}
		w.cmd = []byte(verb + w.hello)
	}
	if w.sess != nil {
		cmd := w.cmd
		if !w.open {
			cmd = nil // a reply of go-smtp's own accord: an idle timeout
		}
		if better := w.sess.reword(cmd, line); better != nil {
			line = better
		}
	}
	// The lines of a reply go out together, in one write: EHLO's eight
	// lines were eight system calls, and eight segments on the wire.
	w.obuf = append(append(w.obuf, line...), "\r\n"...)
	if len(w.reply) > 0 {
		w.reply = append(w.reply, '\n')
	}
	w.reply = append(w.reply, line...)
	if len(line) > 3 && line[3] == '-' {
		return nil // more lines follow
	}
	// The session hears of the exchange before the client does, so that
	// a client that has its reply finds the session log knowing of it
	// (spec §13.1: a session is listed from its first RCPT).
	if w.sess != nil {
		cmd := w.cmd
		if !w.open {
			cmd = nil
		}
		w.sess.replied(cmd, w.reply)
	}
	_, err := w.conn.Write(w.obuf)
	w.obuf = w.obuf[:0]
	w.open = false
	w.reply = w.reply[:0]
	if w.closeAfter {
		w.hangUp()
	}
	return err
}

// writeReply sends a reply of burner's own (one line, without CRLF) in
// go-smtp's stream, from go-smtp's goroutine.
func (w *wire) writeReply(line string) {
	w.tc.PrintfLine("%s", line)
}

// hangUp closes the connection without a word more: a fault rule's
// disconnect, or the end after a 421. Safe from any goroutine.
func (w *wire) hangUp() {
	w.hungUp.Store(true)
	w.conn.Close()
}

// capSize rewrites a SIZE parameter of MAIL larger than the limit (of any
// length: go-smtp parses 32 bits and answers 501 beyond) to the limit plus
// one, which go-smtp answers 552 as RFC 1870 §6.1 asks.
func (w *wire) capSize(line []byte) []byte {
	if len(line) < 10 || !strings.EqualFold(string(line[:10]), "MAIL FROM:") || w.maxSize >= 1<<32-1 {
		return line
	}
	gt := bytes.LastIndexByte(line, '>') // the parameters follow the path
	if gt < 0 {
		return line
	}
	params := line[gt+1:]
	for i := 0; i < len(params); {
		end := bytes.IndexByte(params[i:], ' ')
		if end < 0 {
			end = len(params)
		} else {
			end += i
		}
		field := trimEOL(params[i:end])
		if len(field) > 5 && strings.EqualFold(string(field[:5]), "SIZE=") && isDigits(field[5:]) {
			n, err := strconv.ParseUint(string(field[5:]), 10, 64)
			if err != nil || n > uint64(w.maxSize) {
				out := append(bytes.Clone(line[:gt+1+i+5]), strconv.FormatInt(w.maxSize+1, 10)...)
				return append(out, line[gt+1+i+len(field):]...)
			}
		}
		i = end + 1
	}
	return line
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// bdatSize is the size of the chunk that follows line when go-smtp takes
// it for a BDAT command, parsed as go-smtp v0.25.1 parses it (parseCmd,
// handleBdat): it reads the chunk, to store or to discard, for every BDAT
// whose arguments parse.
func bdatSize(line []byte) int64 {
	if len(line) < 6 || !strings.EqualFold(string(line[:4]), "BDAT") || line[4] != ' ' {
		return 0
	}
	args := strings.Fields(strings.TrimRight(string(line[5:]), "\r\n"))
	if len(args) == 0 || len(args) > 2 || len(args) == 2 && !strings.EqualFold(args[1], "LAST") {
		return 0
	}
	size, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil {
		return 0
	}
	return int64(size)
}

// trimEOL cuts a line's LF and the CR before it.
func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

// readData reads a message's data up to the end marker into buf, undoing
// the dot-stuffing and keeping every other octet as sent. RFC 5321 §4.5.2
// and spec §2: the data ends at a line "." that a CRLF ends and a CRLF
// precedes, whatever comes before that CRLF; a bare CR or LF never counts
// around the final dot, so "\n.\r\n" and "\r\n.\n" are data (no SMTP
// smuggling). Message lines have no length limit. After a CRLF a leading
// dot is always stuffing (RFC 5321 §4.5.2). After a bare LF, senders
// differ: smtplib stuffs such a line, curl does not (it looks for CRLF
// only). So there a dot is taken for stuffing only when another dot
// follows it: "\n..x" is kept as "\n.x" (smtplib's ".x"), "\n.x" as sent
// (curl's ".x"), and "\n.\r\n", which does not end the data, as sent.
// Only a line that really began with two dots and came unstuffed after a
// bare LF loses one, which is rarer than either sender. Data over maxSize
// is read to the end and answered smtp.ErrDataTooLarge, so the session goes
// on. Any other error is the connection's.
//
// Only a line that starts with a dot needs a look of its own: the rest is
// copied a buffer (4 KiB or more) at a time, up to the next LF followed by a
// dot, so the work is bounded by the buffers and the dotted lines, however
// long or short the lines are.
func (w *wire) readData(buf *bytes.Buffer, maxSize int64) error {
	var (
		lineStart = true // after an LF, or at the start: a dot here is stuffing
		crlfStart = true // after a CRLF, or at the start: ".\r\n" here ends the data
		prevCR    bool   // the last octet taken was a CR
		size      int64
		tooLarge  bool
	)
	keep := func(b []byte) {
		if tooLarge {
			return
		}
		if size += int64(len(b)); size > maxSize {
			tooLarge = true
			return
		}
		buf.Write(b)
	}
	for {
		if lineStart {
			lineStart = false
			p, err := w.in.Peek(3)
			if crlfStart && string(p) == ".\r\n" {
				w.in.Discard(3)
				break
			}
			if len(p) == 0 || p[0] != '.' {
				if err != nil {
					return dataError(err)
				}
			} else if crlfStart || len(p) > 1 && p[1] == '.' {
				// A dotted line is taken to its LF at once: a message of
				// many costs one look at each, as a line did before.
				w.in.Discard(1)
				prevCR = false
				if len(p) > 1 && p[1] != '\n' {
					take, err := w.in.ReadSlice('\n')
					if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
						return dataError(err)
					}
					n := len(take)
					lineStart = err == nil
					crlfStart = lineStart && n >= 2 && take[n-2] == '\r'
					prevCR = take[n-1] == '\r'
					keep(take)
					continue
				}
			}
		}
		if w.in.Buffered() == 0 {
			if _, err := w.in.Peek(1); err != nil {
				return dataError(err)
			}
		}
		take, _ := w.in.Peek(w.in.Buffered())
		if i := bytes.Index(take, []byte("\n.")); i >= 0 {
			take = take[:i+1]
		}
		n := len(take)
		lineStart = take[n-1] == '\n'
		crlfStart = lineStart && (n >= 2 && take[n-2] == '\r' || n == 1 && prevCR)
		prevCR = take[n-1] == '\r'
		keep(take)
		w.in.Discard(n)
	}
	// go-smtp's own data reader, which has read nothing, now reads the end
	// marker and reports EOF; then the next command follows. The reply
	// that comes next answers the final dot.
	w.out = []byte(".\r\n")
	w.command([]byte("."))
	if tooLarge {
		return smtp.ErrDataTooLarge
	}
	return nil
}

// dataError is a read error in the middle of the data: an EOF there is
// unexpected.
func dataError(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
