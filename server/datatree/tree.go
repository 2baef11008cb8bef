package datatree

import (
	"cmp"
	"maps"
	"slices"

	"github.com/paddock/paddock/server/wire"
)

// Paths that always exist and cannot be deleted.
const (
	RootPath   = "/"
	ProcPath   = "/zookeeper"
	QuotaPath  = "/zookeeper/quota"
	ConfigPath = "/zookeeper/config"
)

// Session is a client session as the replicated state knows it. Immutable.
type Session struct {
	ID       int64
	Timeout  int32 // negotiated timeout, ms
	Password []byte
}

// The index orders nodes by (parent path, name), so that a node's children are one
// contiguous, sorted range and every parent sorts before its children.

// key returns the (parent, name) pair a node is ordered by.
func key(n Node) (parent, name string) { return n.parent, n.name() }

// indexKey returns the (parent, name) pair a path is ordered by; the root is ("", "").
// A path ending in "/" gives (its parent, ""): the key just before its first child.
func indexKey(path string) (parent, name string) {
	if path == RootPath || path == "" {
		return "", ""
	}
	return splitPath(path)
}

func nodeLess(a, b Node) bool { return keyOfNode(a).compare(b) < 0 }

// Tree is the znode tree plus the session and ephemeral tables that live with it.
//
// A Tree is not safe for concurrent use: one writer (the apply loop) mutates it, and
// readers must be excluded while it does (the server's tree lock). It reads no clock and
// starts no goroutines: every time and zxid comes from the caller.
//
// The nodes live in a copy-on-write B-tree of immutable values, so Snapshot is O(1) and
// the snapshot can be read by another goroutine while the tree keeps changing.
type Tree struct {
	index      *index
	ephemerals map[int64]map[string]struct{} // session id -> its ephemeral paths
	containers map[string]struct{}
	ttls       map[string]struct{}
	sessions   map[int64]*Session
	acls       *aclCache
	quotas     map[string]struct{} // the quota'd paths: those with a limits node (quota.go)
	dataSize   int64               // sum of path and data lengths, ZooKeeper's approximate data size
	lastZxid   int64

	// hot is the node put last, which Get returns without walking the index: most
	// writes come in runs under one parent (a create puts its parent last), and a
	// create looks its parent up first. Only writers, who hold the tree alone, set it.
	hot Node

	// undo holds the inverse of each mutation since Begin, for an atomic multi.
	undo      []func()
	recording bool
}

func newTree() *Tree {
	return &Tree{
		index:      newIndex(),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		sessions:   make(map[int64]*Session),
		acls:       newACLCache(),
		quotas:     make(map[string]struct{}),
	}
}

// New returns a tree holding only /, /zookeeper, /zookeeper/quota and /zookeeper/config,
// with zeroed stats as on a fresh ZooKeeper server.
func New() *Tree {
	t := newTree()
	t.insert(newNode(RootPath, []byte{}, &stat{numChildren: 1}, openACL))
	t.insert(newNode(ProcPath, []byte{}, &stat{numChildren: 2}, openACL))
	t.insert(newNode(QuotaPath, []byte{}, &stat{}, openACL))
	// ZooKeeper creates /zookeeper/config with aversion -1 and a READ-only ACL.
	t.insert(newNode(ConfigPath, []byte{}, &stat{aversion: -1}, readACL))
	return t
}

// put stores n in the index, replacing the node at its path if there is one.
func (t *Tree) put(n Node) {
	t.index.ReplaceOrInsert(n)
	t.hot = n
}

// insert adds a new node to the index and the secondary indexes.
func (t *Tree) insert(n Node) {
	t.put(n)
	t.account(n)
}

// account adds a node just put in the index to the data size and the secondary indexes.
// The tables' keys are copies of the path: a key cut from the record would keep every
// version of the node's data alive.
func (t *Tree) account(n Node) {
	st, flags, at := n.decode()
	t.dataSize += int64(n.pathLen() + n.dataLen(flags, at))
	kind := kindOf(st.owner)
	if kind == Persistent {
		return
	}
	path := n.Path() // a copy
	switch kind {
	case Ephemeral:
		m := t.ephemerals[st.owner]
		if m == nil {
			m = make(map[string]struct{})
			t.ephemerals[st.owner] = m
		}
		m[path] = struct{}{}
	case Container:
		t.containers[path] = struct{}{}
	case TTL:
		t.ttls[path] = struct{}{}
	}
}

