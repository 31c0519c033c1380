// Command burner is a self-hosted disposable-inbox appliance: it receives
// mail over SMTP for its inbox domains, keeps it in one bbolt file and serves
// it through a REST API.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"burner/server"
	"burner/smtpd"
	"burner/storage"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "burner:", err)
		os.Exit(1)
	}
}

// Config is burner's configuration; config.example.toml documents each key.
type Config struct {
	Data      string          `toml:"data"`
	SMTP      SMTPConfig      `toml:"smtp"`
	HTTP      HTTPConfig      `toml:"http"`
	Retention RetentionConfig `toml:"retention"`
	UI        UIConfig        `toml:"ui"`
	Log       LogConfig       `toml:"log"`
}

type SMTPConfig struct {
	Listen          string   `toml:"listen"`
	Hostname        string   `toml:"hostname"`
	Domains         []string `toml:"domains"`
	MaxMessageBytes int64    `toml:"max_message_bytes"`
	MaxRecipients   int      `toml:"max_recipients"`
	MaxConnections  int      `toml:"max_connections"`
	MaxConnsPerIP   int      `toml:"max_connections_per_ip"`
	CommandTimeout  duration `toml:"command_timeout"`
	DataTimeout     duration `toml:"data_timeout"`
	MaxLineLength   int      `toml:"max_line_length"`
	MaxBodyBytes    int      `toml:"max_body_bytes"`
	TLSCert         string   `toml:"tls_cert"`
	TLSKey          string   `toml:"tls_key"`
}

type HTTPConfig struct {
	Listen            string   `toml:"listen"`
	ReadHeaderTimeout duration `toml:"read_header_timeout"`
	ReadTimeout       duration `toml:"read_timeout"`
	WriteTimeout      duration `toml:"write_timeout"`
	IdleTimeout       duration `toml:"idle_timeout"`
	MaxHeaderBytes    int      `toml:"max_header_bytes"`
	MaxQueryBytes     int      `toml:"max_query_bytes"`
	TLSCert           string   `toml:"tls_cert"`
	TLSKey            string   `toml:"tls_key"`
}

type RetentionConfig struct {
	MaxAge        duration `toml:"max_age"`
	MaxPerInbox   int      `toml:"max_per_inbox"`
	MaxBytes      int64    `toml:"max_bytes"`
	SweepInterval duration `toml:"sweep_interval"`
}

type UIConfig struct {
	Enabled      bool `toml:"enabled"`
	Public       bool `toml:"public"`
	RequireTLS   bool `toml:"require_tls"`
	RemoteImages bool `toml:"remote_images"`
}

type LogConfig struct {
	Format string `toml:"format"`
	Level  string `toml:"level"`
}

// duration is a time.Duration written as a string ("168h", "90s", "0") in
// the config file, and parsed once, when the file is read.
type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration like \"90s\", \"5m\" or \"168h\"", b)
	}
	d.Duration = v
	return nil
}

func defaultConfig() Config {
	return Config{
		Data: "burner.db",
		SMTP: SMTPConfig{
			Listen:          "127.0.0.1:2525",
			Hostname:        "localhost",
			Domains:         []string{},
			MaxMessageBytes: 10 << 20,
			MaxRecipients:   100,
			MaxConnections:  100,
			CommandTimeout:  duration{5 * time.Minute},
			DataTimeout:     duration{10 * time.Minute},
			MaxLineLength:   2000,
			MaxBodyBytes:    1 << 20,
		},
		HTTP: HTTPConfig{
			Listen:            "127.0.0.1:8080",
			ReadHeaderTimeout: duration{10 * time.Second},
			ReadTimeout:       duration{30 * time.Second},
			WriteTimeout:      duration{90 * time.Second}, // room for a long poll of up to 60s
			IdleTimeout:       duration{120 * time.Second},
			MaxHeaderBytes:    64 << 10,
			MaxQueryBytes:     4 << 10,
		},
		Retention: RetentionConfig{
			MaxAge:        duration{168 * time.Hour},
			MaxPerInbox:   1000,
			SweepInterval: duration{time.Minute},
		},
		UI:  UIConfig{Enabled: true},
		Log: LogConfig{Format: "text", Level: "info"},
	}
}

// defaultConfigFile is read when --config is not given, if it exists.
const defaultConfigFile = "burner.toml"

