package server

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// errNotServing fails the proposals of a member that lost its leader: their clients'
// connections are closed, and they retry on another member.
var errNotServing = errors.New("server: not serving: no leader")

// replica is a server's membership of a replicated ensemble (docs/ensemble.md), the
// txnLog of a member (solo's counterpart): its Raft member and what the server keeps
// about its own proposals. The member's log is Raft's, and its tree is rebuilt from
// Raft's snapshot and log at every start.
//
// Writes: proposeLoop takes the proposals of this member's clients in batches and
// submits each batch as one Raft entry; the apply loop applies committed entries
// (apply) in log order on every member, giving each txn its zxid there, and answers
// the clients of the member that proposed it. Reads are answered from the local tree.
// watchLoop follows the member's Raft state: it serves clients only while a leader is
// known and this member has caught up with it, closes every client connection when the
// leader changes (as a ZooKeeper follower does), and reports the sessions its clients
// kept alive to the leader, which alone expires sessions.
type replica struct {
	s      *Server
	id     uint64
	node   *quorum.Node
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu       sync.Mutex
	pending  map[uint64][]*proposal // batches this member proposed, by Raft sequence; guarded by mu
	inflight int                    // txns in pending; guarded by mu
	room     chan struct{}          // signalled when inflight falls (capacity 1)
	touched  map[int64]struct{}     // sessions with client traffic since the last report; guarded by mu
	members  []Member               // the ensemble, by id; guarded by mu; changed by reconfigs

	maxEntry    int           // the largest Raft entry this member proposes (maxEntryBytes)
	undecodable atomic.Uint64 // committed entries applied as error txns: they did not decode
	lastZxid    int64         // the last zxid given to a txn; owned by the apply loop (apply, confChanged, newTerm, Restore)
	// prepared is the snapshot CheckSnapshot built from what the leader streamed, for
	// the Restore that installs it (replica_check.go); nil when none waits.
	prepared atomic.Pointer[preparedSnapshot]

	serving atomic.Bool
	// servingCh is closed when the member starts serving, and replaced; lostAt is when
	// it last stopped (or started up), in Unix nanoseconds (takesClients).
	servingMu sync.Mutex
	servingCh chan struct{}
	lostAt    atomic.Int64
	removed   atomic.Bool // a reconfig took this member out of the ensemble
	// peers is node for setMembers, which the apply of the log's membership
	// changes calls while quorum.New replays the log, before node is set.
	peers  atomic.Pointer[quorum.Node]
	status atomic.Pointer[quorum.Status] // as watchLoop last saw it
	// metrics receives the Raft member's write stages once the server has its admin
	// (start); the member runs, replaying its log, before that.
	metrics atomic.Pointer[admin.Admin]
}

var _ txnLog = (*replica)(nil)

func newReplica(s *Server) *replica {
	ctx, cancel := context.WithCancel(context.Background())
	return &replica{s: s, id: uint64(s.cfg.ServerID), ctx: ctx, cancel: cancel,
		maxEntry: maxEntryBytes(s.cfg.MaxBuffer),
		pending:  make(map[uint64][]*proposal), room: make(chan struct{}, 1), touched: make(map[int64]struct{}),
		servingCh: make(chan struct{})}
}

// raftDir is where a member keeps its Raft log and snapshots.
func (s *Server) raftDir() string { return raftDirOf(s.cfg.DataDir, s.cfg.DataLogDir) }

// raftDirOf says where a data directory keeps a member's Raft log and snapshots (in
// dataLogDir when set), for the server and for DumpStore.
func raftDirOf(dataDir, dataLogDir string) string {
	if dataLogDir == "" {
		dataLogDir = dataDir
	}
	return filepath.Join(dataLogDir, "raft")
}

