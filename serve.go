package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"burner/mailauth"
	"burner/server"
	"burner/smtpd"
	"burner/storage"
	"burner/webhook"
)

func newServeCmd() *cobra.Command {
	def := defaultConfig()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the SMTP daemon and the HTTP API",
		Long: `Run the SMTP daemon, the HTTP API and web UI, and the control socket, on
one data file. On its first start, once its ports are bound, it creates an
API key, named "default", and prints it once (a JSON log line with
log.format = "json").

BURNER_KEY=bnr_... (bnr_ and at least 43 base64url characters, 32 random
bytes) names a key instead: serve makes sure a key with that secret exists,
creating it, named "env", if it does not, and then makes and prints no
first key. A CI job or a container so knows its key before burner starts;
the client libraries read the same variable.

Signals: SIGTERM or SIGINT stops taking mail, lets messages in flight
commit, drains HTTP and closes the file. SIGHUP reloads the TLS
certificate files (smtp.tls_cert, http.tls_cert) without dropping a
connection; other settings need a restart. Under systemd (Type=notify)
burner reports READY=1 once it serves and STOPPING=1 when it stops.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			cfg.Key = os.Getenv(envKeyVar)
			log := newLogger(cfg.Log, cmd.ErrOrStderr())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg, log, cmd.ErrOrStderr(), os.Getenv("NOTIFY_SOCKET"))
		},
	}
	f := cmd.Flags()
	addDataFlag(cmd)
	f.String("http", def.HTTP.Listen, "the host:port `ADDR` the HTTP API and web UI listen on; overrides http.listen")
	f.String("smtp", def.SMTP.Listen, "the host:port `ADDR` the SMTP daemon listens on (production: \":25\"); overrides smtp.listen")
	f.StringArray("domain", nil, "an inbox `DOMAIN`; repeat for several; overrides smtp.domains (default: smtp.domains, else any domain)")
	return cmd
}

// app is a started burner: the file is open and every listener is bound.
type app struct {
	log                   *slog.Logger
	db                    storage.Engine
	data                  string // the data file's path
	node                  string // this node's name (nodeName)
	smtpLn, httpLn, ctlLn net.Listener
	mta                   *smtpd.Server
	sessions              *smtpd.SessionWriter // the SMTP session log's batches (spec §13.1)
	httpSrv, ctlSrv       *http.Server
	sweepEvery            time.Duration
	sweptTotal            prometheus.Counter
	webhooks              *webhook.Worker
	verifier              *mailauth.Verifier // nil with auth.verify = false
	smtpDown              atomic.Bool        // the SMTP server has stopped serving

	smtpCert, httpCert *certificate   // nil without TLS; SIGHUP reloads them
	hup                chan os.Signal // SIGHUP, from start until run returns
	notifySocket       string         // $NOTIFY_SOCKET: systemd waits for READY=1 there
}

// smtpReady reports whether the SMTP listener still serves, for /healthz.
func (a *app) smtpReady() error {
	if a.smtpDown.Load() {
		return errors.New("the SMTP server is not serving")
	}
	return nil
}

// nodeName returns the name of this node among the nodes of one store
// (spec §9, §10; docs/scale.md): the node setting, or else the host's name
// and the address the SMTP server is bound to, such as
// "mx1.example.test/[::]:25". It stays the same across restarts, so that a
// node takes back the webhook leases of its earlier run, and differs
// between two nodes on one host, which cannot bind the same address.
func nodeName(node string, smtp net.Addr) string {
	if node != "" {
		return node
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + "/" + smtp.String()
}

// newRegistry returns the Prometheus registry of one appliance: the Go
// runtime and process series, and what the data file holds.
func newRegistry(db storage.Engine) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	stats := func(get func(storage.Stats) float64) func() float64 {
		return func() float64 {
			st, err := db.Stats(context.Background())
			if err != nil {
				return 0
			}
			return get(st)
		}
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "burner_emails_stored", Help: "Emails in the data file."},
			stats(func(st storage.Stats) float64 { return float64(st.Emails) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "burner_inboxes", Help: "Inboxes with at least one email."},
			stats(func(st storage.Stats) float64 { return float64(st.Inboxes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "burner_data_file_bytes", Help: "Size of the data file."},
			stats(func(st storage.Stats) float64 { return float64(st.FileBytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "burner_smtp_sessions_logged", Help: "Records in the SMTP session log (spec §13.1)."},
			stats(func(st storage.Stats) float64 { return float64(st.SMTPSessions) })),
	)
	return reg
}

// serve runs burner until ctx is done or a server fails. Notices meant for
// the operator (the first API key) go to notice; systemd's notifications
// go to notifySocket ($NOTIFY_SOCKET; "" when not under systemd).
func serve(ctx context.Context, cfg Config, log *slog.Logger, notice io.Writer, notifySocket string) error {
	a, err := start(ctx, cfg, log, notice)
	if err != nil {
		return err
	}
	a.notifySocket = notifySocket
	return a.run(ctx)
}

// start opens the data file and binds every listener, so that bind errors
// surface before anything is served. On error it leaves nothing open.
func start(ctx context.Context, cfg Config, log *slog.Logger, notice io.Writer) (_ *app, err error) {
	a := &app{log: log, data: cfg.Data}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	// Before the store is opened, so that a mistyped key creates nothing.
	if cfg.Key != "" && !storage.ValidSecret(cfg.Key) {
		return nil, errBadEnvKey
	}
	webhooks := make([]webhook.Hook, len(cfg.Webhooks))
	for i, w := range cfg.Webhooks {
		webhooks[i] = w.webhook()
	}
	db, err := openData(ctx, cfg, mayCreate, log.With("component", "storage"))
	if err != nil {
		return nil, err
	}
	a.db = db
	if len(cfg.SMTP.Domains) == 0 {
		log.Warn("smtp.domains is empty: accepting mail for any domain")
	}
	var smtpTLS *tls.Config
	if cfg.SMTP.TLSCert != "" {
		if a.smtpCert, err = loadCertificate(cfg.SMTP.TLSCert, cfg.SMTP.TLSKey); err != nil {
			return nil, fmt.Errorf("smtp.tls_cert: %w", err)
		}
		smtpTLS = a.smtpCert.tlsConfig()
	}
	if cfg.HTTP.TLSCert != "" {
		if a.httpCert, err = loadCertificate(cfg.HTTP.TLSCert, cfg.HTTP.TLSKey); err != nil {
			return nil, fmt.Errorf("http.tls_cert: %w", err)
		}
	}
	for name, c := range map[string]*certificate{"smtp": a.smtpCert, "http": a.httpCert} {
		if c != nil && time.Now().After(c.notAfter()) {
			log.Warn("the TLS certificate has expired: renew it, then send SIGHUP", "server", name, "cert", c.certFile, "not_after", c.notAfter())
		}
	}
	if a.smtpLn, err = net.Listen("tcp", cfg.SMTP.Listen); err != nil {
		return nil, fmt.Errorf("smtp listen: %w", err)
	}
	if a.httpLn, err = net.Listen("tcp", cfg.HTTP.Listen); err != nil {
		return nil, fmt.Errorf("http listen: %w", err)
	}
	// A PostgreSQL store needs no control socket: the CLI opens the
	// database itself, as any number of processes may (spec §10).
	if !isPostgres(cfg.Data) {
		if a.ctlLn, err = listenControl(controlSocket(cfg.Data)); err != nil {
			return nil, err
		}
	}
	reg := newRegistry(a.db)
	a.sweptTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "burner_sweeper_deleted_total", Help: "Emails deleted by retention.",
	})
	reg.MustRegister(a.sweptTotal)
	a.node = nodeName(cfg.Node, a.smtpLn.Addr())
	a.webhooks, err = webhook.New(a.db, webhook.Options{Hooks: webhooks, Node: a.node, Metrics: reg},
		log.With("component", "webhooks"))
	if err != nil {
		return nil, err
	}
	// Spec §12: the verdicts of each message, after its 250, stored with
	// it by storeVerdict.
	var verifier smtpd.Verifier
	var lost server.Verifier
	if cfg.Auth.Verify {
		a.verifier = mailauth.New(mailauth.Options{
			Resolver: cfg.DNS.Resolver,
			Timeout:  cfg.DNS.Timeout.Duration,
			Hostname: cfg.SMTP.Hostname,
			Metrics:  reg,
		}, a.storeVerdict, log.With("component", "auth"))
		verifier, lost = a.verifier, a.verifier
	}
	// spec §13.2: without faults.enabled smtpd gets no rules to ask, and
	// pays nothing for them.
	var faults smtpd.Faults
	if cfg.Faults.Enabled {
		armed, err := a.db.ArmFaultRules(ctx, cfg.Faults.faultRules())
		if err != nil {
			return nil, fmt.Errorf("faults.rules: %w", err)
		}
		faults = a.db
		log.Warn("fault injection is on: SMTP fails on purpose where a rule says so (spec §13.2)", "configured_rules", len(armed))
	} else if len(cfg.Faults.Rules) > 0 {
		log.Warn("faults.rules are not armed: faults.enabled is false", "configured_rules", len(cfg.Faults.Rules))
	}
	a.sessions = smtpd.NewSessionWriter(a.db, log.With("component", "smtpd"))
	a.mta = smtpd.New(a.db, smtpd.Options{
		Metrics:         reg,
		Node:            a.node,
		Hostname:        cfg.SMTP.Hostname,
		Domains:         cfg.SMTP.Domains,
		MaxMessageBytes: cfg.SMTP.MaxMessageBytes,
		MaxRecipients:   cfg.SMTP.MaxRecipients,
		MaxConnections:  cfg.SMTP.MaxConnections,
		MaxConnsPerIP:   cfg.SMTP.MaxConnsPerIP,
		TrustedNetworks: cfg.SMTP.trustedNetworks(),
		CommandTimeout:  cfg.SMTP.CommandTimeout.Duration,
		DataTimeout:     cfg.SMTP.DataTimeout.Duration,
		MaxLineLength:   cfg.SMTP.MaxLineLength,
		MaxBodyBytes:    cfg.SMTP.MaxBodyBytes,
		TLSConfig:       smtpTLS,
		Auth:            verifier,
		SessionLog:      a.sessions,
		SessionLogRate:  cfg.SMTP.sessionLogRate(),
		Faults:          faults,
	}, log.With("component", "smtpd"))
	if err := a.mta.Err(); err != nil {
		return nil, err // spec §2: never serve with go-smtp's own reader
	}
	api := server.New(a.db, server.Options{
		UI:            cfg.UI.Enabled,
		Public:        cfg.UI.Public,
		RequireTLS:    cfg.UI.RequireTLS,
		RemoteImages:  cfg.UI.RemoteImages,
		Domains:       cfg.SMTP.Domains,
		MaxQueryBytes: cfg.HTTP.MaxQueryBytes,
		Metrics:       reg,
		Ready:         a.smtpReady,
		AddressDomain: cfg.addressDomain(),
		Version:       buildVersion(),
		// What GET /api/v1/info reports (spec §14).
		MaxMessageBytes: cfg.SMTP.MaxMessageBytes,
		MaxRecipients:   cfg.SMTP.MaxRecipients,
		Features:        server.Features{MCP: true, Webhooks: len(webhooks) > 0, Auth: cfg.Auth.Verify, Faults: cfg.Faults.Enabled},
		Verifier:        lost,
	}, log.With("component", "http"))
	a.sweepEvery = cfg.Retention.SweepInterval.Duration
	a.httpSrv = &http.Server{
		Handler:           api.Handler(),
		ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout.Duration,
		ReadTimeout:       cfg.HTTP.ReadTimeout.Duration,
		WriteTimeout:      cfg.HTTP.WriteTimeout.Duration,
		IdleTimeout:       cfg.HTTP.IdleTimeout.Duration,
		MaxHeaderBytes:    cfg.HTTP.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn),
	}
	if a.httpCert != nil {
		a.httpSrv.TLSConfig = a.httpCert.tlsConfig()
	}
	// No write timeout: a backup streams the whole file.
	a.ctlSrv = &http.Server{Handler: api.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
	// Spec §14: the first key is shown only once, so it is made only when
	// nothing can stop this start any more (every listener bound, the
	// wire checked): a start that fails leaves the next one to make it.
	// A key given in BURNER_KEY takes its place.
	if cfg.Key != "" {
		err = ensureEnvKey(ctx, a.db, cfg.Key, log)
	} else {
		err = ensureKey(ctx, a.db, notice, cfg.Log.Format == "json")
	}
	if err != nil {
		return nil, err
	}
	// From here on SIGHUP reloads certificates rather than ending burner.
	a.hup = make(chan os.Signal, 1)
	signal.Notify(a.hup, syscall.SIGHUP)
	return a, nil
}

// close releases what start opened, for a start that failed half-way.
func (a *app) close() {
	if a.hup != nil {
		signal.Stop(a.hup)
	}
	for _, ln := range []net.Listener{a.smtpLn, a.httpLn, a.ctlLn} {
		if ln != nil {
			ln.Close()
		}
	}
	if a.verifier != nil {
		a.verifier.Shutdown(context.Background()) // nothing was submitted yet
	}
	if a.sessions != nil {
		a.sessions.Shutdown(context.Background())
	}
	if a.db != nil {
		a.db.Close()
	}
}

// storeVerdict is the verifier's Done: it stores the verdict of a message
// with its copies. A message deleted meanwhile takes its verdict with it;
// a verdict that cannot be stored leaves the record pending, to be
// computed again when it is read (server.Options.Verifier).
func (a *app) storeVerdict(ctx context.Context, j mailauth.Job, r storage.AuthResult) {
	err := a.db.PutAuth(ctx, j.IDs, r)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		a.log.Warn("authentication verdict not stored; it is computed again when read", "email_ids", j.IDs, "err", err)
	}
}

// run serves until ctx is done or one server fails, then shuts down in
// order and closes the data file.
func (a *app) run(ctx context.Context) error {
	defer a.db.Close() // 3. last, once nothing can write
	defer signal.Stop(a.hup)
	a.log.Info("burner started", "version", buildVersion(), "smtp", a.smtpLn.Addr().String(), "smtp_starttls", a.smtpCert != nil,
		"http", a.httpLn.Addr().String(), "https", a.httpCert != nil, "data", showData(a.data), "node", a.node)
	errc := make(chan error, 3)
	go func() {
		err := a.mta.Serve(a.smtpLn)
		a.smtpDown.Store(true)
		errc <- err
	}()
	go func() {
		if a.httpCert != nil {
			errc <- ignoreClosed(a.httpSrv.ServeTLS(a.httpLn, "", "")) // the certificate comes from TLSConfig
			return
		}
		errc <- ignoreClosed(a.httpSrv.Serve(a.httpLn))
	}()
	if a.ctlLn != nil {
		go func() { errc <- ignoreClosed(a.ctlSrv.Serve(a.ctlLn)) }()
	}
	// The sweeper and the certificate reloader run until shutdown begins.
	bgCtx, stopBackground := context.WithCancel(ctx)
	swept, reloaded := make(chan struct{}), make(chan struct{})
	go func() { defer close(swept); a.sweep(bgCtx) }()
	go func() { defer close(reloaded); a.reloadOnHUP(bgCtx) }()
	// Webhooks go out after the 250s, never in their way (spec §9); the
	// worker lets requests in flight end when bgCtx is done.
	hooked := make(chan struct{})
	go func() {
		defer close(hooked)
		a.webhooks.Run(bgCtx)
	}()
	a.notify("READY=1\nSTATUS=Serving SMTP on " + a.smtpLn.Addr().String() + ", HTTP on " + a.httpLn.Addr().String())

	var runErr error
	select {
	case <-ctx.Done():
		a.log.Info("shutting down")
	case runErr = <-errc: // one server died: stop the others, then report it
		if runErr == nil {
			runErr = errors.New("a server stopped unexpectedly")
		}
	}
	a.notify("STOPPING=1")
	stopBackground()
	<-swept
	<-reloaded
	shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := a.mta.Shutdown(shutCtx); err != nil { // 1. take no new mail, let DATA in flight commit
		a.log.Warn("smtp shutdown", "err", err)
	}
	if err := a.sessions.Shutdown(shutCtx); err != nil { // the sessions' last records
		a.log.Warn("session log shutdown", "err", err)
	}
	// The verdicts of the mail just taken are stored while HTTP drains;
	// those that do not make it stay pending, computed again when read.
	verified := make(chan struct{})
	go func() {
		defer close(verified)
		if a.verifier != nil {
			if err := a.verifier.Shutdown(shutCtx); err != nil {
				a.log.Warn("verifier shutdown: verdicts left pending", "err", err)
			}
		}
	}()
	if err := a.httpSrv.Shutdown(shutCtx); err != nil { // 2. then the API and the CLI
		a.log.Warn("http shutdown", "err", err)
	}
	if err := a.ctlSrv.Shutdown(shutCtx); err != nil {
		a.log.Warn("control shutdown", "err", err)
		a.ctlSrv.Close() // a backup still streaming would hold the file open
	}
	<-hooked // its requests in flight take at most 10 s; then the file closes
	<-verified
	return runErr
}

// notify tells systemd, when it runs burner, about a change of state.
func (a *app) notify(state string) {
	if err := sdNotify(a.notifySocket, state); err != nil {
		a.log.Warn("systemd notification failed", "err", err)
	}
}

// reloadOnHUP reloads the TLS certificates at every SIGHUP until ctx is
// done, so that a renewed certificate is served without a restart.
func (a *app) reloadOnHUP(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.hup:
			a.reloadCertificates()
		}
	}
}

// reloadCertificates reads the certificate files again. New connections
// get the new certificate; those up keep theirs. A pair that fails to load
// leaves the old one in use.
func (a *app) reloadCertificates() {
	if a.smtpCert == nil && a.httpCert == nil {
		a.log.Info("SIGHUP: no TLS certificate to reload")
		return
	}
	for _, s := range []struct {
		name string
		cert *certificate
	}{{"smtp", a.smtpCert}, {"http", a.httpCert}} {
		if s.cert == nil {
			continue
		}
		if err := s.cert.reload(); err != nil {
			a.log.Error("TLS certificate reload failed: the old one stays in use", "server", s.name, "err", err)
			continue
		}
		a.log.Info("TLS certificate reloaded", "server", s.name, "cert", s.cert.certFile,
			"not_after", s.cert.notAfter().UTC().Format(time.RFC3339))
	}
}

// sweep applies retention at every tick until ctx is done, and logs what
// it deleted.
func (a *app) sweep(ctx context.Context) {
	t := time.NewTicker(a.sweepEvery)
	defer t.Stop()
	for {
		start := time.Now()
		n, err := a.db.Sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			a.log.Error("retention sweep failed", "err", err, "deleted", n)
		case n > 0:
			a.log.Info("retention sweep", "deleted", n, "duration_ms", time.Since(start).Milliseconds())
		}
		a.sweptTotal.Add(float64(n))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ensureKey creates and prints a first API key when there is none, so that
// `burner serve` alone gives a usable appliance: as a banner, or with
// asJSON as a JSON log line, which a log collector keeps whole.
func ensureKey(ctx context.Context, db storage.Engine, notice io.Writer, asJSON bool) error {
	keys, err := db.Keys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	_, secret, err := db.CreateKey(ctx, "default", storage.Scope{})
	if errors.Is(err, storage.ErrKeyExists) {
		// Nodes that start together on one database all find no key;
		// the store lets one of them make it (spec §10: once, by
		// whichever starts first), and the others go on without it.
		return nil
	}
	if err != nil {
		return err
	}
	const manage = "Manage keys with `burner keys create --name NAME`, `burner keys list` and `burner keys revoke ID-or-NAME`."
	if asJSON {
		// Its own handler, so that no log.level hides it: it is the one
		// line that carries a key, and the key is shown only this once.
		slog.New(slog.NewJSONHandler(notice, nil)).Info("created the first API key; it is shown only this once",
			"key_name", "default", "key", secret, "help", manage)
		return nil
	}
	fmt.Fprintf(notice, "\nCreated the first API key, named \"default\"; it is shown only this once:\n\n    %s\n\n%s\n\n", secret, manage)
	return nil
}

// envKeyVar names the variable of the key serve makes sure exists (spec
// §14): the one the client libraries read.
const envKeyVar = "BURNER_KEY"

// envKeyName names the key made from BURNER_KEY.
const envKeyName = "env"

// errBadEnvKey refuses a BURNER_KEY that no key could have. It never
// holds the value: a secret that is nearly right is nearly a secret.
var errBadEnvKey = errors.New(envKeyVar + " is not a key burner accepts: it must be bnr_ followed by at least 43 base64url characters (A-Z a-z 0-9 - _), 32 random bytes, with no space or quote; make one with: echo \"bnr_$(openssl rand -base64 32 | tr '+/' '-_' | tr -d '=')\" (the value given is not shown)")

// ensureEnvKey makes sure a key whose secret is secret exists (spec §14:
// BURNER_KEY), creating it, able to reach every inbox and delete, when it
// does not. It never shows the secret.
//
// The key is named "env". When a key of that name exists with another
// secret (BURNER_KEY was changed, as when a CI secret is rotated), the new
// key is named env-<8 hex digits>, and a warning says that the older key
// still works until it is revoked: a changed variable must not stop a
// container from starting, nor revoke a key some client may still use.
// Nodes that start together on one database with the same BURNER_KEY make
// one key: a store refuses a second key with the same secret.
func ensureEnvKey(ctx context.Context, db storage.Engine, secret string, log *slog.Logger) error {
	name := envKeyName
	var err error
	for range 3 { // a name taken three times by chance is no chance
		// The key may exist already, or another node may have made this
		// very key since the last try.
		k, lookErr := db.KeyBySecret(ctx, secret)
		if lookErr == nil {
			log.Info("the API key of "+envKeyVar+" exists", "key_name", k.Name, "key_id", k.ID)
			return nil
		}
		if !errors.Is(lookErr, storage.ErrNotFound) {
			return fmt.Errorf("%s: %w", envKeyVar, lookErr)
		}
		k, err = db.CreateKeyWithSecret(ctx, name, storage.Scope{}, secret)
		switch {
		case err == nil && name == envKeyName:
			log.Info("created the API key of "+envKeyVar, "key_name", k.Name, "key_id", k.ID)
			return nil
		case err == nil:
			log.Warn("created the API key of "+envKeyVar+" under another name: a key named "+envKeyName+
				" has another secret, and works until it is revoked", "key_name", k.Name, "key_id", k.ID,
				"revoke_with", "burner keys revoke "+envKeyName)
			return nil
		case !errors.Is(err, storage.ErrKeyExists):
			return fmt.Errorf("%s: %w", envKeyVar, err)
		}
		// The name belongs to a key with another secret.
		var suffix [4]byte
		rand.Read(suffix[:]) // never fails (crypto/rand, Go 1.24)
		name = envKeyName + "-" + hex.EncodeToString(suffix[:])
	}
	return fmt.Errorf("%s: no free name for its key: %w", envKeyVar, err)
}

// listenControl listens on the control socket with mode 0600: the file mode
// is what keeps other users from managing keys.
func listenControl(path string) (net.Listener, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("control socket %s is in use: is another burner running?", path)
	}
	// Nothing answers: a socket left by a killed server.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	old := syscall.Umask(0o177) // the socket is created 0600, never briefly wider
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return ln, nil
}
