package replicator

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// Config configures a replicator process: the keys of the replicator section.
type Config struct {
	// Servers are the coordination servers (key zk, flag --zk).
	Servers        []string
	SessionTimeout time.Duration
	// Access is how the service authenticates and the ACLs of the nodes it creates
	// (keys auth, auth_file, tls_ca, tls_cert, tls_key, roles).
	coordinator.Access
	// Root is the path /mysql_replicator lives under.
	Root string
	// Tasks are the tasks this process serves. In hot mode it stands for each of them
	// (the lowest instance runs, the others wait); in cold mode it claims, of these, the
	// tasks no instance serves — all tasks when empty.
	Tasks []string
	// Mode is hot or cold.
	Mode string
	// Host names this process's instance nodes (<host>_<seq>); empty means the host name.
	Host string
	// MetricsAddr is where /metrics is served; empty for none.
	MetricsAddr string
	// ScanInterval is how often a cold standby looks for unserved tasks (besides
	// watching the task list).
	ScanInterval time.Duration
	// LagThreshold: a running task further behind than this is reported as lagging.
	LagThreshold time.Duration
	// MonitorInterval is how often the elected monitor checks every task.
	MonitorInterval time.Duration
}

// DefaultConfig returns the defaults: hot mode, a 10 s session.
func DefaultConfig() Config {
	return Config{
		Servers:         []string{"127.0.0.1:2181"},
		SessionTimeout:  10 * time.Second,
		Root:            "/",
		Mode:            "hot",
		ScanInterval:    5 * time.Second,
		LagThreshold:    30 * time.Second,
		MonitorInterval: 5 * time.Second,
	}
}

// Validate reports every problem of c as "key = value: what is allowed".
func (c Config) Validate() error {
	errs := task.CheckConnection(c.Servers, c.SessionTimeout, c.Root)
	errs = append(errs, c.Access.Check()...)
	if err := task.CheckListenAddr("metrics_addr", c.MetricsAddr); err != nil {
		errs = append(errs, err)
	}
	switch c.Mode {
	case "hot":
		if len(c.Tasks) == 0 {
			errs = append(errs, errors.New(`tasks = "": hot mode serves named tasks: give at least one`))
		}
	case "cold":
	default:
		errs = append(errs, fmt.Errorf("mode = %s: want hot or cold", c.Mode))
	}
	for _, t := range c.Tasks {
		if err := CheckTaskName(t); err != nil {
			errs = append(errs, fmt.Errorf("tasks = %s: %w", t, err))
		}
	}
	if c.ScanInterval <= 0 {
		errs = append(errs, fmt.Errorf("scan_interval = %v: want a positive duration", c.ScanInterval))
	}
	if c.MonitorInterval <= 0 {
		errs = append(errs, fmt.Errorf("monitor_interval = %v: want a positive duration", c.MonitorInterval))
	}
	if c.LagThreshold <= 0 {
		errs = append(errs, fmt.Errorf("lag_threshold = %v: want a positive duration", c.LagThreshold))
	}
	return errors.Join(errs...)
}

func (c Config) host() string {
	if c.Host != "" {
		return c.Host
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "host"
	}
	return h
}
