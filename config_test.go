package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestConfigExample(t *testing.T) {
	var got Config
	md, err := toml.DecodeFile("config.example.toml", &got)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Errorf("config.example.toml has keys Config does not know: %v", u)
	}
	if want := defaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("config.example.toml = %+v,\nwant defaultConfig() = %+v", got, want)
	}
	// Every key of Config appears in the example, so none goes undocumented.
	raw, _ := os.ReadFile("config.example.toml")
	for _, key := range tomlKeys(reflect.TypeOf(Config{})) {
		if !regexp.MustCompile(`(?m)^` + key + ` = `).Match(raw) {
			t.Errorf("config.example.toml does not document %q", key)
		}
	}
	// An array of tables has no default entry: the example shows one,
	// commented out, with every key.
	ct := reflect.TypeOf(Config{})
	for i := range ct.NumField() {
		f := ct.Field(i)
		if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		name := f.Tag.Get("toml")
		if !regexp.MustCompile(`(?m)^# \[\[` + name + `\]\]`).Match(raw) {
			t.Errorf("config.example.toml does not show a commented [[%s]] entry", name)
		}
		for _, key := range tomlKeys(f.Type.Elem()) {
			if !regexp.MustCompile(`(?m)^# ` + key + ` = `).Match(raw) {
				t.Errorf("config.example.toml does not document %s.%s", name, key)
			}
		}
	}
}

// tomlKeys returns the toml names of the leaf fields of a config struct.
func tomlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(duration{}) {
			keys = append(keys, tomlKeys(f.Type)...)
			continue
		}
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
			continue // an array of tables: TestConfigExample checks its commented entry
		}
		if f.Tag.Get("toml") == "-" {
			continue // not in the file (Config.Key)
		}
		keys = append(keys, f.Tag.Get("toml"))
	}
	return keys
}

