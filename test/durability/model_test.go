package durability

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// znode is what a test expects of one znode, or what it read of one.
type znode struct {
	Data    string
	Version int32
	Owner   int64 // ephemeralOwner: the session of an ephemeral node, 0 for a persistent one
	Mzxid   int64 // in an expectation, 0 when no reply told the write's zxid
}

func (n znode) String() string {
	return fmt.Sprintf("{data %q, version %d, owner 0x%x, mzxid 0x%x}", abbrev(n.Data), n.Version, n.Owner, n.Mzxid)
}

func abbrev(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:40], len(s))
	}
	return s
}

// dirState is the expected state of a directory that one writer alone changes: its
// children, and how many children were ever created and deleted. ZooKeeper names a
// sequential child after the count of creates, and its stat's cversion is creates + deletes.
type dirState struct {
	Children map[string]znode
	Creates  int32
	Deletes  int32
}

func (d dirState) clone() dirState {
	d.Children = maps.Clone(d.Children)
	return d
}

// seqName is the name ZooKeeper gives the next sequential child created with prefix.
func (d dirState) seqName(prefix string) string {
	return fmt.Sprintf("%s%010d", prefix, d.Creates)
}

type effectKind int

const (
	effCreate effectKind = iota
	effSet
	effDelete
)

// effect is one change a request makes to a writer's directory. The writer's model
// predicts every request's outcome, so each effect is possible where it is applied.
type effect struct {
	Kind  effectKind
	Name  string
	Data  string // of a create or a set
	Owner int64  // of a create: the session, for an ephemeral node
}

// apply returns d with effs applied in order. Created and set nodes get mzxid, which is 0
// when the write's zxid is not known.
func (d dirState) apply(effs []effect, mzxid int64) dirState {
	d = d.clone()
	for _, e := range effs {
		switch e.Kind {
		case effCreate:
			d.Children[e.Name] = znode{Data: e.Data, Owner: e.Owner, Mzxid: mzxid}
			d.Creates++
		case effSet:
			n := d.Children[e.Name]
			n.Data, n.Version, n.Mzxid = e.Data, n.Version+1, mzxid
			d.Children[e.Name] = n
		case effDelete:
			delete(d.Children, e.Name)
			d.Deletes++
		}
	}
	return d
}

// observedDir is a directory as read from a server.
type observedDir struct {
	Children map[string]znode
	Cversion int32
}

// diff lists how got differs from d: missing, extra and different children, and the
// cversion. An mzxid is compared only where d knows it.
func (d dirState) diff(got observedDir) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(d.Children)) {
		want := d.Children[name]
		g, ok := got.Children[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("missing %s %v", name, want))
		case g.Data != want.Data || g.Version != want.Version || g.Owner != want.Owner ||
			(want.Mzxid != 0 && g.Mzxid != want.Mzxid):
			out = append(out, fmt.Sprintf("%s is %v, want %v", name, g, want))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got.Children)) {
		if _, ok := d.Children[name]; !ok {
			out = append(out, fmt.Sprintf("unexpected %s %v", name, got.Children[name]))
		}
	}
	if want := d.Creates + d.Deletes; got.Cversion != want {
		out = append(out, fmt.Sprintf("cversion %d, want %d (%d creates + %d deletes)", got.Cversion, want, d.Creates, d.Deletes))
	}
	return out
}

// writerModel is everything one writer has had acknowledged, across all rounds.
type writerModel struct {
	ID   int
	Path string // the writer's directory, /d/w<ID>
	Dir  dirState
	Next int // names n<Next>, e<Next>, m<Next>a are never used twice
	// OwnSeq lists the writer's nodes in the shared sequential directory, by number.
	OwnSeq []int64
	// Pending is the request that was in flight when the server died, nil if none.
	Pending *pendingOp
}

// pendingOp is a request whose outcome is not known: it was sent, or about to be, when
// the server died. It must have happened in full or not at all. It is one of: a request
// on the writer's directory (Effects), a create in the shared sequential directory
// (SeqCreate; the number it got is unknown, its data is unique), or a delete there
// (SeqDelete, the number).
type pendingOp struct {
	Desc      string
	Effects   []effect
	SeqCreate *seqNode
	SeqDelete *int64
}

// resolve checks what the server holds in the writer's directory after a restart: the
// model, or the model with the pending request applied. It updates the model to what it
// found and reports whether the pending request had happened; the caller clears Pending.
func (w *writerModel) resolve(got observedDir) (applied bool, err error) {
	diff := w.Dir.diff(got)
	if len(diff) == 0 {
		return false, nil
	}
	if w.Pending == nil || w.Pending.Effects == nil {
		return false, fmt.Errorf("%s differs from every acknowledged write and no request of its writer on it was in flight:\n  %s",
			w.Path, strings.Join(diff, "\n  "))
	}
	alt := w.Dir.apply(w.Pending.Effects, 0)
	altDiff := alt.diff(got)
	if len(altDiff) == 0 {
		w.Dir = alt
		return true, nil
	}
	return false, fmt.Errorf("%s is neither the acknowledged state nor that state plus the request in flight (%s):\n"+
		"against the acknowledged state:\n  %s\nagainst it plus the request in flight:\n  %s",
		w.Path, w.Pending.Desc, strings.Join(diff, "\n  "), strings.Join(altDiff, "\n  "))
}

