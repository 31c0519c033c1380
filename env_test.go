package main

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// exampleKeys returns the keys config.example.toml sets, as paths
// ("smtp.domains"); the lists of tables it only shows commented out.
func exampleKeys(t *testing.T) []string {
	t.Helper()
	var example map[string]any
	if _, err := toml.DecodeFile("config.example.toml", &example); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(m map[string]any, path string)
	walk = func(m map[string]any, path string) {
		for k, v := range m {
			if section, ok := v.(map[string]any); ok {
				walk(section, path+k+".")
				continue
			}
			keys = append(keys, path+k)
		}
	}
	walk(example, "")
	slices.Sort(keys)
	return keys
}

// envValue returns a value for a variable of field's type that differs
// from what field holds, and the field's value once set from it.
func envValue(t *testing.T, field reflect.Value) (string, any) {
	t.Helper()
	switch v := field.Interface().(type) {
	case duration:
		d := v.Duration + 7*time.Minute + 3*time.Second
		return d.String(), duration{d}
	case string:
		return "set-from-env " + v, "set-from-env " + v
	case bool:
		return strconv.FormatBool(!v), !v
	case int:
		return strconv.Itoa(v + 7), v + 7
	case int64:
		return strconv.FormatInt(v+7, 10), v + 7
	case []string:
		return " a.test, b.test ,", []string{"a.test", "b.test"}
	case uint:
		return strconv.FormatUint(uint64(v+7), 10), v + 7
	case float64:
		return strconv.FormatFloat(v+0.5, 'f', -1, 64), v + 0.5
	}
	t.Fatalf("no test value for a %s", field.Type())
	return "", nil
}

