package logcollector

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// Config configures a paddock logcollector process — a collector that also stands
// for election as the rebalancer: the keys of the logcollector section.
type Config struct {
	// Servers are the coordination servers (key zk, flag --zk).
	Servers        []string
	SessionTimeout time.Duration
	// Access is how the service authenticates and the ACLs of the nodes it creates
	// (keys auth, auth_file, tls_ca, tls_cert, tls_key, roles).
	coordinator.Access
	// Root is the path /logs lives under.
	Root string
	// ID is the collector's id, stable across restarts (key id, flag --id); empty means
	// Host.
	ID string `config:"id"`
	// Host is the machine the collector runs on: it is given only the sources of that
	// host, whose files are on its disk. Empty means the host name (os.Hostname); tests
	// set it to run "hosts" side by side.
	Host string
	// Sink is the directory of the JSON-lines files, one per source, or "-" for stdout.
	Sink string
	// StatusInterval is how often the collector writes its status.
	StatusInterval time.Duration
	// PollInterval is how often files are checked for new lines, rotation and new
	// matches.
	PollInterval time.Duration
	// Grace: a collector whose status is older than this is lost, and its sources go
	// to the others.
	Grace time.Duration
	// RebalanceInterval is how often the elected rebalancer polls the collectors.
	RebalanceInterval time.Duration
}

// minInterval bounds the intervals from below: shorter ones would only spin.
const minInterval = time.Millisecond

// DefaultConfig returns the defaults: a server on 127.0.0.1:2181, a 10 s session, root
// /, sink data/logs, status every second, files polled every 200 ms, a collector lost
// after 10 s of silence. Host defaults to the host name, ID to Host.
func DefaultConfig() Config {
	return Config{
		Servers:           []string{"127.0.0.1:2181"},
		SessionTimeout:    10 * time.Second,
		Root:              "/",
		Sink:              "data/logs",
		StatusInterval:    time.Second,
		PollInterval:      200 * time.Millisecond,
		Grace:             10 * time.Second,
		RebalanceInterval: time.Second,
	}
}

// Validate reports every problem of c as "key = value: what is allowed".
func (c Config) Validate() error {
	errs := task.CheckConnection(c.Servers, c.SessionTimeout, c.Root)
	errs = append(errs, c.Access.Check()...)
	if c.ID != "" {
		if err := CheckID("collector", c.ID); err != nil {
			errs = append(errs, fmt.Errorf("id = %s: %w", c.ID, err))
		}
	}
	if c.Host != "" {
		if err := CheckID("host", c.Host); err != nil {
			errs = append(errs, fmt.Errorf("host = %s: %w", c.Host, err))
		}
	}
	if c.Sink == "" || strings.ContainsRune(c.Sink, 0) {
		errs = append(errs, fmt.Errorf("sink = %q: want a directory for the JSON-lines files, or - for standard output", c.Sink))
	}
	for key, d := range map[string]time.Duration{"status_interval": c.StatusInterval, "poll_interval": c.PollInterval,
		"grace": c.Grace, "rebalance_interval": c.RebalanceInterval} {
		if d < minInterval {
			errs = append(errs, fmt.Errorf("%s = %v: want at least %v", key, d, minInterval))
		}
	}
	if c.Grace > 0 && c.Grace <= 2*c.StatusInterval {
		errs = append(errs, fmt.Errorf("grace = %v: want more than twice status_interval (%v), or live collectors look lost", c.Grace, c.StatusInterval))
	}
	return errors.Join(errs...)
}

// withDefaults fills in Host (the host name) and ID (Host) where empty.
func (c Config) withDefaults() Config {
	if c.Host == "" {
		h, err := os.Hostname()
		if err != nil || CheckID("host", h) != nil {
			h = "localhost"
		}
		c.Host = h
	}
	if c.ID == "" {
		c.ID = c.Host
	}
	return c
}
