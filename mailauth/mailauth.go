// Package mailauth tells what the receiving MX saw of one message (spec
// §12): whether its client's address may send for its MAIL FROM domain
// (SPF, RFC 7208), whether its DKIM signatures verify (RFC 6376), whether
// its From domain's DMARC policy (RFC 7489) is met with the alignment the
// record asks for, and whether the client's PTR name resolves back to its
// address (FCrDNS). It asks its own DNS resolver, caches answers for their
// TTL, bounds the work one message can cause, and runs verifications in a
// bounded pool off the SMTP path.
//
// The verdict is a storage.AuthResult. Verify computes one synchronously;
// Submit queues a job for the pool, which hands each verdict to the Done
// function given to New.
package mailauth

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"burner/storage"

	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Verifier. The zero value means the defaults.
type Options struct {
	// Resolver is the host:port of the DNS server every lookup goes to
	// (UDP, TCP when an answer is truncated). "" means the servers of
	// /etc/resolv.conf; /etc/hosts is never read.
	Resolver string
	// Timeout bounds all the lookups of one message together; a lookup
	// without an answer by then makes its verdict temperror. 0 means 5s.
	Timeout time.Duration
	// Hostname is the authserv-id of the Authentication-Results value
	// (smtp.hostname). "" means "localhost".
	Hostname string
	// Workers is how many messages are verified at once. 0 means 8.
	Workers int
	// QueueSize is how many submitted messages may wait for a worker;
	// each holds its raw bytes. When the queue is full a message's
	// verdicts are temperror "busy". 0 means 128.
	QueueSize int
	// Now is the clock of the DNS cache. nil means time.Now.
	Now func() time.Time
	// Metrics, when set, receives the verifier's Prometheus series.
	Metrics prometheus.Registerer
	// resolvConf is the file the system's servers are read from when
	// Resolver is "" (a field so that tests can name another).
	resolvConf string
}

// DefaultTimeout is what a zero Options.Timeout means (spec §12's
// dns.timeout).
const DefaultTimeout = 5 * time.Second

// Defaults, written once.
const (
	defaultHostname  = "localhost"
	defaultWorkers   = 8
	defaultQueueSize = 128
)

// RFC limits on the work of one message.
const (
	// maxSignatures is how many DKIM signatures are verified (spec §12);
	// any more are permerror "too many signatures".
	maxSignatures = 5
	// maxLookups and maxVoidLookups are RFC 7208 §4.6.4's: DNS-querying
	// mechanisms and lookups that found nothing, in one SPF evaluation.
	maxLookups     = 10
	maxVoidLookups = 2
	// maxPTRNames is how many PTR names are resolved back for FCrDNS, as
	// RFC 7208 §5.5 bounds its ptr mechanism.
	maxPTRNames = 10
)

// Verifier computes the verdicts of messages, synchronously (Verify) or in
// its pool (Submit). It is safe for concurrent use.
type Verifier struct {
	res      *resolver
	timeout  time.Duration
	maxDelay time.Duration
	hostname string
	metrics  *metrics
	log      *slog.Logger
	done     Done

	// The pool. mu guards closed against the sends of Submit, so that
	// Shutdown can close the channels.
	mu       sync.RWMutex
	closed   bool
	queue    chan Job
	busy     chan verdict
	base     context.Context // cancelled when Shutdown gives up waiting
	cancel   context.CancelFunc
	workers  sync.WaitGroup
	stopOnce sync.Once
}

