package quorum

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Errors of the package.
var (
	ErrClosed = errors.New("quorum: node closed")
	ErrEmpty  = errors.New("quorum: empty proposal")
	// ErrTooLarge refuses a proposal over Config.MaxEntryBytes.
	ErrTooLarge = errors.New("quorum: proposal too large")
	// ErrRefused says a membership change was refused: it cannot apply to the
	// membership, or Config.CheckConfChange refused it.
	ErrRefused = errors.New("quorum: membership change refused")
)

// proposalHeader is the size of the header Propose puts before the caller's data:
// the proposing member's id and a sequence number, both uint64 big-endian, so that the
// proposer recognises its entry when it is applied.
const proposalHeader = 16

// Entry is a committed proposal as ApplyFunc receives it.
type Entry struct {
	Index, Term uint64
	// From and Seq identify the proposal: the proposing member's id and the sequence
	// number Submit returned to it.
	From, Seq uint64
	// Data is the proposal as given to Propose or Submit; it must not be retained.
	Data []byte
}

// ConfEntry is an applied configuration change as OnConfChange receives it.
type ConfEntry struct {
	Index, Term uint64
	Context     []byte // the caller's context; must not be retained
	State       *raftpb.ConfState
}

// ApplyFunc receives the committed entries, in log order, each exactly once per
// state machine (entries at or below Config.Applied are skipped). It runs on the apply
// loop (loops.go): it must not block on the Node.
type ApplyFunc func(e *Entry)

// Role is a member's part in the ensemble at a moment.
type Role int

const (
	RoleFollower Role = iota // a voter that is not leading (or is campaigning)
	RoleLeader
	RoleLearner // an observer: replicates, does not vote
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleLearner:
		return "learner"
	default:
		return "follower"
	}
}

// Status is a snapshot of a member's state.
type Status struct {
	ID, Leader uint64 // Leader is 0 when unknown
	Term       uint64
	Role       Role
	Commit     uint64 // the highest index known committed
	Applied    uint64 // the highest index applied (or skipped as already applied)
	// On the leader only: the other voters and the learners, and how many of each
	// have replicated the log up to the commit index.
	Followers, SyncedFollowers int
	Learners, SyncedLearners   int
}

// Node is one member's Raft. Its Ready loop drives Raft and sends; its append loop
// persists and its apply loop applies (loops.go);
// Propose and ReadIndex are safe for concurrent use; Close is idempotent.
type Node struct {
	cfg       Config
	id        uint64
	apply     ApplyFunc
	logger    *slog.Logger
	storage   Storage
	rn        *raft.RawNode // owned by the Ready loop (inbox.go)
	in        mailbox
	spare     []inboxItem // the Ready loop's spare inbox buffer
	transport Link        // the TCP Transport, or what Config.Network attached

	seq     atomic.Uint64 // last proposal / read request number; starts at the clock
	applied atomic.Uint64 // written by the apply loop only
	leader  atomic.Uint64 // the leader as of the last Ready's SoftState; 0: none known
	changed chan struct{} // signalled (capacity 1) when the leader or the role changes
	// hastened is the term in which peerGone last advanced the election clock.
	hastened atomic.Uint64
	// ticks counts the member's Raft ticks; catchUpAt is the tick from which it may
	// climb toward a term past MaxTermJump again (validate.go).
	ticks     atomic.Uint64
	catchUpAt atomic.Uint64

	// What the checks in front of Raft (validate.go) read of the Ready loop's state.
	term      atomic.Uint64                    // the term as of the last Ready's HardState
	commit    atomic.Uint64                    // the commit index as of the last Ready's HardState
	lastIndex atomic.Uint64                    // the log's last index as of the last Ready
	conf      atomic.Pointer[raftpb.ConfState] // the membership as of the applied index
	counters  counters
	refusals  *limitedLog // logs refused peer input, rate-limited
	// pending counts the Readies and the loops' work received and not yet done, handled
	// what was done. Tests stepping members read them to let them settle.
	pending atomic.Int64
	handled atomic.Uint64

	mu        sync.Mutex             // guards the fields below
	waiters   map[uint64]chan uint64 // proposal seq → applied index
	reads     map[uint64]chan uint64 // read request id → read index
	appliedCh chan struct{}          // closed and replaced whenever applied grows
	learners  map[uint64]bool        // from the latest applied ConfState

	// Owned by the Ready loop.
	leading  bool        // the last SoftState said leader
	appended []indexTime // on the leader: when entries were handed to the log, oldest first

	// Owned by the apply loop (and newNode before it starts).
	confState   *raftpb.ConfState // the membership as of the applied index
	appliedTerm uint64            // the term of the last entry applied (or snapshot restored)

	// Owned by the append loop.
	savedHS *raftpb.HardState // the last hard state written

	snapIndex atomic.Uint64 // index of the latest snapshot taken or restored
	writing   atomic.Bool   // a snapshot is being written (snapDone will say when)

	appendq  *queue[*raftpb.Message] // MsgStorageAppends for the append loop (loops.go)
	applyq   *queue[applyJob]        // MsgStorageApplies and restores for the apply loop
	snapDone chan snapWritten        // the snapshot writer's result (capacity 1: one writer at a time)
	snapWG   sync.WaitGroup          // the snapshot writer, waited for by Close
	loops    sync.WaitGroup          // the append and apply loops

	stop     chan struct{} // closed by Close: the loops end
	failed   chan struct{} // closed by fail: a loop could not go on
	failOnce sync.Once
	done     chan struct{} // closed when the Ready loop has ended
	closeMu  sync.Mutex    // serialises Close
	closed   bool
	err      error // why the member stopped early, guarded by mu
}

// indexTime is when the leader handed the entries up to index to its log.
type indexTime struct {
	index uint64
	at    time.Time
}