// TestEnvironmentSetsEveryKey: every key of config.example.toml is set by
// its variable, BURNER_<SECTION>_<KEY>, and that variable changes nothing
// else.
func TestEnvironmentSetsEveryKey(t *testing.T) {
	s := configEnv()
	keys := exampleKeys(t)
	if len(keys) != len(s.keys) {
		t.Errorf("config.example.toml sets %d keys, the environment %d", len(keys), len(s.keys))
	}
	for _, key := range keys {
		variable := envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
		set, ok := s.keys[variable]
		if !ok || set.key != key {
			t.Errorf("%s of config.example.toml: no variable %s (got %+v)", key, variable, set)
			continue
		}
		want := defaultConfig()
		field := reflect.ValueOf(&want).Elem().FieldByIndex(set.index)
		value, after := envValue(t, field)
		field.Set(reflect.ValueOf(after))
		got := defaultConfig()
		if err := applyEnv(&got, []string{variable + "=" + value}); err != nil {
			t.Errorf("%s=%s: %v", variable, value, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s=%s: config %+v,\nwant %+v", variable, value, got, want)
		}
	}
	for _, top := range []string{"BURNER_DATA", "BURNER_NODE"} {
		if _, ok := s.keys[top]; !ok {
			t.Errorf("no variable %s for a top-level key", top)
		}
	}
}

// TestEnvironmentPrecedence: flags, then the environment, then the file,
// then the defaults.
func TestEnvironmentPrecedence(t *testing.T) {
	cfgFile := writeConfig(t, "[smtp]\nlisten = \"127.0.0.1:2601\"\nhostname = \"file.test\"\n[http]\nlisten = \"127.0.0.1:2602\"\n[retention]\nmax_per_inbox = 5\n")
	t.Setenv("BURNER_SMTP_LISTEN", "127.0.0.1:2701")
	t.Setenv("BURNER_HTTP_LISTEN", "127.0.0.1:2702")
	t.Setenv("BURNER_SMTP_DOMAINS", "a.test,b.test")
	t.Setenv("BURNER_UI_PUBLIC", "true")
	cmd := newServeCmd()
	cmd.Flags().String("config", "", "")
	if err := cmd.ParseFlags([]string{"--config", cfgFile, "--smtp", "127.0.0.1:2801"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SMTP.Listen != "127.0.0.1:2801" || cfg.HTTP.Listen != "127.0.0.1:2702" || cfg.SMTP.Hostname != "file.test" ||
		cfg.Retention.MaxPerInbox != 5 || !slices.Equal(cfg.SMTP.Domains, []string{"a.test", "b.test"}) || !cfg.UI.Public ||
		cfg.SMTP.MaxRecipients != defaultConfig().SMTP.MaxRecipients {
		t.Errorf("loadConfig = %+v; want smtp.listen from the flag, http.listen, domains and ui.public from the environment, hostname and max_per_inbox from the file, the rest by default", cfg)
	}
	// An empty list is a list: no inbox domain.
	t.Setenv("BURNER_SMTP_DOMAINS", "")
	if cfg, err := loadConfig(cmd); err != nil || cfg.SMTP.Domains == nil || len(cfg.SMTP.Domains) != 0 {
		t.Errorf("BURNER_SMTP_DOMAINS=\"\": domains %#v, %v; want none", cfg.SMTP.Domains, err)
	}
	// What the environment sets is validated as the file's is.
	t.Setenv("BURNER_SMTP_MAX_RECIPIENTS", "0")
	if _, err := loadConfig(cmd); err == nil || !strings.Contains(err.Error(), "smtp.max_recipients: must be positive") {
		t.Errorf("BURNER_SMTP_MAX_RECIPIENTS=0: %v, want the file's error", err)
	}
}

// TestEnvironmentErrors: a variable burner cannot use stops it, named;
// the variables of the clients are left alone.
func TestEnvironmentErrors(t *testing.T) {
	bad := map[string]string{
		"BURNER_SMTP_DOMIANS=a.test":          "BURNER_SMTP_DOMIANS: [smtp] has no such key; its variables are BURNER_SMTP_COMMAND_TIMEOUT, BURNER_SMTP_DATA_TIMEOUT, BURNER_SMTP_DOMAINS,",
		"BURNER_HTTP_LISTN=:80":               "BURNER_HTTP_LISTN: [http] has no such key",
		"BURNER_SMTP_MAX_RECIPIENTS=ten":      `BURNER_SMTP_MAX_RECIPIENTS (smtp.max_recipients): "ten" is not an integer`,
		"BURNER_RETENTION_MAX_BYTES=1e9":      `BURNER_RETENTION_MAX_BYTES (retention.max_bytes): "1e9" is not an integer`,
		"BURNER_UI_ENABLED=maybe":             `BURNER_UI_ENABLED (ui.enabled): "maybe" is not true or false`,
		"BURNER_RETENTION_MAX_AGE=a week":     `BURNER_RETENTION_MAX_AGE (retention.max_age): "a week" is not a duration`,
		"BURNER_WEBHOOKS_URL=https://h.test/": "BURNER_WEBHOOKS_URL: [[webhooks]] is set in the config file only",
		"BURNER_WEBHOOKS=x":                   "BURNER_WEBHOOKS: [[webhooks]] is set in the config file only",
	}
	var environ []string
	for kv := range bad {
		environ = append(environ, kv)
	}
	ignored := []string{"BURNER_URL=http://127.0.0.1:8080", "BURNER_KEY=bnr_x", "BURNER_DOMAIN=inbox.test", "BURNER_PREFIX=ci-",
		"BURNER_TEST_POSTGRES=postgres:///x", "BURNER_CLI_ARGS=[]", "BURNER_SMTP=127.0.0.1:2525", "PATH=/bin", "NOT_BURNER_SMTP_X=1"}
	environ = append(environ, ignored...)
	cfg := defaultConfig()
	err := applyEnv(&cfg, environ)
	if err == nil {
		t.Fatal("applyEnv of bad variables: no error")
	}
	for kv, want := range bad {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want it to say %q", kv, err, want)
		}
	}
	for _, kv := range ignored {
		name, _, _ := strings.Cut(kv, "=")
		if strings.Contains(err.Error(), name+":") || strings.Contains(err.Error(), name+" (") {
			t.Errorf("%s, which is not burner's setting, made an error: %v", name, err)
		}
	}
	cfg = defaultConfig()
	if err := applyEnv(&cfg, ignored); err != nil || !reflect.DeepEqual(cfg, defaultConfig()) {
		t.Errorf("applyEnv(%q) = %v, config %+v; want nothing changed", ignored, err, cfg)
	}

	// serve stops at start, naming it.
	t.Setenv("BURNER_SMTP_DOMIANS", "a.test")
	if _, err := runCmd(t, "keys", "list", "--config", writeConfig(t, "")); err == nil || !strings.Contains(err.Error(), "environment: BURNER_SMTP_DOMIANS") {
		t.Errorf("burner keys list with BURNER_SMTP_DOMIANS set: %v; want an error naming it", err)
	}
}

// TestSetFromEnvKinds: a list of values that parse themselves parses item
// by item, as the file would read it, and a kind no setting has is an
// error rather than a silent zero.
func TestSetFromEnvKinds(t *testing.T) {
	var v struct {
		Ds []duration
	}
	field := reflect.ValueOf(&v).Elem().Field(0)
	if err := setFromEnv(field, "1s, 2m"); err != nil || !reflect.DeepEqual(v.Ds, []duration{{time.Second}, {2 * time.Minute}}) {
		t.Errorf("setFromEnv(Ds, \"1s, 2m\") = %v: %+v", err, v)
	}
	if err := setFromEnv(field, "1s, soon"); err == nil {
		t.Error(`setFromEnv(Ds, "1s, soon"): no error`)
	}
	var f struct{ F float64 }
	if err := setFromEnv(reflect.ValueOf(&f).Elem().Field(0), "0.25"); err == nil {
		t.Error("setFromEnv of a float64, a kind no setting has: no error")
	}
}