// open starts this server's Raft member and waits until the state its own log holds is
// applied.
func (r *replica) open() error {
	s := r.s
	members, err := s.cfg.Members()
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := s.fs.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("server: data_dir: %w", err)
	}
	r.members = members
	r.lostAt.Store(time.Now().UnixNano())
	ctx := r.ctx
	s.tree = datatree.New()
	s.tree.SetConfig(configData(members, 0))

	qc := quorum.DefaultConfig()
	qc.ID = r.id
	qc.Voters, qc.Learners = map[uint64]string{}, map[uint64]string{}
	for _, m := range members {
		if m.Observer {
			qc.Learners[uint64(m.ID)] = m.PeerAddr
		} else {
			qc.Voters[uint64(m.ID)] = m.PeerAddr
		}
	}
	qc.Dir, qc.FS, qc.SplitLegacySnapshot = s.raftDir(), s.fs, splitLegacySnapshot
	if s.cfg.PreAllocSize > 0 {
		qc.SegmentSize = s.cfg.PreAllocSize
	}
	qc.Tick = max(s.cfg.ElectionTimeout/10, time.Millisecond)
	qc.ElectionTicks, qc.HeartbeatTicks = 10, 1
	qc.Snapshotter = r
	qc.SnapshotEntries = uint64(s.cfg.SnapCount)
	qc.KeepEntries = uint64(s.cfg.SnapCount / 2)
	qc.OnNote = r.onNote
	qc.OnStage = r.onStage
	qc.OnConfChange = r.confChanged
	qc.OnNewTerm = r.newTerm
	qc.CheckEntry = r.checkEntry
	qc.CheckConfChange = r.checkConfChange
	qc.MaxEntryBytes = maxEntryBytes(s.cfg.MaxBuffer)
	qc.SnapshotLimit = r.snapshotLimit
	qc.Join = s.cfg.Join
	if qc.TLS, err = s.cfg.quorumTLS(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s.cfg.warnPlainPeerPort(s.logger)
	node, err := quorum.New(qc, r.apply, s.logger)
	if err != nil {
		return fmt.Errorf("server: start ensemble member: %w", err)
	}
	r.node = node
	r.peers.Store(node)
	if err := node.WaitApplied(ctx, node.Status().Commit); err != nil {
		return fmt.Errorf("server: replay the raft log: %w", err)
	}
	// The replay may have changed the membership (a reconfig in the log or the
	// snapshot) before the node existed to be told: its peers are set again here.
	r.setMembers(r.membersNow())
	s.treeMu.RLock()
	next := initialSessionID(s.cfg.ServerID, time.Now())
	for _, sess := range s.tree.Sessions() {
		if sess.ID>>56 == s.cfg.ServerID {
			next = max(next, sess.ID)
		}
	}
	s.treeMu.RUnlock()
	s.nextSessionID.Store(next)
	s.logger.Info("ensemble member started", "id", r.id, "members", len(members),
		"zxid", hexID(s.lastApplied.Load()), "raft_index", node.Status().Applied)
	return nil
}

// configData is /zookeeper/config of an ensemble as ZooKeeper writes it: the server
// lines, then the version, the zxid of the reconfig that made it (0: the static
// configuration), in hex.
func configData(members []Member, version int64) []byte {
	var b strings.Builder
	b.Write(serverLines(members))
	fmt.Fprintf(&b, "version=%x", version)
	return []byte(b.String())
}

func serverLines(members []Member) []byte {
	var b strings.Builder
	for _, m := range members {
		fmt.Fprintf(&b, "server.%d=%s\n", m.ID, m)
	}
	return []byte(b.String())
}

// parseServerLines reads the server.N lines of configData (other lines are skipped).
func parseServerLines(data []byte) ([]Member, error) {
	var out []Member
	for line := range strings.SplitSeq(string(data), "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "server.")
		if !ok {
			continue
		}
		m, err := ParseMember(rest)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// membersNow returns the ensemble as this member knows it now.
func (r *replica) membersNow() []Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.members)
}

// setMembers makes ms the ensemble: the members messages go to, and what srvr and
// mntr count. A member left out of it stops serving for good.
func (r *replica) setMembers(ms []Member) {
	r.mu.Lock()
	r.members = ms
	r.mu.Unlock()
	peers := make(map[uint64]string)
	in := false
	for _, m := range ms {
		if uint64(m.ID) == r.id {
			in = true
		} else {
			peers[uint64(m.ID)] = m.PeerAddr
		}
	}
	if n := r.peers.Load(); n != nil { // nil while quorum.New replays the log
		n.SetPeers(peers)
	}
	switch {
	case in && r.removed.Swap(false):
		r.s.logger.Info("this server is a member of the ensemble again")
	case !in && !r.removed.Swap(true):
		r.s.logger.Warn("this server was removed from the ensemble: it serves no clients any more; stop it")
		r.stopServing() // a removed leader has stepped down already (quorum.Node)
	}
}

