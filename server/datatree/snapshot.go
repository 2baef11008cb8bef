package datatree

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/paddock/paddock/server/wire"
)

// ErrBadSnapshot is returned when snapshot records do not make a consistent tree.
var ErrBadSnapshot = errors.New("datatree: bad snapshot")

// Snapshot is the tree as it was at one zxid. Taking it costs O(1) in the tree's size
// (the node index is cloned lazily, copy-on-write) plus a copy of the session table; after
// that, Records may run on another goroutine while the tree keeps changing.
type Snapshot struct {
	Zxid     int64
	index    *index
	sessions []*Session
}

// Snapshot takes a snapshot. It must be called where the tree cannot change (by the
// writer, or under the tree lock).
func (t *Tree) Snapshot() *Snapshot {
	return &Snapshot{Zxid: t.lastZxid, index: t.index.Clone(), sessions: t.Sessions()}
}

// Record kinds of the snapshot encoding.
const (
	recordHeader  int32 = 1
	recordNode    int32 = 2
	recordSession int32 = 3

	snapshotVersion int32 = 1
)

// Records calls fn with each record of the snapshot, in order: a header {kind, version,
// zxid, node count, session count}, every node (parents before children), every session.
// Each payload is only valid during the call. The node layout:
//
//	int kind=2 | ustring path | buffer data | vector<ACL> acl | long czxid | long mzxid |
//	long pzxid | long ctime | long mtime | int version | int aversion | long owner |
//	int childCreates
//
// and a session: int kind=3 | long id | int timeout | buffer password.
func (s *Snapshot) Records(fn func(payload []byte) error) error {
	var e wire.Encoder
	e.Int(recordHeader)
	e.Int(snapshotVersion)
	e.Long(s.Zxid)
	e.Long(int64(s.index.Len()))
	e.Long(int64(len(s.sessions)))
	if err := fn(e.Bytes()); err != nil {
		return err
	}
	return s.body(&e, fn)
}