// loadConfig applies, in order, the defaults, the config file (--config, or
// ./burner.toml when it exists) and the flags the user set.
func loadConfig(cmd *cobra.Command) (Config, error) {
	cfg := defaultConfig()
	path, _ := cmd.Flags().GetString("config")
	explicit := cmd.Flags().Changed("config")
	if !explicit {
		if _, err := os.Stat(defaultConfigFile); err == nil {
			path = defaultConfigFile
		}
	}
	if path != "" {
		md, err := toml.DecodeFile(path, &cfg)
		if err != nil {
			return Config{}, fmt.Errorf("config %s: %w", path, err)
		}
		if undecoded := md.Undecoded(); len(undecoded) > 0 {
			keys := make([]string, len(undecoded))
			for i, k := range undecoded {
				keys[i] = k.String()
			}
			return Config{}, fmt.Errorf("config %s: unknown key(s): %s", path, strings.Join(keys, ", "))
		}
	}
	flags := cmd.Flags()
	if flags.Lookup("data") != nil && flags.Changed("data") {
		cfg.Data, _ = flags.GetString("data")
	}
	if flags.Lookup("http") != nil && flags.Changed("http") {
		cfg.HTTP.Listen, _ = flags.GetString("http")
	}
	if flags.Lookup("smtp") != nil && flags.Changed("smtp") {
		cfg.SMTP.Listen, _ = flags.GetString("smtp")
	}
	if flags.Lookup("domain") != nil && flags.Changed("domain") {
		cfg.SMTP.Domains, _ = flags.GetStringArray("domain")
	}
	if err := cfg.validate(); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// validate reports every problem at once.
func (c Config) validate() error {
	var errs []error
	if c.Data == "" {
		errs = append(errs, errors.New("data: must name a file"))
	}
	for name, addr := range map[string]string{"smtp.listen": c.SMTP.Listen, "http.listen": c.HTTP.Listen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port", name, addr))
		}
	}
	for _, d := range c.SMTP.Domains {
		if d == "" || strings.ContainsAny(d, "@ \t") {
			errs = append(errs, fmt.Errorf("smtp.domains: %q is not a domain", d))
		}
	}
	if c.SMTP.MaxMessageBytes <= 0 {
		errs = append(errs, errors.New("smtp.max_message_bytes: must be positive"))
	}
	if c.SMTP.MaxRecipients <= 0 {
		errs = append(errs, errors.New("smtp.max_recipients: must be positive"))
	}
	if c.SMTP.MaxConnsPerIP < 0 {
		errs = append(errs, errors.New("smtp.max_connections_per_ip: must be 0 (a tenth of max_connections) or positive"))
	}
	if (c.SMTP.TLSCert == "") != (c.SMTP.TLSKey == "") {
		errs = append(errs, errors.New("smtp.tls_cert and smtp.tls_key: set both or neither"))
	}
	if (c.HTTP.TLSCert == "") != (c.HTTP.TLSKey == "") {
		errs = append(errs, errors.New("http.tls_cert and http.tls_key: set both or neither"))
	}
	for name, n := range map[string]int{
		"smtp.max_connections": c.SMTP.MaxConnections, "smtp.max_line_length": c.SMTP.MaxLineLength,
		"smtp.max_body_bytes":   c.SMTP.MaxBodyBytes,
		"http.max_header_bytes": c.HTTP.MaxHeaderBytes, "http.max_query_bytes": c.HTTP.MaxQueryBytes,
	} {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive", name))
		}
	}
	for name, d := range map[string]duration{
		"smtp.command_timeout": c.SMTP.CommandTimeout, "smtp.data_timeout": c.SMTP.DataTimeout,
		"http.read_header_timeout": c.HTTP.ReadHeaderTimeout, "http.read_timeout": c.HTTP.ReadTimeout,
		"http.write_timeout": c.HTTP.WriteTimeout, "http.idle_timeout": c.HTTP.IdleTimeout,
		"retention.sweep_interval": c.Retention.SweepInterval,
	} {
		if d.Duration <= 0 {
			errs = append(errs, fmt.Errorf("%s: must be a positive duration", name))
		}
	}
	if c.Retention.MaxAge.Duration < 0 {
		errs = append(errs, errors.New("retention.max_age: must be \"0\" (keep forever) or more"))
	}
	if c.Retention.MaxPerInbox < 0 {
		errs = append(errs, errors.New("retention.max_per_inbox: must be 0 (no cap) or more"))
	}
	if c.Retention.MaxBytes < 0 {
		errs = append(errs, errors.New("retention.max_bytes: must be 0 (no cap) or more"))
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		errs = append(errs, fmt.Errorf("log.format: %q is not \"text\" or \"json\"", c.Log.Format))
	}
	if _, err := c.Log.level(); err != nil {
		errs = append(errs, err)
	}
	// Sorted, so that the same file always gives the same message.
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

