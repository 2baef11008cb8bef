package datatree

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/paddock/paddock/server/wire"
)

// Paths that always exist and cannot be deleted.
const (
	RootPath   = "/"
	ProcPath   = "/zookeeper"
	QuotaPath  = "/zookeeper/quota"
	ConfigPath = "/zookeeper/config"
)

// Session is a client session as the replicated state knows it.
type Session struct {
	ID       int64
	Timeout  int32 // negotiated timeout, ms
	Password []byte
}

// Tree is the znode tree plus the session and ephemeral tables that live with it.
//
// A Tree is not safe for concurrent use: one writer (the apply loop) mutates it, and
// readers must be excluded while it does (the server's tree lock). It reads no clock and
// starts no goroutines: every time and zxid comes from the caller.
type Tree struct {
	nodes      map[string]*Node
	ephemerals map[int64]map[string]struct{} // session id -> its ephemeral paths
	containers map[string]struct{}
	ttls       map[string]struct{}
	sessions   map[int64]*Session
	dataSize   int64 // sum of path and data lengths, ZooKeeper's approximate data size
	lastZxid   int64

	// undo holds the inverse of each mutation since Begin, for an atomic multi.
	undo      []func()
	recording bool
}

// New returns a tree holding only /, /zookeeper, /zookeeper/quota and /zookeeper/config,
// with zeroed stats as on a fresh ZooKeeper server.
func New() *Tree {
	t := &Tree{
		nodes:      make(map[string]*Node),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		sessions:   make(map[int64]*Session),
	}
	t.insert(RootPath, &Node{Data: []byte{}, ACL: wire.OpenACLUnsafe})
	for _, p := range []string{ProcPath, QuotaPath, ConfigPath} {
		n := &Node{Data: []byte{}, ACL: wire.OpenACLUnsafe}
		if p == ConfigPath {
			// ZooKeeper creates /zookeeper/config with aversion -1 and a READ-only ACL.
			n.ACL, n.Aversion = wire.ReadACLUnsafe, -1
		}
		t.insert(p, n)
		parent, name := splitPath(p)
		t.nodes[parent].addChild(name)
	}
	return t
}

func (n *Node) addChild(name string) {
	if n.children == nil {
		n.children = make(map[string]struct{})
	}
	n.children[name] = struct{}{}
}

// insert adds n at path to the indexes; the caller links it to its parent.
func (t *Tree) insert(path string, n *Node) {
	t.nodes[path] = n
	t.dataSize += int64(len(path) + len(n.Data))
	switch n.Kind() {
	case Ephemeral:
		m := t.ephemerals[n.Owner]
		if m == nil {
			m = make(map[string]struct{})
			t.ephemerals[n.Owner] = m
		}
		m[path] = struct{}{}
	case Container:
		t.containers[path] = struct{}{}
	case TTL:
		t.ttls[path] = struct{}{}
	}
}

// remove drops the node at path from the indexes; the caller unlinks it from its parent.
func (t *Tree) remove(path string, n *Node) {
	delete(t.nodes, path)
	t.dataSize -= int64(len(path) + len(n.Data))
	switch n.Kind() {
	case Ephemeral:
		if m := t.ephemerals[n.Owner]; m != nil {
			delete(m, path)
			if len(m) == 0 {
				delete(t.ephemerals, n.Owner)
			}
		}
	case Container:
		delete(t.containers, path)
	case TTL:
		delete(t.ttls, path)
	}
}

// Get returns the node at path, or nil. The empty path names the root, as in
// ZooKeeper's DataTree (which keys the root by "").
func (t *Tree) Get(path string) *Node {
	if path == "" {
		path = RootPath
	}
	return t.nodes[path]
}

// LastZxid returns the zxid of the last txn applied.
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// SetLastZxid records that the txn with zxid has been applied. Zxids only grow.
func (t *Tree) SetLastZxid(zxid int64) {
	if zxid > t.lastZxid {
		t.lastZxid = zxid
	}
}

// NodeCount returns the node count as ZooKeeper reports it, which counts the root twice.
func (t *Tree) NodeCount() int { return len(t.nodes) + 1 }

// DataSize returns the approximate data size: the sum of path and data lengths.
func (t *Tree) DataSize() int64 { return t.dataSize }

// record saves an inverse mutation while a multi is being applied.
func (t *Tree) record(f func()) {
	if t.recording {
		t.undo = append(t.undo, f)
	}
}

// Begin starts recording mutations so that Rollback can undo them. Not reentrant.
func (t *Tree) Begin() {
	t.recording = true
	t.undo = t.undo[:0]
}

// Commit keeps the mutations since Begin.
func (t *Tree) Commit() {
	t.recording = false
	clear(t.undo)
	t.undo = t.undo[:0]
}

// Rollback undoes every mutation since Begin, newest first.
func (t *Tree) Rollback() {
	t.recording = false
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	clear(t.undo)
	t.undo = t.undo[:0]
}

