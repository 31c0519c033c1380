// Package smtpd receives mail over SMTP for burner's inbox domains, has
// package message read each message, and commits it as storage emails (one
// per accepted recipient) durably before it answers 250. It holds the
// protocol only: the session, the wire and burner's replies, the limits,
// the session log's records (spec §13.1), the fault rules' hooks (spec
// §13.2), what the MX saw of each message for its authentication record
// (spec §12; the verdicts are computed elsewhere, after the commit) and
// the metrics.
package smtpd

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus"

	"burner/message"
	"burner/storage"
)

// Options configure the daemon. Zero values mean the defaults in the
// comments.
type Options struct {
	Hostname        string   // greeting and Received header; "localhost"
	Domains         []string // inbox domains, case-insensitive; empty accepts any
	MaxMessageBytes int64    // advertised with SIZE; 10 MiB
	MaxRecipients   int      // per message; 100
	MaxConnections  int      // open at once; more are answered 421; 100
	MaxConnsPerIP   int      // open at once from one address (IPv6: one /64); more get 421; MaxConnections/2, at least 1
	// TrustedNetworks are not held to MaxConnsPerIP. nil means loopback
	// (127.0.0.0/8 and ::1/128); a non-nil empty slice, none.
	TrustedNetworks []netip.Prefix
	// StressIdleTimeout replaces CommandTimeout while more than 80% of
	// MaxConnections are open (spec §2, Postfix's stress mode); 10 seconds.
	StressIdleTimeout time.Duration
	CommandTimeout    time.Duration // waiting for a command; 5 minutes (RFC 5321 §4.5.3.2)
	DataTimeout       time.Duration // for the whole of a message's data; 10 minutes
	WriteTimeout      time.Duration // per reply; 1 minute
	MaxLineLength     int           // of a command line (spec §2: message lines have no limit); 2000 (twice RFC 5321 §4.5.3.1.6)
	MaxBodyBytes      int           // what is kept of a body, its text and its plain part; 1 MiB (message.DefaultMaxBody)
	TLSConfig         *tls.Config   // enables STARTTLS when set
	// Metrics, when set, receives the daemon's Prometheus series.
	Metrics prometheus.Registerer
	// Node names this node in session records (spec §10's node name).
	Node string
	// SessionLog, when set, receives the record of every session that
	// reached a RCPT (spec §13.1); nil keeps none.
	SessionLog SessionLog
	// SessionLogRate bounds the sessions a second whose records go to
	// SessionLog on their own, that is all but those written with their
	// delivery: past it a session that stores no mail is counted in
	// burner_smtp_sessions_unlogged_total, not logged (spec §13.1,
	// smtp.session_log_rate); DefaultSessionLogRate. Negative: no bound.
	SessionLogRate float64
	// Faults, when set, may answer a RCPT or the end of a message in
	// burner's place (spec §13.2); nil applies none.
	Faults Faults
	// Now is the clock of session records and of SessionLogRate;
	// time.Now.
	Now func() time.Time
	// Auth, when set, verifies each stored message (spec §12): the
	// message's authentication record, its envelope, is written with it
	// with status pending, and once the commit is done (the 250 never
	// waits on DNS) the message goes to Auth. nil verifies nothing: the
	// envelope is written with status off.
	Auth Verifier

	// checkWire stands in for the package's checkWire in tests; nil means
	// that one.
	checkWire func() error
}

// Verifier takes stored messages for their authentication verdicts (spec
// §12), off the SMTP path: Queue returns at once, whatever becomes of
// the message (a full queue is the verifier's to answer), and owns raw
// from then on. ids are the emails the message was stored as, whose
// record the verdict replaces; env is what the record holds already.
// mailauth.Verifier is one.
type Verifier interface {
	Queue(ids []string, env storage.Envelope, raw []byte)
}

// The defaults of Options: what a zero field means. main's configuration
// starts from them, so that each is written here alone.
const (
	DefaultHostname        = "localhost"
	DefaultMaxMessageBytes = 10 << 20 // 10 MiB
	DefaultMaxRecipients   = 100
	DefaultMaxConnections  = 100
	DefaultCommandTimeout  = 5 * time.Minute  // RFC 5321 §4.5.3.2
	DefaultDataTimeout     = 10 * time.Minute // for the whole of a message's data
	DefaultMaxLineLength   = 2000             // twice RFC 5321 §4.5.3.1.6
	DefaultSessionLogRate  = 100              // sessions a second (spec §13.1)
)

