package task

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Layout is the cluster's znode layout (see the package doc) under a root.
type Layout struct {
	root string // "/" or "/a/b"
}

// DefaultLayout is the layout under "/".
var DefaultLayout = Layout{root: "/"}

// NewLayout returns the layout under root, an absolute path ("/" by default when empty).
func NewLayout(root string) (Layout, error) {
	if root == "" {
		root = "/"
	}
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root || strings.ContainsRune(root, 0) {
		return Layout{}, fmt.Errorf("root %q: want an absolute path such as / or /paddock, no trailing slash", root)
	}
	return Layout{root: root}, nil
}

func (l Layout) join(elem ...string) string {
	r := l.root
	if r == "" {
		r = "/"
	}
	return path.Join(append([]string{r}, elem...)...)
}

func (l Layout) Root() string                        { return l.join() }
func (l Layout) Master() string                      { return l.join("master") }
func (l Layout) Workers() string                     { return l.join("workers") }
func (l Layout) Worker(id string) string             { return l.join("workers", id) }
func (l Layout) Tasks() string                       { return l.join("tasks") }
func (l Layout) Task(id string) string               { return l.join("tasks", id) }
func (l Layout) Status(id string) string             { return l.join("tasks", id, statusName) }
func (l Layout) Cancel(id string) string             { return l.join("tasks", id, cancelName) }
func (l Layout) Attempt(id string, n int) string     { return l.join("tasks", id, attemptName(n)) }
func (l Layout) Lost(id string, n int) string        { return l.join("tasks", id, lostName(n)) }
func (l Layout) Drains() string                      { return l.join("drain") }
func (l Layout) Drain(worker string) string          { return l.join("drain", worker) }
func (l Layout) Clock() string                       { return l.join("clock") }
func (l Layout) Assign() string                      { return l.join("assign") }
func (l Layout) AssignDir(worker string) string      { return l.join("assign", worker) }
func (l Layout) Assignment(worker, id string) string { return l.join("assign", worker, id) }
func (l Layout) Jobs() string                        { return l.join("jobs") }
func (l Layout) Job(name string) string              { return l.join("jobs", name) }
func (l Layout) Fires(job string) string             { return l.join("jobs", job, firesName) }
func (l Layout) Fire(job, fire string) string        { return l.join("jobs", job, firesName, fire) }
func (l Layout) Shards(job string) string            { return l.join("jobs", job, ShardsNode) }
func (l Layout) Faults() string                      { return l.join("faults") }
func (l Layout) JobFaults() string                   { return l.join("faults", "jobs") }
func (l Layout) JobFault(name string) string         { return l.join("faults", "jobs", name) }
func (l Layout) TaskFaults() string                  { return l.join("faults", "tasks") }
func (l Layout) TaskFault(id string) string          { return l.join("faults", "tasks", id) }
func (l Layout) Refusal(worker, id string) string    { return l.join("assign", worker, refusedPrefix+id) }

// Dirs are the cluster's persistent top nodes, each made by whichever party needs it
// first: whoever makes them all at start (paddock up) leaves none for another to make.
func (l Layout) Dirs() []string {
	return []string{l.Tasks(), l.Workers(), l.Assign(), l.Jobs(), l.Drains(), l.Clock(), l.Faults()}
}

const (
	taskPrefix    = "task-"
	statusName    = "status"
	cancelName    = "cancel"
	attemptPrefix = "attempt-"
	lostPrefix    = "lost-"
	firesName     = "fires"
)

func attemptName(n int) string { return fmt.Sprintf("%s%010d", attemptPrefix, n) }
func lostName(n int) string    { return fmt.Sprintf("%s%010d", lostPrefix, n) }

var (
	taskIDPattern   = regexp.MustCompile(`^task-[0-9]{10}$`)
	workerIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

// CheckID reports whether id names a task: task-0000000042.
func CheckID(id string) error {
	if !taskIDPattern.MatchString(id) {
		return fmt.Errorf("id %q: want task- and 10 digits, such as task-0000000042", id)
	}
	return nil
}

// CheckWorkerID reports whether id can name a worker: 1 to 128 letters, digits, '.',
// '_' or '-', starting with a letter or digit.
func CheckWorkerID(id string) error {
	if !workerIDPattern.MatchString(id) {
		return fmt.Errorf("worker id %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", id)
	}
	return nil
}

// seqOf returns the sequence number of a task id (-1 if it is not one).
func seqOf(id string) int64 {
	if !taskIDPattern.MatchString(id) {
		return -1
	}
	n, _ := strconv.ParseInt(id[len(taskPrefix):], 10, 64)
	return n
}

// Children sorts a task node's children: its end, a cancel request, and the runs that
// did not end it.
type Children struct {
	Status   bool
	Cancel   bool
	Sig      bool  // the spec's signature is there
	Failures []int // numbers of the failed runs (attempt-<n>)
	Lost     []int // numbers of the runs whose worker was lost (lost-<n>)
}

// Runs is how many runs are on record (failed and lost).
func (c Children) Runs() int { return len(c.Failures) + len(c.Lost) }

// ParseChildren sorts the names of a task node's children; it ignores names it does
// not know.
func ParseChildren(names []string) Children {
	var c Children
	for _, name := range names {
		switch {
		case name == statusName:
			c.Status = true
		case name == cancelName:
			c.Cancel = true
		case name == sigName:
			c.Sig = true
		case strings.HasPrefix(name, attemptPrefix):
			if n, err := strconv.Atoi(name[len(attemptPrefix):]); err == nil {
				c.Failures = append(c.Failures, n)
			}
		case strings.HasPrefix(name, lostPrefix):
			if n, err := strconv.Atoi(name[len(lostPrefix):]); err == nil {
				c.Lost = append(c.Lost, n)
			}
		}
	}
	return c
}
