package quorum

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// inmemQueue bounds each member's inbound queue on an Inmem network, in messages: a
// full queue drops what comes next, as a full TCP send queue does.
const inmemQueue = 4096

// Inmem is a Network in memory, for tests: the members attached to it (Config.Network)
// exchange messages through one bounded inbound queue each, delivered in order by one
// goroutine per member, and the test cuts and heals links, drops, holds and delays
// messages. A message is marshalled when sent and unmarshalled when it arrives, as
// over TCP, so sender and receiver share no memory, and it reaches the member through
// Delivery.Message: the checks in front of Raft apply to it. A member accepts
// messages only from its peers (SetPeers), as over TCP. A message lost on a cut link,
// to a full queue, or to a member not attached is reported unreachable to its sender;
// one dropped by Drop or DropRate is lost silently, as on a lossy wire. Messages
// already queued when a link is cut still arrive. The frame size bounds of the TCP
// transport are not applied. Its methods are safe for concurrent use.
type Inmem struct {
	mu          sync.Mutex
	ends        map[uint64]*inmemLink // attached members, by id
	cut         map[inmemPair]bool    // directed links cut by Disconnect
	groups      map[uint64]int        // with partitioned: each member's side, from 1
	partitioned bool
	held        map[inmemPair][]inmemMsg // directed links on Hold, and what waits on them
	drop        func(from, to uint64, m *raftpb.Message) bool
	rate        float64
	rng         *rand.Rand
	delay       time.Duration
	pending     int           // messages queued or being delivered
	idle        chan struct{} // closed when pending reaches 0
	stats       InmemStats
}

// InmemStats counts what an Inmem network carried.
type InmemStats struct {
	Sent      uint64 // messages and notes handed to Send and SendNote
	Delivered uint64 // handed to the receiver's Delivery
	Dropped   uint64 // lost: cut, dropped, queue full, or no such member
}

type inmemPair struct{ from, to uint64 }

// inmemMsg is one message in flight: a marshalled raftpb.Message, or a note.
type inmemMsg struct {
	from   uint64
	raft   []byte
	note   []byte
	isNote bool
	snap   ReadFunc  // a MsgSnap's file, read by the receiver as the TCP stream would carry it
	at     time.Time // not delivered before (Delay)
}

// NewInmem returns an empty network, every link connected.
func NewInmem() *Inmem {
	idle := make(chan struct{})
	close(idle)
	return &Inmem{
		ends: make(map[uint64]*inmemLink), cut: make(map[inmemPair]bool),
		held: make(map[inmemPair][]inmemMsg), idle: idle,
	}
}

// Attach implements Network. A member may attach again once its previous Link is
// closed (a restart).
func (n *Inmem) Attach(self uint64, peers map[uint64]string, d Delivery) (Link, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.ends[self]; ok {
		return nil, fmt.Errorf("quorum: inmem: member %d is attached already", self)
	}
	l := &inmemLink{net: n, id: self, d: d, queue: make(chan inmemMsg, inmemQueue),
		stop: make(chan struct{}), done: make(chan struct{})}
	l.setPeers(peers)
	n.ends[self] = l
	go l.deliverLoop()
	return l, nil
}

// Disconnect cuts the links between a and b, both ways, until Connect or Heal.
func (n *Inmem) Disconnect(a, b uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[inmemPair{a, b}], n.cut[inmemPair{b, a}] = true, true
}

// Connect undoes Disconnect(a, b); a Partition still applies.
func (n *Inmem) Connect(a, b uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cut, inmemPair{a, b})
	delete(n.cut, inmemPair{b, a})
}

// Partition splits the network into groups: members reach the members of their own
// group only, and a member in no group reaches nobody, until Heal.
func (n *Inmem) Partition(groups ...[]uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.partitioned, n.groups = true, make(map[uint64]int)
	for i, g := range groups {
		for _, id := range g {
			n.groups[id] = i + 1
		}
	}
}

// Heal connects every link, ends Drop, DropRate and Delay, and releases every held
// message.
func (n *Inmem) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
	n.partitioned, n.groups = false, nil
	n.drop, n.rate, n.delay = nil, 0, 0
	for p := range n.held {
		n.releaseLocked(p)
	}
}

