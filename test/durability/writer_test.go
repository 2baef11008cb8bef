package durability

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// maxChildren keeps each writer's directory small, so that checking every node after
// every restart stays cheap: above it a writer only deletes.
const maxChildren = 24

// writer is one client session of one round, doing random writes to its directory and to
// the shared sequential directory, one at a time, and keeping its model up to date with
// what the server acknowledged.
type writer struct {
	m       *writerModel
	seq     *seqDir
	rng     *rand.Rand
	conn    *zk.Conn
	session int64
	round   int
	ops     int // requests sent, for unique data

	// baseZxid is the server's zxid when it started serving: every write acknowledged by
	// this server process must have a larger one.
	baseZxid int64
	maxZxid  *atomic.Int64 // the largest mzxid acknowledged, across writers
	acked    *atomic.Int64 // acknowledged writes, across writers
}

// run sends requests until one fails. A failure that only says the connection went away,
// once stopped reports true (the server was killed), leaves the request in m.Pending and
// returns nil; any other failure, and any reply the model did not predict, is an error.
func (w *writer) run(stopped func() bool) error {
	for {
		op, send := w.next()
		w.m.Pending = op
		err := send()
		if err == nil {
			w.m.Pending = nil
			w.acked.Add(1)
			continue
		}
		if isConnErr(err) && stopped() {
			return nil
		}
		return fmt.Errorf("writer %d (session 0x%x), round %d: %s: %w", w.m.ID, w.session, w.round, op.Desc, err)
	}
}

// next chooses the next request, returning its description and a function that sends it
// and, if it succeeds, checks the reply and records it in the model.
func (w *writer) next() (*pendingOp, func() error) {
	w.ops++
	n := len(w.m.Dir.Children)
	switch r := w.rng.IntN(100); {
	case n >= maxChildren || (r < 15 && n > 1):
		return w.deleteChild()
	case r < 30:
		return w.create(fmt.Sprintf("n%d", w.nextName()), 0)
	case r < 38:
		return w.create("s-", zk.FlagSequence)
	case r < 46:
		return w.create(fmt.Sprintf("e%d", w.nextName()), zk.FlagEphemeral)
	case r < 50:
		return w.create("es-", zk.FlagEphemeral|zk.FlagSequence)
	case r < 68:
		return w.set("v")
	case r < 74:
		if name := w.pickChild(w.m.Dir, true); name != "" {
			return w.set(name)
		}
		return w.set("v")
	case r < 86:
		return w.multi()
	case r < 94 || len(w.m.OwnSeq) == 0:
		return w.seqCreate()
	default:
		return w.seqDelete()
	}
}

func (w *writer) nextName() int {
	w.m.Next++
	return w.m.Next - 1
}

// data returns unique data: who wrote it, then padding of a random length, now and then
// several kilobytes, and rarely more than a 64 KiB log segment holds (such a record gets
// a segment of its own).
func (w *writer) data() string {
	tag := fmt.Sprintf("w%d.r%d.op%d.", w.m.ID, w.round, w.ops)
	var pad int
	switch r := w.rng.IntN(500); {
	case r == 0:
		pad = 64<<10 + w.rng.IntN(192<<10)
	case r < 10:
		pad = 4096 + w.rng.IntN(8192)
	default:
		pad = w.rng.IntN(120)
	}
	return tag + strings.Repeat(string(rune('a'+w.rng.IntN(26))), pad)
}

// pickChild returns a random child of d other than v (persistent only, if asked), or "".
func (w *writer) pickChild(d dirState, persistentOnly bool) string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(d.Children)) { // sorted: replayable choices
		if name != "v" && (!persistentOnly || d.Children[name].Owner == 0) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return names[w.rng.IntN(len(names))]
}

func (w *writer) owner(flags int32) int64 {
	if flags&zk.FlagEphemeral != 0 {
		return w.session
	}
	return 0
}

// create makes a child; a sequential one is named as ZooKeeper will name it.
func (w *writer) create(name string, flags int32) (*pendingOp, func() error) {
	reqPath := path.Join(w.m.Path, name)
	if flags&zk.FlagSequence != 0 {
		name = w.m.Dir.seqName(name)
	}
	want := path.Join(w.m.Path, name)
	e := effect{Kind: effCreate, Name: name, Data: w.data(), Owner: w.owner(flags)}
	op := &pendingOp{Desc: fmt.Sprintf("create %s (flags %d)", want, flags), Effects: []effect{e}}
	return op, func() error {
		got, err := w.conn.Create(reqPath, []byte(e.Data), flags, worldACL)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("created %s, want %s: sequence numbers follow the count of children ever created", got, want)
		}
		w.m.Dir = w.m.Dir.apply(op.Effects, 0)
		return nil
	}
}

// set changes a child's data, conditional on the version the model has.
func (w *writer) set(name string) (*pendingOp, func() error) {
	p := path.Join(w.m.Path, name)
	version := w.m.Dir.Children[name].Version
	e := effect{Kind: effSet, Name: name, Data: w.data()}
	op := &pendingOp{Desc: fmt.Sprintf("setData %s version %d", p, version), Effects: []effect{e}}
	return op, func() error {
		stat, err := w.conn.Set(p, []byte(e.Data), version)
		if err != nil {
			return err
		}
		if err := w.checkStat(stat, version+1); err != nil {
			return err
		}
		w.m.Dir = w.m.Dir.apply(op.Effects, stat.Mzxid)
		return nil
	}
}

