package datatree

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/paddock/paddock/server/wire"
)

// Owner markers stored in a node's raw ephemeral owner (EphemeralType in ZooKeeper).
const (
	// ContainerOwner marks a container node.
	ContainerOwner int64 = -0x8000000000000000
	// ttlOwnerMask is the high byte that marks a TTL node; the TTL (ms) is in the low 40 bits.
	ttlOwnerMask int64 = -0x100000000000000 // 0xff00000000000000
)

// TTLOwner returns the raw owner that marks a TTL node with the given TTL in milliseconds.
func TTLOwner(ttl int64) int64 { return ttlOwnerMask | ttl }

// Kind is what sort of znode a node is.
type Kind uint8

// Node kinds.
const (
	Persistent Kind = iota
	Ephemeral
	Container
	TTL
)

// Node is one znode, as an immutable value: once in the tree it never changes. Every
// mutation puts a new value in its place, so a reader may keep a Node after the tree lock
// is released, and a snapshot shares the nodes of the live tree until they change. The
// zero Node is no node: Get returns it for a path that does not exist.
//
// A node is its parent's path, one record — a string, which the garbage collector never
// scans — and a pointer to its interned ACL list. The record is
//
//	uvarint len(name) | name | flags | uvarint czxid | varint ctime |
//	the stat fields that differ from their defaults, as flags says | data, when it is small
//
// In the index, records live in their B-tree node's buffer and the parent's path once in
// the B-tree node's table of parents, which the node's siblings share (index.go): a path
// costs its last segment a znode, not its whole length.
//
// A fresh leaf's stat takes about 12 bytes where eleven fixed fields took 64 (docs/
// performance.md, "Memory"). Data over inlineDataMax lives beside the record, in the
// node's own ref, so that a change of a parent's child counters copies no more than
// inlineDataMax bytes of its data.
type Node struct {
	parent string // the parent's path: "/" for a child of the root, "" for the root
	rec    string
	ref    *nodeRef
}

// nodeRef is what a record cannot hold: the ACL list, interned (nodes with equal lists
// share one nodeRef), and — in a nodeRef of the node's own — data too big to copy on
// every change of the node's stat.
type nodeRef struct {
	list []wire.ACL
	// In a node's own nodeRef (flagRefData): its data, and the interned nodeRef of its
	// list, which the node's next version shares if its data is small.
	data     []byte
	interned *nodeRef
}

// inlineDataMax is the most data a record holds itself.
const inlineDataMax = 512

// Flags of a record: which optional fields follow czxid and ctime, and where the data is.
const (
	flagMzxid    = 1 << iota // varint mzxid-czxid
	flagPzxid                // varint pzxid-czxid
	flagMtime                // varint mtime-ctime
	flagOwner                // 8 bytes, little-endian
	flagVersions             // varint version, varint aversion
	flagChildren             // uvarint childCreates, uvarint numChildren (as uint32)
	flagNilData              // the data is null (not empty)
	flagRefData              // the data is in ref.data, not inline
)

// stat is a node's fixed fields, decoded from or to be encoded into a record.
type stat struct {
	czxid, mzxid, pzxid int64
	ctime, mtime        int64 // ms
	owner               int64 // the raw ephemeral owner: 0, a session id, ContainerOwner or a TTL marker
	version, aversion   int32
	// childCreates is ZooKeeper's stored cversion: the number of children ever created.
	// It names sequential children and gives the visible cversion.
	childCreates int32
	numChildren  int32
}

// newNode builds the node for path with data, stat st and ACL list ref (interned).
func newNode(path string, data []byte, st *stat, ref *nodeRef) Node {
	parent, name := indexKey(path)
	return build(parent, name, data, st, ref)
}

