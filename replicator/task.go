package replicator

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/paddock/paddock/replicator/apply"
)

// TaskDef is a replication task's definition, in /mysql_replicator/tasks/<task>.
type TaskDef struct {
	// Source and Target are DSNs as go-sql-driver/mysql writes them
	// (user:password@tcp(host:port)/). Their passwords are stored, and never shown
	// back: Redacted replaces them.
	Source string `json:"source"`
	Target string `json:"target"`
	// Include and Exclude are "db.table" globs (* and ?); an empty Include means every
	// table not excluded.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// ServerID is the replica server id the task uses on the source: unique among the
	// source's replicas.
	ServerID uint32 `json:"server_id"`
	// Enabled: only enabled tasks run.
	Enabled bool      `json:"enabled"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

var taskNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckTaskName reports whether name can name a task.
func CheckTaskName(name string) error {
	if !taskNamePattern.MatchString(name) {
		return fmt.Errorf("task name %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// DefaultServerID derives a replica server id from a task's name, so that two tasks
// on one source do not share one by default: in [1<<20, 1<<31), away from the small
// ids people give their servers.
func DefaultServerID(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1<<20 + h.Sum32()%(1<<31-1<<20)
}

// Validate reports every problem of the definition, naming its field; it never
// shows a password.
func (d TaskDef) Validate(name string) error {
	errs := []error{CheckTaskName(name)}
	cfg := apply.Config{Task: name, Source: d.Source, Target: d.Target, Include: d.Include, Exclude: d.Exclude,
		ServerID: d.ServerID, Epoch: 1}
	errs = append(errs, cfg.Validate())
	return errors.Join(errs...)
}

// Redacted returns the definition with the DSNs' passwords masked.
func (d TaskDef) Redacted() TaskDef {
	d.Source, d.Target = RedactDSN(d.Source), RedactDSN(d.Target)
	return d
}

// RedactDSN masks a DSN's password ("****"); a DSN that does not parse is masked whole.
func RedactDSN(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	if cfg.Passwd != "" {
		cfg.Passwd = "****"
	}
	return cfg.FormatDSN()
}

// LastCommit is the position mirrored to /mysql_replicator/tasks/<task>/lastCommit.
type LastCommit struct {
	apply.Position
	Instance string `json:"instance"`
}

// Status is what the running instance writes to /mysql_replicator/tasks/<task>/status
// every second.
type Status struct {
	State        string         `json:"state"` // running, snapshotting, lagging, retrying, failed (a permanent error), disabled
	Instance     string         `json:"instance"`
	Position     apply.Position `json:"position"`
	LagSeconds   float64        `json:"lag_seconds"`
	EventsBehind int64          `json:"events_behind"`
	RowsPerSec   float64        `json:"rows_per_sec"`
	Transactions int64          `json:"transactions"`
	Rows         int64          `json:"rows"`
	LastError    string         `json:"last_error,omitempty"`
	ErrorSince   time.Time      `json:"error_since,omitzero"`
	Updated      time.Time      `json:"updated"`
}

// InstanceInfo is an instance node's data.
type InstanceInfo struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	State string    `json:"state"` // running or standby
	Since time.Time `json:"since"`
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the types above always marshal
	}
	return b
}