// DefaultTrustedNetworks returns what a nil Options.TrustedNetworks means:
// loopback.
func DefaultTrustedNetworks() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// Server is the SMTP daemon.
type Server struct {
	db      storage.Deliverer
	parser  *message.Parser
	log     *slog.Logger
	domains map[string]bool
	smtp    *smtp.Server

	maxConns    int
	maxConnsIP  int
	trusted     []netip.Prefix
	stressIdle  time.Duration
	wireErr     error // from checkWire: Serve refuses to serve
	maxLine     int
	maxSize     int64
	dataTimeout time.Duration
	metrics     *metrics
	maxRcpts    int
	node        string
	sessions    SessionLog // nil: no records
	logRate     *rateLimit
	faults      Faults // nil: no faults
	now         func() time.Time
	auth        Verifier // nil: no verification

	// quit is closed when Shutdown begins: a fault rule's delay ends then.
	quit     chan struct{}
	quitOnce sync.Once

	// inflight counts DATA commands between the end of data and their
	// reply, so that Shutdown can wait for their commits.
	inflight sync.WaitGroup

	// listeners are those Serve accepts on, so that Shutdown can close
	// the connections they handed out when its context ends.
	lnMu      sync.Mutex
	listeners []*limitListener

	// buffers holds the *bytes.Buffer that DATA reads messages into: a
	// message is parsed and stored (storage copies what it keeps) before
	// the reply, so its buffer serves the next one.
	buffers sync.Pool

	// bigSlots holds a token for each message over bigMessage being
	// parsed and stored: one per core.
	bigSlots chan struct{}
}

// bigMessage is the size from which a message takes one of bigSlots.
const bigMessage = 1 << 20