// checkStat checks the stat a setData returned: the next version, a zxid this server
// process handed out.
func (w *writer) checkStat(stat *zk.Stat, version int32) error {
	if stat.Version != version {
		return fmt.Errorf("reply has version %d, want %d", stat.Version, version)
	}
	if stat.Mzxid <= w.baseZxid {
		return fmt.Errorf("reply has mzxid 0x%x, not above 0x%x, the zxid this server started with", stat.Mzxid, w.baseZxid)
	}
	raise(w.maxZxid, stat.Mzxid)
	return nil
}

// raise sets a to v if v is larger.
func raise(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

func (w *writer) deleteChild() (*pendingOp, func() error) {
	name := w.pickChild(w.m.Dir, false)
	p := path.Join(w.m.Path, name)
	version := w.m.Dir.Children[name].Version
	op := &pendingOp{Desc: fmt.Sprintf("delete %s version %d", p, version),
		Effects: []effect{{Kind: effDelete, Name: name}}}
	return op, func() error {
		if err := w.conn.Delete(p, version); err != nil {
			return err
		}
		w.m.Dir = w.m.Dir.apply(op.Effects, 0)
		return nil
	}
}

// multi creates two children (the second ephemeral half the time), sets v, deletes a
// child and checks another's version, atomically: all of it must survive a crash, or none.
func (w *writer) multi() (*pendingOp, func() error) {
	k := w.nextName()
	d := w.m.Dir
	var reqs []any
	var effs []effect
	for i, suffix := range []string{"a", "b"} {
		flags := int32(0)
		if i == 1 && w.rng.IntN(2) == 0 {
			flags = zk.FlagEphemeral
		}
		e := effect{Kind: effCreate, Name: fmt.Sprintf("m%d%s", k, suffix), Data: w.data(), Owner: w.owner(flags)}
		reqs = append(reqs, &zk.CreateRequest{Path: path.Join(w.m.Path, e.Name), Data: []byte(e.Data), Acl: worldACL, Flags: flags})
		effs = append(effs, e)
	}
	vVersion := d.Children["v"].Version
	set := effect{Kind: effSet, Name: "v", Data: w.data()}
	reqs = append(reqs, &zk.SetDataRequest{Path: path.Join(w.m.Path, "v"), Data: []byte(set.Data), Version: vVersion})
	effs = append(effs, set)
	if name := w.pickChild(d, false); name != "" {
		reqs = append(reqs, &zk.DeleteRequest{Path: path.Join(w.m.Path, name), Version: d.Children[name].Version})
		effs = append(effs, effect{Kind: effDelete, Name: name})
		d = d.apply(effs[len(effs)-1:], 0)
	}
	if name := w.pickChild(d, false); name != "" {
		reqs = append(reqs, &zk.CheckVersionRequest{Path: path.Join(w.m.Path, name), Version: d.Children[name].Version})
	}
	op := &pendingOp{Desc: fmt.Sprintf("multi of %d ops in %s", len(reqs), w.m.Path), Effects: effs}
	return op, func() error {
		res, err := w.conn.Multi(reqs...)
		if err != nil {
			return err
		}
		if len(res) != len(reqs) {
			return fmt.Errorf("%d results for %d ops", len(res), len(reqs))
		}
		for i := range 2 {
			if want := reqs[i].(*zk.CreateRequest).Path; res[i].String != want {
				return fmt.Errorf("result %d created %q, want %q", i, res[i].String, want)
			}
		}
		if res[2].Stat == nil {
			return fmt.Errorf("setData result without a stat")
		}
		if err := w.checkStat(res[2].Stat, vVersion+1); err != nil {
			return err
		}
		// One txn: the created nodes' mzxid is the setData's.
		w.m.Dir = w.m.Dir.apply(effs, res[2].Stat.Mzxid)
		return nil
	}
}

// seqCreate creates a node in the shared sequential directory, ephemeral a third of the time.
func (w *writer) seqCreate() (*pendingOp, func() error) {
	flags := int32(zk.FlagSequence)
	if w.rng.IntN(3) == 0 {
		flags |= zk.FlagEphemeral
	}
	node := seqNode{Data: w.data(), Owner: w.owner(flags), Writer: w.m.ID}
	op := &pendingOp{Desc: fmt.Sprintf("create %s/%s (flags %d)", w.seq.Path, seqPrefix, flags), SeqCreate: &node}
	return op, func() error {
		got, err := w.conn.Create(path.Join(w.seq.Path, seqPrefix), []byte(node.Data), flags, worldACL)
		if err != nil {
			return err
		}
		n, err := seqNumber(got)
		if err != nil {
			return err
		}
		if err := w.seq.acked(n, node); err != nil {
			return err
		}
		w.m.OwnSeq = append(w.m.OwnSeq, n)
		return nil
	}
}

// seqDelete deletes one of the writer's nodes in the shared sequential directory.
func (w *writer) seqDelete() (*pendingOp, func() error) {
	i := w.rng.IntN(len(w.m.OwnSeq))
	n := w.m.OwnSeq[i]
	p := fmt.Sprintf("%s/%s%010d", w.seq.Path, seqPrefix, n)
	op := &pendingOp{Desc: "delete " + p, SeqDelete: &n}
	return op, func() error {
		if err := w.conn.Delete(p, 0); err != nil {
			return err
		}
		w.seq.ackedDelete(n)
		w.m.OwnSeq = append(w.m.OwnSeq[:i], w.m.OwnSeq[i+1:]...)
		return nil
	}
}
