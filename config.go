package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"

	"burner/storage"
	"burner/webhook"
)

// Config is burner's configuration; config.example.toml documents each key.
type Config struct {
	Data      string          `toml:"data"`
	Node      string          `toml:"node"`
	SMTP      SMTPConfig      `toml:"smtp"`
	HTTP      HTTPConfig      `toml:"http"`
	Retention RetentionConfig `toml:"retention"`
	UI        UIConfig        `toml:"ui"`
	Log       LogConfig       `toml:"log"`
	MCP       MCPConfig       `toml:"mcp"`
	Auth      AuthConfig      `toml:"auth"`
	DNS       DNSConfig       `toml:"dns"`
	Faults    FaultsConfig    `toml:"faults"`
	Webhooks  []WebhookConfig `toml:"webhooks"`
	// Key is the secret of an API key that serve makes sure exists
	// (spec §14), from BURNER_KEY, which the client libraries read too;
	// never from the file, where a secret does not belong, nor from
	// another command. "" when none is given.
	Key string `toml:"-"`
}

// FaultsConfig is the [faults] section (spec §13.2).
type FaultsConfig struct {
	Enabled bool              `toml:"enabled"`
	Rules   []FaultRuleConfig `toml:"rules"`
}

// FaultRuleConfig is one [[faults.rules]] entry: a rule armed at start.
type FaultRuleConfig struct {
	Inbox      string   `toml:"inbox"`
	Stage      string   `toml:"stage"`
	Reply      string   `toml:"reply"`
	Times      int      `toml:"times"`
	Delay      duration `toml:"delay"`
	Disconnect bool     `toml:"disconnect"`
	PerMinute  int      `toml:"per_minute"`
}

// rule returns the entry as the store takes it.
func (r FaultRuleConfig) rule() storage.FaultRule {
	return storage.FaultRule{Inbox: r.Inbox, Stage: storage.FaultStage(r.Stage), Reply: r.Reply, Times: r.Times,
		Delay: r.Delay.Duration, Disconnect: r.Disconnect, PerMinute: r.PerMinute}
}

// faultRules returns [[faults.rules]] as the store arms them.
func (c FaultsConfig) faultRules() []storage.FaultRule {
	rules := make([]storage.FaultRule, len(c.Rules))
	for i, r := range c.Rules {
		rules[i] = r.rule()
	}
	return rules
}

// WebhookConfig is one [[webhooks]] entry (spec §9).
type WebhookConfig struct {
	URL     string   `toml:"url"`
	Inboxes []string `toml:"inboxes"`
	Secret  string   `toml:"secret"`
}

// webhook returns the entry as the delivery worker takes it.
func (w WebhookConfig) webhook() webhook.Hook {
	return webhook.Hook{URL: w.URL, Inboxes: w.Inboxes, Secret: w.Secret}
}

type SMTPConfig struct {
	Listen          string   `toml:"listen"`
	Hostname        string   `toml:"hostname"`
	Domains         []string `toml:"domains"`
	MaxMessageBytes int64    `toml:"max_message_bytes"`
	MaxRecipients   int      `toml:"max_recipients"`
	MaxConnections  int      `toml:"max_connections"`
	MaxConnsPerIP   int      `toml:"max_connections_per_ip"`
	TrustedNetworks []string `toml:"trusted_networks"`
	CommandTimeout  duration `toml:"command_timeout"`
	DataTimeout     duration `toml:"data_timeout"`
	MaxLineLength   int      `toml:"max_line_length"`
	MaxBodyBytes    int      `toml:"max_body_bytes"`
	TLSCert         string   `toml:"tls_cert"`
	TLSKey          string   `toml:"tls_key"`
	SessionLogRate  int      `toml:"session_log_rate"`
}

// sessionLogRate returns session_log_rate as smtpd takes it: 0, no bound,
// is a negative rate there.
func (c SMTPConfig) sessionLogRate() float64 {
	if c.SessionLogRate == 0 {
		return -1
	}
	return float64(c.SessionLogRate)
}

// trustedNetworks returns trusted_networks as smtpd takes them: never
// nil, for nil would mean loopback and the file may have said none.
// validate has checked them.
func (c SMTPConfig) trustedNetworks() []netip.Prefix {
	ps := make([]netip.Prefix, 0, len(c.TrustedNetworks))
	for _, n := range c.TrustedNetworks {
		if p, err := netip.ParsePrefix(n); err == nil {
			ps = append(ps, p.Masked())
		}
	}
	return ps
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
	MaxAge         duration `toml:"max_age"`
	MaxPerInbox    int      `toml:"max_per_inbox"`
	MaxBytes       int64    `toml:"max_bytes"`
	SweepInterval  duration `toml:"sweep_interval"`
	SessionsMaxAge duration `toml:"sessions_max_age"`
	MaxSessions    int      `toml:"max_sessions"`
}

type UIConfig struct {
	Enabled      bool `toml:"enabled"`
	Public       bool `toml:"public"`
	RequireTLS   bool `toml:"require_tls"`
	RemoteImages bool `toml:"remote_images"`
}

// MCPConfig is the [mcp] section (spec §11).
type MCPConfig struct {
	AddressDomain string `toml:"address_domain"`
}

// AuthConfig is the [auth] section (spec §12).
type AuthConfig struct {
	Verify bool `toml:"verify"`
}