func (l LogConfig) level() (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.Level)); err != nil {
		return 0, fmt.Errorf("log.level: %q is not debug, info, warn or error", l.Level)
	}
	return lv, nil
}

// newLogger builds burner's one logger, writing to w.
func newLogger(cfg LogConfig, w io.Writer) *slog.Logger {
	lv, _ := cfg.level() // validate checked it
	opts := &slog.HandlerOptions{Level: lv}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// controlSocket is where a running server listens for the CLI: next to the
// data file, so that each data file has its own.
func controlSocket(data string) string { return data + ".sock" }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "burner",
		Short: "A self-hosted disposable-inbox appliance: SMTP in, REST API out, one bbolt file",
		Long: `burner receives mail over SMTP for its inbox domains, keeps it in one bbolt
file and serves it through a REST API and a web UI.

Settings come from the built-in defaults, then the config file, then the
flags given. Every command but serve works whether or not "burner serve"
runs: while it does, they talk to it over the control socket next to the
data file (DATA.sock); otherwise they open the file themselves.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().String("config", "", "the TOML config `FILE` (default ./"+defaultConfigFile+" when it exists, else the built-in defaults; see config.example.toml)")
	root.AddCommand(newServeCmd(), newKeysCmd(), newBackupCmd(), newCheckCmd(), newStatsCmd(), newInboxesCmd(), newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print burner's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "burner", buildVersion())
		},
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

func newServeCmd() *cobra.Command {
	def := defaultConfig()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the SMTP daemon and the HTTP API",
		Long: `Run the SMTP daemon, the HTTP API and web UI, and the control socket, on
one data file. On its first start it creates an API key, named "default",
and prints it once.

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
	db                    *storage.DB
	smtpLn, httpLn, ctlLn net.Listener
	mta                   *smtpd.Server
	httpSrv, ctlSrv       *http.Server
	sweepEvery            time.Duration
	sweptTotal            prometheus.Counter
	smtpDown              atomic.Bool // the SMTP server has stopped serving

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

// newRegistry returns the Prometheus registry of one appliance: the Go
// runtime and process series, and what the data file holds.
func newRegistry(db *storage.DB) *prometheus.Registry {
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
	a := &app{log: log}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	a.db, err = storage.Open(cfg.Data, storage.Options{
		MaxAge:      cfg.Retention.MaxAge.Duration,
		MaxPerInbox: cfg.Retention.MaxPerInbox,
		MaxBytes:    cfg.Retention.MaxBytes,
		Log:         log.With("component", "storage"),
	})
	if errors.Is(err, storage.ErrLocked) {
		return nil, fmt.Errorf("%w: is another burner serving %s?", err, cfg.Data)
	}
	if err != nil {
		return nil, fmt.Errorf("open data file: %w", err)
	}
	if err := ensureKey(ctx, a.db, notice); err != nil {
		return nil, err
	}
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
	if a.ctlLn, err = listenControl(controlSocket(cfg.Data)); err != nil {
		return nil, err
	}
	reg := newRegistry(a.db)
	a.sweptTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "burner_sweeper_deleted_total", Help: "Emails deleted by retention.",
	})
	reg.MustRegister(a.sweptTotal)
	a.mta = smtpd.New(a.db, smtpd.Options{
		Metrics:         reg,
		Hostname:        cfg.SMTP.Hostname,
		Domains:         cfg.SMTP.Domains,
		MaxMessageBytes: cfg.SMTP.MaxMessageBytes,
		MaxRecipients:   cfg.SMTP.MaxRecipients,
		MaxConnections:  cfg.SMTP.MaxConnections,
		MaxConnsPerIP:   cfg.SMTP.MaxConnsPerIP,
		CommandTimeout:  cfg.SMTP.CommandTimeout.Duration,
		DataTimeout:     cfg.SMTP.DataTimeout.Duration,
		MaxLineLength:   cfg.SMTP.MaxLineLength,
		MaxBodyBytes:    cfg.SMTP.MaxBodyBytes,
		TLSConfig:       smtpTLS,
	}, log.With("component", "smtpd"))
	api := server.New(a.db, server.Options{
		UI:            cfg.UI.Enabled,
		Public:        cfg.UI.Public,
		RequireTLS:    cfg.UI.RequireTLS,
		RemoteImages:  cfg.UI.RemoteImages,
		Domains:       cfg.SMTP.Domains,
		MaxQueryBytes: cfg.HTTP.MaxQueryBytes,
		Metrics:       reg,
		Ready:         a.smtpReady,
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
	if a.db != nil {
		a.db.Close()
	}
}

// run serves until ctx is done or one server fails, then shuts down in
// order and closes the data file.
func (a *app) run(ctx context.Context) error {
	defer a.db.Close() // 3. last, once nothing can write
	defer signal.Stop(a.hup)
	a.log.Info("burner started", "version", buildVersion(), "smtp", a.smtpLn.Addr().String(), "smtp_starttls", a.smtpCert != nil,
		"http", a.httpLn.Addr().String(), "https", a.httpCert != nil, "data", a.db.Path())
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
	go func() { errc <- ignoreClosed(a.ctlSrv.Serve(a.ctlLn)) }()
	// The sweeper and the certificate reloader run until shutdown begins.
	bgCtx, stopBackground := context.WithCancel(ctx)
	swept, reloaded := make(chan struct{}), make(chan struct{})
	go func() { defer close(swept); a.sweep(bgCtx) }()
	go func() { defer close(reloaded); a.reloadOnHUP(bgCtx) }()
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
	if err := a.httpSrv.Shutdown(shutCtx); err != nil { // 2. then the API and the CLI
		a.log.Warn("http shutdown", "err", err)
	}
	if err := a.ctlSrv.Shutdown(shutCtx); err != nil {
		a.log.Warn("control shutdown", "err", err)
		a.ctlSrv.Close() // a backup still streaming would hold the file open
	}
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
// `burner serve` alone gives a usable appliance.
func ensureKey(ctx context.Context, db *storage.DB, notice io.Writer) error {
	keys, err := db.Keys(ctx)
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return nil
	}
	_, secret, err := db.CreateKey(ctx, "default")
	if err != nil {
		return err
	}
	fmt.Fprintf(notice, "\nCreated the first API key, named \"default\"; it is shown only this once:\n\n    %s\n\nManage keys with `burner keys create --name NAME`, `burner keys list` and `burner keys revoke ID-or-NAME`.\n\n", secret)
	return nil
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

// store is what the CLI commands need of a data file: *storage.DB, or a
// controlClient when a running server holds the file.
type store interface {
	CreateKey(ctx context.Context, name string) (storage.Key, string, error)
	Keys(ctx context.Context) ([]storage.Key, error)
	RevokeKey(ctx context.Context, idOrName string) (storage.Key, error)
	Stats(ctx context.Context) (storage.Stats, error)
	Inboxes(ctx context.Context) ([]storage.Inbox, error)
	Check(ctx context.Context) (storage.CheckReport, error)
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// openStore returns the running server's control socket when it answers,
// else the data file, opened; done releases it. Unless create, a data
// file that does not exist is an error rather than a new empty file.
func openStore(cmd *cobra.Command, create bool) (_ store, done func(), _ Config, _ error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, Config{}, err
	}
	sock := controlSocket(cfg.Data)
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		c.Close()
		return newControlClient(sock), func() {}, cfg, nil
	}
	if !create {
		if _, err := os.Stat(cfg.Data); err != nil {
			return nil, nil, Config{}, fmt.Errorf("data file: %w", err)
		}
	}
	log := newLogger(cfg.Log, cmd.ErrOrStderr()).With("component", "storage")
	db, err := storage.Open(cfg.Data, storage.Options{Log: log})
	if err != nil {
		return nil, nil, Config{}, fmt.Errorf("open data file: %w", err)
	}
	return db, func() { db.Close() }, cfg, nil
}

// withStore runs fn on the store of cmd's data file (see openStore) and
// releases it after.
func withStore(cmd *cobra.Command, create bool, fn func(st store, cfg Config) error) error {
	st, done, cfg, err := openStore(cmd, create)
	if err != nil {
		return err
	}
	defer done()
	return fn(st, cfg)
}

// dataFlagUsage explains --data, which every command has.
const dataFlagUsage = "the bbolt data `FILE`; overrides data in the config file"

func addDataFlag(cmd *cobra.Command) {
	cmd.Flags().String("data", defaultConfig().Data, dataFlagUsage)
}

func newBackupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of the data file to FILE (\"-\": stdout), hot",
		Long: `Write a consistent copy of the data file, as it is at the start of the
command, to FILE; "-" writes it to stdout. While burner serves, the copy
comes through the control socket and mail keeps arriving; otherwise the
command reads the file itself.

FILE is written under a temporary name, synced and renamed into place, so
it is either the old FILE or a complete new copy. The copy is a data file
like the original: to restore it, stop burner, copy it over the data file
(owned by burner's user) and start burner again; "burner check --data FILE"
verifies a copy first.`,
		Example: `  burner backup /var/backups/burner/burner-$(date +%a).db
  burner backup - | gzip > burner.db.gz`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return withStore(cmd, false, func(st store, cfg Config) error {
				if args[0] == "-" {
					_, err := st.Backup(ctx, cmd.OutOrStdout())
					return err
				}
				n, err := backupTo(ctx, st, cfg.Data, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Wrote a copy of %s (%s) to %s.\n", cfg.Data, formatBytes(n), args[0])
				return nil
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

// backupTo writes a backup of data to path: under a temporary name in
// the same directory, synced, then renamed over path, so that path never
// holds half a copy.
func backupTo(ctx context.Context, st store, data, path string) (_ int64, err error) {
	if a, err := filepath.Abs(data); err == nil {
		if b, err := filepath.Abs(path); err == nil && a == b {
			return 0, fmt.Errorf("backup: %s is the data file itself", path)
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	n, err := st.Backup(ctx, f)
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	// The rename is durable once the directory is synced.
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return n, nil
}

func newCheckCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Verify the data file and report what it holds",
		Long: `Verify the data file: bbolt's own consistency (every page reachable or
free, once), then that burner's indexes agree with the emails (ids, inbox
counts, shared messages and their sources, key hashes). Print the counts,
and each problem found; exit with status 1 when there is one.

While burner serves, the check runs inside it and holds the write lock
until it is done: mail waits (it is not refused) for that time.
"burner check --data COPY" checks a backup.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, false, func(st store, cfg Config) error {
				r, err := st.Check(cmd.Context())
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "%s: schema version %d, %s\n", cfg.Data, r.SchemaVersion, formatBytes(r.FileBytes))
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "emails\t%d\ninboxes\t%d\nmessages\t%d\nkeys\t%d\n", r.Emails, r.Inboxes, r.Messages, r.Keys)
				tw.Flush()
				if r.OK() {
					fmt.Fprintln(out, "OK: the file is consistent and burner's indexes agree with it.")
					return nil
				}
				for _, p := range r.Problems {
					fmt.Fprintln(out, "problem:", p)
				}
				if r.More > 0 {
					fmt.Fprintf(out, "... and %d more\n", r.More)
				}
				return fmt.Errorf("%s: %d problem(s) found; restore a backup (docs/deploy.md)", cfg.Data, len(r.Problems)+r.More)
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

func newStatsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show what the data file holds: emails, inboxes, size, oldest email, keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, false, func(st store, _ Config) error {
				s, err := st.Stats(cmd.Context())
				if err != nil {
					return err
				}
				oldest := "none"
				if !s.Oldest.IsZero() {
					oldest = fmt.Sprintf("%s (%s ago)", s.Oldest.UTC().Format(time.RFC3339), time.Since(s.Oldest).Round(time.Second))
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintf(tw, "emails\t%d\ninboxes\t%d\nbytes\t%d (%s, the data file)\noldest email\t%s\nkeys\t%d\n",
					s.Emails, s.Inboxes, s.FileBytes, formatBytes(s.FileBytes), oldest, s.Keys)
				return tw.Flush()
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

func newInboxesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inboxes",
		Short: "List the inboxes that hold mail: name, number of emails, newest",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, false, func(st store, _ Config) error {
				ins, err := st.Inboxes(cmd.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "INBOX\tEMAILS\tNEWEST")
				for _, in := range ins {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", in.Name, in.Emails, in.Newest.UTC().Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	addDataFlag(cmd)
	return cmd
}

// formatBytes writes n in binary units, as people read file sizes.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func newKeysCmd() *cobra.Command {
	keys := &cobra.Command{
		Use:   "keys",
		Short: "Manage API keys (works whether or not the server runs)",
	}
	keys.PersistentFlags().String("data", defaultConfig().Data, dataFlagUsage)

	create := &cobra.Command{
		Use:   "create --name NAME",
		Short: "Create an API key and print it (alone on the last line)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, _ := cmd.Flags().GetString("name")
			return withStore(cmd, true, func(st store, _ Config) error {
				k, secret, err := st.CreateKey(cmd.Context(), name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Created key %q (id %s). It is shown only this once:\n%s\n", k.Name, k.ID, secret)
				return nil
			})
		},
	}
	create.Flags().String("name", "", "a unique `NAME` for the key, to list and revoke it by (required)")
	create.MarkFlagRequired("name")

	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys: id, name, created, last used (never the secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, true, func(st store, _ Config) error {
				all, err := st.Keys(cmd.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tCREATED\tLAST USED")
				for _, k := range all {
					last := "never"
					if !k.LastUsed.IsZero() {
						last = k.LastUsed.Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Created.Format(time.RFC3339), last)
				}
				return tw.Flush()
			})
		},
	}

	revoke := &cobra.Command{
		Use:   "revoke ID-or-NAME",
		Short: "Revoke an API key; it stops working at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, true, func(st store, _ Config) error {
				k, err := st.RevokeKey(cmd.Context(), args[0])
				if errors.Is(err, storage.ErrNotFound) {
					return fmt.Errorf("no key with id or name %q", args[0])
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Revoked key %q (id %s).\n", k.Name, k.ID)
				return nil
			})
		},
	}
	keys.AddCommand(create, list, revoke)
	return keys
}

// controlClient manages a running server through its control socket.
type controlClient struct {
	http *http.Client // for quick requests
	slow *http.Client // for a backup or a check: no time limit
}

func newControlClient(sock string) controlClient {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return controlClient{
		http: &http.Client{Timeout: 10 * time.Second, Transport: tr},
		slow: &http.Client{Transport: tr},
	}
}

func (c controlClient) CreateKey(ctx context.Context, name string) (storage.Key, string, error) {
	var k server.ControlKey
	body, _ := json.Marshal(map[string]string{"name": name})
	if err := c.do(ctx, http.MethodPost, "/keys", body, &k); err != nil {
		return storage.Key{}, "", err
	}
	return k.Storage(), k.Key, nil
}

func (c controlClient) Keys(ctx context.Context) ([]storage.Key, error) {
	var ks []server.ControlKey
	if err := c.do(ctx, http.MethodGet, "/keys", nil, &ks); err != nil {
		return nil, err
	}
	out := make([]storage.Key, len(ks))
	for i, k := range ks {
		out[i] = k.Storage()
	}
	return out, nil
}

func (c controlClient) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	var k server.ControlKey
	if err := c.do(ctx, http.MethodDelete, "/keys/"+url.PathEscape(idOrName), nil, &k); err != nil {
		return storage.Key{}, err
	}
	return k.Storage(), nil
}

func (c controlClient) Stats(ctx context.Context) (storage.Stats, error) {
	var s server.ControlStats
	if err := c.do(ctx, http.MethodGet, "/stats", nil, &s); err != nil {
		return storage.Stats{}, err
	}
	return s.Storage(), nil
}

func (c controlClient) Inboxes(ctx context.Context) ([]storage.Inbox, error) {
	var ins []server.ControlInbox
	if err := c.do(ctx, http.MethodGet, "/inboxes", nil, &ins); err != nil {
		return nil, err
	}
	out := make([]storage.Inbox, len(ins))
	for i, in := range ins {
		out[i] = in.Storage()
	}
	return out, nil
}

func (c controlClient) Check(ctx context.Context) (storage.CheckReport, error) {
	var r server.ControlCheck
	if err := c.doWith(ctx, c.slow, http.MethodGet, "/check", nil, &r); err != nil {
		return storage.CheckReport{}, err
	}
	return r.Storage(), nil
}

// Backup copies the server's snapshot of the file to w. The server sends
// its size first, so a copy cut short is an error, not a short file.
func (c controlClient) Backup(ctx context.Context, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://burner/backup", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.slow.Do(req)
	if err != nil {
		return 0, fmt.Errorf("control socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("server: %s", resp.Status)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("control socket: %w", err)
	}
	if n != resp.ContentLength {
		return n, fmt.Errorf("control socket: the copy ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, nil
}

func (c controlClient) do(ctx context.Context, method, path string, body []byte, out any) error {
	return c.doWith(ctx, c.http, method, path, body, out)
}

func (c controlClient) doWith(ctx context.Context, hc *http.Client, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://burner"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e)
		switch resp.StatusCode {
		case http.StatusNotFound:
			return fmt.Errorf("%s: %w", e.Error, storage.ErrNotFound)
		case http.StatusConflict:
			return fmt.Errorf("%s: %w", e.Error, storage.ErrKeyExists)
		}
		return fmt.Errorf("server: %s (%s)", e.Error, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
