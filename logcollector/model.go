package logcollector

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
)

// Layout is the log collection's znode layout (see the package doc) under a root.
type Layout struct{ root string }

// NewLayout returns the layout under root ("/" when empty).
func NewLayout(root string) (Layout, error) {
	if root == "" {
		root = "/"
	}
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root {
		return Layout{}, fmt.Errorf("logcollector: root %q: want an absolute path such as / or /paddock", root)
	}
	return Layout{root: root}, nil
}

func (l Layout) join(elem ...string) string {
	r := l.root
	if r == "" {
		r = "/"
	}
	return path.Join(append([]string{r, "logs"}, elem...)...)
}

// Root is the log collection's top node, /logs under the layout's root.
func (l Layout) Root() string { return l.join() }

func (l Layout) Sources() string              { return l.join("sources") }
func (l Layout) Source(id string) string      { return l.join("sources", id) }
func (l Layout) Collectors() string           { return l.join("collector") }
func (l Layout) Collector(host string) string { return l.join("collector", host) }
func (l Layout) Status(host string) string    { return l.join("collector", host, "status") }
func (l Layout) Rebalancer() string           { return l.join("rebalancer") }

// Session is the ephemeral node of the session running collector id: it holds the
// id, so that a second process started with it is refused.
func (l Layout) Session(id string) string { return l.join("collector", id, "session") }

// Drained is the node whose presence drains collector id: it gets no sources.
func (l Layout) Drained(id string) string { return l.join("collector", id, "drained") }

// Clock is the node the rebalancer sets at every step: its mtime is the servers'
// clock, against which the status nodes' mtimes tell a live collector.
func (l Layout) Clock() string { return l.join("clock") }

// Source is a log source, in /logs/sources/<id>: the files matching Path (a glob) on
// Host.
type Source struct {
	Host  string    `json:"host"`
	Path  string    `json:"path"`
	Added time.Time `json:"added"`
}

// Assignment is a collector's node's data: the sources it is to collect, under the
// rebalancer's epoch.
type Assignment struct {
	Epoch   int64    `json:"epoch"`
	Sources []string `json:"sources"`
}

// Status is what a collector writes to /logs/collector/<host>/status every interval.
type Status struct {
	// State is running, draining (drained, still holding sources), drained (holding
	// none), or stopped (a clean stop, final offsets).
	State   string    `json:"state"`
	Updated time.Time `json:"updated"`
	// Host is the machine the collector runs on (its host key): the rebalancer gives it
	// only sources of that host.
	Host string `json:"host,omitempty"`
	// Epoch is the epoch of the assignment the collector has taken in: it reads the
	// sources of that assignment and no other. The rebalancer waits for it before giving
	// a source a collector let go of to another.
	Epoch   int64                   `json:"epoch"`
	Sources map[string]SourceStatus `json:"sources"`
}

// SourceStatus is a collector's progress on one source: for each file, the offset up
// to which its lines were accepted by the sink.
type SourceStatus struct {
	// Epoch is the assignment epoch under which the collector read the source: a new
	// owner resumes from the entry of the highest epoch among the collectors' statuses.
	Epoch int64                 `json:"epoch"`
	Files map[string]FileOffset `json:"files"`
	// LagBytes is how many bytes of the source's files are not shipped yet.
	LagBytes int64 `json:"lag_bytes"`
	// Problem says why nothing is read, such as a glob that matches no file; empty
	// when files are read.
	Problem string `json:"problem,omitempty"`
}

// FileOffset is where reading a file stands. Inode tells a file renamed by rotation
// from a new one at the same path.
type FileOffset struct {
	Inode  uint64 `json:"inode"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
}

// Line is one shipped line, as the sink receives it (one JSON object per line in the
// JSON-lines sinks).
type Line struct {
	Source string `json:"source"`
	File   string `json:"file"`
	// Inode tells apart the files a path named over time (rotation): (source, inode,
	// offset) identifies a line, for a consumer dropping duplicates.
	Inode  uint64    `json:"inode,omitempty"`
	Offset int64     `json:"offset"` // of the line's first byte in the file
	Host   string    `json:"host"`   // the source's host
	Time   time.Time `json:"time"`   // when the collector read it
	Text   string    `json:"line"`
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckID reports whether id can name a source or a collector.
func CheckID(kind, id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%s id %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", kind, id)
	}
	return nil
}
