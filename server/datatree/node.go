package datatree

import "github.com/paddock/paddock/server/wire"

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
// mutation puts a modified copy in its place, so a reader may keep a *Node after the tree
// lock is released, and a snapshot shares the nodes of the live tree until they change.
type Node struct {
	Path     string
	Data     []byte   // nil (null) is distinct from empty, as in ZooKeeper
	acl      *aclList // interned: nodes with equal ACLs share one
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
	numChildren  int32
}

// ACL returns the node's ACL. The list is shared: never modify it.
func (n *Node) ACL() []wire.ACL {
	if n.acl == nil {
		return nil
	}
	return n.acl.list
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
func (n *Node) NumChildren() int { return int(n.numChildren) }

// ChildCreates returns the number of children ever created under n (the raw child counter).
func (n *Node) ChildCreates() int32 { return n.childCreates }

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
		Cversion:       n.childCreates*2 - n.numChildren, // creates + deletes; wraps as Java's int
		Aversion:       n.Aversion,
		EphemeralOwner: owner,
		DataLength:     int32(len(n.Data)),
		NumChildren:    n.numChildren,
		Pzxid:          n.Pzxid,
	}
}
