package quorum

import (
	"fmt"
	"net"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/server/store"
)

// Config is one member's view of the ensemble. It is immutable after New.
type Config struct {
	// ID is this member's id (ZooKeeper's myid); not zero.
	ID uint64
	// Voters and Learners map every member's id to its peer address (host:port).
	// Learners are ZooKeeper's observers: they replicate but do not vote. Every
	// member must be given the same two maps: they are the initial membership
	// written to a new member's log.
	Voters   map[uint64]string
	Learners map[uint64]string
	// Dir keeps the member's Raft log (Dir/log, a server/store WAL) and snapshots
	// (Dir/snap, server/store snapshot files). Required.
	Dir string
	// FS is the file system Dir is on; nil means the operating system's (tests pass
	// internal/faultfs).
	FS store.FS
	// SegmentSize is the size of the log's segment files; 0 means
	// store.DefaultSegmentSize.
	SegmentSize int64
	// SplitLegacySnapshot lets a directory of the previous format be converted at
	// start (StorageConfig.SplitLegacySnapshot).
	SplitLegacySnapshot func(data []byte, fn func(record []byte) error) error
	// Listener, if set, is used instead of listening on this member's address
	// (tests listen on 127.0.0.1:0 before they know every address).
	Listener net.Listener
	// Network, if set, carries the member's messages instead of TCP on its peer
	// address (Listener, TLS and the addresses in Voters and Learners are then not
	// used by the transport): an Inmem network in tests.
	Network Network
	// Tick is the Raft tick (ZooKeeper's tickTime plays this role).
	Tick time.Duration
	// Ticks, if set, replaces the clock: the member's Raft ticks once for each value
	// received, and never on its own, so that a test drives elections and heartbeats
	// by ticking. Tick still bounds how long a peer's message may wait to be stepped
	// and how often ReadIndex asks again.
	Ticks <-chan struct{}
	// ElectionTicks and HeartbeatTicks are in Ticks; ElectionTicks > HeartbeatTicks.
	ElectionTicks  int
	HeartbeatTicks int
	// Applied is the index up to which the caller's state machine already holds the
	// log (from its snapshot): entries at or below it are not passed to Apply again.
	Applied uint64
	// Snapshotter, if set, lets the member compact its log: every SnapshotEntries
	// applied entries it takes the state machine's snapshot, keeps it durably and
	// drops the log before it but for the KeepEntries last entries held in memory
	// for slow followers. A member without one never compacts, and stops with an
	// error if the leader sends it a snapshot or its directory holds one newer
	// than Applied.
	Snapshotter     Snapshotter
	SnapshotEntries uint64
	KeepEntries     uint64
	// SendQueue bounds each peer's outbound queue, in messages.
	SendQueue int
	// Join makes a member with an empty log wait to be added by a configuration
	// change (ProposeConfChange on a member of the running ensemble) instead of
	// writing the initial membership: a new member of an existing ensemble.
	Join bool
	// OnConfChange, if set, is called on the apply loop for every configuration change
	// applied, in log order with ApplyFunc's entries: the change's context as given to
	// ProposeConfChange (nil for the initial membership and for Raft's own entries)
	// and the membership after it.
	OnConfChange func(c *ConfEntry)
	// OnNewTerm, if set, is called on the apply loop, in log order with ApplyFunc's
	// entries, before the first entry of a term above every term applied before it —
	// of any kind: the empty entry a new leader appends, a membership change, a
	// proposal — at an index above Applied. Every member is called at the same places
	// of the log, a member restored from a snapshot included (the snapshot's term
	// counts as applied), so a state machine can count leaderships in it: the server
	// counts its zxid epochs so.
	OnNewTerm func(term uint64)
	// OnNote, if set, receives the notes other members send with SendNote, on a
	// connection's read goroutine: it must not block. from is the member whose
	// connection carried it (with TLS, the one its certificate proves). An error says
	// the note did not decode; it is counted and dropped.
	OnNote func(from uint64, data []byte) error
	// TLS, if set, secures the peer link with mutual TLS. Without it the link is plain
	// TCP and unauthenticated: anyone who reaches the peer port can speak as any
	// member, and the member logs a warning saying so.
	TLS *TLS
	// MaxEntryBytes bounds the data of one proposal: the leader refuses larger ones from
	// other members, Propose and Submit refuse them here, and the peer protocol's frame
	// bound derives from it.
	MaxEntryBytes int
	// CheckEntry, if set, checks the data (after the proposal header) of a proposal
	// member from sends, before the leader puts it in the log: an error refuses it. It
	// runs on a connection's read goroutine and must not block.
	CheckEntry func(from uint64, data []byte) error
	// CheckConfChange, if set, checks the caller's context of a membership change with
	// the membership the change makes: when a member proposes it, when the leader
	// receives it, and when it is applied — where a change it refuses is skipped, alike
	// on every member, as it must be deterministic.
	CheckConfChange func(context []byte, after *raftpb.ConfState) error
	// SnapshotLimit, if set, bounds the records of a snapshot a leader streams to this
	// member, in bytes; it is asked as each snapshot starts, so that the bound can
	// follow the member's own state (server/replica.go). A larger snapshot is refused
	// before it is whole, its connection closed, and nothing of it kept. Nil:
	// MaxSnapshotBytes, which 0 makes unbounded.
	SnapshotLimit    func() int64
	MaxSnapshotBytes int64
	// MaxSizePerMsg and MaxInflightMsgs are Raft's flow control knobs.
	MaxSizePerMsg   uint64
	MaxInflightMsgs int
	// OnStage, if set, is told how long each stage of the write path took (d), and for
	// StageAppend and StageApply how many entries it covered. It is called from the
	// member's loops and must be quick (a histogram's Observe).
	OnStage func(stage Stage, d time.Duration, entries int)

	timeouts *peerTimeouts // tests shorten the peer connections' timeouts
}