// remove drops a node from the index and the secondary indexes.
func (t *Tree) remove(n Node) {
	k := keyOfNode(n)
	t.index.Delete(k)
	if t.hot.Exists() && keyOfNode(t.hot) == k {
		t.hot = Node{}
	}
	st, flags, at := n.decode()
	t.dataSize -= int64(n.pathLen() + n.dataLen(flags, at))
	kind := kindOf(st.owner)
	if kind == Persistent {
		return
	}
	path := n.Path()
	switch kind {
	case Ephemeral:
		if m := t.ephemerals[st.owner]; m != nil {
			delete(m, path)
			if len(m) == 0 {
				delete(t.ephemerals, st.owner)
			}
		}
	case Container:
		delete(t.containers, path)
	case TTL:
		delete(t.ttls, path)
	}
}

// Get returns the node at path, or the zero Node. The empty path names the root, as in
// ZooKeeper's DataTree (which keys the root by ""). The node is immutable: it stays
// valid, describing the node as it was, after the tree changes.
func (t *Tree) Get(path string) Node {
	k := keyOfPath(path)
	if h := t.hot; h.Exists() && h.parent == k.parent && h.name() == k.name {
		return h
	}
	n, _ := t.index.Get(k)
	return n
}

// Children returns the names of path's children in lexicographic order (ZooKeeper's
// order is a HashSet's: unspecified; every client sorts), or nil.
func (t *Tree) Children(path string) []string {
	n := t.Get(path)
	if !n.Exists() || n.NumChildren() == 0 {
		return nil
	}
	out := make([]string, 0, n.NumChildren())
	t.eachChild(path, func(c Node) {
		out = append(out, c.name())
	})
	return out
}

