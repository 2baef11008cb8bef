package logcollector

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/paddock/paddock/task"
)

// CollectorConfig configures a Collector. Servers and SessionTimeout say how the
// caller connects the Session it hands to NewCollector; the Collector itself only
// checks them.
type CollectorConfig struct {
	// Servers are the coordination servers' client addresses, host:port (key zk).
	Servers []string
	// SessionTimeout is the ZooKeeper session timeout asked for.
	SessionTimeout time.Duration
	// Root is the path /logs lives under.
	Root string
	// Host is the collector's id: it names /logs/collector/<host>, and must stay the
	// same across restarts, which resume from that node's assignment and status.
	Host string
	// Sink is a directory holding one JSON-lines file per source (<dir>/<source>.jsonl),
	// or "-" for standard output.
	Sink string
	// StatusInterval is how often the status is written. The rebalancer reads a
	// collector whose status is older than its grace as lost.
	StatusInterval time.Duration
	// PollInterval is how often the files are checked for new data, rotation,
	// truncation and new matches of the glob.
	PollInterval time.Duration
}

// DefaultCollectorConfig returns the defaults: a server on 127.0.0.1:2181, a 10 s
// session, root /, sink data/logs, status every second, files polled every 200 ms.
// Host has no default: each collector must be named.
func DefaultCollectorConfig() CollectorConfig {
	return CollectorConfig{
		Servers:        []string{"127.0.0.1:2181"},
		SessionTimeout: 10 * time.Second,
		Root:           "/",
		Sink:           "data/logs",
		StatusInterval: time.Second,
		PollInterval:   200 * time.Millisecond,
	}
}

// minInterval bounds StatusInterval and PollInterval from below: shorter ones would
// only spin.
const minInterval = time.Millisecond

// Validate reports every problem of c, each as "key = value: what is allowed", with
// the keys of the configuration's logcollector section (Servers is zk).
func (c CollectorConfig) Validate() error {
	errs := task.CheckConnection(c.Servers, c.SessionTimeout, c.Root)
	if CheckID("collector", c.Host) != nil {
		host := c.Host
		if host == "" {
			host = `""`
		}
		errs = append(errs, fmt.Errorf("host = %s: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit, the same across restarts", host))
	}
	if c.Sink == "" || strings.ContainsRune(c.Sink, 0) {
		errs = append(errs, fmt.Errorf("sink = %q: want a directory for the JSON-lines files, or - for standard output", c.Sink))
	}
	if c.StatusInterval < minInterval {
		errs = append(errs, fmt.Errorf("status_interval = %v: want at least %v", c.StatusInterval, minInterval))
	}
	if c.PollInterval < minInterval {
		errs = append(errs, fmt.Errorf("poll_interval = %v: want at least %v", c.PollInterval, minInterval))
	}
	return errors.Join(errs...)
}