// New starts member cfg.ID: it opens its storage (writing the initial membership to
// a new one), starts its transport and its loops. apply gets the committed
// entries.
func New(cfg Config, apply ApplyFunc, logger *slog.Logger) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	st, err := OpenStorage(StorageConfig{Dir: cfg.Dir, FS: cfg.FS, SegmentSize: cfg.SegmentSize,
		SplitLegacySnapshot: cfg.SplitLegacySnapshot}, logger)
	if err != nil {
		return nil, err
	}
	n, err := newNode(cfg, st, apply, logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	return n, nil
}

// newNode starts a member on st, which it then owns.
func newNode(cfg Config, st Storage, apply ApplyFunc, logger *slog.Logger) (*Node, error) {
	if err := bootstrap(cfg, st); err != nil {
		return nil, err
	}
	ln, err := listen(cfg)
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, id: cfg.ID, apply: apply, logger: logger.With("member", cfg.ID), storage: st,
		waiters: make(map[uint64]chan uint64), reads: make(map[uint64]chan uint64),
		appliedCh: make(chan struct{}), learners: make(map[uint64]bool),
		stop: make(chan struct{}), failed: make(chan struct{}), done: make(chan struct{}),
		changed: make(chan struct{}, 1), snapDone: make(chan snapWritten, 1),
		appendq: newQueue[*raftpb.Message](), applyq: newQueue[applyJob](), in: newMailbox(),
	}
	n.refusals = newLimitedLog(n.logger)
	n.seq.Store(uint64(time.Now().UnixNano()))
	last, err := st.LastIndex()
	if err != nil {
		closeListener(ln)
		return nil, fmt.Errorf("quorum: read storage: %w", err)
	}
	n.lastIndex.Store(last)
	hs, _, err := st.InitialState()
	if err != nil {
		closeListener(ln)
		return nil, fmt.Errorf("quorum: read storage: %w", err)
	}
	n.term.Store(hs.GetTerm()) // the checks bound a peer's term by the member's (validate.go)
	n.commit.Store(hs.GetCommit())
	if err := n.loadSnapshot(); err != nil {
		closeListener(ln)
		return nil, err
	}
	// The Raft log is replayed from its start or from its snapshot (Applied 0 means
	// the snapshot's index to Raft) so that its conf changes rebuild the membership
	// on top of the snapshot's; cfg.Applied only hides entries from apply.
	n.rn, err = raft.NewRawNode(&raft.Config{
		ID: cfg.ID, ElectionTick: cfg.ElectionTicks, HeartbeatTick: cfg.HeartbeatTicks,
		Storage: st, MaxSizePerMsg: cfg.MaxSizePerMsg, MaxInflightMsgs: cfg.MaxInflightMsgs,
		MaxCommittedSizePerReady:  maxApplying,
		MaxUncommittedEntriesSize: 64 << 20,
		AsyncStorageWrites:        true, // loops.go
		PreVote:                   true, CheckQuorum: true,
		StepDownOnRemoval: true, // a leader removed from the ensemble stops leading at once
		Logger:            raftLogger{n.logger},
	})
	if err != nil {
		closeListener(ln)
		return nil, fmt.Errorf("quorum: start raft: %w", err)
	}
	if n.transport, err = n.attach(ln); err != nil {
		return nil, err
	}
	n.loops.Add(2)
	go n.appendLoop()
	go n.applyLoop()
	go n.run()
	return n, nil
}

// listen opens the member's peer listener for the TCP transport: Config.Listener, or
// its address. With Config.Network there is none.
func listen(cfg Config) (net.Listener, error) {
	if cfg.Network != nil || cfg.Listener != nil {
		return cfg.Listener, nil
	}
	addr := cfg.Voters[cfg.ID]
	if addr == "" {
		addr = cfg.Learners[cfg.ID]
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("quorum: peer address %s of server.%d: the address is in use by another process (another member or ZooKeeper?): %w",
				addr, cfg.ID, syscall.EADDRINUSE)
		}
		return nil, fmt.Errorf("quorum: peer address of server.%d: %w", cfg.ID, err)
	}
	return ln, nil
}

func closeListener(ln net.Listener) {
	if ln != nil {
		ln.Close()
	}
}

// attach starts the member's link to its peers: Config.Network's, or the TCP
// Transport on ln. Either way what arrives goes through receive, the checks in front
// of Raft.
func (n *Node) attach(ln net.Listener) (Link, error) {
	d := Delivery{Message: n.receive, Note: n.onNote, Unreachable: n.unreachable, Gone: n.peerGone,
		Snapshot: n.receiveSnapshot, SnapshotRecords: n.storage.SnapshotRecords}
	if n.cfg.Network != nil {
		closeListener(ln) // a Listener given as well is not used
		l, err := n.cfg.Network.Attach(n.id, n.cfg.others(), d)
		if err != nil {
			return nil, fmt.Errorf("quorum: attach member %d to its network: %w", n.id, err)
		}
		return l, nil
	}
	tc := transportConfig{
		self: n.id, peers: n.cfg.others(), queueLen: n.cfg.SendQueue, limits: n.cfg.frameLimits(),
		recv: d.Message, onNote: d.Note, unreachable: d.Unreachable, gone: d.Gone,
		recvSnap: d.Snapshot, snapshot: d.SnapshotRecords, maxSnapshot: n.cfg.snapshotLimit,
		counters: &n.counters, refusals: n.refusals, logger: n.logger, timeouts: defaultTimeouts,
	}
	if n.cfg.timeouts != nil {
		tc.timeouts = *n.cfg.timeouts
	}
	if n.cfg.TLS != nil {
		tc.tls = newPeerTLS(n.cfg.TLS)
	} else {
		n.logger.Warn("the peer port is unauthenticated: anyone who can reach it can act as a member "+
			"of the ensemble; configure member TLS (sslQuorum, docs/security.md)", "peer_addr", ln.Addr().String())
	}
	return newTransport(ln, tc), nil
}