// Drop loses every message for which f returns true (m is nil for a note); nil
// drops nothing. f runs with the network locked: it must not call it.
func (n *Inmem) Drop(f func(from, to uint64, m *raftpb.Message) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.drop = f
}

// DropRate loses each message with probability p, drawn from a generator seeded with
// seed, so that a run can be repeated.
func (n *Inmem) DropRate(p float64, seed uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rate, n.rng = p, rand.New(rand.NewPCG(seed, seed))
}

// Delay makes every message sent from now on arrive no sooner than d after it was
// sent (wall-clock time; Hold is the deterministic way). A member's messages still
// arrive in the order they were sent.
func (n *Inmem) Delay(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.delay = d
}

// Hold keeps the messages sent from member from to member to, in order, until
// Release(from, to) or Heal.
func (n *Inmem) Hold(from, to uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.held[inmemPair{from, to}]; !ok {
		n.held[inmemPair{from, to}] = nil
	}
}

// Release sends on what Hold(from, to) kept and stops holding that link. What was
// held is delivered as if sent now: to a member that has gone, it is lost.
func (n *Inmem) Release(from, to uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.releaseLocked(inmemPair{from, to})
}

func (n *Inmem) releaseLocked(p inmemPair) {
	msgs := n.held[p]
	delete(n.held, p)
	for _, m := range msgs {
		n.enqueueLocked(p, m) // lost ones are not reported: their sender moved on
	}
}

// Stats returns what the network carried so far.
func (n *Inmem) Stats() InmemStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Idle says whether no message is queued or being delivered (held ones excepted).
func (n *Inmem) Idle() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pending == 0
}

// WaitIdle returns once the network is Idle, or ctx's error.
func (n *Inmem) WaitIdle(ctx context.Context) error {
	for {
		n.mu.Lock()
		idle, ch := n.pending == 0, n.idle
		n.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// route sends one message from member from to member to; false when it was lost in a
// way its sender is told of (the link is cut, the member unknown or its queue full).
func (n *Inmem) route(from, to uint64, m *raftpb.Message, msg inmemMsg) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stats.Sent++
	p := inmemPair{from, to}
	switch {
	case n.cutLocked(p):
		n.stats.Dropped++
		return false
	case n.drop != nil && n.drop(from, to, m), n.rate > 0 && n.rng.Float64() < n.rate:
		n.stats.Dropped++
		return true
	}
	if n.delay > 0 {
		msg.at = time.Now().Add(n.delay)
	}
	if held, ok := n.held[p]; ok {
		n.held[p] = append(held, msg)
		return true
	}
	return n.enqueueLocked(p, msg)
}

// Inject delivers m to member to as if member from's link carried it — an attacker
// who connected to to's peer port and named member from, which without TLS nothing
// proves — with records, for a MsgSnap, as the snapshot stream that follows it. m is
// sent as it is: its From, To and every field are the caller's. It bypasses cuts,
// drops, holds and delays; to must be attached and from one of its peers (a hello
// naming anyone else is refused). It reports whether m was queued.
func (n *Inmem) Inject(from, to uint64, m *raftpb.Message, records ReadFunc) bool {
	b, err := proto.Marshal(m)
	if err != nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stats.Sent++
	if dst := n.ends[to]; dst == nil || !dst.peers[from] {
		n.stats.Dropped++
		return false
	}
	return n.enqueueLocked(inmemPair{from, to}, inmemMsg{from: from, raft: b, snap: records})
}

// cutLocked says whether link p loses what is sent on it: Disconnect or Partition,
// or either end not a peer of the other (a member accepts its peers only).
func (n *Inmem) cutLocked(p inmemPair) bool {
	src, dst := n.ends[p.from], n.ends[p.to]
	switch {
	case src == nil || dst == nil || !src.peers[p.to] || !dst.peers[p.from] || n.cut[p]:
		return true
	case n.partitioned:
		g := n.groups[p.from]
		return g == 0 || g != n.groups[p.to]
	}
	return false
}

func (n *Inmem) enqueueLocked(p inmemPair, msg inmemMsg) bool {
	dst := n.ends[p.to]
	if dst == nil {
		n.stats.Dropped++
		return false
	}
	select {
	case dst.queue <- msg:
		if n.pending == 0 {
			n.idle = make(chan struct{})
		}
		n.pending++
		return true
	default:
		n.stats.Dropped++
		return false
	}
}

// done records that k queued messages were delivered (or discarded).
func (n *Inmem) done(k int, delivered bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if delivered {
		n.stats.Delivered += uint64(k)
	} else {
		n.stats.Dropped += uint64(k)
	}
	n.pending -= k
	if n.pending == 0 && k > 0 {
		close(n.idle)
	}
}

// inmemLink is one member's Link on an Inmem network.
type inmemLink struct {
	net   *Inmem
	id    uint64
	d     Delivery
	peers map[uint64]bool // guarded by net.mu
	queue chan inmemMsg   // inbound
	stop  chan struct{}   // closed by Close
	done  chan struct{}   // closed when deliverLoop has ended

	closeOnce sync.Once
}

func (l *inmemLink) setPeers(peers map[uint64]string) {
	l.peers = make(map[uint64]bool, len(peers))
	for id := range peers {
		if id != l.id {
			l.peers[id] = true
		}
	}
}

// Send implements Link.
func (l *inmemLink) Send(msgs []*raftpb.Message) {
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			continue // cannot happen for a message Raft made
		}
		msg := inmemMsg{from: l.id, raft: b}
		if m.GetType() == raftpb.MsgSnap && l.d.SnapshotRecords != nil {
			msg.snap = l.d.SnapshotRecords(m.GetSnapshot().GetMetadata().GetIndex())
		}
		if !l.net.route(l.id, m.GetTo(), m, msg) && l.d.Unreachable != nil {
			l.d.Unreachable(m.GetTo())
		}
	}
}

