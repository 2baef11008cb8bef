// Package watch is the watch registry: which watcher (a client connection) wants to hear
// about which path, and the fan-out of an applied change to them. It implements
// ZooKeeper's two tables — data watches and child watches — with one-shot, persistent
// and persistent-recursive modes, and its trigger rules (WatchManager.triggerWatch).
package watch

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/paddock/paddock/server/wire"
)

// Mode is a set of registration modes a watcher holds on one path in one table.
// A watcher may hold several at once; it is still told about a change only once.
type Mode uint8

// Registration modes.
const (
	Standard Mode = 1 << iota // one-shot: removed when it fires
	Persistent
	Recursive // data table only: fires for the path and every descendant
)

// Table selects the data-watch or child-watch table.
type Table uint8

// Tables.
const (
	Data Table = iota
	Child
)

// Registry holds every watch of every watcher. W identifies a watcher (the server uses
// its connection). It is safe for concurrent use. To never miss a change, a watch must be
// added while the state it was read from cannot change (the server holds the tree read
// lock), and triggers must run while applying that change (under the tree write lock).
type Registry[W comparable] struct {
	mu        sync.Mutex
	tables    [2]map[string]map[W]Mode // guarded by mu
	byWatcher map[W]*[2]map[string]struct{}
	recursive int // number of recursive registrations, to skip the ancestor walk when 0
	seen      map[W]struct{}
}

// New returns an empty registry.
func New[W comparable]() *Registry[W] {
	return &Registry[W]{
		tables:    [2]map[string]map[W]Mode{make(map[string]map[W]Mode), make(map[string]map[W]Mode)},
		byWatcher: make(map[W]*[2]map[string]struct{}),
		seen:      make(map[W]struct{}),
	}
}

// Add registers w on path in table t with mode m.
func (r *Registry[W]) Add(t Table, path string, w W, m Mode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(t, path, w, m)
}

func (r *Registry[W]) addLocked(t Table, path string, w W, m Mode) {
	ws := r.tables[t][path]
	if ws == nil {
		ws = make(map[W]Mode)
		r.tables[t][path] = ws
	}
	prev := ws[w]
	if m&Recursive != 0 && prev&Recursive == 0 {
		r.recursive++
	}
	ws[w] = prev | m
	idx := r.byWatcher[w]
	if idx == nil {
		idx = &[2]map[string]struct{}{make(map[string]struct{}), make(map[string]struct{})}
		r.byWatcher[w] = idx
	}
	idx[t][path] = struct{}{}
}

// AddWatch registers an addWatch request: persistent in both tables, or recursive in
// the data table only (DataTree.addWatch).
func (r *Registry[W]) AddWatch(path string, w W, recursive bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if recursive {
		r.addLocked(Data, path, w, Recursive)
		return
	}
	r.addLocked(Data, path, w, Persistent)
	r.addLocked(Child, path, w, Persistent)
}

// dropLocked removes modes m of w on path in table t.
func (r *Registry[W]) dropLocked(t Table, path string, w W, m Mode) {
	ws := r.tables[t][path]
	prev, ok := ws[w]
	if !ok {
		return
	}
	if prev&m&Recursive != 0 {
		r.recursive--
	}
	if next := prev &^ m; next != 0 {
		ws[w] = next
		return
	}
	delete(ws, w)
	if len(ws) == 0 {
		delete(r.tables[t], path)
	}
	if idx := r.byWatcher[w]; idx != nil {
		delete(idx[t], path)
		if len(idx[Data]) == 0 && len(idx[Child]) == 0 {
			delete(r.byWatcher, w)
		}
	}
}

// Trigger fires the watches a change fires and calls deliver once per watcher to notify,
// in no particular order. typ and path are the event: NodeCreated and NodeDataChanged look
// in the data table, NodeChildrenChanged in the child table, and NodeDeleted in both (a
// watcher in both hears once). One-shot registrations that fire are removed. On every
// ancestor of path, recursive watchers fire too, except for NodeChildrenChanged.
// deliver must not call back into the registry.
func (r *Registry[W]) Trigger(typ wire.EventType, path string, deliver func(w W)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch typ {
	case wire.EventNodeChildrenChanged:
		r.fireLocked(Child, typ, path)
	case wire.EventNodeDeleted:
		r.fireLocked(Data, typ, path)
		r.fireLocked(Child, typ, path)
	default:
		r.fireLocked(Data, typ, path)
	}
	for w := range r.seen {
		deliver(w)
	}
	if len(r.seen) > 256 {
		// A map keeps the buckets it grew to, and clearing costs them all: after a fan-out
		// to many watchers, start afresh rather than pay for it on every later trigger.
		r.seen = make(map[W]struct{})
	} else {
		clear(r.seen)
	}
}

