package master

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// Config configures a master. Fields are keys of the master section of the
// configuration (configs), in snake_case.
type Config struct {
	// Servers are the coordination servers' client addresses, host:port (key zk, flag
	// --zk).
	Servers []string
	// SessionTimeout is the ZooKeeper session timeout asked for: a backup takes over
	// within about this long after the active master dies.
	SessionTimeout time.Duration
	// Access is how the service authenticates and the ACLs of the nodes it creates
	// (keys auth, auth_file, tls_ca, tls_cert, tls_key, roles).
	coordinator.Access
	// Root is the path the cluster's nodes live under (see package task).
	Root string
	// ID names this master in /master; empty means host-pid.
	ID string
	// Addr is the address advertised in /master (informational), by default MetricsAddr.
	Addr string
	// MetricsAddr is where /metrics is served; empty for none.
	MetricsAddr string
	// Resync is how often the active master re-reads the whole state, a safety net
	// beside the watches.
	Resync time.Duration
	// SignGrace is how long, by the servers' clock, a task may stay unsigned after its
	// creation (its author signs it in a second write) before the master ends it
	// failed, unrun.
	SignGrace time.Duration
	// MaxBuffer is the servers' jute.maxbuffer (their max_buffer), the largest request
	// the master sends: a larger one — a fire of a job whose tasks together pass it —
	// fails at the master as the job's error instead of closing its connection. 0 means
	// 1048575, ZooKeeper's default.
	MaxBuffer int
}

// DefaultConfig returns the defaults: a server on 127.0.0.1:2181, a 10 s session.
func DefaultConfig() Config {
	return Config{
		Servers:        []string{"127.0.0.1:2181"},
		SessionTimeout: 10 * time.Second,
		Root:           "/",
		Resync:         30 * time.Second,
		SignGrace:      30 * time.Second,
	}
}

// Validate reports every problem of c, each as "key = value: what is allowed", with
// the keys of the configuration's master section.
func (c Config) Validate() error {
	errs := task.CheckConnection(c.Servers, c.SessionTimeout, c.Root)
	errs = append(errs, c.Access.Check()...)
	if err := task.CheckListenAddr("metrics_addr", c.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	if c.Resync <= 0 {
		errs = append(errs, fmt.Errorf("resync = %v: want a positive duration", c.Resync))
	}
	if c.SignGrace <= 0 {
		errs = append(errs, fmt.Errorf("sign_grace = %v: want a positive duration", c.SignGrace))
	}
	for _, err := range []error{c.Access.CheckVerifier(), c.Access.CheckSigner()} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.MaxBuffer != 0 && (c.MaxBuffer < 1024 || c.MaxBuffer > 512<<20) {
		errs = append(errs, fmt.Errorf("max_buffer = %d: want the servers' jute.maxbuffer, 1024 bytes to 512 MiB, or 0 for 1048575", c.MaxBuffer))
	}
	return errors.Join(errs...)
}

func (c Config) id() string {
	if c.ID != "" {
		return c.ID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