// build builds the node named name under parent (the index's key of its path).
func build(parent, name string, data []byte, st *stat, ref *nodeRef) Node {
	var flags byte
	var hdr [1 + 6*binary.MaxVarintLen64 + 8 + 4*binary.MaxVarintLen32]byte
	h := hdr[:1]
	h = binary.AppendUvarint(h, uint64(st.czxid))
	h = binary.AppendVarint(h, st.ctime)
	if st.mzxid != st.czxid {
		flags |= flagMzxid
		h = binary.AppendVarint(h, st.mzxid-st.czxid)
	}
	if st.pzxid != st.czxid {
		flags |= flagPzxid
		h = binary.AppendVarint(h, st.pzxid-st.czxid)
	}
	if st.mtime != st.ctime {
		flags |= flagMtime
		h = binary.AppendVarint(h, st.mtime-st.ctime)
	}
	if st.owner != 0 {
		flags |= flagOwner
		h = binary.LittleEndian.AppendUint64(h, uint64(st.owner))
	}
	if st.version != 0 || st.aversion != 0 {
		flags |= flagVersions
		h = binary.AppendVarint(h, int64(st.version))
		h = binary.AppendVarint(h, int64(st.aversion))
	}
	if st.childCreates != 0 || st.numChildren != 0 {
		flags |= flagChildren
		h = binary.AppendUvarint(h, uint64(uint32(st.childCreates)))
		h = binary.AppendUvarint(h, uint64(uint32(st.numChildren)))
	}
	inline := data
	switch {
	case data == nil:
		flags |= flagNilData
	case len(data) > inlineDataMax:
		flags |= flagRefData
		inline = nil
		ref = &nodeRef{list: ref.acl(), data: data, interned: ref.aclRef()}
	}
	h[0] = flags
	b := make([]byte, 0, uvarintLen(uint64(len(name)))+len(name)+len(h)+len(inline))
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = append(b, h...)
	b = append(b, inline...)
	return Node{parent: parent, rec: unsafe.String(unsafe.SliceData(b), len(b)), ref: ref}
}

// Exists reports whether n is a node (not the zero Node).
func (n Node) Exists() bool { return n.rec != "" }

// Path returns the node's full path. It is built on each call: a caller that wants to
// compare it takes is.
func (n Node) Path() string {
	switch n.parent {
	case "":
		return RootPath
	case RootPath:
		return RootPath + n.name()
	}
	return n.parent + "/" + n.name()
}

// is reports whether path is the node's path, without building it.
func (n Node) is(path string) bool {
	parent, name := indexKey(path)
	return parent == n.parent && name == n.name()
}

// pathLen returns len(n.Path()), without building it.
func (n Node) pathLen() int {
	switch n.parent {
	case "":
		return 1
	case RootPath:
		return 1 + len(n.name())
	}
	return len(n.parent) + 1 + len(n.name())
}

// name returns the node's last path segment ("" for the root).
func (n Node) name() string {
	name, _ := n.nameEnd()
	return name
}

// nameEnd returns the record's name and where the stat after it starts.
func (n Node) nameEnd() (string, int) {
	l, k := uvarintString(n.rec)
	end := k + int(l)
	return n.rec[k:end], end
}

// decode returns the node's stat, flags and where its inline data starts.
func (n Node) decode() (st stat, flags byte, dataAt int) {
	_, i := n.nameEnd()
	flags = n.rec[i]
	i++
	uvarint := func() uint64 {
		v, k := uvarintString(n.rec[i:])
		i += k
		return v
	}
	varint := func() int64 {
		u := uvarint()
		return int64(u>>1) ^ -int64(u&1)
	}
	st.czxid = int64(uvarint())
	st.ctime = varint()
	st.mzxid, st.pzxid, st.mtime = st.czxid, st.czxid, st.ctime
	if flags&flagMzxid != 0 {
		st.mzxid += varint()
	}
	if flags&flagPzxid != 0 {
		st.pzxid += varint()
	}
	if flags&flagMtime != 0 {
		st.mtime += varint()
	}
	if flags&flagOwner != 0 {
		for k := range 8 {
			st.owner |= int64(n.rec[i+k]) << (8 * k)
		}
		i += 8
	}
	if flags&flagVersions != 0 {
		st.version, st.aversion = int32(varint()), int32(varint())
	}
	if flags&flagChildren != 0 {
		st.childCreates, st.numChildren = int32(uint32(uvarint())), int32(uint32(uvarint()))
	}
	return st, flags, i
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// uvarintString is binary.Uvarint of a string, without converting it. Records are built
// by newNode only, so the varint is well formed.
func uvarintString(s string) (uint64, int) {
	if s[0] < 0x80 {
		return uint64(s[0]), 1
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		b := s[i]
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1
		}
	}
	return v, len(s)
}

// emptyData is the data of a node whose data is empty, not null.
var emptyData = []byte{}

// Data returns the node's data: nil (null) is distinct from empty, as in ZooKeeper. It
// is shared with the tree: never modify it.
func (n Node) Data() []byte {
	_, flags, at := n.decode()
	return n.data(flags, at)
}