// bootstrap writes the initial membership to an empty storage: one committed conf
// change entry per member in term 1, voters then learners, each by ascending id, so
// that every member starts from the same log.
func bootstrap(cfg Config, st Storage) error {
	last, err := st.LastIndex()
	if err != nil {
		return fmt.Errorf("quorum: read storage: %w", err)
	}
	if last > 0 || cfg.Join {
		return nil
	}
	var ents []*raftpb.Entry
	add := func(set map[uint64]string, typ raftpb.ConfChangeType) error {
		for _, id := range slices.Sorted(mapsKeys(set)) {
			data, err := proto.Marshal(&raftpb.ConfChange{Type: typ.Enum(), NodeId: new(id)})
			if err != nil {
				return err
			}
			idx := uint64(len(ents) + 1)
			ents = append(ents, &raftpb.Entry{Type: raftpb.EntryConfChange.Enum(),
				Term: new(uint64(1)), Index: new(idx), Data: data})
		}
		return nil
	}
	if err := add(cfg.Voters, raftpb.ConfChangeAddNode); err != nil {
		return err
	}
	if err := add(cfg.Learners, raftpb.ConfChangeAddLearnerNode); err != nil {
		return err
	}
	hs := &raftpb.HardState{Term: new(uint64(1)), Commit: new(uint64(len(ents)))}
	if err := st.Save(hs, ents, nil, true); err != nil {
		return fmt.Errorf("quorum: bootstrap: %w", err)
	}
	return nil
}

