package replicator

import (
	"fmt"
	"path"
	"strings"
)

// Layout is the replication bus's znode layout (see the package doc) under a root.
type Layout struct{ root string }

// NewLayout returns the layout under root ("/" when empty).
func NewLayout(root string) (Layout, error) {
	if root == "" {
		root = "/"
	}
	if !strings.HasPrefix(root, "/") || path.Clean(root) != root {
		return Layout{}, fmt.Errorf("replicator: root %q: want an absolute path such as / or /paddock", root)
	}
	return Layout{root: root}, nil
}

func (l Layout) join(elem ...string) string {
	r := l.root
	if r == "" {
		r = "/"
	}
	return path.Join(append([]string{r, "mysql_replicator"}, elem...)...)
}

// Root is the bus's top node, /mysql_replicator under the layout's root.
func (l Layout) Root() string { return l.join() }

func (l Layout) Tasks() string                     { return l.join("tasks") }
func (l Layout) Task(name string) string           { return l.join("tasks", name) }
func (l Layout) Instances(name string) string      { return l.join("tasks", name, "instances") }
func (l Layout) Instance(name, node string) string { return l.join("tasks", name, "instances", node) }
func (l Layout) LastCommit(name string) string     { return l.join("tasks", name, "lastCommit") }
func (l Layout) Status(name string) string         { return l.join("tasks", name, "status") }

// MonitorLeader is the election node of the monitor that logs verdicts.
func (l Layout) MonitorLeader() string { return l.join("monitor-leader") }

// Clock is the node whose mtime, set by readers, is the coordination server's now
// (Admin.ServerNow).
func (l Layout) Clock() string { return l.join("clock") }