// start starts the member's loops; its Raft Ready loop runs since open.
func (r *replica) start() {
	r.metrics.Store(r.s.admin)
	r.s.goroutine(r.proposeLoop)
	r.s.goroutine(r.watchLoop)
}

// halt ends the proposals and the reads waiting on Raft.
func (r *replica) halt() { r.cancel() }

// close stops the member; the server's goroutines have ended.
func (r *replica) close() error {
	r.cancel()
	if r.node == nil {
		return nil
	}
	return r.node.Close()
}

// Zxids. A zxid is an epoch (the high 32 bits) and a counter, as in ZooKeeper, where
// the epoch is the leader's. Here it rises before the first entry of each new term of
// the applied log (quorum's OnNewTerm: a new leader's empty entry, mostly) to the term
// itself, but by at most epochReach: the epoch is the term, as it always was, while
// terms move as elections move them, and a term pushed far ahead (a forged message,
// quorum/validate.go) costs at most epochReach epochs a leadership, where taken whole it
// would have spent them all at once — and every term must stay electable, and every zxid
// positive. Following the term keeps a log written before this rule and replayed after
// it giving its txns the zxids they had. At the rise the tree's last zxid becomes the new
// epoch's zero, as a ZooKeeper server's does when a leader is established, so that a
// snapshot carries the epoch and a member restored from it counts on from the same place
// as one that applied the log. Each txn takes the next zxid; a counter that reached 2³²
// runs into the epoch bits rather than go back, and the epoch stops rising at 2³¹−1:
// zxids only grow.

// maxEpoch is the largest epoch: a zxid is a positive int64.
const maxEpoch = 1<<31 - 1

// epochReach bounds what one new term raises the epoch by: 2²² leaderships, each an
// election, before a forger could spend the epochs.
const epochReach = 1 << 9

// epochStart returns the zxid that starts the epoch of a new term after last: the
// epoch's zero.
func epochStart(last int64, term uint64) int64 {
	e := last >> 32
	next := min(e+epochReach, maxEpoch)
	if term < uint64(next) {
		next = int64(term)
	}
	if next <= e {
		return last // the epochs are spent (or the term is not ahead): the counter goes on
	}
	return next << 32
}

// newTerm is quorum's OnNewTerm: the next txn is of a new epoch.
func (r *replica) newTerm(term uint64) {
	s := r.s
	r.lastZxid = epochStart(r.lastZxid, term)
	s.treeMu.Lock()
	s.tree.SetLastZxid(r.lastZxid)
	s.lastApplied.Store(r.lastZxid)
	s.treeMu.Unlock()
}

// Entry layout: a uvarint count, then each txn as a uvarint length and txn.Encode's bytes.

// entryTarget is the size past which a batch of txns is cut into several Raft entries:
// Raft sends at least one entry per message, and the peer protocol bounds messages by
// the largest entry (maxEntryBytes), so entries stay small unless one txn is large.
const entryTarget = 1 << 20

// maxEntryBytes bounds one Raft entry of a member: a batch cut at entryTarget, or one
// txn, which holds a request of at most jute.maxbuffer and the requester's identities.
func maxEntryBytes(maxBuffer int) int { return 2*maxBuffer + entryTarget }