// New returns a daemon that stores mail in db. A nil log discards log
// output, as server.New's does.
func New(db storage.Deliverer, opts Options, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Hostname == "" {
		opts.Hostname = DefaultHostname
	}
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxRecipients == 0 {
		opts.MaxRecipients = DefaultMaxRecipients
	}
	if opts.MaxConnections == 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.MaxConnsPerIP == 0 {
		opts.MaxConnsPerIP = max(opts.MaxConnections/2, 1)
	}
	if opts.TrustedNetworks == nil {
		opts.TrustedNetworks = DefaultTrustedNetworks()
	}
	if opts.StressIdleTimeout == 0 {
		opts.StressIdleTimeout = 10 * time.Second
	}
	if opts.checkWire == nil {
		opts.checkWire = checkWire
	}
	if opts.CommandTimeout == 0 {
		opts.CommandTimeout = DefaultCommandTimeout
	}
	if opts.DataTimeout == 0 {
		opts.DataTimeout = DefaultDataTimeout
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = time.Minute
	}
	if opts.MaxLineLength == 0 {
		opts.MaxLineLength = DefaultMaxLineLength
	}
	if opts.SessionLogRate == 0 {
		opts.SessionLogRate = DefaultSessionLogRate
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{db: db, parser: message.New(opts.MaxBodyBytes), log: log, maxConns: opts.MaxConnections, maxConnsIP: opts.MaxConnsPerIP,
		trusted: opts.TrustedNetworks, stressIdle: opts.StressIdleTimeout, wireErr: opts.checkWire(),
		maxLine: opts.MaxLineLength, maxSize: opts.MaxMessageBytes, dataTimeout: opts.DataTimeout, metrics: newMetrics(opts.Metrics),
		maxRcpts: opts.MaxRecipients, node: opts.Node, sessions: opts.SessionLog, logRate: newRateLimit(opts.SessionLogRate),
		faults: opts.Faults, now: opts.Now, auth: opts.Auth, quit: make(chan struct{}), bigSlots: make(chan struct{}, runtime.GOMAXPROCS(0))}
	if len(opts.Domains) > 0 {
		s.domains = make(map[string]bool, len(opts.Domains))
		for _, d := range opts.Domains {
			s.domains[strings.ToLower(d)] = true
		}
	}
	srv := smtp.NewServer(s)
	srv.Domain = opts.Hostname
	srv.MaxMessageBytes = opts.MaxMessageBytes
	srv.MaxRecipients = opts.MaxRecipients
	srv.ReadTimeout = opts.CommandTimeout
	srv.WriteTimeout = opts.WriteTimeout
	srv.MaxLineLength = opts.MaxLineLength
	srv.TLSConfig = opts.TLSConfig
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = logAdapter{log}
	s.smtp = srv
	return s
}

// Err returns why the daemon cannot serve at all (burner cannot read the
// wire itself: see wire), or nil. serve asks before it opens for business,
// so that it never announces a start it cannot make.
func (s *Server) Err() error {
	return s.wireErr
}

// Serve accepts SMTP connections on ln until Shutdown. If burner cannot
// read the wire itself (see wire), Serve closes ln and returns the reason
// at once: it never serves with go-smtp's own reader.
func (s *Server) Serve(ln net.Listener) error {
	if s.wireErr != nil {
		ln.Close()
		return s.wireErr
	}
	perAddress := "421 4.7.0 Too many connections from your address (limit " + strconv.Itoa(s.maxConnsIP) + " per address), try again later\r\n"
	ll := newLimitListener(ln, s.maxConns, s.maxConnsIP, s.trusted, s.stressIdle, func(c net.Conn, perAddr bool) {
		if perAddr {
			s.log.Warn("connection refused: too many from one address", "remote", c.RemoteAddr().String(), "max", s.maxConnsIP)
			s.metrics.refused.WithLabelValues(refusedPerAddress).Inc()
			tooBusy(c, perAddress)
			return
		}
		s.log.Warn("connection refused: too many", "remote", c.RemoteAddr().String(), "max", s.maxConns)
		s.metrics.refused.WithLabelValues(refusedTotal).Inc()
		tooBusy(c, "421 4.7.0 Too many connections, try again later\r\n")
	})
	s.lnMu.Lock()
	s.listeners = append(s.listeners, ll)
	s.lnMu.Unlock()
	err := s.smtp.Serve(ll)
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits, until ctx is done, for
// sessions to end; then it closes the rest. It always waits for DATA
// commands that reached the commit, so no accepted mail is cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	s.quitOnce.Do(func() { close(s.quit) })
	err := s.smtp.Shutdown(ctx)
	if err != nil {
		// The sessions still open when ctx ends are closed here: go-smtp's
		// Close does nothing once Shutdown has begun (v0.25.1: Shutdown
		// has marked the server closed, and Close returns at that mark).
		s.lnMu.Lock()
		for _, ll := range s.listeners {
			ll.closeAll()
		}
		s.lnMu.Unlock()
	}
	s.inflight.Wait()
	if errors.Is(err, smtp.ErrServerClosed) {
		return nil
	}
	return err
}

// NewSession implements smtp.Backend.
func (s *Server) NewSession(c *smtp.Conn) (smtp.Session, error) {
	s.metrics.sessions.Inc()
	if s.wireErr != nil { // Serve has refused already; this is for safety's sake
		return nil, &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Service not available"}
	}
	ss := &session{srv: s, conn: c, limit: limitConnOf(c.Conn())}
	ss.wire = newWire(c, s.maxLine, s.maxSize, ss)
	if ss.limit != nil {
		// After STARTTLS: the conversation before it goes on in this
		// session's record.
		ss.rs.span, ss.limit.carry = ss.limit.carry, span{}
	}
	return ss, nil
}

// session is one SMTP connection's go-smtp Session: from EHLO (or from the
// EHLO after STARTTLS) to the end of the connection (or to STARTTLS). Its
// methods run on go-smtp's goroutine for the connection, except Data for
// BDAT, which runs on a goroutine of its own while go-smtp waits for it,
// and Logout, which a server's Close may call from anywhere.
type session struct {
	srv   *Server
	conn  *smtp.Conn
	wire  *wire
	limit *limitConn // nil when the connection is not counted
	from  string
	size  int64 // declared with MAIL FROM's SIZE; 0 when not
	utf8  bool  // SMTPUTF8 on MAIL FROM (RFC 6531)
	rcpts []string

	// What reword and the Received field need of the conversation.
	ehlo       bool   // the client said EHLO, not HELO
	mailGiven  bool   // MAIL was answered 250 in this transaction
	rcptTried  bool   // a RCPT was answered in this transaction, refused or not
	challenged bool   // the last reply was 334: the next line is an AUTH secret
	rbuf       []byte // a reworded line, reused

	// The RCPT being answered, as Rcpt saw it.
	rcptAddr  string
	rcptOurs  bool   // Rcpt was called for it (go-smtp refuses some before)
	rcptFault string // the fault rule that answers it

	mu sync.Mutex  // guards rs: Logout and a BDAT's Data run apart
	rs recordState // the session record being made (record.go)
}

func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	ss.from = from
	ss.size = 0
	ss.utf8 = false
	if opts != nil {
		ss.size = opts.Size
		ss.utf8 = opts.UTF8
	}
	return nil
}