func mapsKeys(m map[uint64]string) func(func(uint64) bool) {
	return func(yield func(uint64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// receive hands a message from member from's connection to Raft, once the checks in
// front of Raft have passed it.
func (n *Node) receive(from uint64, m *raftpb.Message) {
	if m.GetType() == raftpb.MsgSnap {
		// A snapshot comes with its records (receiveSnapshot), which Save installs:
		// one without them, stepped, would leave nothing to install.
		n.counters.messagesDropped.Add(1)
		n.refusals.warn("peer message dropped", "from", from, "type", m.GetType().String(),
			"err", "a snapshot message without its records")
		return
	}
	if n.admit(from, m) {
		n.stepPeer(m)
	}
}

// receiveSnapshot keeps the snapshot a leader streams (records) on disk, once the
// checks in front of Raft have passed its message, and then hands Raft the message.
// It runs on the connection's goroutine: the Ready loop, and the member's clients, go
// on meanwhile; they switch to the snapshot only once Raft hands it out.
func (n *Node) receiveSnapshot(from uint64, m *raftpb.Message, records ReadFunc) {
	if !n.admit(from, m) {
		return
	}
	md := m.GetSnapshot().GetMetadata()
	var check func(ReadFunc) error
	if c, ok := n.cfg.Snapshotter.(SnapshotChecker); ok {
		check = func(read ReadFunc) error { return c.CheckSnapshot(read, md) }
	}
	if err := n.storage.Receive(md, bounded(records, n.cfg.snapshotLimit()), check); err != nil {
		n.counters.snapshotsRefused.Add(1)
		n.refusals.warn("peer snapshot refused", "from", from, "index", md.GetIndex(), "err", err)
		return
	}
	n.stepPeer(m)
}

// bounded reads records until they pass limit bytes (0: no bound), then fails: what
// a peer streams is refused before it is whole, whatever link carried it.
func bounded(records ReadFunc, limit int64) ReadFunc {
	if limit <= 0 {
		return records
	}
	return func(fn func([]byte) error) error {
		var total int64
		return records(func(p []byte) error {
			if total += int64(len(p)); total > limit {
				return fmt.Errorf("snapshot larger than %d bytes, the most this member takes now", limit)
			}
			return fn(p)
		})
	}
}

// admit runs the checks in front of Raft on a message of member from's, counting and
// logging what they refuse.
func (n *Node) admit(from uint64, m *raftpb.Message) bool {
	if t := m.GetType(); (t == raftpb.MsgProp || t == raftpb.MsgReadIndex) && n.leader.Load() != n.id {
		// Members send these to the leader they know; one that is not the leader any
		// more does not forward them (raft would, keeping the original sender, whom the
		// next member's checks then refuse). The sender retries with the new leader.
		n.logger.Debug("request for the leader dropped: not leading", "from", from, "type", t.String())
		return false
	}
	if err := n.view().check(from, m); err != nil {
		if m.GetType() == raftpb.MsgProp {
			n.counters.proposalsRefused.Add(1)
			n.refusals.warn("proposal refused", "from", from, "err", err)
		} else {
			n.counters.messagesDropped.Add(1)
			n.refusals.warn("peer message dropped", "from", from, "type", m.GetType().String(), "err", err)
		}
		if errors.Is(err, errCommittedConflict) {
			n.counters.committedConflicts.Add(1)
			n.refusals.error("an append conflicts with entries this member committed: a log was forged",
				"from", from, "index", m.GetIndex(), "log_term", m.GetLogTerm())
		}
		return false
	}
	return true
}

// stepPeer hands a peer's message to Raft, through the inbox (it waits while the
// inbox holds maxInbox peers' messages).
func (n *Node) stepPeer(m *raftpb.Message) { n.enqueue(m, true) }

// unreachable tells Raft that a message to member id could not be sent.
func (n *Node) unreachable(id uint64) {
	n.do(func(rn *raft.RawNode) { rn.ReportUnreachable(id) })
}

// view is what the checks in front of Raft see of the member now.
func (n *Node) view() *checkView {
	v := &checkView{
		self: n.id, term: n.term.Load(), catchUp: n.climb, lastIndex: n.lastIndex.Load(), leader: n.leader.Load(),
		commit: n.commit.Load(), termAt: n.termAt,
		conf: n.conf.Load(), entry: n.cfg.CheckEntry, confCtx: n.cfg.CheckConfChange,
		maxEntry: n.cfg.MaxEntryBytes + proposalHeader,
	}
	return v
}

// climb raises the member's term toward term, a peer's message's past MaxTermJump,
// once an election timeout of ticks and by at most TermCatchUp (validate.go), and
// returns the term the member will be at when the message is stepped. It raises the
// term as a message of from's in the new term that Raft takes for nothing more — an
// append answer, which a follower ignores once it has the term — queued before the
// message itself.
func (n *Node) climb(from, term uint64) uint64 {
	own := n.term.Load()
	now, at := n.ticks.Load(), n.catchUpAt.Load()
	if now < at || !n.catchUpAt.CompareAndSwap(at, now+uint64(n.cfg.ElectionTicks)) {
		return own
	}
	to := min(term, own+TermCatchUp, MaxTerm)
	n.counters.termCatchUps.Add(1)
	n.refusals.warn("a peer is more terms ahead than a message may jump: climbing", "from", from,
		"term", own, "to", to, "peer_term", term)
	n.stepPeer(&raftpb.Message{Type: raftpb.MsgAppResp.Enum(), From: new(from), To: new(n.id), Term: new(to)})
	return to
}

// termAt returns the term of the entry at index in the member's stable log, if it holds
// it (not compacted, not only in Raft's memory).
func (n *Node) termAt(index uint64) (uint64, bool) {
	t, err := n.storage.Term(index)
	return t, err == nil
}

// tick ticks Raft, counting.
func (n *Node) tick() {
	n.ticks.Add(1)
	n.rn.Tick()
}

// peerGone hastens the election when the leader is down: its peer port refusing
// connections says its process is gone (killed, crashed, stopped), where silence
// could be a slow network. The member advances its election clock to one tick short
// of the election timeout, once per term, and so stands for election 1 to
// ElectionTicks ticks later instead of ElectionTicks to twice that. The other
// followers see the same refusal at about the same time, so their own clocks, which
// decide whether they still honour the old leader's lease (CheckQuorum), run out
// too. A refusal that lies (a leader whose listener alone is gone) costs an election,
// never safety.
func (n *Node) peerGone(id uint64) {
	if id == 0 || id == n.id || id != n.leader.Load() || n.cfg.Ticks != nil {
		return
	}
	term := n.term.Load()
	if n.hastened.Swap(term) == term {
		return
	}
	n.logger.Info("the leader's peer port refuses connections: election hastened", "leader", id, "term", term)
	n.do(func(rn *raft.RawNode) {
		for range n.cfg.ElectionTicks - 1 {
			rn.Tick()
		}
	})
}

// onNote hands a note to Config.OnNote, counting those it cannot decode.
func (n *Node) onNote(from uint64, data []byte) {
	if n.cfg.OnNote == nil {
		return
	}
	if err := n.cfg.OnNote(from, data); err != nil {
		n.counters.notesDropped.Add(1)
		n.refusals.warn("note dropped", "from", from, "err", err)
	}
}

// Counters returns what the member refused of its peers' input so far.
func (n *Node) Counters() Counters { return n.counters.snapshot() }

// run is the Ready loop: it ticks Raft, steps what the inbox holds (inbox.go) and
// handles each Ready (handleReady); the append and apply loops do the rest (loops.go).
func (n *Node) run() {
	defer close(n.done)
	var clock <-chan time.Time // nil with Config.Ticks: the caller ticks
	if n.cfg.Ticks == nil {
		ticker := time.NewTicker(n.cfg.Tick)
		defer ticker.Stop()
		clock = ticker.C
	}
	for {
		select {
		case <-clock:
			n.tick()
		case <-n.cfg.Ticks:
			n.tick()
		case <-n.in.wake:
		case <-n.failed:
			return
		case <-n.stop:
			return
		}
		if err := n.work(clock); err != nil {
			if !errors.Is(err, ErrClosed) {
				n.fail(err)
			}
			return
		}
	}
}

// work steps everything the inbox holds, then handles Raft's Ready, until there is
// neither. A tick due meanwhile is taken between rounds: under a steady stream of
// proposals or peers' messages the loop may not run dry for long, and a Raft that does
// not tick sends no heartbeats, runs no election timer, and, cut off as a leader, never
// steps down (CheckQuorum).
func (n *Node) work(clock <-chan time.Time) error {
	for {
		select {
		case <-clock:
			n.tick()
		case <-n.cfg.Ticks:
			n.tick()
		default:
		}
		items := n.in.take(n.spare)
		work := 0
		low := n.lastIndex.Load()
		for i, it := range items {
			if !it.query {
				work++
			}
			if it.m != nil {
				low = clampCommit(it.m, low)
			}
			if it.call != nil {
				it.call(n.rn)
			} else if err := n.rn.Step(it.m); err != nil {
				n.logger.Debug("step message", "from", it.m.GetFrom(), "type", it.m.GetType().String(), "err", err)
			}
			items[i] = inboxItem{}
		}
		n.spare = items[:0]
		// The Ready is counted before the items are counted done, so that pending
		// never reads 0 between the two while the member still has work.
		ready := n.rn.HasReady()
		if ready {
			n.pending.Add(1)
		}
		n.finished(work)
		if !ready {
			return nil
		}
		err := n.handleReady(n.rn.Ready())
		n.finished(1)
		if err != nil {
			return err
		}
	}
}

// clampCommit keeps a heartbeat from committing past the log's end, which makes Raft
// panic, and returns what the log's end is at least once m is stepped. The checks in
// front of Raft compare with the log as of the last Ready (checkView.lastIndex); within
// one batch, an append stepped before the heartbeat may have cut the log's uncommitted
// tail shorter (a leader replacing it, or one forged as the leader), so the batch
// carries low, a bound on the log's end that each append and snapshot can only lower:
// after an append the log ends at or past its last entry's index (at it when the append
// cut the tail), after a snapshot at or past its index.
func clampCommit(m *raftpb.Message, low uint64) uint64 {
	switch m.GetType() {
	case raftpb.MsgApp:
		return min(low, m.GetIndex()+uint64(len(m.GetEntries())))
	case raftpb.MsgSnap:
		return min(low, m.GetSnapshot().GetMetadata().GetIndex())
	case raftpb.MsgHeartbeat:
		if m.GetCommit() > low {
			m.Commit = new(low) // committing less is always safe: the next heartbeat says more
		}
	}
	return low
}

// handleReady does one Ready's work: it notes the term, the log's end and the leader;
// hands the entries and hard state to keep to the append loop and the committed
// entries to the apply loop; sends the other messages to the peers (the leader's
// appends go out before its own write is durable, Raft thesis §10.2.1; what must wait
// for durability Raft gives the append loop to send); and answers read states.
func (n *Node) handleReady(rd raft.Ready) error {
	n.noteLog(rd)
	if rd.SoftState != nil {
		n.leading = rd.SoftState.RaftState == raft.StateLeader
		n.leader.Store(rd.SoftState.Lead)
		if !n.leading {
			n.appended = n.appended[:0]
		}
		select {
		case n.changed <- struct{}{}:
		default:
		}
	}
	n.timeReplication(rd)
	peers := n.route(rd.Messages)
	n.transport.Send(peers)
	n.reportSnapshots(peers)
	for _, rs := range rd.ReadStates {
		n.readDone(rs)
	}
	return nil
}

// maxTimed bounds the leader's record of when its entries were appended.
const maxTimed = 4096

// timeReplication reports, on the leader, how long its entries took from being handed
// to its log (and sent to the followers) to being known committed (StageReplicate).
func (n *Node) timeReplication(rd raft.Ready) {
	if !n.leading || n.cfg.OnStage == nil {
		return
	}
	now := time.Now()
	if k := len(rd.CommittedEntries); k > 0 {
		committed := rd.CommittedEntries[k-1].GetIndex()
		i := 0
		for ; i < len(n.appended) && n.appended[i].index <= committed; i++ {
			n.cfg.OnStage(StageReplicate, now.Sub(n.appended[i].at), 0)
		}
		n.appended = append(n.appended[:0], n.appended[i:]...)
	}
	if k := len(rd.Entries); k > 0 && len(n.appended) < maxTimed {
		n.appended = append(n.appended, indexTime{rd.Entries[k-1].GetIndex(), now})
	}
}

// noteLog records the term and the last index the checks in front of Raft compare
// peers' messages with, before this Ready's messages go out: nothing a peer answers
// to them can then be taken for out of range.
func (n *Node) noteLog(rd raft.Ready) {
	if t := rd.HardState.GetTerm(); t > 0 {
		n.term.Store(t)
	}
	if c := rd.HardState.GetCommit(); c > n.commit.Load() {
		n.commit.Store(c)
	}
	switch {
	case len(rd.Entries) > 0:
		n.lastIndex.Store(rd.Entries[len(rd.Entries)-1].GetIndex())
	case rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot):
		n.lastIndex.Store(rd.Snapshot.GetMetadata().GetIndex())
	}
}

// applyCommitted applies the committed entries of a Ready in order, skipping those a
// snapshot restored before them covers.
func (n *Node) applyCommitted(ents []*raftpb.Entry) error {
	for _, e := range ents {
		if e.GetIndex() <= n.applied.Load() {
			continue
		}
		if err := n.applyEntry(e); err != nil {
			return err
		}
	}
	return nil
}

// applyEntry applies one committed entry: a conf change to Raft, a proposal to the
// state machine (unless already applied before), then answers its proposer. No entry
// stops the member: a conf change that cannot apply is skipped (by every member
// alike), and a proposal goes to the state machine whatever its bytes, which decides
// what an undecodable one means.
func (n *Node) applyEntry(e *raftpb.Entry) error {
	idx := e.GetIndex()
	if t := e.GetTerm(); t > n.appliedTerm {
		n.appliedTerm = t
		if n.cfg.OnNewTerm != nil && idx > n.cfg.Applied {
			n.cfg.OnNewTerm(t)
		}
	}
	switch e.GetType() {
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		n.applyConfChange(e)
	case raftpb.EntryNormal:
		data := e.GetData()
		if len(data) == 0 {
			break // the empty entry a new leader appends: no proposal
		}
		if idx <= n.cfg.Applied {
			break
		}
		ent := &Entry{Index: idx, Term: e.GetTerm(), Data: data}
		if len(data) >= proposalHeader {
			ent.From, ent.Seq, ent.Data = binary.BigEndian.Uint64(data), binary.BigEndian.Uint64(data[8:]), data[proposalHeader:]
			defer n.proposalDone(data, idx)
		}
		n.apply(ent)
	default:
		n.skip(e, fmt.Errorf("entry type %d", e.GetType()), nil)
	}
	n.setApplied(idx)
	return nil
}

// applyConfChange applies a committed membership change, or skips one that does not
// decode, cannot apply to the membership, or whose context CheckConfChange refuses:
// Raft panics on a change it cannot apply, and every member skips the same ones.
func (n *Node) applyConfChange(e *raftpb.Entry) {
	var cc *raftpb.ConfChangeV2
	var v1 *raftpb.ConfChange
	if e.GetType() == raftpb.EntryConfChange {
		v1 = new(raftpb.ConfChange)
		if err := proto.Unmarshal(e.GetData(), v1); err != nil {
			n.skip(e, fmt.Errorf("membership change: %w", err), nil)
			return
		}
		cc = v1.AsV2()
	} else {
		cc = new(raftpb.ConfChangeV2)
		if err := proto.Unmarshal(e.GetData(), cc); err != nil {
			n.skip(e, fmt.Errorf("membership change: %w", err), nil)
			return
		}
	}
	after, err := applyToConf(n.confState, cc)
	ctx := cc.GetContext()
	if err == nil && v1 == nil && len(ctx) >= proposalHeader && n.cfg.CheckConfChange != nil {
		err = n.cfg.CheckConfChange(ctx[proposalHeader:], after)
	}
	if err != nil {
		n.skip(e, err, ctx)
		return
	}
	var cs *raftpb.ConfState
	applied := n.call(context.Background(), func(rn *raft.RawNode) {
		if v1 != nil {
			cs = rn.ApplyConfChange(v1)
		} else {
			cs = rn.ApplyConfChange(cc)
		}
	})
	if !applied {
		return // the member stops
	}
	n.confChanged(e, cs, ctx)
}

// skip passes over a committed entry that cannot be applied, loudly: it is in every
// member's log, and every member skips it. Its proposer, if waiting here, is told.
func (n *Node) skip(e *raftpb.Entry, why error, ctx []byte) {
	n.counters.entriesSkipped.Add(1)
	n.logger.Error("committed raft entry cannot be applied: skipped", "index", e.GetIndex(),
		"type", e.GetType().String(), "err", why)
	if len(ctx) >= proposalHeader {
		n.answer(ctx, 0)
	}
}

// confChanged tells the caller of an applied conf change and answers its proposer.
// A context of ProposeConfChange starts with the proposal header.
func (n *Node) confChanged(e *raftpb.Entry, cs *raftpb.ConfState, context []byte) {
	n.setConfState(cs)
	var caller []byte
	if len(context) >= proposalHeader {
		caller = context[proposalHeader:]
		defer n.proposalDone(context, e.GetIndex())
	}
	if n.cfg.OnConfChange != nil && e.GetIndex() > n.cfg.Applied {
		n.cfg.OnConfChange(&ConfEntry{Index: e.GetIndex(), Term: e.GetTerm(), Context: caller, State: cs})
	}
}

// setConfState records the membership and which members are learners.
func (n *Node) setConfState(cs *raftpb.ConfState) {
	n.confState = cs
	n.conf.Store(cs)
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.learners)
	for _, id := range cs.GetLearners() {
		n.learners[id] = true
	}
}

// setApplied publishes the applied index and wakes its waiters.
func (n *Node) setApplied(idx uint64) {
	n.applied.Store(idx)
	n.mu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.mu.Unlock()
}

// proposalDone answers the local Propose that made the entry, if any.
func (n *Node) proposalDone(data []byte, idx uint64) { n.answer(data, idx) }

// answer gives the local proposal whose header starts data its index, or 0 if it was
// refused.
func (n *Node) answer(data []byte, idx uint64) {
	if binary.BigEndian.Uint64(data) != n.id {
		return
	}
	seq := binary.BigEndian.Uint64(data[8:])
	n.mu.Lock()
	w, ok := n.waiters[seq]
	delete(n.waiters, seq)
	n.mu.Unlock()
	if ok {
		w <- idx
	}
}

// readDone answers the local ReadIndex whose request a read state answers.
func (n *Node) readDone(rs raft.ReadState) {
	if len(rs.RequestCtx) != 8 {
		return
	}
	id := binary.BigEndian.Uint64(rs.RequestCtx)
	n.mu.Lock()
	w, ok := n.reads[id]
	delete(n.reads, id)
	n.mu.Unlock()
	if ok {
		w <- rs.Index
	}
}

// Propose replicates data and returns its log index once the entry is committed and
// applied on this member (after Apply has returned for it). Followers and learners
// forward to the leader. A proposal can be lost while no leader is known or when
// leadership changes: then Propose fails at once (raft.ErrProposalDropped) or when
// ctx ends. A failed Propose may still commit later; the caller resolves that
// (ZooKeeper clients see ConnectionLoss and retry).
func (n *Node) Propose(ctx context.Context, data []byte) (uint64, error) {
	if err := n.checkSize(data); err != nil {
		return 0, err
	}
	return n.await(ctx, "propose", func(seq uint64) error { return n.propose(ctx, seq, data) })
}

// await registers a new sequence number, hands it to send, and waits until the entry
// send proposed under it is applied on this member; it returns the entry's index.
func (n *Node) await(ctx context.Context, what string, send func(seq uint64) error) (uint64, error) {
	seq := n.seq.Add(1)
	w := make(chan uint64, 1)
	if err := n.register(n.waiters, seq, w); err != nil {
		return 0, err
	}
	defer n.unregister(n.waiters, seq)
	if err := send(seq); err != nil {
		return 0, err
	}
	select {
	case idx := <-w:
		if idx == 0 {
			return 0, fmt.Errorf("quorum: %s: %w", what, ErrRefused)
		}
		return idx, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("quorum: %s: %w", what, ctx.Err())
	case <-n.done:
		return 0, n.closedErr()
	}
}

// NextSeq returns a new sequence number for Submit.
func (n *Node) NextSeq() uint64 { return n.seq.Add(1) }

// Submit hands data to Raft under seq, a number from NextSeq, and returns once Raft
// has taken it (or refused it: raft.ErrProposalDropped when no leader is known). The
// Entry ApplyFunc gets for it, on this member, has From = this member's id and this
// Seq; the caller records what it waits for under seq before calling Submit, as the
// entry may be applied before Submit returns. Nothing tells the caller if the
// proposal is lost later (a leader change): Leader and Term in Status do, and the
// caller decides what to give up on.
func (n *Node) Submit(ctx context.Context, seq uint64, data []byte) error {
	if err := n.checkSize(data); err != nil {
		return err
	}
	return n.propose(ctx, seq, data)
}

// checkSize refuses an empty proposal and one over MaxEntryBytes.
func (n *Node) checkSize(data []byte) error {
	switch {
	case len(data) == 0:
		return ErrEmpty
	case len(data) > n.cfg.MaxEntryBytes:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(data), n.cfg.MaxEntryBytes)
	}
	return nil
}

