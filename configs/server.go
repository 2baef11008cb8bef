package configs

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode"

	"github.com/paddock/paddock/server"
)

// LoadServer returns the coordination server's configuration: server.DefaultConfig(),
// then opts.File's server section or opts.ZooCfg, then PADDOCK_SERVER_* variables, then
// opts.Flags; validated with server.Config.Validate. It logs a warning through
// opts.Logger when force_sync is off, and for each zoo.cfg key it ignores.
//
// Errors name the key (server.tick_time, or the zoo.cfg key and line), the value, what is
// allowed, and where the value came from.
func LoadServer(opts Options) (server.Config, error) {
	cfg, err := loadServer(opts)
	if err != nil {
		return server.Config{}, fmt.Errorf("configs: %w", err)
	}
	return cfg, nil
}

func loadServer(opts Options) (server.Config, error) {
	logger := opts.logger()
	l, err := newLoader(opts)
	if err != nil {
		return server.Config{}, err
	}
	var zk *zooCfg
	if opts.ZooCfg != "" {
		if l.hasSection(serverSection.name) {
			return server.Config{}, fmt.Errorf("both %s (its server section) and zoo.cfg %s configure the server: use one",
				opts.File, opts.ZooCfg)
		}
		if zk, err = readZooCfg(opts.ZooCfg, logger); err != nil {
			return server.Config{}, err
		}
		l.mergeSection(serverSection, zk.values, opts.ZooCfg)
	}
	cfg := server.DefaultConfig()
	if opts.ServerDefaults != nil {
		cfg = *opts.ServerDefaults
	}
	if err := l.load(serverSection, &cfg); err != nil {
		return server.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return server.Config{}, l.explain(serverSection, err, zk)
	}
	warnServer(logger, cfg, l.source(serverSection, "force_sync"))
	return cfg, nil
}

// explain rewrites the errors of a Validate, which name keys inside the section
// ("tick_time = 0s: ...", "ensemble: server id 0: ..."), to name the section and where
// each value came from.
func (l *loader) explain(s *section, err error, zk *zooCfg) error {
	errs := flatten(err)
	out := make([]error, len(errs))
	for i, e := range errs {
		key := validatedKey(e.Error())
		if _, known := s.lookup(key); !known {
			out[i] = fmt.Errorf("%s: %w", s.name, e)
			continue
		}
		src := l.source(s, key)
		if zk != nil && src == zk.path && zk.from[key] != "" {
			src = zk.from[key] + " in " + zk.path
		}
		out[i] = fmt.Errorf("%s.%w%s", s.name, e, fromSuffix(src))
	}
	return errors.Join(out...)
}

// validatedKey returns the key a Validate error starts with: tick_time for
// "tick_time = 0s: ...", ensemble for "ensemble: ..." and for "ensemble entry ...".
func validatedKey(msg string) string {
	end := strings.IndexFunc(msg, func(r rune) bool { return r != '_' && !unicode.IsLower(r) && !unicode.IsDigit(r) })
	if end < 0 {
		return msg
	}
	return msg[:end]
}

// flatten lists the errors errors.Join put together, nested joins included, so that each
// gets its key and source. An error wrapping several with fmt.Errorf is kept whole.
func flatten(err error) []error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	errs := joined.Unwrap()
	texts := make([]string, len(errs))
	for i, e := range errs {
		texts[i] = e.Error()
	}
	if strings.Join(texts, "\n") != err.Error() {
		return []error{err}
	}
	var out []error
	for _, e := range errs {
		out = append(out, flatten(e)...)
	}
	return out
}

// warnServer logs what is valid but risky or inert in cfg.
func warnServer(logger *slog.Logger, cfg server.Config, forceSyncFrom string) {
	if !cfg.ForceSync {
		logger.Warn("force_sync is off: acknowledged writes can be lost on a crash",
			"key", "server.force_sync", "from", forceSyncFrom)
	}
	for _, w := range cfg.FourLetterWords {
		if w != "*" && !slices.Contains(server.FourLetterWordNames, w) {
			logger.Warn("four-letter word whitelisted but not answered by paddock",
				"key", "server.four_letter_words", "word", w)
		}
	}
}