func TestLoadConfig(t *testing.T) {
	// The file's [dns] is under test: TestMain's resolver would override it.
	t.Setenv("BURNER_DNS_RESOLVER", "")
	os.Unsetenv("BURNER_DNS_RESOLVER")
	dir := t.TempDir()
	cfgFile := writeConfig(t, fmt.Sprintf("data = %q\n[smtp]\nlisten = \"127.0.0.1:2626\"\ndomains = [\"a.test\"]\n", filepath.Join(dir, "f.db")))

	cmd := newServeCmd()
	cmd.Flags().String("config", "", "")
	if err := cmd.ParseFlags([]string{"--config", cfgFile, "--smtp", "127.0.0.1:2727", "--domain", "b.test", "--domain", "c.test"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Data != filepath.Join(dir, "f.db") || cfg.SMTP.Listen != "127.0.0.1:2727" ||
		!reflect.DeepEqual(cfg.SMTP.Domains, []string{"b.test", "c.test"}) || cfg.HTTP.Listen != "127.0.0.1:8080" {
		t.Errorf("loadConfig = %+v; want data from the file, smtp and domains from flags, http by default", cfg)
	}

	// trusted_networks = [] trusts none, which smtpd must not take for its
	// default (nil, loopback).
	cmd = newServeCmd()
	cmd.Flags().String("config", "", "")
	if err := cmd.ParseFlags([]string{"--config", writeConfig(t, "[smtp]\ntrusted_networks = []\n")}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadConfig(cmd); err != nil || cfg.SMTP.trustedNetworks() == nil || len(cfg.SMTP.trustedNetworks()) != 0 {
		t.Errorf("trusted_networks = []: loadConfig = %v, %v; want no trusted network, not nil", cfg.SMTP.TrustedNetworks, err)
	}

	for _, tc := range []struct{ file, want string }{
		{"[smtp]\nlisten = \"x\"\nmax_recipients = 0\n", "smtp.listen"},
		{"[smtp]\nlisten = \"x\"\nmax_recipients = 0\n", "smtp.max_recipients"}, // every problem at once
		{"[smtp]\nlistn = \"127.0.0.1:25\"\n", "unknown key(s): smtp.listn"},
		{"[retention]\nmax_age = \"a week\"\n", `"a week" is not a duration`},
		{"[retention]\nmax_age = \"-1h\"\n", "retention.max_age"},
		{"[smtp]\ndata_timeout = \"0\"\n", "smtp.data_timeout: must be a positive duration"},
		{"[log]\nformat = \"xml\"\nlevel = \"loud\"\n", "log.format"},
		{"[log]\nformat = \"xml\"\nlevel = \"loud\"\n", "log.level"},
		{"[http]\nmax_query_bytes = 0\n", "http.max_query_bytes"},
		{"[smtp]\ntrusted_networks = [\"10.0.0.1\"]\n", `smtp.trusted_networks: "10.0.0.1" is not a network`},
		{"[smtp]\ntls_cert = \"c.pem\"\n", "tls_cert and smtp.tls_key"},
		{"[mcp]\naddress_domain = \"agents@x.test\"\n", `mcp.address_domain: "agents@x.test" is not a domain`},
		{"data = \n", "config"},
		{"[dns]\nresolver = \"127.0.0.1\"\n", `dns.resolver: "127.0.0.1" is not host:port`},
		{"[dns]\nresolver = \":53\"\n", `dns.resolver: ":53" is not host:port`},
		{"[dns]\nresolver = \"127.0.0.1:domain\"\n", `dns.resolver: "127.0.0.1:domain" is not host:port`},
		{"[dns]\ntimeout = \"0s\"\n", "dns.timeout: must be a positive duration"},
		{"[[webhooks]]\nurl = \"ftp://x\"\ninboxes = [\"a*b\"]\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_c2hvcnQ=\"\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n", "webhooks[0].url: \"ftp://x\" is not"},
		{"[[webhooks]]\nurl = \"ftp://x\"\ninboxes = [\"a*b\"]\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_c2hvcnQ=\"\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n", "webhooks[0].inboxes: inbox pattern \"a*b\""},
		{"[[webhooks]]\nurl = \"ftp://x\"\ninboxes = [\"a*b\"]\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_c2hvcnQ=\"\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n", "webhooks[0].secret: must be whsec_"},
		{"[[webhooks]]\nurl = \"ftp://x\"\ninboxes = [\"a*b\"]\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_c2hvcnQ=\"\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n", "webhooks[1].secret: after whsec_"},
		{"[[webhooks]]\nurl = \"ftp://x\"\ninboxes = [\"a*b\"]\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_c2hvcnQ=\"\n[[webhooks]]\nurl = \"https://h.test/\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n", "webhooks[2].url: the same as webhooks[1]"},
	} {
		_, err := runCmd(t, "keys", "list", "--config", writeConfig(t, tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %q: err = %v, want it to mention %q", tc.file, err, tc.want)
		}
	}
	if _, err := runCmd(t, "keys", "list", "--config", filepath.Join(dir, "missing.toml")); err == nil {
		t.Error("an explicit --config that does not exist was accepted")
	}
}

func TestJSONLogs(t *testing.T) {
	var buf bytes.Buffer
	newLogger(LogConfig{Format: "json", Level: "warn"}, &buf).Info("hidden")
	newLogger(LogConfig{Format: "json", Level: "warn"}, &buf).Warn("shown", "email_id", "x")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "shown" || line["email_id"] != "x" {
		t.Errorf("JSON log output %q (%v); want one JSON line for the warning only", buf.String(), err)
	}
}

// TestAddressDomain: new_address's domain (spec §11), the same rule
// everywhere: smtp.domains, then mcp.address_domain, then a hostname with
// a dot, then burner.test.
func TestAddressDomain(t *testing.T) {
	for _, tc := range []struct {
		domains       []string
		address, host string
		want          string
	}{
		{[]string{"inbox.test", "other.test"}, "agents.test", "mx.example.test", "inbox.test"},
		{nil, "agents.test", "mx.example.test", "agents.test"},
		{nil, "", "mx.example.test", "mx.example.test"},
		{nil, "", "mx.example.test.", "mx.example.test"},
		{[]string{}, "", "localhost", "burner.test"},
		{nil, "", "192.0.2.1", "burner.test"},
		{nil, "", "[192.0.2.1]", "burner.test"},
		{nil, "", "bad_name.test", "burner.test"},
		{nil, "", "", "burner.test"},
	} {
		cfg := defaultConfig()
		cfg.SMTP.Domains, cfg.MCP.AddressDomain, cfg.SMTP.Hostname = tc.domains, tc.address, tc.host
		if got := cfg.addressDomain(); got != tc.want {
			t.Errorf("addressDomain() with domains %q, address_domain %q, hostname %q = %q, want %q", tc.domains, tc.address, tc.host, got, tc.want)
		}
	}
}