// Changed receives a value when the member's leader or role may have changed, so that
// a caller watching Status need not wait for its next poll.
func (n *Node) Changed() <-chan struct{} { return n.changed }

// Done is closed when the member stops: Close was called, or one of its loops failed
// (Err says why).
func (n *Node) Done() <-chan struct{} { return n.done }

// Err returns why the member stopped on its own (its storage failed), or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// propose puts the header before data and hands it to Raft.
func (n *Node) propose(ctx context.Context, seq uint64, data []byte) error {
	return n.step(ctx, &raftpb.Entry{Type: raftpb.EntryNormal.Enum(), Data: n.withHeader(seq, data)})
}

// withHeader returns data behind the proposal header: this member's id and seq.
func (n *Node) withHeader(seq uint64, data []byte) []byte {
	buf := make([]byte, proposalHeader+len(data))
	binary.BigEndian.PutUint64(buf, n.id)
	binary.BigEndian.PutUint64(buf[8:], seq)
	copy(buf[proposalHeader:], data)
	return buf
}

// step hands a proposal to the leader. The leader steps it into its own Raft; any
// other member sends it to the leader itself, as a MsgProp on the connection its Raft
// messages take, rather than through its Raft: that way a follower's proposal does
// not wait for the follower's next fsync, and a member that was removed and added
// again can propose. Without a known leader the proposal is dropped at once
// (raft.ErrProposalDropped).
func (n *Node) step(ctx context.Context, e *raftpb.Entry) error {
	var err error
	switch leader := n.leader.Load(); leader {
	case 0:
		err = raft.ErrProposalDropped
	case n.id:
		m := &raftpb.Message{Type: raftpb.MsgProp.Enum(), From: new(n.id), Entries: []*raftpb.Entry{e}}
		res := make(chan error, 1) // fn may run after ctx ended: it must not write err
		switch {
		case n.call(ctx, func(rn *raft.RawNode) { res <- rn.Step(m) }):
			err = <-res
		case ctx.Err() != nil:
			err = ctx.Err()
		default:
			err = ErrClosed
		}
	default:
		n.transport.Send([]*raftpb.Message{{Type: raftpb.MsgProp.Enum(), From: new(n.id), To: new(leader),
			Entries: []*raftpb.Entry{e}}})
	}
	if err != nil {
		return fmt.Errorf("quorum: propose: %w", err)
	}
	return nil
}

