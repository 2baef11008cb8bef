package bench

import (
	"encoding/binary"
	"strconv"

	"github.com/paddock/paddock/server/wire"
)

// Workload names, as --workload takes them.
const (
	WorkloadCreate   = "create"   // create new znodes of --value-size bytes
	WorkloadSet      = "set"      // setData on --nodes prepared znodes, round robin
	WorkloadGet      = "get"      // getData on --nodes prepared znodes, round robin
	WorkloadExists   = "exists"   // exists on --nodes prepared znodes, round robin
	WorkloadChildren = "children" // getChildren on --nodes prepared znodes of 10 children each
	WorkloadDelete   = "delete"   // delete --ops prepared znodes, each once
	WorkloadMixed    = "mixed"    // 90 % getData, 10 % setData on --nodes prepared znodes
	WorkloadChurn    = "churn"    // sessions connect, create --ephemerals ephemerals, close
	WorkloadFanout   = "fanout"   // --watchers sessions watch one znode; one write; all notified
)

// Workloads lists every workload, in the order the side-by-side comparison runs them.
var Workloads = []string{WorkloadCreate, WorkloadSet, WorkloadGet, WorkloadExists, WorkloadChildren,
	WorkloadDelete, WorkloadMixed, WorkloadChurn, WorkloadFanout}

// childrenPerNode is how many children each node of the children workload has.
const childrenPerNode = 10

// generator issues the requests of one workload. Op i of a run is issued with index i;
// indices are handed out once each, across all sessions, so a run of --ops N issues
// exactly indices 0..N-1 (plus those of the warm-up before them).
type generator interface {
	// issue encodes request i into s (s.begin ... s.end).
	issue(s *session, i int64)
	// check reports whether the body of a successful reply to req is plausible.
	check(req inflight, body []byte) bool
	// tolerate reports whether error code c is an expected answer (not counted as an error).
	tolerate(c wire.Code) bool
}

// openACL is the jute encoding of ZooDefs.Ids.OPEN_ACL_UNSAFE, encoded once.
var openACL = func() []byte {
	e := wire.NewEncoder(nil)
	e.Int(1)
	e.Int(int32(wire.PermAll))
	e.String("world")
	e.String("anyone")
	return e.Bytes()
}()

// putPath encodes the jute string prefix+i (prefix ends in "/") without allocating.
func putPath(e *wire.Encoder, prefix []byte, i int64) {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], i, 10)
	e.Int(int32(len(prefix) + len(d)))
	e.Raw(prefix)
	e.Raw(d)
}

// putChildPath encodes the jute string prefix+parent+"/"+child.
func putChildPath(e *wire.Encoder, prefix []byte, parent, child int64) {
	var digits [42]byte
	d := strconv.AppendInt(digits[:0], parent, 10)
	d = append(d, '/')
	d = strconv.AppendInt(d, child, 10)
	e.Int(int32(len(prefix) + len(d)))
	e.Raw(prefix)
	e.Raw(d)
}

// pathLen returns len(prefix+i) for checking create replies.
func pathLen(prefix []byte, i int64) int {
	n := len(prefix) + 1
	if i < 0 {
		n++
		i = -i
	}
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// bodyInt returns the big-endian int32 at the start of body, or -2 if it is too short.
func bodyInt(body []byte) int32 {
	if len(body) < 4 {
		return -2
	}
	return int32(binary.BigEndian.Uint32(body))
}

const statLen = 68 // a Stat on the wire

// createGen creates prefix+i with the value and flags: the create workload, the
// ephemerals of churn, and the preparation of the others.
type createGen struct {
	prefix []byte
	value  []byte
	flags  int32
	base   int64 // node i is prefix+(base+i)
}

func (g *createGen) issue(s *session, i int64) {
	e := s.begin(wire.OpCreate, i)
	putPath(e, g.prefix, g.base+i)
	e.Buffer(g.value)
	e.Raw(openACL)
	e.Int(g.flags)
	s.end()
}

// check: a create reply echoes the path created.
func (g *createGen) check(req inflight, body []byte) bool {
	return int(bodyInt(body)) == pathLen(g.prefix, g.base+req.idx)
}

func (g *createGen) tolerate(wire.Code) bool { return false }

// childGen creates child i%per of node prefix+i/per, for the children workload.
type childGen struct {
	prefix []byte
	value  []byte
	per    int64
}

func (g *childGen) issue(s *session, i int64) {
	e := s.begin(wire.OpCreate, i)
	putChildPath(e, g.prefix, i/g.per, i%g.per)
	e.Buffer(g.value)
	e.Raw(openACL)
	e.Int(wire.FlagPersistent)
	s.end()
}

func (g *childGen) check(_ inflight, body []byte) bool { return bodyInt(body) > 0 }
func (g *childGen) tolerate(wire.Code) bool            { return false }

// deleteGen deletes prefix+i. In cleanup (missingOK) a node that is not there is fine.
type deleteGen struct {
	prefix    []byte
	missingOK bool
}

func (g *deleteGen) issue(s *session, i int64) {
	e := s.begin(wire.OpDelete, i)
	putPath(e, g.prefix, i)
	e.Int(-1)
	s.end()
}

func (g *deleteGen) check(_ inflight, body []byte) bool { return len(body) == 0 }
func (g *deleteGen) tolerate(c wire.Code) bool          { return g.missingOK && c == wire.ErrNoNode }

// deleteChildGen deletes what childGen created.
type deleteChildGen struct {
	prefix []byte
	per    int64
}

func (g *deleteChildGen) issue(s *session, i int64) {
	e := s.begin(wire.OpDelete, i)
	putChildPath(e, g.prefix, i/g.per, i%g.per)
	e.Int(-1)
	s.end()
}

func (g *deleteChildGen) check(_ inflight, body []byte) bool { return len(body) == 0 }
func (g *deleteChildGen) tolerate(c wire.Code) bool          { return c == wire.ErrNoNode }

// readGen reads prefix+(i mod nodes) with getData, exists or getChildren, and for
// mixed (setEvery > 0) sets it instead when i mod setEvery == setEvery-1.
type readGen struct {
	prefix    []byte
	nodes     int64
	op        wire.Op // OpGetData, OpExists, OpGetChildren or OpSetData
	value     []byte  // for setData
	setEvery  int64   // mixed: every setEvery-th op is a setData
	valueSize int32   // what getData must return
	children  int32   // what getChildren must return
}

func (g *readGen) issue(s *session, i int64) {
	op := g.op
	if g.setEvery > 0 && i%g.setEvery == g.setEvery-1 {
		op = wire.OpSetData
	}
	e := s.begin(op, i)
	putPath(e, g.prefix, i%g.nodes)
	if op == wire.OpSetData {
		e.Buffer(g.value)
		e.Int(-1)
	} else {
		e.Bool(false) // no watch
	}
	s.end()
}

func (g *readGen) check(req inflight, body []byte) bool {
	switch req.op {
	case wire.OpGetData:
		return bodyInt(body) == g.valueSize && len(body) == 4+int(g.valueSize)+statLen
	case wire.OpGetChildren:
		return bodyInt(body) == g.children
	default: // exists, setData: a Stat
		return len(body) == statLen
	}
}

func (g *readGen) tolerate(wire.Code) bool { return false }
