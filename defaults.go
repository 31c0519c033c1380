package main

import (
	"net/netip"
	"time"

	"burner/mailauth"
	"burner/message"
	"burner/server"
	"burner/smtpd"
)

// defaultConfig returns the configuration of a burner without a config
// file: config.example.toml, key for key (TestConfigExample). A default
// that a package applies to a zero option is that package's, named here,
// so that each is written once.
func defaultConfig() Config {
	return Config{
		Data: "burner.db",
		SMTP: SMTPConfig{
			Listen:          "127.0.0.1:2525",
			Hostname:        smtpd.DefaultHostname,
			Domains:         []string{},
			MaxMessageBytes: smtpd.DefaultMaxMessageBytes,
			MaxRecipients:   smtpd.DefaultMaxRecipients,
			MaxConnections:  smtpd.DefaultMaxConnections,
			TrustedNetworks: prefixStrings(smtpd.DefaultTrustedNetworks()),
			CommandTimeout:  duration{smtpd.DefaultCommandTimeout},
			DataTimeout:     duration{smtpd.DefaultDataTimeout},
			MaxLineLength:   smtpd.DefaultMaxLineLength,
			MaxBodyBytes:    message.DefaultMaxBody,
			SessionLogRate:  smtpd.DefaultSessionLogRate,
		},
		HTTP: HTTPConfig{
			Listen:            "127.0.0.1:8080",
			ReadHeaderTimeout: duration{10 * time.Second},
			ReadTimeout:       duration{30 * time.Second},
			WriteTimeout:      duration{90 * time.Second}, // room for a long poll of up to 60s
			IdleTimeout:       duration{120 * time.Second},
			MaxHeaderBytes:    64 << 10,
			MaxQueryBytes:     server.DefaultMaxQueryBytes,
		},
		Retention: RetentionConfig{
			MaxAge:         duration{168 * time.Hour},
			MaxPerInbox:    1000,
			SweepInterval:  duration{time.Minute},
			SessionsMaxAge: duration{24 * time.Hour},
			MaxSessions:    100_000,
		},
		UI:   UIConfig{Enabled: true},
		Log:  LogConfig{Format: "text", Level: "info"},
		Auth: AuthConfig{Verify: true},
		DNS:  DNSConfig{Timeout: duration{mailauth.DefaultTimeout}},
	}
}

// prefixStrings returns ps as the config file writes networks.
func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