// DNSConfig is the [dns] section: the resolver of the verifications of
// spec §12.
type DNSConfig struct {
	Resolver string   `toml:"resolver"`
	Timeout  duration `toml:"timeout"`
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

// defaultConfigFile is read when --config is not given, if it exists.
const defaultConfigFile = "burner.toml"

// loadConfig applies, in order, the defaults, the config file (--config, or
// ./burner.toml when it exists), the environment (BURNER_SMTP_DOMAINS=...,
// env.go) and the flags the user set.
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
	if err := applyEnv(&cfg, os.Environ()); err != nil {
		return Config{}, fmt.Errorf("environment: %w", err)
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
	if len(c.Node) > 200 || strings.TrimSpace(c.Node) != c.Node || strings.ContainsFunc(c.Node, unicode.IsControl) {
		errs = append(errs, fmt.Errorf("node: %q must be at most 200 characters, without control characters or spaces around it", c.Node))
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
	if d := c.MCP.AddressDomain; d != "" && (strings.ContainsAny(d, "@ \t") || strings.Trim(d, ".") == "") {
		errs = append(errs, fmt.Errorf("mcp.address_domain: %q is not a domain", d))
	}
	if r := c.DNS.Resolver; r != "" {
		if host, port, err := net.SplitHostPort(r); err != nil || host == "" || !validPort(port) {
			errs = append(errs, fmt.Errorf("dns.resolver: %q is not host:port, like \"127.0.0.1:53\" or \"[::1]:53\"", r))
		}
	}
	if c.SMTP.MaxMessageBytes <= 0 {
		errs = append(errs, errors.New("smtp.max_message_bytes: must be positive"))
	}
	if c.SMTP.MaxRecipients <= 0 {
		errs = append(errs, errors.New("smtp.max_recipients: must be positive"))
	}
	if c.SMTP.MaxConnsPerIP < 0 {
		errs = append(errs, errors.New("smtp.max_connections_per_ip: must be 0 (half of max_connections) or positive"))
	}
	for _, n := range c.SMTP.TrustedNetworks {
		if _, err := netip.ParsePrefix(n); err != nil {
			errs = append(errs, fmt.Errorf("smtp.trusted_networks: %q is not a network like \"192.0.2.0/24\" or \"2001:db8::/32\"", n))
		}
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
		"dns.timeout":              c.DNS.Timeout,
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
	if c.Retention.SessionsMaxAge.Duration < 0 {
		errs = append(errs, errors.New("retention.sessions_max_age: must be \"0\" (kept until max_sessions) or more"))
	}
	if c.Retention.MaxSessions < 0 {
		errs = append(errs, errors.New("retention.max_sessions: must be 0 (no cap) or more"))
	}
	if c.SMTP.SessionLogRate < 0 {
		errs = append(errs, errors.New("smtp.session_log_rate: must be 0 (no bound) or more"))
	}
	for i, r := range c.Faults.Rules {
		if _, err := storage.CleanFaultRule(r.rule()); err != nil {
			var fe *storage.FaultRuleError
			errors.As(err, &fe)
			errs = append(errs, fmt.Errorf("faults.rules[%d].%s: must be %s", i, faultConfigKey(fe.Field), fe.Reason))
		}
	}
	if len(c.Faults.Rules) > storage.MaxFaultRules {
		errs = append(errs, fmt.Errorf("faults.rules: at most %d", storage.MaxFaultRules))
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		errs = append(errs, fmt.Errorf("log.format: %q is not \"text\" or \"json\"", c.Log.Format))
	}
	if _, err := c.Log.level(); err != nil {
		errs = append(errs, err)
	}
	urls := make(map[string]int)
	for i, w := range c.Webhooks {
		for _, err := range w.webhook().Check() {
			errs = append(errs, fmt.Errorf("webhooks[%d].%w", i, err))
		}
		if j, ok := urls[w.URL]; ok {
			errs = append(errs, fmt.Errorf("webhooks[%d].url: the same as webhooks[%d]'s; give one entry all its inboxes", i, j))
		}
		urls[w.URL] = i
	}
	// Sorted, so that the same file always gives the same message.
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// faultConfigKey returns the key of [[faults.rules]] for a fault rule's
// field as the API names it.
func faultConfigKey(field string) string {
	if field == "perMinute" {
		return "per_minute"
	}
	return field
}

// addressDomain returns the domain MCP's new_address makes addresses on
// (spec §11): the first of smtp.domains; else mcp.address_domain; else
// smtp.hostname when it is a domain name with a dot; else burner.test.
// With smtp.domains empty burner takes mail for any domain, so that a
// default `burner serve` receives what is sent to the addresses it
// makes. GET /api/v1/info names the same domain.
func (c Config) addressDomain() string {
	switch {
	case len(c.SMTP.Domains) > 0:
		return c.SMTP.Domains[0]
	case c.MCP.AddressDomain != "":
		return c.MCP.AddressDomain
	}
	if h := strings.TrimSuffix(c.SMTP.Hostname, "."); strings.Contains(h, ".") && isDomainName(h) {
		return h
	}
	return "burner.test"
}

// isDomainName reports whether s is a host name in DNS's preferred syntax
// (RFC 1123 §2.1): labels of letters, digits and inner hyphens, at most 63
// bytes each, and not all digits at the end (an IPv4 address).
func isDomainName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' ||
			strings.IndexFunc(l, func(r rune) bool { return !(r == '-' || r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r))) }) >= 0 {
			return false
		}
	}
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

// validPort reports whether p is a port number, 1 to 65535.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n <= 65535
}

func (l LogConfig) level() (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.Level)); err != nil {
		return 0, fmt.Errorf("log.level: %q is not debug, info, warn or error", l.Level)
	}
	return lv, nil
}
