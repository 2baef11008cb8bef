package task

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// Items in error. No single item a client can shape — a job, its fires and shard plan,
// a task and what hangs under it, an assignment — can make the master give up
// mastership or a worker spin: a failure tied to one item is recorded against that
// item and the rest goes on (docs/tasks.md "Items in error").
//
// The master records a job or task it cannot handle as a Fault, in a node of its own
// (/faults/jobs/<job>, /faults/tasks/<task>): its own because the item's nodes may be
// the very thing it cannot write. It tries the item again with exponential backoff and
// jitter (internal/backoff), at once when the job is changed or an operator clears the
// fault (ClearJobFault, ClearTaskFault: the console's Clear button), and deletes the
// record once the item goes through, ends or is deleted.
//
// A worker that cannot run or record a task it was given — it cannot read the spec, or
// the multi that records the outcome is refused — hands it back as a Refusal
// (/assign/<worker>/refused-<task>), in the multi that deletes its assignment, and never
// claims it again; the master ends such a task failed, naming the worker and why, and
// deletes the refusal with it.

// Kinds of item a Fault is about.
const (
	FaultJob  = "job"
	FaultTask = "task"
)

// Fault is an item the active master could not handle, as it records it.
type Fault struct {
	Kind string `json:"kind"` // FaultJob or FaultTask
	Name string `json:"name"` // the job's name or the task's id
	// Step is what the master was doing ("read", "fire", "end", "take back", ...) and
	// Error why it failed.
	Step  string `json:"step"`
	Error string `json:"error"`
	// Version is the job's data version the failure is of (a change of the job tries it
	// again at once); 0 for a task.
	Version int32 `json:"version,omitempty"`
	// Since is the first failure of the run of failures, Last the latest, Tries their
	// count; Next is when the master tries again.
	Since time.Time `json:"since"`
	Last  time.Time `json:"last"`
	Tries int       `json:"tries"`
	Next  time.Time `json:"next"`
	// Master is the id of the master that recorded it.
	Master string `json:"master,omitempty"`
}

// Refusal is a task a worker handed back because it could not run it or record its
// outcome: in /assign/<worker>/refused-<task>, made in the multi that deletes the
// assignment.
type Refusal struct {
	Task    string `json:"task"`
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	// Ran says the task's process ran (its outcome could not be recorded); false: it did
	// not start (the spec could not be read).
	Ran   bool      `json:"ran"`
	Error string    `json:"error"`
	At    time.Time `json:"at"`
}

const refusedPrefix = "refused-"

// RefusedTask returns the task a refusal node's name (refused-task-0000000042) is of;
// ok is false for any other name.
func RefusedTask(name string) (id string, ok bool) {
	id, ok = strings.CutPrefix(name, refusedPrefix)
	return id, ok && CheckID(id) == nil
}

// ErrNoFault says the item has no fault on record.
var ErrNoFault = errors.New("no error on record")

// JobFault returns the fault on record of job name, or an error wrapping ErrNoFault.
func (c *Client) JobFault(ctx context.Context, name string) (*Fault, error) {
	return c.fault(ctx, c.l.JobFault(name))
}

// TaskFault returns the fault on record of task id, or an error wrapping ErrNoFault.
func (c *Client) TaskFault(ctx context.Context, id string) (*Fault, error) {
	return c.fault(ctx, c.l.TaskFault(id))
}

func (c *Client) fault(ctx context.Context, p string) (*Fault, error) {
	var f Fault
	err := c.readJSON(ctx, p, &f)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%s: %w", p, ErrNoFault)
	}
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// faultOf returns the fault at p for a view: nil if there is none, or it cannot be
// read (a view is not refused for it).
func (c *Client) faultOf(ctx context.Context, p string) *Fault {
	f, err := c.fault(ctx, p)
	if err != nil {
		return nil
	}
	return f
}

// ClearJobFault deletes the fault on record of job name: the active master tries the
// job again at once (and records it again if it fails again). Clearing a job with no
// fault is not an error.
func (c *Client) ClearJobFault(ctx context.Context, name string) error {
	if err := CheckJobName(name); err != nil {
		return err
	}
	return c.clearFault(ctx, c.l.JobFault(name))
}

// ClearTaskFault is ClearJobFault for task id.
func (c *Client) ClearTaskFault(ctx context.Context, id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	return c.clearFault(ctx, c.l.TaskFault(id))
}

func (c *Client) clearFault(ctx context.Context, p string) error {
	conn := c.s.Conn()
	err := c.retry(ctx, func() error { return conn.Delete(p, -1) })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("clear %s: %w", p, err)
	}
	return nil
}