// ProposeConfChange proposes a membership change and returns its log index once it
// is applied on this member. context travels with it to every member's
// OnConfChange. A change with several steps is made through joint consensus, left
// automatically. Raft takes one change at a time: while another is still being
// applied, the proposal is dropped and this waits until ctx ends.
func (n *Node) ProposeConfChange(ctx context.Context, changes []*raftpb.ConfChangeSingle, context []byte) (uint64, error) {
	after, err := applyToConf(n.conf.Load(), &raftpb.ConfChangeV2{Changes: changes})
	if err == nil && n.cfg.CheckConfChange != nil {
		err = n.cfg.CheckConfChange(context, after)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return n.await(ctx, "propose conf change", func(seq uint64) error {
		data, err := proto.Marshal(&raftpb.ConfChangeV2{Changes: changes, Context: n.withHeader(seq, context)})
		if err != nil {
			return fmt.Errorf("quorum: propose conf change: %w", err)
		}
		return n.step(ctx, &raftpb.Entry{Type: raftpb.EntryConfChangeV2.Enum(), Data: data})
	})
}

// SetPeers changes the addresses messages go to (id → address, this member left
// out), after a membership change.
func (n *Node) SetPeers(peers map[uint64]string) { n.transport.SetPeers(peers) }

// SendNote sends data to member to, outside the Raft log: best effort, no order with
// Raft's messages, lost when the peer is unreachable. The server reports its clients'
// session activity to the leader this way.
func (n *Node) SendNote(to uint64, data []byte) { n.transport.SendNote(to, data) }

// ReadIndex returns an index that is at least the commit index the leader had when
// the call started, confirmed by a quorum, after waiting until this member has
// applied it: a read of local state after ReadIndex sees every write committed
// before it (ZooKeeper's sync). While no leader answers, the request is re-sent
// every election timeout until ctx ends.
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	id := n.seq.Add(1)
	rctx := binary.BigEndian.AppendUint64(nil, id)
	w := make(chan uint64, 1)
	if err := n.register(n.reads, id, w); err != nil {
		return 0, err
	}
	defer n.unregister(n.reads, id)
	retry := time.NewTicker(n.cfg.Tick * time.Duration(n.cfg.ElectionTicks))
	defer retry.Stop()
	for {
		n.do(func(rn *raft.RawNode) { rn.ReadIndex(rctx) })
		select {
		case idx := <-w:
			return idx, n.WaitApplied(ctx, idx)
		case <-retry.C:
		case <-ctx.Done():
			return 0, fmt.Errorf("quorum: read index: %w", ctx.Err())
		case <-n.done:
			return 0, n.closedErr()
		}
	}
}