func (r *Registry[W]) fireLocked(t Table, typ wire.EventType, path string) {
	for w, m := range r.tables[t][path] {
		r.seen[w] = struct{}{}
		if m&Standard != 0 {
			r.dropLocked(t, path, w, Standard)
		}
	}
	if t != Data || r.recursive == 0 || typ == wire.EventNodeChildrenChanged {
		return
	}
	for p := path; p != "/"; {
		p = parentOf(p)
		for w, m := range r.tables[Data][p] {
			if m&Recursive != 0 {
				r.seen[w] = struct{}{}
			}
		}
	}
}

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// allModes selects every registration of a watcher on a path in a table.
const allModes = Standard | Persistent | Recursive

// selector picks registrations for checkWatches/removeWatches by WatcherType, as
// ZooKeeper 3.8 does: Children is the child table and Data the data table, whatever the
// mode (so removing Data strips a persistent watch of its data half), Any is both.
// Persistent and PersistentRecursive arrived in 3.9; 3.8 refuses them.
func selector(typ wire.WatcherType) (tables []Table, m Mode, ok bool) {
	switch typ {
	case wire.WatcherChildren:
		return []Table{Child}, allModes, true
	case wire.WatcherData:
		return []Table{Data}, allModes, true
	case wire.WatcherAny:
		return []Table{Data, Child}, allModes, true
	}
	return nil, 0, false
}

// ValidType reports whether typ is a watcher type checkWatches/removeWatches accept.
func ValidType(typ wire.WatcherType) bool {
	_, _, ok := selector(typ)
	return ok
}

// Has reports whether w holds a watch of the given type on path (checkWatches). As in
// ZooKeeper 3.8, which keeps a recursive watch in both tables, a recursive watch counts
// for every type, on its own path and on every path below it.
func (r *Registry[W]) Has(path string, w W, typ wire.WatcherType) bool {
	tables, m, ok := selector(typ)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tables {
		if r.tables[t][path][w]&m != 0 {
			return true
		}
	}
	if r.tables[Data][path][w]&Recursive != 0 {
		return true
	}
	for p := path; r.recursive > 0 && p != "/" && p != ""; {
		p = parentOf(p)
		if r.tables[Data][p][w]&Recursive != 0 {
			return true
		}
	}
	return false
}

// Remove drops w's watches of the given type on path and reports whether there were any
// (removeWatches). Removing the Children type of a recursive watch finds it but leaves it
// in place: ZooKeeper 3.8 drops only its child-table half, which never fires anyway.
func (r *Registry[W]) Remove(path string, w W, typ wire.WatcherType) bool {
	tables, m, ok := selector(typ)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	found := false
	for _, t := range tables {
		if r.tables[t][path][w]&m != 0 {
			found = true
			r.dropLocked(t, path, w, m)
		}
	}
	if typ == wire.WatcherChildren && r.tables[Data][path][w]&Recursive != 0 {
		found = true
	}
	return found
}

// RemoveWatcher drops every watch of w; the server calls it when a connection closes.
func (r *Registry[W]) RemoveWatcher(w W) {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := r.byWatcher[w]
	if idx == nil {
		return
	}
	for t := range idx {
		for path := range idx[t] {
			r.dropLocked(Table(t), path, w, allModes)
		}
	}
	delete(r.byWatcher, w)
}

// Count returns the number of (watcher, path) registrations in both tables.
func (r *Registry[W]) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, t := range r.tables {
		for _, ws := range t {
			n += len(ws)
		}
	}
	return n
}

// Summary returns the number of watchers, of watched paths and of data-table
// registrations, for wchs (ZooKeeper's WatchesSummary counts the data table).
func (r *Registry[W]) Summary() (watchers, paths, total int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ws := range r.tables[Data] {
		total += len(ws)
	}
	ws := make(map[W]struct{})
	for w, idx := range r.byWatcher {
		if len(idx[Data]) > 0 {
			ws[w] = struct{}{}
		}
	}
	return len(ws), len(r.tables[Data]), total
}

// PathsOf returns the data-table paths w watches, sorted (wchc).
func (r *Registry[W]) PathsOf(w W) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := r.byWatcher[w]
	if idx == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(idx[Data]))
}

// WatchersOf returns, for each path in the data table, its watchers: what ZooKeeper 3.8's
// wchc and wchp list (child-only watches do not appear there).
func (r *Registry[W]) WatchersOf() map[string][]W {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]W, len(r.tables[Data]))
	for path, ws := range r.tables[Data] {
		out[path] = slices.Collect(maps.Keys(ws))
	}
	return out
}