// body emits the node and session records.
func (s *Snapshot) body(e *wire.Encoder, fn func(payload []byte) error) error {
	var err error
	s.index.Ascend(func(n Node) bool {
		e.Reset()
		encodeNode(e, n)
		err = fn(e.Bytes())
		return err == nil
	})
	if err != nil {
		return err
	}
	for _, sess := range s.sessions {
		e.Reset()
		e.Int(recordSession)
		e.Long(sess.ID)
		e.Int(sess.Timeout)
		e.Buffer(sess.Password)
		if err := fn(e.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func encodeNode(e *wire.Encoder, n Node) {
	st, flags, at := n.decode()
	e.Int(recordNode)
	// The path, as e.String(n.Path()) would write it, without building it.
	e.Int(int32(n.pathLen()))
	if n.parent != RootPath {
		e.RawString(n.parent) // "" for the root
	}
	e.RawString("/")
	e.RawString(n.name())
	e.Buffer(n.data(flags, at))
	e.Int(int32(len(n.ACL())))
	for _, a := range n.ACL() {
		e.Int(int32(a.Perms))
		e.String(a.Scheme)
		e.String(a.ID)
	}
	e.Long(st.czxid)
	e.Long(st.mzxid)
	e.Long(st.pzxid)
	e.Long(st.ctime)
	e.Long(st.mtime)
	e.Int(st.version)
	e.Int(st.aversion)
	e.Long(st.owner)
	e.Int(st.childCreates)
}

// Digest returns a SHA-256 of the tree's nodes and sessions, in the snapshot encoding:
// two trees with the same digest hold the same nodes, data, ACLs, stats and sessions.
func (t *Tree) Digest() [32]byte {
	h := sha256.New()
	var e wire.Encoder
	t.Snapshot().body(&e, func(p []byte) error {
		h.Write(p)
		return nil
	})
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// Loader rebuilds a tree from snapshot records, one Add at a time, checking that they
// make a consistent tree: a header first, every parent before its children, no path
// twice, the counts the header announced, and the nodes New makes.
//
// Decoding and checking a record happen in Add; linking nodes to their parents and
// inserting them into the index happen on a goroutine of the loader's, fed in batches,
// so that a restart decodes and builds the tree on two cores at once (the two halves
// cost about the same). Tree waits for it; a caller that gives up before calling Tree
// calls Abort.
type Loader struct {
	t        *Tree
	header   bool
	nodes    int64
	sessions int64
	err      error
	last     Node   // the last node decoded: nodes come in index order
	batch    []Node // decoded nodes not handed to the inserter yet
	lastACL  *nodeRef
	// parentPath is the parent of the last node decoded, which its next siblings share.
	parentPath string

	// The inserter's side. batches is nil until the first batch; done is closed when
	// the inserter has returned, and insertErr (its first error) may be read then.
	batches   chan []Node
	done      chan struct{}
	insertErr error
	// parent is the node the last inserted node was a child of, and children how many
	// of its children came so far. Records come in index order, where a node's children
	// are consecutive: once a node of another parent comes, the count is complete.
	parent   Node
	children int32
}

// loadBatch is how many decoded nodes go to the inserter at a time.
const loadBatch = 1024

// NewLoader returns a loader for one snapshot.
func NewLoader() *Loader { return &Loader{t: newTree()} }

// Add decodes one record. It returns an error wrapping ErrBadSnapshot if the record is
// malformed or out of place; the loader is then unusable.
func (l *Loader) Add(payload []byte) error {
	if l.err != nil {
		return l.err
	}
	d := wire.NewDecoder(payload)
	kind := d.Int()
	switch {
	case !l.header && kind != recordHeader:
		l.err = fmt.Errorf("%w: first record is kind %d, not a header", ErrBadSnapshot, kind)
	case kind == recordHeader:
		l.err = l.addHeader(d)
	case kind == recordNode:
		l.err = l.addNode(d)
	case kind == recordSession:
		l.err = l.addSession(d)
	default:
		l.err = fmt.Errorf("%w: unknown record kind %d", ErrBadSnapshot, kind)
	}
	if l.err == nil && d.Err() != nil {
		l.err = fmt.Errorf("%w: record kind %d: %v", ErrBadSnapshot, kind, d.Err())
	}
	return l.err
}

func (l *Loader) addHeader(d *wire.Decoder) error {
	if l.header {
		return fmt.Errorf("%w: second header", ErrBadSnapshot)
	}
	if v := d.Int(); v != snapshotVersion {
		return fmt.Errorf("%w: version %d (this build reads %d)", ErrBadSnapshot, v, snapshotVersion)
	}
	l.header = true
	l.t.lastZxid = d.Long()
	l.nodes = d.Long()
	l.sessions = d.Long()
	return nil
}

// addNode decodes a node record into a node, reading the path and data in place: the
// node's record is their only copy.
func (l *Loader) addNode(d *wire.Decoder) error {
	pathBytes, data := d.BufferView(), d.BufferView()
	ref := l.acl(d)
	var st stat
	st.czxid, st.mzxid, st.pzxid, st.ctime, st.mtime = d.Long(), d.Long(), d.Long(), d.Long(), d.Long()
	st.version, st.aversion, st.owner, st.childCreates = d.Int(), d.Int(), d.Long(), d.Int()
	if d.Err() != nil {
		return nil // reported by Add
	}
	path := unsafe.String(unsafe.SliceData(pathBytes), len(pathBytes)) // valid during this call
	// The root sorts first, so in order it can only be the first node.
	if path != RootPath {
		if err := ValidatePath(path); err != nil {
			return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
		}
	}
	if len(data) > inlineDataMax {
		data = bytes.Clone(data) // kept by reference, beside the record
	}
	// The node keeps its parent's path: a copy, which the parent's children share.
	parent, name := indexKey(path)
	if parent != l.parentPath {
		l.parentPath = strings.Clone(parent)
	}
	n := build(l.parentPath, name, data, &st, ref)
	if l.last.Exists() && !nodeLess(l.last, n) {
		// In index order every path is new; out of order, it might repeat one.
		return fmt.Errorf("%w: %q out of order or twice (after %q)", ErrBadSnapshot, n.Path(), l.last.Path())
	}
	l.last = n
	if l.batch = append(l.batch, n); len(l.batch) == loadBatch {
		l.flush()
	}
	return nil
}

// acl decodes a node's ACL and returns its interned reference. Neighbours mostly share
// one list, so the list is compared with the last node's before anything is copied.
func (l *Loader) acl(d *wire.Decoder) *nodeRef {
	c := d.Count(12)
	if c == 0 {
		return nil
	}
	same := l.lastACL != nil && len(l.lastACL.list) == c
	type raw struct{ scheme, id []byte }
	var first [4]raw
	entries := first[:0]
	perms := make([]wire.Perm, 0, 4)
	for i := range c {
		p, scheme, id := wire.Perm(d.Int()), d.BufferView(), d.BufferView()
		if same {
			a := l.lastACL.list[i]
			same = a.Perms == p && a.Scheme == string(scheme) && a.ID == string(id)
		}
		perms = append(perms, p)
		entries = append(entries, raw{scheme, id})
	}
	if same || d.Err() != nil {
		return l.lastACL
	}
	acl := make([]wire.ACL, c)
	for i := range acl {
		acl[i] = wire.ACL{Perms: perms[i], Scheme: string(entries[i].scheme), ID: string(entries[i].id)}
	}
	l.lastACL = l.t.acls.intern(acl)
	return l.lastACL
}

// flush hands the decoded nodes to the inserter, starting it on the first batch.
func (l *Loader) flush() {
	if len(l.batch) == 0 {
		return
	}
	if l.batches == nil {
		l.batches, l.done = make(chan []Node, 4), make(chan struct{})
		go l.insertLoop()
	}
	l.batches <- l.batch
	l.batch = make([]Node, 0, loadBatch)
}

// insertLoop links and inserts the batches in order; after an error it drains them.
func (l *Loader) insertLoop() {
	defer close(l.done)
	l.t.index.loading = true
	defer func() { l.t.index.loading = false }()
	for b := range l.batches {
		for _, n := range b {
			if l.insertErr != nil {
				break
			}
			l.insertErr = l.link(n)
		}
	}
	if l.insertErr == nil {
		l.countChildren()
	}
}

// link counts n as its parent's child and inserts it.
func (l *Loader) link(n Node) error {
	if parentPath := n.parent; parentPath != "" {
		if !l.parent.Exists() || !l.parent.is(parentPath) {
			l.countChildren()
			l.parent, l.children = l.t.Get(parentPath), 0
		}
		if !l.parent.Exists() {
			return fmt.Errorf("%w: %q comes before its parent", ErrBadSnapshot, n.Path())
		}
		l.children++
	}
	l.t.insert(n)
	return nil
}

// countChildren puts the parent whose children have all come back with their number.
func (l *Loader) countChildren() {
	if l.children > 0 {
		l.t.put(l.parent.withStat(func(st *stat) { st.numChildren = l.children }))
	}
	l.parent, l.children = Node{}, 0
}

// wait hands over the last batch and waits for the inserter to finish.
func (l *Loader) wait() error {
	l.flush()
	if l.batches != nil {
		close(l.batches)
		<-l.done
		l.batches = nil
	}
	return l.insertErr
}

// Abort stops the loader's goroutine without building the tree; for a caller that
// gives up (a snapshot that failed to read) instead of calling Tree.
func (l *Loader) Abort() {
	l.batch = nil
	l.wait()
}

func (l *Loader) addSession(d *wire.Decoder) error {
	s := &Session{ID: d.Long(), Timeout: d.Int(), Password: d.Buffer()}
	if l.t.sessions[s.ID] != nil {
		return fmt.Errorf("%w: session 0x%x twice", ErrBadSnapshot, s.ID)
	}
	l.t.sessions[s.ID] = s
	return nil
}

// Tree returns the loaded tree, after checking that every announced record arrived.
func (l *Loader) Tree() (*Tree, error) {
	if err := l.wait(); err != nil && l.err == nil {
		l.err = err
	}
	switch {
	case l.err != nil:
		return nil, l.err
	case !l.header:
		return nil, fmt.Errorf("%w: no header", ErrBadSnapshot)
	case int64(l.t.index.Len()) != l.nodes || int64(len(l.t.sessions)) != l.sessions:
		return nil, fmt.Errorf("%w: %d nodes and %d sessions, header says %d and %d",
			ErrBadSnapshot, l.t.index.Len(), len(l.t.sessions), l.nodes, l.sessions)
	}
	// Every tree a server makes holds these from its start (New), and the server reads
	// them without looking: a tree without them is not a server's.
	for _, p := range []string{RootPath, ProcPath, QuotaPath, ConfigPath} {
		if !l.t.Get(p).Exists() {
			return nil, fmt.Errorf("%w: no %s", ErrBadSnapshot, p)
		}
	}
	l.t.loadQuotas()
	return l.t, nil
}
