package datatree

import (
	"slices"

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

// Node is one znode. A Node is owned by its Tree: read it only while the tree cannot
// change (the server holds the tree lock), never keep it past that, never modify it.
type Node struct {
	Data     []byte // nil (null) is distinct from empty, as in ZooKeeper
	ACL      []wire.ACL
	Czxid    int64
	Mzxid    int64
	Pzxid    int64
	Ctime    int64 // ms
	Mtime    int64 // ms
	Version  int32
	Aversion int32
	// Owner is the raw ephemeral owner: 0, a session id, ContainerOwner or a TTL marker.
	Owner int64
	// childCreates is ZooKeeper's stored cversion: the number of children ever created.
	// It names sequential children and gives the visible cversion.
	childCreates int32
	children     map[string]struct{}
}

// Kind classifies the node by its raw owner.
func (n *Node) Kind() Kind {
	switch {
	case n.Owner == 0:
		return Persistent
	case n.Owner == ContainerOwner:
		return Container
	case n.Owner&ttlOwnerMask == ttlOwnerMask:
		return TTL
	}
	return Ephemeral
}

// TTL returns a TTL node's time to live in milliseconds, or 0.
func (n *Node) TTL() int64 {
	if n.Kind() != TTL {
		return 0
	}
	return n.Owner &^ ttlOwnerMask
}

// NumChildren returns the number of children.
func (n *Node) NumChildren() int { return len(n.children) }

// ChildCreates returns the number of children ever created under n (the raw child counter).
func (n *Node) ChildCreates() int32 { return n.childCreates }

// Children returns the child names in lexicographic order. ZooKeeper's order is that of
// a HashSet, i.e. unspecified; sorted is deterministic and what clients sort to anyway.
func (n *Node) Children() []string {
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Stat returns the client-visible stat, computed as DataNode.copyStat does.
func (n *Node) Stat() wire.Stat {
	owner := n.Owner
	if k := n.Kind(); k == Container || k == TTL {
		owner = 0
	}
	return wire.Stat{
		Czxid:          n.Czxid,
		Mzxid:          n.Mzxid,
		Ctime:          n.Ctime,
		Mtime:          n.Mtime,
		Version:        n.Version,
		Cversion:       n.childCreates*2 - int32(len(n.children)), // creates + deletes; wraps as Java's int
		Aversion:       n.Aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.Data)),
		NumChildren:    int32(len(n.children)),
		Pzxid:          n.Pzxid,
	}
}