// WaitApplied returns once this member has applied idx.
func (n *Node) WaitApplied(ctx context.Context, idx uint64) error {
	for {
		n.mu.Lock()
		ch := n.appliedCh
		n.mu.Unlock()
		if n.applied.Load() >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("quorum: wait for index %d: %w", idx, ctx.Err())
		case <-n.done:
			return n.closedErr()
		}
	}
}

func (n *Node) register(m map[uint64]chan uint64, key uint64, w chan uint64) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.done:
		return n.closedErrLocked()
	default:
	}
	m[key] = w
	return nil
}

func (n *Node) unregister(m map[uint64]chan uint64, key uint64) {
	n.mu.Lock()
	delete(m, key)
	n.mu.Unlock()
}

func (n *Node) closedErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closedErrLocked()
}

func (n *Node) closedErrLocked() error {
	if n.err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, n.err)
	}
	return ErrClosed
}

// Status reports the member's state.
func (n *Node) Status() Status {
	var st raft.Status
	n.query(func(rn *raft.RawNode) { st = rn.Status() })
	s := Status{ID: n.id, Leader: st.Lead, Applied: n.applied.Load()}
	if st.HardState != nil {
		s.Term, s.Commit = st.HardState.GetTerm(), st.HardState.GetCommit()
	}
	n.mu.Lock()
	learner := n.learners[n.id]
	n.mu.Unlock()
	switch {
	case learner:
		s.Role = RoleLearner
	case st.RaftState == raft.StateLeader:
		s.Role = RoleLeader
		for id, pr := range st.Progress {
			if id == n.id {
				continue
			}
			synced := pr.Match >= s.Commit
			if pr.IsLearner {
				s.Learners++
				s.SyncedLearners += b2i(synced)
			} else {
				s.Followers++
				s.SyncedFollowers += b2i(synced)
			}
		}
	}
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Close stops the member: its transport, its loops and its storage.
// Pending Propose and ReadIndex calls fail with ErrClosed.
func (n *Node) Close() error {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	err := n.transport.Close()
	close(n.stop)
	<-n.done
	n.loops.Wait()
	n.snapWG.Wait() // the writer sees stop, and snapDone has room for its result
	return errors.Join(err, n.storage.Close())
}

// raftLogger sends the Raft library's log to slog. Raft's Info is elections and
// membership: lifecycle, kept at Info.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)              { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(f string, v ...any)   { r.l.Debug(fmt.Sprintf(f, v...)) }
func (r raftLogger) Info(v ...any)               { r.l.Info(fmt.Sprint(v...)) }
func (r raftLogger) Infof(f string, v ...any)    { r.l.Info(fmt.Sprintf(f, v...)) }
func (r raftLogger) Warning(v ...any)            { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(f string, v ...any) { r.l.Warn(fmt.Sprintf(f, v...)) }
func (r raftLogger) Error(v ...any)              { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(f string, v ...any)   { r.l.Error(fmt.Sprintf(f, v...)) }
func (r raftLogger) Fatal(v ...any)              { r.Panic(v...) }
func (r raftLogger) Fatalf(f string, v ...any)   { r.Panicf(f, v...) }
func (r raftLogger) Panic(v ...any)              { panic(fmt.Sprint(v...)) }
func (r raftLogger) Panicf(f string, v ...any)   { panic(fmt.Sprintf(f, v...)) }

// loadSnapshot starts the member from its storage's snapshot, if any: the
// membership, the applied index and, unless cfg.Applied says the state machine
// already holds it, the state machine's state.
func (n *Node) loadSnapshot() error {
	md := n.storage.SnapshotMetadata()
	if md.GetIndex() == 0 {
		return nil
	}
	return n.restore(md)
}

// restore makes the snapshot md the member's applied state: the caller's state
// machine (unless it already holds md's index), read from the snapshot file, the
// membership and the applied index.
func (n *Node) restore(md *raftpb.SnapshotMetadata) error {
	idx := md.GetIndex()
	if idx > n.cfg.Applied {
		if n.cfg.Snapshotter == nil {
			return fmt.Errorf("quorum: snapshot at index %d: no Snapshotter configured", idx)
		}
		if err := n.cfg.Snapshotter.Restore(n.storage.ReadSnapshot(idx), idx, md.GetTerm()); err != nil {
			return fmt.Errorf("quorum: restore snapshot at index %d: %w", idx, err)
		}
		n.logger.Info("restored snapshot", "index", idx, "term", md.GetTerm())
	}
	n.raiseSnapIndex(idx)
	n.setConfState(md.GetConfState())
	n.appliedTerm = md.GetTerm()
	n.setApplied(idx)
	return nil
}

// snapWritten is what the snapshot writer reports: the snapshot it wrote, or why not.
type snapWritten struct {
	md  *raftpb.SnapshotMetadata
	err error
}

// maybeSnapshot starts a snapshot once SnapshotEntries entries have been applied
// since the last one, unless one is still being written: the Snapshotter's view of
// the state machine as of the applied index is taken here, and written to its file
// by a goroutine of its own, while the apply loop goes on; snapshotWritten, on the
// append loop, then compacts the log.
func (n *Node) maybeSnapshot() error {
	applied := n.applied.Load()
	if n.cfg.Snapshotter == nil || n.writing.Load() || applied-n.snapIndex.Load() < n.cfg.SnapshotEntries || applied <= n.cfg.Applied {
		return nil
	}
	term, err := n.storage.Term(applied)
	if err != nil {
		return fmt.Errorf("quorum: snapshot term at %d: %w", applied, err)
	}
	view, err := n.cfg.Snapshotter.Snapshot()
	if err != nil {
		return fmt.Errorf("quorum: take snapshot at index %d: %w", applied, err)
	}
	md := &raftpb.SnapshotMetadata{Index: new(applied), Term: new(term),
		ConfState: proto.Clone(n.confState).(*raftpb.ConfState)}
	n.writing.Store(true)
	n.snapWG.Add(1)
	go func() {
		defer n.snapWG.Done()
		start := time.Now()
		st, err := n.storage.WriteSnapshot(md, view, n.stop)
		if err == nil {
			n.logger.Info("snapshot written", "index", applied, "records", st.Records, "bytes", st.FileBytes,
				"compression", fmt.Sprintf("%.1fx", st.Ratio()), "took", time.Since(start).Round(time.Millisecond))
		}
		n.snapDone <- snapWritten{md: md, err: err}
	}()
	return nil
}

// snapshotWritten records a snapshot the writer finished and compacts the log, on
// the append loop. A failed one costs only log space: the log still holds everything,
// and the next snapshot is tried after SnapshotEntries more entries.
func (n *Node) snapshotWritten(w snapWritten) error {
	defer n.writing.Store(false)
	idx := w.md.GetIndex()
	if w.err != nil {
		if !errors.Is(w.err, errSnapshotStopped) {
			n.logger.Error("snapshot failed", "index", idx, "err", w.err)
		}
		n.raiseSnapIndex(idx)
		return nil
	}
	if err := n.storage.Checkpoint(w.md, n.cfg.KeepEntries); err != nil {
		return err
	}
	n.raiseSnapIndex(idx)
	return nil
}

// raiseSnapIndex records a snapshot at idx, unless a newer one is recorded.
func (n *Node) raiseSnapIndex(idx uint64) {
	for {
		old := n.snapIndex.Load()
		if old >= idx || n.snapIndex.CompareAndSwap(old, idx) {
			return
		}
	}
}

// reportSnapshots tells Raft that the snapshots among msgs were sent: a lost one is
// found by the follower's next rejection and sent again, where waiting for an
// acknowledgement would leave the follower paused.
func (n *Node) reportSnapshots(msgs []*raftpb.Message) {
	for _, m := range msgs {
		if m.GetType() == raftpb.MsgSnap {
			n.rn.ReportSnapshot(m.GetTo(), raft.SnapshotFinish) // on the Ready loop
		}
	}
}