// encodeBatch encodes the longest prefix of batch that fits one entry into dst: txns
// until they pass entryTarget, at least one. It returns the entry and how many txns it
// holds; body is scratch space. A txn larger than an entry may be — only a client with
// an absurd number of identities can make one — is replaced by an error txn, which its
// client is answered with, rather than submitted for the other members to refuse.
func encodeBatch(dst, body []byte, enc *wire.Encoder, batch []*proposal, maxEntry int) (entry, scratch []byte, n int) {
	body = body[:0]
	for n < len(batch) && (n == 0 || len(body) < entryTarget) {
		p := batch[n]
		enc.Reset()
		p.txn.Encode(enc)
		if enc.Len() > maxEntry-entryTarget {
			p.txn.Op, p.txn.Req, p.txn.Ids = wire.OpError, &txn.ErrorTxn{Code: int32(wire.ErrMarshallingError)}, nil
			enc.Reset()
			p.txn.Encode(enc)
		}
		body = binary.AppendUvarint(body, uint64(enc.Len()))
		body = append(body, enc.Bytes()...)
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	return append(dst, body...), body, n
}

func decodeBatch(data []byte) ([]*proposal, error) {
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)) {
		return nil, errors.New("bad txn count")
	}
	data = data[k:]
	out := make([]*proposal, 0, n)
	for range n {
		size, k := binary.Uvarint(data)
		if k <= 0 || size > uint64(len(data)-k) {
			return nil, errors.New("txn length past the entry's end")
		}
		x, err := txn.Decode(data[k : k+int(size)])
		if err != nil {
			return nil, err
		}
		out = append(out, &proposal{txn: x})
		data = data[k+int(size):]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%d bytes after the last txn", len(data))
	}
	return out, nil
}

// apply is the member's ApplyFunc, on the apply loop: every txn of a committed entry,
// in order, with the next zxid. An entry this member proposed is applied from the
// proposals it kept, so that their clients are answered; any other is decoded.
func (r *replica) apply(e *quorum.Entry) {
	s := r.s
	if p := r.prepared.Load(); p != nil && e.Index > p.index {
		r.prepared.CompareAndSwap(p, nil) // Raft did not take it: the log went past it
	}
	var batch []*proposal
	if e.From == r.id {
		batch = r.take(e.Seq)
	}
	if batch == nil {
		var err error
		if batch, err = decodeBatch(e.Data); err != nil {
			// The leader refuses what does not decode, so this is a committed entry that
			// got past it (an older leader's, or a forged one on a link without TLS): every
			// member applies it as the same error txn, and goes on.
			s.logger.Error("committed raft entry cannot be decoded: applied as an error txn",
				"raft_index", e.Index, "from", e.From, "size", len(e.Data), "err", err)
			r.undecodable.Add(1)
			batch = []*proposal{undecodable()}
		}
		for _, p := range batch {
			p.remote = true
		}
	}
	for _, p := range batch {
		r.lastZxid++
		p.txn.Zxid = r.lastZxid
		s.apply(p)
	}
}

// take removes and returns the batch this member proposed under seq, if it still waits.
func (r *replica) take(seq uint64) []*proposal {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.pending[seq]
	if !ok {
		return nil
	}
	delete(r.pending, seq)
	r.inflight -= len(b)
	select {
	case r.room <- struct{}{}:
	default:
	}
	return b
}

// proposeLoop submits this member's proposals to Raft, a batch per entry, keeping at
// most MaxOutstanding txns in flight.
func (r *replica) proposeLoop() {
	s := r.s
	var enc wire.Encoder
	var buf, body []byte
	for {
		batch := s.nextBatch()
		if batch == nil || !r.waitRoom() {
			return
		}
		if !r.serving.Load() {
			r.fail(batch)
			continue
		}
		s.proposing(batch)
		now := time.Now().UnixMilli()
		for _, p := range batch {
			p.txn.Time = now
		}
		for len(batch) > 0 {
			var n int
			buf, body, n = encodeBatch(buf[:0], body, &enc, batch, r.maxEntry)
			r.submit(batch[:n], buf)
			batch = batch[n:]
		}
	}
}

// submit proposes one entry holding batch.
func (r *replica) submit(batch []*proposal, entry []byte) {
	seq := r.node.NextSeq()
	r.mu.Lock()
	r.pending[seq] = batch
	r.inflight += len(batch)
	r.mu.Unlock()
	if err := r.node.Submit(r.ctx, seq, entry); err != nil {
		r.s.logger.Debug("proposal not taken", "err", err)
		if b := r.take(seq); b != nil {
			r.fail(b)
		}
	}
}

// waitRoom waits until fewer than MaxOutstanding txns are in flight; false if the
// server is stopping.
func (r *replica) waitRoom() bool {
	for {
		r.mu.Lock()
		ok := r.inflight < r.s.cfg.MaxOutstanding
		r.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-r.room:
		case <-r.s.stopping:
			return false
		}
	}
}

