package main

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Settings from the environment (spec §14): every key of the config file
// is also BURNER_<SECTION>_<KEY> (BURNER_<KEY> for a top-level one), so
// that a container or a CI job configures burner without writing a file.
// The variables are found by walking Config's toml tags, so a key added to
// Config is settable at once. Lists of tables ([[webhooks]]) come from the
// file only. A variable that names a section with no such key is a typo
// and stops burner; the other BURNER_ variables belong to the client
// libraries (BURNER_URL, BURNER_KEY, BURNER_DOMAIN, ...) and are left
// alone.

// envPrefix starts the name of every variable burner reads.
const envPrefix = "BURNER_"

// envSetting is one setting the environment may set.
type envSetting struct {
	key   string // as the file names it: smtp.domains
	index []int  // its field in Config, for reflect.Value.FieldByIndex
}

// envSettings is what the environment may set, found in Config's toml
// tags.
type envSettings struct {
	keys     map[string]envSetting // by variable: BURNER_SMTP_DOMAINS
	sections map[string]string     // the variable prefix of each section ("BURNER_SMTP_") and its name ("smtp")
	fileOnly map[string]string     // the variable of each list of tables ("BURNER_WEBHOOKS") and its key ("webhooks")
}

// textUnmarshaler is the type of the settings (durations) that parse
// themselves.
var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// configEnv walks Config once and returns the variables of its settings.
func configEnv() envSettings {
	s := envSettings{keys: map[string]envSetting{}, sections: map[string]string{}, fileOnly: map[string]string{}}
	var walk func(t reflect.Type, index []int, path []string)
	walk = func(t reflect.Type, index []int, path []string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			idx, p := append(slices.Clone(index), i), append(slices.Clone(path), name)
			variable := envPrefix + strings.ToUpper(strings.Join(p, "_"))
			switch {
			case f.Type.Kind() == reflect.Struct && !reflect.PointerTo(f.Type).Implements(textUnmarshaler):
				s.sections[variable+"_"] = strings.Join(p, ".")
				walk(f.Type, idx, p)
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				s.fileOnly[variable] = strings.Join(p, ".")
			default:
				s.keys[variable] = envSetting{key: strings.Join(p, "."), index: idx}
			}
		}
	}
	walk(reflect.TypeFor[Config](), nil, nil)
	return s
}

// applyEnv sets the settings of cfg that environ (os.Environ's
// "NAME=value" pairs) names, and reports every variable it cannot use at
// once: a value that does not parse, a key a section does not have, a
// list of tables.
func applyEnv(cfg *Config, environ []string) error {
	s := configEnv()
	v := reflect.ValueOf(cfg).Elem()
	var errs []error
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) {
			continue
		}
		if set, ok := s.keys[name]; ok {
			if err := setFromEnv(v.FieldByIndex(set.index), value); err != nil {
				errs = append(errs, fmt.Errorf("%s (%s): %w", name, set.key, err))
			}
			continue
		}
		if err := s.unknown(name); err != nil {
			errs = append(errs, err)
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// unknown returns the error of a BURNER_ variable that is no setting, nil
// when it is none of burner's business.
func (s envSettings) unknown(name string) error {
	for variable, key := range s.fileOnly {
		if name == variable || strings.HasPrefix(name, variable+"_") {
			return fmt.Errorf("%s: [[%s]] is set in the config file only", name, key)
		}
	}
	// The longest section that starts the name is the one it names: a
	// section may hold another.
	section := ""
	for prefix := range s.sections {
		if strings.HasPrefix(name, prefix) && len(prefix) > len(section) {
			section = prefix
		}
	}
	if section == "" {
		return nil
	}
	var known []string
	for variable, set := range s.keys {
		if leaf, ok := strings.CutPrefix(set.key, s.sections[section]+"."); ok && !strings.Contains(leaf, ".") {
			known = append(known, variable)
		}
	}
	slices.Sort(known)
	return fmt.Errorf("%s: [%s] has no such key; its variables are %s", name, s.sections[section], strings.Join(known, ", "))
}

// setFromEnv sets field to value, read as the file would read it: lists
// comma-separated, numbers in decimal, booleans true or false, durations
// as in the file ("90s"): the kinds Config's fields have
// (TestEnvironmentSetsEveryKey).
func setFromEnv(field reflect.Value, value string) error {
	if field.CanAddr() && field.Addr().Type().Implements(textUnmarshaler) {
		return field.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(strings.TrimSpace(value)))
	}
	switch field.Kind() {
	case reflect.String:
		field.SetString(value)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%q is not true or false", value)
		}
		field.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, field.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not an integer", value)
		}
		field.SetInt(n)
	case reflect.Slice:
		// "a.test, b.test" is two items; "" is the empty list.
		items := reflect.MakeSlice(field.Type(), 0, 0)
		for item := range strings.SplitSeq(value, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			elem := reflect.New(field.Type().Elem()).Elem()
			if err := setFromEnv(elem, item); err != nil {
				return fmt.Errorf("item %q: %w", item, err)
			}
			items = reflect.Append(items, elem)
		}
		field.Set(items)
	default:
		return fmt.Errorf("a %s cannot be set from the environment", field.Type())
	}
	return nil
}