func (n Node) data(flags byte, at int) []byte {
	switch {
	case flags&flagNilData != 0:
		return nil
	case flags&flagRefData != 0:
		return n.ref.data
	case at == len(n.rec):
		return emptyData
	}
	return unsafe.Slice(unsafe.StringData(n.rec[at:]), len(n.rec)-at)
}

// dataLen returns the length of the node's data.
func (n Node) dataLen(flags byte, at int) int {
	if flags&flagRefData != 0 {
		return len(n.ref.data)
	}
	return len(n.rec) - at
}

// ACL returns the node's ACL. The list is shared: never modify it.
func (n Node) ACL() []wire.ACL { return n.ref.acl() }

// acl returns r's list; a nil r (a node without an ACL, which only a snapshot can
// give) has none.
func (r *nodeRef) acl() []wire.ACL {
	if r == nil {
		return nil
	}
	return r.list
}

// The stat fields one at a time. Each decodes the record: a caller that wants several
// takes Stat (or, inside the package, decode) once.

// Mzxid returns the zxid of the txn that last changed the node's data.
func (n Node) Mzxid() int64 { st, _, _ := n.decode(); return st.mzxid }

// Pzxid returns the zxid of the txn that last changed the node's children.
func (n Node) Pzxid() int64 { st, _, _ := n.decode(); return st.pzxid }

// Mtime returns the time in ms of the node's last data change.
func (n Node) Mtime() int64 { st, _, _ := n.decode(); return st.mtime }

// Version returns the node's data version.
func (n Node) Version() int32 { st, _, _ := n.decode(); return st.version }

// Aversion returns the node's ACL version.
func (n Node) Aversion() int32 { st, _, _ := n.decode(); return st.aversion }

// Owner returns the raw ephemeral owner: 0, a session id, ContainerOwner or a TTL marker.
func (n Node) Owner() int64 { st, _, _ := n.decode(); return st.owner }

// Kind classifies the node by its raw owner.
func (n Node) Kind() Kind { return kindOf(n.Owner()) }

func kindOf(owner int64) Kind {
	switch {
	case owner == 0:
		return Persistent
	case owner == ContainerOwner:
		return Container
	case owner&ttlOwnerMask == ttlOwnerMask:
		return TTL
	}
	return Ephemeral
}

// TTL returns a TTL node's time to live in milliseconds, or 0.
func (n Node) TTL() int64 {
	owner := n.Owner()
	if kindOf(owner) != TTL {
		return 0
	}
	return owner &^ ttlOwnerMask
}

// NumChildren returns the number of children.
func (n Node) NumChildren() int { st, _, _ := n.decode(); return int(st.numChildren) }

// ChildCreates returns the number of children ever created under n (the raw child counter).
func (n Node) ChildCreates() int32 { st, _, _ := n.decode(); return st.childCreates }

// Stat returns the client-visible stat, computed as DataNode.copyStat does.
func (n Node) Stat() wire.Stat {
	_, st := n.DataStat()
	return st
}

// DataStat returns the node's data (as Data) and stat (as Stat), decoding the record once:
// what a getData answers.
func (n Node) DataStat() ([]byte, wire.Stat) {
	st, flags, at := n.decode()
	owner := st.owner
	if k := kindOf(owner); k == Container || k == TTL {
		owner = 0
	}
	return n.data(flags, at), wire.Stat{
		Czxid:          st.czxid,
		Mzxid:          st.mzxid,
		Ctime:          st.ctime,
		Mtime:          st.mtime,
		Version:        st.version,
		Cversion:       st.childCreates*2 - st.numChildren, // creates + deletes; wraps as Java's int
		Aversion:       st.aversion,
		EphemeralOwner: owner,
		DataLength:     int32(n.dataLen(flags, at)),
		NumChildren:    st.numChildren,
		Pzxid:          st.pzxid,
	}
}

// withStat returns a copy of n, its data kept, with its stat changed by change.
func (n Node) withStat(change func(*stat)) Node {
	st, flags, at := n.decode()
	change(&st)
	return build(n.parent, n.name(), n.data(flags, at), &st, n.ref.aclRef())
}

// withData returns a copy of n with data and its stat changed by change.
func (n Node) withData(data []byte, change func(*stat)) Node {
	st, _, _ := n.decode()
	change(&st)
	return build(n.parent, n.name(), data, &st, n.ref.aclRef())
}

// aclRef returns the interned nodeRef of r's list: r, or for a node's own nodeRef, the
// one it was made from.
func (r *nodeRef) aclRef() *nodeRef {
	if r != nil && r.data != nil {
		return r.interned
	}
	return r
}