// fail gives up on proposals: their clients are disconnected (they see connection
// loss, reconnect elsewhere and find out what happened), the handshakes waiting for a
// new session are refused.
func (r *replica) fail(batch []*proposal) {
	for _, p := range batch {
		if p.done != nil {
			p.done <- txn.Result{Err: errNotServing}
		}
		if p.conn != nil {
			p.conn.close()
		}
	}
}

// failPending gives up on every proposal still waiting.
func (r *replica) failPending() {
	r.mu.Lock()
	var all [][]*proposal
	for seq, b := range r.pending {
		all = append(all, b)
		delete(r.pending, seq)
	}
	r.inflight = 0
	r.mu.Unlock()
	for _, b := range all {
		r.fail(b)
	}
}

// watchLoop follows the member's Raft state when Raft says it changed, and every tenth
// of the election timeout.
func (r *replica) watchLoop() {
	s := r.s
	ticker := time.NewTicker(max(s.cfg.ElectionTimeout/10, time.Millisecond))
	defer ticker.Stop()
	var last quorum.Status
	var reported time.Time
	wasReadOnly := false
	for {
		select {
		case <-s.stopping:
			return
		case <-r.node.Done():
			s.fatal(fmt.Errorf("raft: %w", r.node.Err()))
			return
		case <-ticker.C:
		case <-r.node.Changed(): // a lost leader closes the clients' connections at once
		}
		st := r.node.Status()
		if st.Leader != last.Leader || st.Term != last.Term {
			r.leaderChanged(st)
		}
		r.status.Store(&st) // after leaderChanged: a new leader expires nothing before it re-arms the sessions
		if st.Leader != 0 && !r.serving.Load() && !r.removed.Load() {
			r.catchUp()
		}
		if now := time.Now(); st.Role != quorum.RoleLeader && st.Leader != 0 && now.Sub(reported) >= s.cfg.TickTime/2 {
			r.report(st.Leader)
			reported = now
		}
		last = st
		if ro := r.readOnlyNow(); ro != wasReadOnly {
			if ro {
				s.logger.Warn("read-only mode: no leader for two election timeouts; serving read-only clients")
			} else {
				s.logger.Info("read-only mode ended")
				r.endReadOnly()
			}
			wasReadOnly = ro
		}
		if s.cfg.ReadOnlyMode {
			r.expireReadOnly()
		}
	}
}

// expireReadOnly ends the read-only sessions whose clients went quiet for their
// timeout, and closes their connections.
func (r *replica) expireReadOnly() {
	s := r.s
	for _, id := range s.ro.expire(time.Now()) {
		s.logger.Info("read-only session expired", "session_id", hexID(id))
		s.mu.Lock()
		c := s.sessionConns[id]
		if c != nil && c.readOnly.Load() {
			delete(s.sessionConns, id)
		} else {
			c = nil
		}
		s.mu.Unlock()
		if c != nil {
			c.close()
		}
	}
}

// leaderChanged stops serving until the member has caught up with its new leader, if
// any: every client connection is closed, so that clients reconnect (to this member
// or another) and see a state at least as new as the last they saw. A new leader takes
// over session expiry, giving every session a full timeout from now.
func (r *replica) leaderChanged(st quorum.Status) {
	s := r.s
	s.logger.Info("leader changed", "leader", st.Leader, "term", st.Term, "role", st.Role.String())
	r.stopServing()
	if st.Role == quorum.RoleLeader {
		now := time.Now()
		s.treeMu.RLock()
		for _, sess := range s.tree.Sessions() {
			s.sessions.Add(sess.ID, time.Duration(sess.Timeout)*time.Millisecond, now)
		}
		s.treeMu.RUnlock()
	}
}

// stopServing stops serving clients until catchUp (never, once removed): the
// proposals waiting are given up and every client connection is closed, so that
// clients reconnect, here or elsewhere, to a state at least as new as the last they saw.
// Read-only connections are left to the end of read-only mode (endReadOnly): an election
// that finds no leader, a new term and nothing more, does not end it.
func (r *replica) stopServing() {
	if r.serving.Swap(false) {
		r.lostAt.Store(time.Now().UnixNano())
		r.s.logger.Info("not serving clients until caught up with a leader")
	}
	r.failPending()
	for _, c := range r.s.connList() {
		if !c.awaiting.Load() && !c.readOnly.Load() {
			c.close()
		}
	}
}