// errNoMailbox answers RCPT for an address the API could not list.
var errNoMailbox = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such mailbox here"}

// errNotInboxDomain answers RCPT for an address outside the inbox domains.
var errNotInboxDomain = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "Relay access denied: not an inbox domain here"}

// inboxOf returns the inbox that mail for the address to goes to, or the
// reply that refuses it: spec §2, mail that cannot be listed is never
// accepted.
func (s *Server) inboxOf(to string) (string, *smtp.SMTPError) {
	at := strings.LastIndexByte(to, '@')
	if at < 0 {
		return "", errNoMailbox
	}
	local, domain := to[:at], to[at+1:]
	if !storage.StorableLocalPart(local) || domain == "" {
		return "", errNoMailbox
	}
	if s.domains != nil && !s.domains[strings.ToLower(domain)] {
		return "", errNotInboxDomain
	}
	return storage.InboxName(local), nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.rcptAddr, ss.rcptOurs, ss.rcptFault = to, true, ""
	inbox, refusal := ss.srv.inboxOf(to)
	switch refusal {
	case nil:
	case errNotInboxDomain:
		ss.srv.metrics.rejected.WithLabelValues(rejectDomain).Inc()
		return refusal
	default:
		ss.srv.metrics.rejected.WithLabelValues(rejectMailbox).Inc()
		return refusal
	}
	if rule, ok := ss.applyFault(storage.FaultAtRcpt, []string{inbox}); ok {
		ss.rcptFault = rule.ID
		return ss.fault(rule)
	}
	for _, r := range ss.rcpts {
		if strings.EqualFold(r, to) {
			return nil // one copy per mailbox, however often it is named
		}
	}
	ss.rcpts = append(ss.rcpts, to)
	return nil
}

// errDataAborted ends a DATA whose connection is already closed; nobody
// reads it.
var errDataAborted = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 4, 2}, Message: "Connection closed"}

// errStorageFull answers DATA when the data file is at its cap
// (retention.max_bytes): the sender retries later, when the sweeper or a
// client has made room.
var errStorageFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 3, 1}, Message: "Insufficient system storage, try again later"}

// maxPooledBuffer bounds the DATA buffers kept for reuse: most mail is a
// few KB, and one 10 MB message should not pin 10 MB.
const maxPooledBuffer = 1 << 20

// errTempStorage answers DATA when the commit failed: the sender keeps the
// message and retries.
var errTempStorage = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary storage failure, try again later"}