// seqNode is one node of the shared sequential directory.
type seqNode struct {
	Data   string // unique to the request that created it
	Owner  int64
	Writer int
}

// seqDir is the shared directory every writer creates sequential nodes in, concurrently.
// The numbers cannot be predicted, but each must be new: above every number acknowledged
// or found present before the server process started, and never handed out twice.
type seqDir struct {
	Path string

	mu       sync.Mutex
	nodes    map[int64]seqNode // numbers known to exist: acknowledged, or found after a crash
	floor    int64             // numbers handed out by the current server process must be above it
	maxAcked int64             // the largest number acknowledged or found so far
}

func newSeqDir(path string) *seqDir {
	return &seqDir{Path: path, nodes: map[int64]seqNode{}, floor: -1, maxAcked: -1}
}

const seqPrefix = "q-"

// seqNumber parses the number of a sequential node's name or path.
func seqNumber(path string) (int64, error) {
	i := strings.LastIndex(path, "/"+seqPrefix)
	if i < 0 {
		return 0, fmt.Errorf("%q is not a %s node", path, seqPrefix)
	}
	digits := path[i+len(seqPrefix)+1:]
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || len(digits) != 10 {
		return 0, fmt.Errorf("%q has no 10-digit sequence number", path)
	}
	return n, nil
}

// acked records an acknowledged create and checks that its number is new.
func (s *seqDir) acked(n int64, node seqNode) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= s.floor {
		return fmt.Errorf("sequence number %d of %s reused: numbers up to %d were acknowledged or present before this server started",
			n, s.Path, s.floor)
	}
	if old, dup := s.nodes[n]; dup {
		return fmt.Errorf("sequence number %d of %s handed out twice: to writer %d and to writer %d", n, s.Path, old.Writer, node.Writer)
	}
	s.nodes[n] = node
	s.maxAcked = max(s.maxAcked, n)
	return nil
}

// ackedDelete records an acknowledged delete.
func (s *seqDir) ackedDelete(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.nodes, n)
}

// resolve checks what the server holds after a restart against the acknowledged nodes and
// the writers' pending requests, adopts what pending creates turned out durable, and
// raises the floor for the next server process. It returns how many pending creates and
// deletes had happened.
func (s *seqDir) resolve(got map[int64]znode, writers []*writerModel) (applied int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	pendingDelete := map[int64]bool{}
	pendingCreate := map[string]*writerModel{} // by data
	for _, w := range writers {
		if p := w.Pending; p != nil && p.SeqCreate != nil {
			pendingCreate[p.SeqCreate.Data] = w
		} else if p != nil && p.SeqDelete != nil {
			pendingDelete[*p.SeqDelete] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(s.nodes)) {
		want := s.nodes[n]
		g, ok := got[n]
		switch {
		case !ok && pendingDelete[n]:
			delete(s.nodes, n)
			applied++
		case !ok:
			errs = append(errs, fmt.Errorf("acknowledged %s/%s%010d (writer %d) is lost", s.Path, seqPrefix, n, want.Writer))
		case g.Data != want.Data || g.Owner != want.Owner || g.Version != 0:
			errs = append(errs, fmt.Errorf("%s/%s%010d is %v, want data %q, owner 0x%x, version 0",
				s.Path, seqPrefix, n, g, abbrev(want.Data), want.Owner))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(got)) {
		s.maxAcked = max(s.maxAcked, n)
		if _, known := s.nodes[n]; known {
			continue
		}
		g := got[n]
		w := pendingCreate[g.Data]
		if w == nil || w.Pending.SeqCreate.Owner != g.Owner {
			errs = append(errs, fmt.Errorf("unexpected %s/%s%010d %v: no acknowledged or in-flight create made it",
				s.Path, seqPrefix, n, g))
			continue
		}
		delete(pendingCreate, g.Data) // a second node with the same data is a phantom
		s.nodes[n] = *w.Pending.SeqCreate
		applied++
	}
	s.floor = max(s.floor, s.maxAcked)
	return applied, errors.Join(errs...)
}

// dropEphemerals removes from the model the shared directory's ephemeral nodes, for when
// every session that owned one has expired.
func (s *seqDir) dropEphemerals() {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.nodes, func(_ int64, n seqNode) bool { return n.Owner != 0 })
}

// owned returns, by writer, the numbers of the nodes known to exist.
func (s *seqDir) owned() map[int][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int][]int64{}
	for _, n := range slices.Sorted(maps.Keys(s.nodes)) {
		out[s.nodes[n].Writer] = append(out[s.nodes[n].Writer], n)
	}
	return out
}