// DefaultConfig returns a Config with the timing and limits filled in; ID, Voters,
// Learners and Dir are the caller's.
func DefaultConfig() Config {
	return Config{
		Tick:            100 * time.Millisecond,
		ElectionTicks:   10,
		HeartbeatTicks:  1,
		SendQueue:       4096,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		SnapshotEntries: 10000,
		KeepEntries:     5000,
		MaxEntryBytes:   8 << 20,
		// A state machine whose snapshot is larger sets SnapshotLimit.
		MaxSnapshotBytes: 1 << 30,
	}
}

// Validate says what is wrong with c, naming the field.
func (c *Config) Validate() error {
	switch {
	case c.ID == 0:
		return fmt.Errorf("quorum: id: must not be 0")
	case c.Dir == "":
		return fmt.Errorf("quorum: dir: must name the member's directory")
	case c.SegmentSize != 0 && (c.SegmentSize < store.MinSegmentSize || c.SegmentSize > store.MaxSegmentSize):
		return fmt.Errorf("quorum: segment_size %d: must be 0 or in [%d, %d]", c.SegmentSize, store.MinSegmentSize, store.MaxSegmentSize)
	case len(c.Voters) == 0:
		return fmt.Errorf("quorum: voters: at least one voter is required")
	case c.Tick <= 0:
		return fmt.Errorf("quorum: tick %v: must be > 0", c.Tick)
	case c.HeartbeatTicks <= 0 || c.ElectionTicks <= c.HeartbeatTicks:
		return fmt.Errorf("quorum: election_ticks %d, heartbeat_ticks %d: need election > heartbeat > 0",
			c.ElectionTicks, c.HeartbeatTicks)
	case c.Snapshotter != nil && c.SnapshotEntries == 0:
		return fmt.Errorf("quorum: snapshot_entries 0: must be > 0 with a snapshotter")
	case c.SendQueue <= 0:
		return fmt.Errorf("quorum: send_queue %d: must be > 0", c.SendQueue)
	case c.MaxEntryBytes < 1024 || c.MaxEntryBytes > maxFrame/2:
		return fmt.Errorf("quorum: max_entry_bytes %d: must be in [1024, %d]", c.MaxEntryBytes, maxFrame/2)
	}
	for id := range c.Learners {
		if _, ok := c.Voters[id]; ok || id == 0 {
			return fmt.Errorf("quorum: learners: id %d is also a voter or 0", id)
		}
	}
	if _, ok := c.Voters[0]; ok {
		return fmt.Errorf("quorum: voters: id 0 is not allowed")
	}
	_, voter := c.Voters[c.ID]
	_, learner := c.Learners[c.ID]
	if !voter && !learner && !c.Join {
		return fmt.Errorf("quorum: id %d: not among voters or learners", c.ID)
	}
	return nil
}

// frameLimits returns the bounds of the peer protocol's frames: a raft message holds at
// most MaxSizePerMsg of entries, or one entry larger than that, plus its fields; a
// snapshot message holds metadata only, its records coming in chunks.
func (c *Config) frameLimits() frameLimits {
	raft := max(int(c.MaxSizePerMsg), c.MaxEntryBytes) + 1<<20
	return frameLimits{raft: raft, snap: raft, note: noteLimit, chunk: chunkLimit(c.MaxEntryBytes)}
}

// others maps every member but this one to its address.
func (c *Config) others() map[uint64]string {
	m := make(map[uint64]string)
	for _, set := range []map[uint64]string{c.Voters, c.Learners} {
		for id, a := range set {
			if id != c.ID {
				m[id] = a
			}
		}
	}
	return m
}

// Stage is a step of the write path a member times for Config.OnStage.
type Stage int

const (
	// StageAppend is one write of the log: the entries and hard states of the
	// MsgStorageAppends waiting, and their fdatasync.
	StageAppend Stage = iota
	// StageReplicate, on the leader, is from handing entries to its log (and sending
	// them to the followers) to knowing them committed.
	StageReplicate
	// StageApply is from Raft handing over committed entries to their being applied
	// (the wait in the apply loop's queue included).
	StageApply
)

// snapshotLimit returns the bound on the next received snapshot's records (0: none).
func (c *Config) snapshotLimit() int64 {
	if c.SnapshotLimit != nil {
		return c.SnapshotLimit()
	}
	return c.MaxSnapshotBytes
}