func (ss *session) Data(r io.Reader) (err error) {
	start := time.Now()
	_, bdat := r.(*io.PipeReader)
	if ss.limit != nil && !bdat {
		// Stress cuts idle waits, not the reading of a message.
		ss.limit.readingData(true)
		defer ss.limit.readingData(false)
	}
	// go-smtp's read deadline, set when it read the DATA command, would
	// otherwise bound the whole message by the command timeout.
	ss.conn.Conn().SetReadDeadline(start.Add(ss.srv.dataTimeout))
	buf, _ := ss.srv.buffers.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			buf.Reset()
			ss.srv.buffers.Put(buf)
		}
	}()
	// The size the sender declared (SIZE, RFC 1870) is the buffer's: a
	// 10 MB message read into a buffer that doubles as it goes would cost
	// the copies of 1, 2, 4 and 8 MB on the way, and 16 MB held.
	if ss.size > 0 && ss.size <= ss.srv.maxSize {
		buf.Grow(int(ss.size) + 1024) // and the Received header
	}
	id := ss.sessionID()
	under := ss.tlsOf() // for the Received field and the authentication record
	ss.writeReceived(buf, start, id, under != nil)
	head := buf.Len()
	// BDAT hands us a pipe that the wire fills a chunk at a time, erring
	// on a chunk cut short; DATA, the wire itself.
	if bdat {
		_, err = buf.ReadFrom(r)
	} else {
		err = ss.wire.readData(buf, ss.srv.maxSize)
	}
	ss.dataRead(int64(buf.Len() - head))
	if err != nil {
		var smtpErr *smtp.SMTPError
		switch {
		case errors.As(err, &smtpErr) && smtpErr.Code == 552:
			ss.srv.metrics.rejected.WithLabelValues(rejectTooLarge).Inc()
			return smtpErr
		}
		ss.srv.metrics.rejected.WithLabelValues(rejectAborted).Inc()
		if bdat {
			// go-smtp has answered the chunk and reset the transaction;
			// this goroutine must not write to the connection.
			ss.srv.log.Debug("BDAT aborted", "err", err, "remote", ss.conn.Conn().RemoteAddr().String())
			return errDataAborted
		}
		// A timeout or a broken connection in the middle of the data: the
		// rest of the message must never be read as commands, so say
		// goodbye and hang up. go-smtp has flushed its 354 and writes
		// nothing until we return, so this reply goes out in order.
		ss.srv.log.Debug("DATA aborted", "err", err, "remote", ss.conn.Conn().RemoteAddr().String(), "session_id", id)
		ss.conn.Conn().SetWriteDeadline(time.Now().Add(time.Second))
		ss.wire.writeReply("421 4.4.2 Timeout or error reading the message, closing connection")
		ss.wire.hangUp()
		return errDataAborted
	}
	// spec §13.2: a fault rule at data answers after the final dot, and
	// nothing is stored.
	if ss.srv.faults != nil {
		inboxes := make([]string, len(ss.rcpts))
		for i, to := range ss.rcpts {
			inboxes[i] = storage.InboxName(storage.LocalPart(to))
		}
		if rule, ok := ss.applyFault(storage.FaultAtData, inboxes); ok {
			ss.dataFault(rule.ID)
			return ss.fault(rule)
		}
	}
	ss.srv.inflight.Add(1)
	defer ss.srv.inflight.Done()
	defer func() {
		// A bug in parsing one message must cost that message a retry, not
		// the daemon.
		if p := recover(); p != nil {
			ss.srv.log.Error("panic in DATA", "panic", p, "remote", ss.conn.Conn().RemoteAddr().String())
			ss.srv.metrics.rejected.WithLabelValues(rejectRecovered).Inc()
			err = errTempStorage
		}
	}()
	raw := buf.Bytes()
	received := time.Now() // the end of DATA
	if len(raw) > bigMessage {
		// Parsing and compressing a large message costs tens of MB for a
		// moment: as many at once as there are cores, and the rest wait,
		// so that many large messages together cost memory in proportion
		// to the cores and not to the connections.
		ss.srv.bigSlots <- struct{}{}
		defer func() { <-ss.srv.bigSlots }()
	}
	msg, perr := ss.srv.parser.Parse(raw, ss.from)
	if perr != nil {
		ss.srv.log.Debug("message parsed with errors", "err", perr)
	}
	msg.Session = ss.delivering(int64(len(raw) - head))
	msg.Auth = ss.authRecord(under)
	emails, err := ss.srv.db.Deliver(context.Background(), &msg, ss.rcpts)
	var ids []string
	if err == nil && (msg.Session != nil || ss.srv.auth != nil) {
		// One slice for the session's record and the verifier's job, which
		// only read it.
		ids = make([]string, len(emails))
		for i, e := range emails {
			ids[i] = e.ID
		}
	}
	ss.delivered(msg.Session, ids, err)
	if errors.Is(err, storage.ErrFull) {
		ss.srv.log.Warn("email refused: data file full", "recipients", len(ss.rcpts), "bytes", len(raw))
		ss.srv.metrics.rejected.WithLabelValues(rejectFull).Inc()
		return errStorageFull
	}
	if errors.Is(err, storage.ErrUnavailable) {
		// spec §10: a database out of reach is expected now and then; the
		// sender retries, and the node recovers by itself.
		ss.srv.log.Warn("email deferred: store unavailable", "err", err, "recipients", len(ss.rcpts))
		ss.srv.metrics.rejected.WithLabelValues(rejectStorage).Inc()
		return errTempStorage
	}
	if err != nil {
		ss.srv.log.Error("storing email failed", "err", err, "recipients", len(ss.rcpts))
		ss.srv.metrics.rejected.WithLabelValues(rejectStorage).Inc()
		return errTempStorage
	}
	if ss.srv.auth != nil {
		// The buffer goes back to the pool when Data returns, and the
		// verifier holds the message longer: it gets a copy of its own,
		// which costs a third of a buffer grown anew for the next
		// message (BenchmarkAuthJobBytes).
		ss.srv.auth.Queue(ids, msg.Auth.Envelope, bytes.Clone(raw))
	}
	ss.srv.metrics.ingestLag.Observe(time.Since(received).Seconds())
	ss.srv.metrics.accepted.Inc()
	ss.srv.metrics.bytes.Add(float64(len(raw)))
	// LogAttrs, unlike Info, boxes no argument into an interface, and
	// nothing at all is built when Info is not logged.
	if ss.srv.log.Enabled(context.Background(), slog.LevelInfo) {
		ms := float64(time.Since(start).Microseconds()) / 1000
		for _, e := range emails {
			ss.srv.log.LogAttrs(context.Background(), slog.LevelInfo, "email stored", slog.String("email_id", e.ID),
				slog.String("inbox", storage.LocalPart(e.To)), slog.Int("bytes", len(raw)), slog.Float64("duration_ms", ms),
				slog.String("session_id", id))
		}
	}
	return nil
}

