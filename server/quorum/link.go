package quorum

import "go.etcd.io/raft/v3/raftpb"

// Link is what a Node needs of its transport: it sends Raft messages and notes to
// its peers, is told of membership changes, and is closed with the Node. The TCP
// Transport is one; Inmem attaches others. Send and SendNote must not block (a
// message that cannot be queued is dropped, and Raft retransmits) and are called
// concurrently; Close is idempotent and returns once nothing more is delivered.
type Link interface {
	// Send sends each message to its To.
	Send(msgs []*raftpb.Message)
	// SendNote sends data to member to, outside the Raft log, best effort.
	SendNote(to uint64, data []byte)
	// SetPeers makes peers (id → address, this member left out) the members
	// messages go to and are accepted from.
	SetPeers(peers map[uint64]string)
	Close() error
}

// Delivery is how a Link hands on what arrives for its member. Message runs the
// checks in front of Raft (validate.go) before stepping Raft, so a Link passes every
// message through it, with from the member the link knows sent it (never a field of
// the message). None of them blocks for long.
type Delivery struct {
	Message     func(from uint64, m *raftpb.Message)
	Note        func(from uint64, data []byte)
	Unreachable func(id uint64) // a message to member id could not be sent
	// Gone, if set, is told that member id's peer port refused a connection: no
	// process listens there, so the member is down (not just out of reach).
	Gone func(id uint64)
	// Snapshot gets a MsgSnap (metadata only) with the records of its snapshot file,
	// streamed from the sender (snapstream.go); it runs the checks Message does.
	Snapshot func(from uint64, m *raftpb.Message, records ReadFunc)
	// SnapshotRecords reads this member's snapshot file at index, for a MsgSnap it
	// sends.
	SnapshotRecords func(index uint64) ReadFunc
}

// Network attaches members to a transport other than TCP (Config.Network).
type Network interface {
	// Attach starts member self's Link with its peers (id → address, self left out),
	// handing what arrives for it to d.
	Attach(self uint64, peers map[uint64]string, d Delivery) (Link, error)
}

var (
	_ Link    = (*Transport)(nil)
	_ Link    = (*inmemLink)(nil)
	_ Network = (*Inmem)(nil)
)