// eachChild calls fn for each child of path, in name order.
func (t *Tree) eachChild(path string, fn func(Node)) {
	if path == "" {
		path = RootPath
	}
	// (path, "") is just before path's first child.
	t.index.AscendGreaterOrEqual(ikey{parent: path}, func(c Node) bool {
		if c.parent != path {
			return false
		}
		fn(c)
		return true
	})
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
func (t *Tree) NodeCount() int { return t.index.Len() + 1 }

// DataSize returns the approximate data size: the sum of path and data lengths.
func (t *Tree) DataSize() int64 { return t.dataSize }

// record saves an inverse mutation while a multi is being applied. Callers check
// t.recording first, so that no closure is allocated outside a multi.
func (t *Tree) record(f func()) { t.undo = append(t.undo, f) }

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

// replace puts changed in the place of old (same path), recording the undo.
func (t *Tree) replace(old, changed Node) {
	t.put(changed)
	if t.recording {
		t.record(func() { t.put(old) })
	}
}

// Create adds a node and returns it. The caller has checked that the parent exists and
// path does not. The parent's child counter and pzxid advance, as in DataTree.createNode.
func (t *Tree) Create(path string, data []byte, acl []wire.ACL, owner, zxid, time int64) Node {
	parentPath, _ := splitPath(path)
	n, _ := t.CreateChild(t.Get(parentPath), path, data, acl, owner, zxid, time)
	return n
}

// CreateChild adds the node path under parent, the node at path's parent that the
// caller has looked up, and returns it; if path exists it changes nothing and returns
// false. It walks the index twice — the insert, which finds an existing node too
// (InsertNew), and the parent's update — where looking path up first would take a third
// walk: creates are the costliest write on a large tree, and most of their cost is these
// walks.
func (t *Tree) CreateChild(parent Node, path string, data []byte, acl []wire.ACL, owner, zxid, time int64) (Node, bool) {
	ref := parent.ref.aclRef() // children mostly share their parent's list: no lookup then
	if !slices.Equal(acl, ref.acl()) {
		ref = t.acls.intern(acl)
	}
	n := newNode(path, data, &stat{czxid: zxid, mzxid: zxid, pzxid: zxid, ctime: time, mtime: time, owner: owner}, ref)
	if old, exists := t.index.InsertNew(n); exists {
		return old, false
	}
	t.account(n)
	if t.recording {
		t.record(func() { t.remove(n) })
	}
	t.replace(parent, parent.withStat(func(p *stat) {
		p.childCreates++
		p.numChildren++
		p.pzxid = zxid
	}))
	t.quotaCreated(n)
	return n, true
}

// Delete removes a node that exists and has no children. The parent's pzxid advances
// (never backwards); its child counter does not change, so the visible cversion still grows.
func (t *Tree) Delete(path string, zxid int64) {
	n := t.Get(path)
	parentPath, _ := splitPath(path)
	parent := t.Get(parentPath)
	t.remove(n)
	if t.recording {
		t.record(func() { t.insert(n) })
	}
	t.replace(parent, parent.withStat(func(p *stat) {
		p.numChildren--
		p.pzxid = max(p.pzxid, zxid)
	}))
	t.quotaDeleted(n)
}

// SetData replaces a node's data, advances its version, and returns the new node.
func (t *Tree) SetData(path string, data []byte, zxid, time int64) Node {
	return t.SetNodeData(t.Get(path), data, zxid, time)
}

// SetNodeData is SetData of old, the node now in the tree at its path, which the
// caller has looked up already: one walk of the index fewer.
func (t *Tree) SetNodeData(old Node, data []byte, zxid, time int64) Node {
	n := old.withData(data, func(st *stat) {
		st.mzxid, st.mtime = zxid, time
		st.version++
	})
	delta := int64(len(data) - len(old.Data()))
	t.dataSize += delta
	t.replace(old, n)
	if t.recording {
		t.record(func() { t.dataSize -= delta })
	}
	t.quotaDataChanged(n, delta)
	return n
}

// SetACL replaces a node's ACL, advances its aversion, and returns the new node.
func (t *Tree) SetACL(path string, acl []wire.ACL) Node {
	old := t.Get(path)
	st, flags, at := old.decode()
	st.aversion++
	n := build(old.parent, old.name(), old.data(flags, at), &st, t.acls.intern(acl))
	t.replace(old, n)
	return n
}

// AddSession records a session. Sessions are created by txns so every replica has them.
func (t *Tree) AddSession(s *Session) {
	t.sessions[s.ID] = s
	if t.recording {
		t.record(func() { delete(t.sessions, s.ID) })
	}
}

// RemoveSession forgets a session; its ephemerals must be deleted by the caller first.
func (t *Tree) RemoveSession(id int64) {
	s, ok := t.sessions[id]
	if !ok {
		return
	}
	delete(t.sessions, id)
	if t.recording {
		t.record(func() { t.sessions[id] = s })
	}
}

// Session returns a live session, or nil.
func (t *Tree) Session(id int64) *Session { return t.sessions[id] }

// Sessions returns every live session, ordered by id.
func (t *Tree) Sessions() []*Session { return sortedSessions(t.sessions) }

func sortedSessions(m map[int64]*Session) []*Session {
	out := slices.Collect(maps.Values(m))
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

// CountDescendants returns the number of nodes below path (getAllChildrenNumber). It
// walks the subtree, so it costs the subtree's size, not the tree's.
func (t *Tree) CountDescendants(path string) int {
	n := 0
	var visit func(p string)
	visit = func(p string) {
		t.eachChild(p, func(c Node) {
			n++
			if c.NumChildren() > 0 {
				visit(c.Path())
			}
		})
	}
	visit(path)
	return n
}

// Walk calls fn for every node in index order: every parent before its children,
// siblings in name order.
func (t *Tree) Walk(fn func(n Node)) {
	t.index.Ascend(func(n Node) bool {
		fn(n)
		return true
	})
}

// SetConfig makes data the content of /zookeeper/config, outside any txn: the
// ensemble's configuration, which every member writes from its own (identical)
// configuration file. Its stat does not change, as ZooKeeper's does not for a
// static configuration.
func (t *Tree) SetConfig(data []byte) {
	t.setConfig(data, func(*stat) {})
}

// ReconfigTo makes data the content of /zookeeper/config as a reconfiguration at
// zxid does: the node's version, mzxid and mtime change with it.
func (t *Tree) ReconfigTo(data []byte, zxid, time int64) {
	t.setConfig(data, func(st *stat) {
		st.version++
		st.mzxid, st.mtime = zxid, time
	})
	t.SetLastZxid(zxid)
}

func (t *Tree) setConfig(data []byte, change func(*stat)) {
	old := t.Get(ConfigPath)
	t.dataSize += int64(len(data) - len(old.Data()))
	t.put(old.withData(data, change))
}