// catchUp starts serving once the member has applied everything its leader had
// committed (a ReadIndex round).
func (r *replica) catchUp() {
	ctx, cancel := context.WithTimeout(r.ctx, r.s.cfg.ElectionTimeout)
	defer cancel()
	if _, err := r.node.ReadIndex(ctx); err != nil {
		return
	}
	r.startServing()
	r.s.logger.Info("serving clients", "zxid", hexID(r.s.lastApplied.Load()))
}

// startServing makes the member serve clients, and wakes the handshakes waiting for it.
func (r *replica) startServing() {
	r.serving.Store(true)
	r.servingMu.Lock()
	close(r.servingCh)
	r.servingCh = make(chan struct{})
	r.servingMu.Unlock()
	r.endReadOnly()
}

// endReadOnly closes the connections of read-only sessions, and ends those sessions: the
// member serves again, and their clients should reconnect to a member that takes writes
// (ZooKeeper's read-only server closes every connection when it shuts down). Called
// after serving is set (takesClients).
func (r *replica) endReadOnly() {
	s := r.s
	n := 0
	for _, c := range s.connList() {
		if c.readOnly.Load() {
			c.close()
			n++
		}
	}
	s.ro.clear()
	if n > 0 {
		s.logger.Info("closed the read-only sessions' connections: serving again", "connections", n)
	}
}

// touch notes client traffic on session id, for the next report to the leader.
func (r *replica) touch(id int64) {
	r.mu.Lock()
	r.touched[id] = struct{}{}
	r.mu.Unlock()
}

// report sends the leader the sessions this member's clients kept alive since the
// last report (ZooKeeper's followers do so in their pings to the leader).
func (r *replica) report(leader uint64) {
	r.mu.Lock()
	if len(r.touched) == 0 {
		r.mu.Unlock()
		return
	}
	buf := appendNote(make([]byte, 0, 8*len(r.touched)), r.touched)
	clear(r.touched)
	r.mu.Unlock()
	r.node.SendNote(leader, buf)
}

// onNote receives another member's report of its sessions' traffic (quorum's OnNote;
// from is the member whose connection carried it).
func (r *replica) onNote(from uint64, data []byte) error {
	ids, err := decodeNote(data)
	if err != nil || !r.leading() {
		return err
	}
	now := time.Now()
	for _, id := range ids {
		r.s.sessions.Touch(id, now)
	}
	return nil
}

// onStage exports the member's write stages (quorum.Config.OnStage) as the server's.
func (r *replica) onStage(st quorum.Stage, d time.Duration, _ int) {
	a := r.metrics.Load()
	if a == nil {
		return
	}
	switch st {
	case quorum.StageAppend:
		a.ObserveStage(admin.StageLogAppend, d)
		a.ObserveFsync(d)
	case quorum.StageReplicate:
		a.ObserveStage(admin.StageReplicate, d)
	case quorum.StageApply:
		a.ObserveStage(admin.StageApply, d)
	}
}

// Snapshot implements quorum.Snapshotter: the tree's copy-on-write snapshot, O(1)
// on the apply loop (the tree's only writer); quorum writes its records to the
// snapshot file on another goroutine while the tree goes on changing.
func (r *replica) Snapshot() (quorum.StateSnapshot, error) {
	s := r.s
	s.treeMu.Lock()
	defer s.treeMu.Unlock()
	return s.tree.Snapshot(), nil
}

// snapshotGrowth and recordOverhead make the bound on a received snapshot: what the
// member's own state would take as snapshot records — each znode's path and data and
// about recordOverhead bytes more (its stat, ACL and framing), each session's
// recordOverhead — times snapshotGrowth, and at least SnapshotReceiveFloor.
const (
	snapshotGrowth = 4
	recordOverhead = 128
)

// snapshotLimit is quorum's SnapshotLimit: the bound follows the member's own state,
// so that a peer's snapshot can cost it a few times what its tree costs already, and
// not whatever the peer likes (the memory a received snapshot takes is about its
// records' size: it is built as it arrives, docs/limits.md).
func (r *replica) snapshotLimit() int64 {
	s := r.s
	s.treeMu.RLock()
	own := s.tree.DataSize() + recordOverhead*int64(s.tree.NodeCount())
	s.treeMu.RUnlock()
	own += recordOverhead * int64(s.sessions.Len())
	return max(s.cfg.SnapshotReceiveFloor, snapshotGrowth*own)
}