// authRecord returns the authentication record the message is stored
// with (spec §12): what the MX saw of its delivery, status pending when a
// verifier is to replace it with the verdicts, else off. under is
// tlsOf's.
func (ss *session) authRecord(under *storage.TLS) *storage.AuthResult {
	r := &storage.AuthResult{Status: storage.AuthOff, Envelope: storage.Envelope{Helo: ss.conn.Hostname(), MailFrom: ss.from}}
	if ss.srv.auth != nil {
		r.Status = storage.AuthPending
	}
	r.Envelope.ClientIP = addrOf(ss.conn.Conn().RemoteAddr())
	r.Envelope.TLS = under
	return r
}

// writeReceived starts the stored message with a Received header (RFC 5321
// §4.4), as every MTA that takes a message does: with the protocol (RFC
// 3848, RFC 6531), the session id that the session log and the 250 name,
// and for a single recipient, that recipient (as Postfix does: with more,
// each copy would show the others). isTLS says whether tlsOf has a TLS.
func (ss *session) writeReceived(buf *bytes.Buffer, now time.Time, id string, isTLS bool) {
	remote := ""
	if addr, ok := ss.conn.Conn().RemoteAddr().(*net.TCPAddr); ok {
		remote = addr.IP.String()
	}
	with := "ESMTP"
	switch {
	case ss.utf8 && isTLS:
		with = "UTF8SMTPS"
	case ss.utf8:
		with = "UTF8SMTP"
	case isTLS:
		with = "ESMTPS"
	case !ss.ehlo:
		with = "SMTP" // RFC 5321 §4.4: HELO
	}
	helo := sanitizeHeaderValue(ss.conn.Hostname())
	// Written piece by piece: fmt costs an allocation per argument.
	for _, s := range []string{"Received: from ", helo, " ([", remote, "])\r\n\tby ", ss.srv.smtp.Domain, " (burner) with ", with, " id ", id} {
		buf.WriteString(s)
	}
	if len(ss.rcpts) == 1 {
		for _, s := range []string{"\r\n\tfor <", sanitizeHeaderValue(ss.rcpts[0]), ">"} {
			buf.WriteString(s)
		}
	}
	buf.WriteString(";\r\n\t")
	buf.Write(now.AppendFormat(buf.AvailableBuffer(), time.RFC1123Z))
	buf.WriteString("\r\n")
}

// sanitizeHeaderValue keeps a client-chosen string from breaking the header
// it is written into.
func sanitizeHeaderValue(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x21 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// Reset ends the transaction: go-smtp calls it after the reply to the
// data, and for RSET and a new EHLO before their reply.
func (ss *session) Reset() {
	ss.from = ""
	ss.size = 0
	ss.utf8 = false
	ss.rcpts = nil
	ss.mailGiven, ss.rcptTried = false, false
	ss.transactionOver()
}

// Logout ends the session: the connection closed, or STARTTLS began a new
// session on it.
func (ss *session) Logout() error {
	ss.sessionOver()
	return nil
}

// logAdapter gives go-smtp's ErrorLog our structured logger.
type logAdapter struct{ log *slog.Logger }

func (a logAdapter) Printf(format string, v ...any) {
	a.log.Warn("smtp", "msg", strings.TrimSpace(fmt.Sprintf(format, v...)))
}

func (a logAdapter) Println(v ...any) {
	a.log.Warn("smtp", "msg", strings.TrimSpace(fmt.Sprintln(v...)))
}
