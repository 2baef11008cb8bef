package configs

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/paddock/paddock/server"
)

// Options say where configuration comes from; see the package doc for the precedence.
// The zero value loads defaults and the environment.
type Options struct {
	// File is a YAML file (--config); empty means none.
	File string
	// ZooCfg is an Apache ZooKeeper zoo.cfg (--zoo-cfg) that configures the server
	// section; File may still hold other sections, but not a server section too.
	ZooCfg string
	// Flags are the command line's flags. A flag that was set on the command line and is
	// named like a key of the section being loaded, dashes for underscores
	// (--client-addr for client_addr), overrides that key. Other flags are left alone.
	Flags *pflag.FlagSet
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// ServerDefaults, if set, replaces server.DefaultConfig() as the server section's
	// defaults (paddock up's loopback client address).
	ServerDefaults *server.Config
}

func (o *Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o.Logger
}

// loader is one viper instance holding every layer for one load.
type loader struct {
	opts  Options
	v     *viper.Viper
	files map[string]string // section name -> the file its config-file layer came from
}

// newLoader reads opts.File and checks it and the environment for unknown keys.
func newLoader(opts Options) (*loader, error) {
	l := &loader{opts: opts, v: viper.New(), files: map[string]string{}}
	l.v.AllowEmptyEnv(true) // PADDOCK_SERVER_ADMIN_ADDR= disables the admin server
	var errs []error
	if opts.File != "" {
		if err := l.readFile(opts.File); err != nil {
			return nil, err
		}
		errs = append(errs, l.checkFileKeys()...)
	}
	errs = append(errs, checkEnv(os.Environ())...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

func (l *loader) readFile(path string) error {
	l.v.SetConfigFile(path)
	l.v.SetConfigType("yaml") // whatever the file's extension
	if err := l.v.ReadInConfig(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, s := range sections {
		l.files[s.name] = path
	}
	return nil
}

// checkFileKeys reports keys of the file that no section knows, and keys without a
// value (a bare "admin_addr:" would otherwise silently mean the default).
func (l *loader) checkFileKeys() []error {
	keys := l.v.AllKeys() // only the file's keys: nothing else is bound yet
	slices.Sort(keys)
	var errs []error
	for _, key := range keys {
		if err := checkFileKey(key, l.v.Get(key)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", l.opts.File, err))
		}
	}
	return errs
}

func checkFileKey(key string, value any) error {
	name, rest, _ := strings.Cut(key, ".")
	s := sectionNamed(name)
	switch {
	case s == nil:
		return fmt.Errorf("unknown key %s: no section %q (sections: %s)%s",
			key, name, strings.Join(sectionNames(), ", "), suggest(key, allKeys()))
	case rest == "" && value != nil:
		return fmt.Errorf("%s = %s: want a mapping of %s keys", key, show(value), name)
	case rest == "":
		return nil // an empty section
	}
	if _, ok := s.lookup(rest); !ok {
		return fmt.Errorf("unknown key %s%s", key, suggest(key, allKeys()))
	}
	if value == nil {
		return fmt.Errorf("%s has no value: write one, or remove the line to keep the default", key)
	}
	return nil
}

// checkEnv reports PADDOCK_<SECTION>_ variables, for known sections, that name no key.
// Variables for other sections are left alone: they may belong to a newer paddock.
func checkEnv(environ []string) []error {
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, s := range sections {
			prefix := "PADDOCK_" + strings.ToUpper(s.name) + "_"
			key, ok := strings.CutPrefix(name, prefix)
			if !ok {
				continue
			}
			if _, known := s.lookup(strings.ToLower(key)); !known || key != strings.ToUpper(key) {
				errs = append(errs, fmt.Errorf("unknown environment variable %s: %s has no key %q%s",
					name, s.name, strings.ToLower(key), suggestEnv(s, key)))
			}
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}

// hasSection reports whether the file has a non-empty section name.
func (l *loader) hasSection(name string) bool { return l.v.InConfig(name) }

// mergeSection puts values (keys of section s) in the config-file layer, as read from path.
func (l *loader) mergeSection(s *section, values map[string]any, path string) {
	if err := l.v.MergeConfigMap(map[string]any{s.name: values}); err != nil {
		panic(err) // viper's MergeConfigMap never fails; a change there is a broken invariant
	}
	l.files[s.name] = path
}

// load decodes section s into cfg, a pointer to its Config struct holding the defaults.
// Every bad value is reported with its key, value, what is allowed and where it came from.
func (l *loader) load(s *section, cfg any) error {
	rv := reflect.ValueOf(cfg).Elem()
	for _, f := range s.fields {
		full := s.name + "." + f.key
		l.v.SetDefault(full, rv.FieldByIndex(f.index).Interface())
		_ = l.v.BindEnv(full, s.envName(f.key)) // fails only without a key
		if fl := l.flag(f.key); fl != nil {
			_ = l.v.BindPFlag(full, fl) // fails only for a nil flag
		}
	}
	var errs []error
	for _, f := range s.fields {
		full := s.name + "." + f.key
		raw := l.v.Get(full)
		if err := decode(rv.FieldByIndex(f.index), raw); err != nil {
			value := show(raw)
			if f.secret {
				value = "(hidden)"
			}
			errs = append(errs, fmt.Errorf("%s = %s: %w%s", full, value, err, fromSuffix(l.source(s, f.key))))
		}
	}
	return errors.Join(errs...)
}

// flag returns the flag that sets key (client_addr: --client-addr), or nil.
func (l *loader) flag(key string) *pflag.Flag {
	if l.opts.Flags == nil {
		return nil
	}
	return l.opts.Flags.Lookup(strings.ReplaceAll(key, "_", "-"))
}

// source says where the value of key came from (a flag, a variable, a file), or "" for
// a default.
func (l *loader) source(s *section, key string) string {
	if fl := l.flag(key); fl != nil && fl.Changed {
		return "flag --" + fl.Name
	}
	if _, ok := os.LookupEnv(s.envName(key)); ok {
		return s.envName(key)
	}
	if l.v.InConfig(s.name + "." + key) {
		return l.files[s.name]
	}
	return ""
}

// fromSuffix formats a source for the end of an error message.
func fromSuffix(source string) string {
	if source == "" {
		return ""
	}
	return " (from " + source + ")"
}

func sectionNames() []string {
	names := make([]string, len(sections))
	for i, s := range sections {
		names[i] = s.name
	}
	return names
}

// allKeys lists every section.key, for suggestions.
func allKeys() []string {
	var keys []string
	for _, s := range sections {
		for _, k := range s.keys() {
			keys = append(keys, s.name+"."+k)
		}
	}
	return keys
}

func suggestEnv(s *section, key string) string {
	var names []string
	for _, k := range s.keys() {
		names = append(names, strings.ToUpper(k))
	}
	best := closest(strings.ToUpper(key), names)
	if best == "" {
		return ""
	}
	return "; did you mean " + s.envName(best) + "?"
}

// suggest returns "; did you mean X?" for the candidate closest to key, or "".
func suggest(key string, candidates []string) string {
	if best := closest(key, candidates); best != "" {
		return "; did you mean " + best + "?"
	}
	return ""
}

// closest returns the candidate equal to key but for case, or else the one within two
// edits of it, or "" when none is that close.
func closest(key string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if strings.EqualFold(c, key) {
			return c
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
