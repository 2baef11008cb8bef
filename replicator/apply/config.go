package apply

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"
)

// Config says what one replication task copies, from where to where, and as which owner.
// Run reads it once; it is not changed afterwards.
type Config struct {
	// Task is the task's name: the key of its checkpoint row (at most 191 characters,
	// printable, valid UTF-8).
	Task string
	// Source and Target are go-sql-driver/mysql DSNs, user:pass@tcp(host:port)/. The source
	// must be reached over TCP (the binlog connection needs host and port); its user needs
	// REPLICATION SLAVE, REPLICATION CLIENT (BINLOG MONITOR on MariaDB), SELECT on the
	// included tables, and on MySQL RELOAD (the snapshot's brief global read lock). The
	// target user needs to create, alter and write the included tables and the checkpoint
	// database. The source DSN's TLS settings apply to the binlog connection too.
	Source string
	Target string
	// Include lists "db.table" globs (* any run of characters, ? one character), e.g.
	// "shop.*" or "app.user_?"; empty means every table that Exclude does not exclude.
	Include []string
	// Exclude lists globs of the same form. The system schemas (mysql, information_schema,
	// performance_schema, sys) and the checkpoint database are always excluded.
	Exclude []string
	// ServerID is the replica server id the binlog connection registers with on the
	// source; it must differ from the source's own and from its other replicas'.
	ServerID uint32
	// Epoch is the owner epoch of this run (> 0): a run with a higher epoch fences this one
	// off (ErrDeposed).
	Epoch int64
	// Logger receives the run's log; nil discards it.
	Logger *slog.Logger
}

// DefaultConfig returns a Config with the process's default logger and nothing else set:
// Task, Source, Target, ServerID and Epoch have no sensible defaults.
func DefaultConfig() Config {
	return Config{Logger: slog.Default()}
}

// Validate reports every problem of the configuration in one error, each naming the field,
// the value and what is allowed. Passwords are never quoted.
func (c Config) Validate() error {
	var problems []string
	if err := validTaskName(c.Task); err != nil {
		problems = append(problems, err.Error())
	}
	for _, d := range []struct{ name, dsn string }{{"source", c.Source}, {"target", c.Target}} {
		if _, err := parseDSN(d.name, d.dsn); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, list := range []struct {
		name  string
		globs []string
	}{{"include", c.Include}, {"exclude", c.Exclude}} {
		for i, g := range list.globs {
			if _, err := parsePattern(g); err != nil {
				problems = append(problems, fmt.Sprintf("%s[%d] %q: %v", list.name, i, g, err))
			}
		}
	}
	if c.ServerID == 0 {
		problems = append(problems, "server id is 0: it must be a positive replica id unique among the source's replicas")
	}
	if c.Epoch <= 0 {
		problems = append(problems, fmt.Sprintf("epoch is %d: it must be > 0", c.Epoch))
	}
	if len(problems) > 0 {
		return fmt.Errorf("apply: invalid config: %s", strings.Join(problems, "; "))
	}
	return nil
}

// validTaskName checks that name can be the checkpoint row's key.
func validTaskName(name string) error {
	switch {
	case name == "":
		return errors.New("task name is empty")
	case !utf8.ValidString(name):
		return fmt.Errorf("task name %q is not valid UTF-8", name)
	case utf8.RuneCountInString(name) > 191:
		return fmt.Errorf("task name is %d characters long: at most 191 are allowed", utf8.RuneCountInString(name))
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("task name %q contains the unprintable character %U", name, r)
		}
	}
	return nil
}

// parseDSN parses a source or target DSN and checks that it names a TCP address.
func parseDSN(side, dsn string) (*mysql.Config, error) {
	if dsn == "" {
		return nil, fmt.Errorf("%s DSN is empty: want user:pass@tcp(host:port)/", side)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s DSN does not parse (want user:pass@tcp(host:port)/): %v", side, err)
	}
	if cfg.Net != "tcp" {
		return nil, fmt.Errorf("%s DSN uses network %q: only tcp(host:port) is supported", side, cfg.Net)
	}
	return cfg, nil
}

// logger returns the configured logger, or one that discards.
func (c Config) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