// Restore implements quorum.Snapshotter: the tree becomes the snapshot's, the session
// table its sessions', and the member stops serving until it has caught up: its
// clients' watches and views belong to the state left behind. A snapshot another
// member sent was built and proven by CheckSnapshot; one of this member's own disk is
// built here, and one that is not restorable is an error, never a panic, and changes
// nothing.
func (r *replica) Restore(read quorum.ReadFunc, index, term uint64) error {
	s := r.s
	var t *datatree.Tree
	var ms []Member
	if p := r.takePrepared(index, term); p != nil {
		t, ms = p.tree, p.members
	} else {
		var err error
		if t, err = loadSnapshotRecords(read); err == nil {
			ms, err = restoreState(t, nil)
		}
		if err != nil {
			return fmt.Errorf("snapshot at raft index %d: %w", index, err)
		}
	}
	r.setMembers(ms)
	timeouts := make(map[int64]time.Duration)
	for _, sess := range t.Sessions() {
		timeouts[sess.ID] = time.Duration(sess.Timeout) * time.Millisecond
	}
	s.treeMu.Lock()
	s.tree = t
	r.lastZxid = t.LastZxid()
	s.lastApplied.Store(r.lastZxid)
	s.sessions.Replace(timeouts, time.Now())
	s.treeMu.Unlock()
	r.stopServing()
	s.logger.Info("state loaded from a snapshot", "raft_index", index, "term", term,
		"zxid", hexID(t.LastZxid()), "nodes", t.NodeCount()-1)
	return nil
}

// takesClients reports whether the member serves clients: it follows a leader it has
// caught up with (watchLoop). A client refused tries another member. Within two
// election timeouts of losing its leader (or of starting), while an election is likely
// under way, the member holds a client's handshake until it serves again rather than
// refuse it: every member refuses during an election, and a client that found them all
// refusing waits before it tries again (go-zookeeper a second), so writes would resume
// that much after the election. A member cut off for longer refuses at once, so that
// its clients go elsewhere — unless it is in read-only mode (readOnlyNow) and the
// client asks for a read-only session: it is then taken as one (ro).
//
// While it waits, the connection is marked awaiting, and stopServing, which closes every
// client connection, leaves it open: an election closes the members' connections twice
// (the leader lost, a new one found), and a handshake held through the first must not
// be closed by the second. The mark is cleared before serving is read again, and
// stopServing clears serving before it reads the marks, so a connection is either
// closed by stopServing or sees that the member stopped serving, never neither. A
// read-only connection is marked likewise before serving is read again, and
// startServing sets serving before it closes the marked ones.
func (r *replica) takesClients(c *conn, readOnly bool) (ro, ok bool) {
	defer c.awaiting.Store(false)
	for {
		r.servingMu.Lock()
		ch := r.servingCh
		r.servingMu.Unlock()
		c.awaiting.Store(false)
		if r.serving.Load() {
			return false, true
		}
		if readOnly && r.readOnlyNow() {
			c.readOnly.Store(true)
			if !r.serving.Load() {
				return true, true
			}
			c.readOnly.Store(false) // it serves again: the client gets a session of the ensemble
			return false, true
		}
		c.awaiting.Store(true)
		wait := time.Until(r.cutOffAt())
		if wait <= 0 || r.removed.Load() {
			return false, false
		}
		timer := time.NewTimer(wait)
		select {
		case <-ch:
		case <-timer.C:
		case <-c.ctx.Done():
			timer.Stop()
			return false, false
		case <-r.s.stopping:
			timer.Stop()
			return false, false
		}
		timer.Stop()
	}
}

// cutOffAt is when the member, not serving since lostAt, counts as cut off from its
// quorum: two election timeouts later. It then refuses clients at once, or, in
// read-only mode, serves read-only ones.
func (r *replica) cutOffAt() time.Time {
	return time.Unix(0, r.lostAt.Load()).Add(2 * r.s.cfg.ElectionTimeout)
}