// Create adds a node. The caller has checked that the parent exists and path does not.
// The parent's child counter and pzxid advance, as in DataTree.createNode.
func (t *Tree) Create(path string, data []byte, acl []wire.ACL, owner, zxid, time int64) *Node {
	parentPath, name := splitPath(path)
	parent := t.nodes[parentPath]
	n := &Node{Data: data, ACL: acl, Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: time, Mtime: time, Owner: owner}
	oldCreates, oldPzxid := parent.childCreates, parent.Pzxid
	parent.childCreates++
	parent.Pzxid = zxid
	parent.addChild(name)
	t.insert(path, n)
	t.record(func() {
		t.remove(path, n)
		delete(parent.children, name)
		parent.childCreates, parent.Pzxid = oldCreates, oldPzxid
	})
	return n
}

// Delete removes a node that exists and has no children. The parent's pzxid advances
// (never backwards); its child counter does not change, so the visible cversion still grows.
func (t *Tree) Delete(path string, zxid int64) {
	n := t.nodes[path]
	parentPath, name := splitPath(path)
	parent := t.nodes[parentPath]
	oldPzxid := parent.Pzxid
	t.remove(path, n)
	delete(parent.children, name)
	if zxid > parent.Pzxid {
		parent.Pzxid = zxid
	}
	t.record(func() {
		t.insert(path, n)
		parent.addChild(name)
		parent.Pzxid = oldPzxid
	})
}

// SetData replaces a node's data and advances its version.
func (t *Tree) SetData(n *Node, path string, data []byte, zxid, time int64) {
	old := *n
	t.dataSize += int64(len(data) - len(n.Data))
	n.Data, n.Mzxid, n.Mtime = data, zxid, time
	n.Version++
	t.record(func() {
		t.dataSize -= int64(len(data) - len(old.Data))
		n.Data, n.Mzxid, n.Mtime, n.Version = old.Data, old.Mzxid, old.Mtime, old.Version
	})
}

// SetACL replaces a node's ACL and advances its aversion.
func (t *Tree) SetACL(n *Node, acl []wire.ACL) {
	oldACL, oldAversion := n.ACL, n.Aversion
	n.ACL = acl
	n.Aversion++
	t.record(func() { n.ACL, n.Aversion = oldACL, oldAversion })
}

// AddSession records a session. Sessions are created by txns so every replica has them.
func (t *Tree) AddSession(s *Session) {
	t.sessions[s.ID] = s
	t.record(func() { delete(t.sessions, s.ID) })
}

// RemoveSession forgets a session; its ephemerals must be deleted by the caller first.
func (t *Tree) RemoveSession(id int64) {
	s, ok := t.sessions[id]
	if !ok {
		return
	}
	delete(t.sessions, id)
	t.record(func() { t.sessions[id] = s })
}

// Session returns a live session, or nil.
func (t *Tree) Session(id int64) *Session { return t.sessions[id] }

// Sessions returns every live session, ordered by id.
func (t *Tree) Sessions() []*Session {
	out := slices.Collect(maps.Values(t.sessions))
	slices.SortFunc(out, func(a, b *Session) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Ephemerals returns the ephemeral paths of a session in lexicographic order.
func (t *Tree) Ephemerals(session int64) []string {
	return slices.Sorted(maps.Keys(t.ephemerals[session]))
}

// EphemeralCount returns the number of ephemeral nodes.
func (t *Tree) EphemeralCount() int {
	n := 0
	for _, m := range t.ephemerals {
		n += len(m)
	}
	return n
}

// EphemeralSessions returns the ids of sessions that own ephemerals, in order.
func (t *Tree) EphemeralSessions() []int64 { return slices.Sorted(maps.Keys(t.ephemerals)) }

// Containers returns the paths of container nodes in lexicographic order.
func (t *Tree) Containers() []string { return slices.Sorted(maps.Keys(t.containers)) }

// TTLNodes returns the paths of TTL nodes in lexicographic order.
func (t *Tree) TTLNodes() []string { return slices.Sorted(maps.Keys(t.ttls)) }

// CountDescendants returns the number of nodes below path (getAllChildrenNumber).
// It walks by prefix, as ZooKeeper does, so it costs one pass over the tree.
func (t *Tree) CountDescendants(path string) int {
	prefix := path + "/"
	if path == RootPath {
		prefix = "/"
	}
	n := 0
	for p := range t.nodes {
		if p != path && strings.HasPrefix(p, prefix) {
			n++
		}
	}
	return n
}

// Walk calls fn for every node, parents before children, siblings in lexicographic order.
func (t *Tree) Walk(fn func(path string, n *Node)) {
	var visit func(path string)
	visit = func(path string) {
		n := t.nodes[path]
		fn(path, n)
		for _, c := range n.Children() {
			visit(Join(path, c))
		}
	}
	visit(RootPath)
}