// New returns a Verifier whose pool is running: opts.Workers goroutines
// verify submitted jobs and call done with each verdict. Shutdown stops
// them. done may be nil when only Verify is used.
func New(opts Options, done Done, log *slog.Logger) *Verifier {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Hostname == "" {
		opts.Hostname = defaultHostname
	}
	if opts.Workers <= 0 {
		opts.Workers = defaultWorkers
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = defaultQueueSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.resolvConf == "" {
		opts.resolvConf = "/etc/resolv.conf"
	}
	if done == nil {
		done = func(context.Context, Job, storage.AuthResult) {}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{
		res:      newResolver(opts.Resolver, opts.resolvConf, opts.Now),
		timeout:  opts.Timeout,
		maxDelay: opts.Timeout * time.Duration(1+(opts.QueueSize+opts.Workers-1)/opts.Workers),
		hostname: opts.Hostname,
		metrics:  newMetrics(opts.Metrics),
		log:      log,
		done:     done,
		queue:    make(chan Job, opts.QueueSize),
		busy:     make(chan verdict, max(busyLane, opts.QueueSize)),
	}
	if v.res.noDNS != nil {
		log.Warn("no DNS server: every verdict that needs one will be temperror", "err", v.res.noDNS)
	}
	v.base, v.cancel = context.WithCancel(context.Background())
	v.start(opts.Workers)
	return v
}

// MaxDelay is the longest a submitted job may wait for its verdict, not
// counting the time Done takes: its own Timeout and those of the jobs
// queued before it, the queue full and every lookup unanswered. A verdict
// still pending longer (give Done a margin) after its message was accepted
// was lost, the process having stopped before Done stored it, and may be
// computed again with Verify or Submit.
func (v *Verifier) MaxDelay() time.Duration {
	return v.maxDelay
}

// Verify returns the verdicts on the message raw delivered with env, with
// status done. Its lookups share one deadline, Options.Timeout (or ctx's,
// if sooner); a verdict whose lookups got no answer by then is temperror.
// It is what the pool runs, and may be called directly, for instance for
// a message whose verdict was left pending by a crash.
func (v *Verifier) Verify(ctx context.Context, env storage.Envelope, raw []byte) storage.AuthResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()
	h := readHeader(raw)
	from, fromErr := fromDomain(h.from)

	var (
		spfRes   storage.SPFResult
		spfWhy   string
		dkims    []storage.DKIMResult
		ptr      string
		fcrdns   bool
		policy   dmarcLookup
		wg       sync.WaitGroup
		panicked = "internal error"
	)
	// The four checks are independent until DMARC weighs SPF and DKIM, so
	// they run at once, under the one deadline: SPF in this goroutine,
	// whose stack has grown already (a new goroutine's would grow again
	// at each verification: a fifth of its CPU, with answers cached).
	wg.Go(func() {
		defer v.contain("dkim", func() { dkims = degradedDKIM(h.sigs, panicked) })
		dkims = v.checkDKIM(ctx, raw, h)
	})
	wg.Go(func() {
		defer v.contain("fcrdns", func() { ptr, fcrdns = "", false })
		ptr, fcrdns = v.checkPTR(ctx, env.ClientIP)
	})
	if fromErr == nil {
		wg.Go(func() {
			defer v.contain("dmarc", func() { policy = dmarcLookup{result: storage.AuthTempError, reason: panicked} })
			policy = v.lookupDMARC(ctx, from)
		})
	} else {
		policy = dmarcLookup{result: storage.AuthPermError, reason: "no single From domain"}
	}
	func() {
		defer v.contain("spf", func() {
			spfRes, spfWhy = storage.SPFResult{Result: storage.AuthTempError, Domain: spfDomain(env)}, panicked
		})
		spfRes, spfWhy = v.checkSPF(ctx, env)
	}()
	wg.Wait()

	dm, dmWhy := evaluateDMARC(from, policy, spfRes, dkims)
	r := storage.AuthResult{
		Status:   storage.AuthDone,
		Envelope: env,
		PTR:      ptr,
		FCrDNS:   fcrdns,
		SPF:      spfRes,
		DKIM:     dkims,
		DMARC:    dm,
	}
	r.AuthenticationResults = formatResults(v.hostname, env, r, spfWhy, dmWhy)
	v.metrics.count(r)
	v.metrics.seconds.Observe(time.Since(start).Seconds())
	return r
}

// Degraded returns the verdict of a message that was not verified: status
// done, SPF, each DKIM signature (but those past the fifth, which are
// permerror "too many signatures") and DMARC temperror for reason, no PTR.
// The pool gives it to a job refused because its queue is full (reason
// "busy"); it costs no lookup.
func (v *Verifier) Degraded(env storage.Envelope, raw []byte, reason string) storage.AuthResult {
	h := readHeader(raw)
	from, _ := fromDomain(h.from)
	r := storage.AuthResult{
		Status:   storage.AuthDone,
		Envelope: env,
		SPF:      storage.SPFResult{Result: storage.AuthTempError, Domain: spfDomain(env)},
		DKIM:     degradedDKIM(h.sigs, reason),
		DMARC:    storage.DMARCResult{Result: storage.AuthTempError, Domain: from},
	}
	r.AuthenticationResults = formatResults(v.hostname, env, r, reason, reason)
	v.metrics.count(r)
	return r
}

// degradedDKIM returns temperror for reason for each of sigs, but those
// past the fifth, which are permerror "too many signatures".
func degradedDKIM(sigs []signature, reason string) []storage.DKIMResult {
	if len(sigs) == 0 {
		return nil
	}
	out := make([]storage.DKIMResult, len(sigs))
	for i, s := range sigs {
		out[i] = storage.DKIMResult{Result: storage.AuthTempError, Domain: s.domain, Selector: s.selector, Error: reason}
		if i >= maxSignatures {
			out[i].Result, out[i].Error = storage.AuthPermError, errTooManySignatures
		}
	}
	return out
}

// contain, deferred, turns a panic of a check into its temperror verdict
// (set by fallback) and an error in the log: mail is hostile input, and
// one message must not take the server down.
func (v *Verifier) contain(check string, fallback func()) {
	if p := recover(); p != nil {
		v.log.Error("panic in a verification", "check", check, "panic", p)
		fallback()
	}
}

// checkPTR returns the client's PTR name and whether it resolves back to
// ip (FCrDNS): the first of at most maxPTRNames names that does, or else
// the first name.
func (v *Verifier) checkPTR(ctx context.Context, ip netip.Addr) (string, bool) {
	if !ip.IsValid() {
		return "", false
	}
	ip = ip.Unmap()
	names, err := v.res.LookupAddr(ctx, ip.String())
	if err != nil || len(names) == 0 {
		return "", false
	}
	names = names[:min(len(names), maxPTRNames)]
	for _, n := range names {
		addrs, err := v.res.LookupIPAddr(ctx, n)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if got, ok := netip.AddrFromSlice(a.IP); ok && got.Unmap() == ip {
				return trimDot(n), true
			}
		}
	}
	return trimDot(names[0]), false
}

func trimDot(name string) string {
	if len(name) > 1 && name[len(name)-1] == '.' {
		return name[:len(name)-1]
	}
	return name
}