// SendNote implements Link; a note over the TCP transport's bound is dropped.
func (l *inmemLink) SendNote(to uint64, data []byte) {
	if len(data)+1 > noteLimit {
		return
	}
	l.net.route(l.id, to, nil, inmemMsg{from: l.id, note: append([]byte(nil), data...), isNote: true})
}

// SetPeers implements Link.
func (l *inmemLink) SetPeers(peers map[uint64]string) {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	l.setPeers(peers)
}

// Close implements Link: the member leaves the network; what was queued for it is
// lost.
func (l *inmemLink) Close() error {
	l.closeOnce.Do(func() {
		l.net.mu.Lock()
		if l.net.ends[l.id] == l {
			delete(l.net.ends, l.id)
		}
		l.net.mu.Unlock()
		close(l.stop)
		<-l.done
		// Nothing is queued for l any more: it is not in ends.
		k := len(l.queue)
		for range k {
			<-l.queue
		}
		l.net.done(k, false)
	})
	return nil
}

// deliverLoop hands the member what arrives for it, in order, until Close.
func (l *inmemLink) deliverLoop() {
	defer close(l.done)
	for {
		select {
		case msg := <-l.queue:
			if !l.wait(msg.at) {
				l.net.done(1, false)
				return
			}
			l.deliver(msg)
			l.net.done(1, true)
		case <-l.stop:
			return
		}
	}
}

// wait waits until at; false if the link closed meanwhile.
func (l *inmemLink) wait(at time.Time) bool {
	d := time.Until(at)
	if at.IsZero() || d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stop:
		return false
	}
}

func (l *inmemLink) deliver(msg inmemMsg) {
	if msg.isNote {
		if l.d.Note != nil {
			l.d.Note(msg.from, msg.note)
		}
		return
	}
	m := new(raftpb.Message)
	if err := proto.Unmarshal(msg.raft, m); err != nil {
		return // cannot happen: Send marshalled it
	}
	if msg.snap != nil && l.d.Snapshot != nil {
		l.d.Snapshot(msg.from, m, msg.snap)
		return
	}
	l.d.Message(msg.from, m)
}