// readOnlyNow reports whether the member is in read-only mode: enabled, not serving, not
// removed from the ensemble, cut off from its quorum (cutOffAt), and knowing no leader. A
// member that found a leader is about to serve once it has caught up: like a ZooKeeper
// follower syncing with its leader, it takes no client meanwhile.
func (r *replica) readOnlyNow() bool {
	if !r.s.cfg.ReadOnlyMode || r.serving.Load() || r.removed.Load() || time.Now().Before(r.cutOffAt()) {
		return false
	}
	st := r.status.Load()
	return st == nil || st.Leader == 0
}

// keptAlive notes client traffic on session id for the next report to the leader; the
// leader touches its session table itself.
func (r *replica) keptAlive(id int64) {
	if !r.leading() {
		r.touch(id)
	}
}

// sync answers a sync once the member has applied everything the leader had committed
// when the sync arrived (a Raft ReadIndex round), so that reads after it see every
// write acknowledged before it anywhere.
func (r *replica) sync(c *conn, req *request) bool {
	return c.answerLater(req, func() (wire.Code, bool) {
		_, err := r.node.ReadIndex(c.ctx)
		return wire.OK, err == nil // without an answer the member lost its leader, or the connection closed
	})
}

// reconfig answers a reconfig like a sync: it waits in the connection's queue until
// the membership change is applied here (reconfigure), then answers with the new
// /zookeeper/config.
func (r *replica) reconfig(c *conn, req *request) bool {
	return c.answerLater(req, func() (wire.Code, bool) {
		code := r.reconfigure(c.ctx, req.rec.(*wire.ReconfigRequest), req.ids)
		c.s.auditReconfig(c, req, code)
		return code, true
	})
}

// reaches waits, up to an election timeout, for the member to apply zxid, a client's
// last seen. A client that saw a write on the leader and reconnects here after the
// leader died would otherwise be refused until the new leader commits in its term
// what this member has not applied yet — and, refused everywhere, wait before it
// tries again.
func (r *replica) reaches(ctx context.Context, zxid int64) bool {
	ctx, cancel := context.WithTimeout(ctx, r.s.cfg.ElectionTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for r.s.lastApplied.Load() < zxid {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		case <-r.s.stopping:
			return false
		}
	}
	return true
}

// leading reports whether the member led when watchLoop last looked.
func (r *replica) leading() bool {
	st := r.status.Load()
	return st != nil && st.Role == quorum.RoleLeader
}

// mode names the member's part as ZooKeeper's srvr does.
func (r *replica) mode() string {
	switch st := r.status.Load(); {
	case r.readOnlyNow():
		return admin.ModeReadOnly
	case st != nil && st.Role == quorum.RoleLeader:
		return admin.ModeLeader
	case st != nil && st.Role == quorum.RoleLearner:
		return admin.ModeObserver
	}
	return admin.ModeFollower
}

// fillStats adds the member's part to the admin figures.
func (r *replica) fillStats(st *admin.Stats) {
	st.Mode = r.mode()
	st.NotServing = !r.serving.Load() && st.Mode != admin.ModeReadOnly
	q := &admin.QuorumStats{}
	for _, m := range r.membersNow() {
		if !m.Observer {
			q.Size++
		}
	}
	pc := r.node.Counters()
	q.Refused = admin.PeerRefusals{Connections: int64(pc.ConnsRefused), Frames: int64(pc.FramesRefused),
		Messages: int64(pc.MessagesDropped), Proposals: int64(pc.ProposalsRefused), Notes: int64(pc.NotesDropped),
		EntriesSkipped: int64(pc.EntriesSkipped), EntriesUndecodable: int64(r.undecodable.Load()),
		Snapshots: int64(pc.SnapshotsRefused), CommittedConflicts: int64(pc.CommittedConflicts)}
	q.TermCatchUps = int64(pc.TermCatchUps)
	if rs := r.status.Load(); rs != nil { // one status: the term and the counts agree
		q.Term = int64(min(rs.Term, math.MaxInt64))
		if rs.Role == quorum.RoleLeader {
			q.Followers, q.SyncedFollowers = rs.Followers, rs.SyncedFollowers
			q.Observers, q.SyncedObservers = rs.Learners, rs.SyncedLearners
		}
	}
	st.Quorum = q
}
