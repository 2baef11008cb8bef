package quorum

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// inbox records what an Inmem link delivers to one member.
type inbox struct {
	mu          sync.Mutex
	got         []string // "from:type:index" or "from:note:data"
	unreachable []uint64
}

func (b *inbox) delivery() Delivery {
	return Delivery{
		Message: func(from uint64, m *raftpb.Message) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.got = append(b.got, fmt.Sprintf("%d:%s:%d", from, m.GetType(), m.GetIndex()))
		},
		Note: func(from uint64, data []byte) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.got = append(b.got, fmt.Sprintf("%d:note:%s", from, data))
		},
		Unreachable: func(id uint64) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.unreachable = append(b.unreachable, id)
		},
	}
}

func (b *inbox) take() (got []string, unreachable []uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	got, unreachable = b.got, b.unreachable
	b.got, b.unreachable = nil, nil
	return got, unreachable
}

// inmemTrio attaches members 1, 2 and 3, each the peer of the others.
func inmemTrio(t *testing.T) (*Inmem, map[uint64]Link, map[uint64]*inbox) {
	t.Helper()
	n := NewInmem()
	links, boxes := map[uint64]Link{}, map[uint64]*inbox{}
	for id := uint64(1); id <= 3; id++ {
		peers := map[uint64]string{}
		for p := uint64(1); p <= 3; p++ {
			if p != id {
				peers[p] = fmt.Sprint("inmem-", p)
			}
		}
		boxes[id] = &inbox{}
		l, err := n.Attach(id, peers, boxes[id].delivery())
		if err != nil {
			t.Fatal(err)
		}
		links[id] = l
		t.Cleanup(func() { l.Close() })
	}
	if _, err := n.Attach(1, nil, Delivery{}); err == nil {
		t.Error("member 1 attached twice")
	}
	return n, links, boxes
}

func app(from, to, index uint64) *raftpb.Message {
	return &raftpb.Message{Type: raftpb.MsgApp.Enum(), From: new(from), To: new(to), Index: new(index)}
}

func waitIdle(t *testing.T, n *Inmem) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInmemDeliversInOrderAndCutsLinks(t *testing.T) {
	n, links, boxes := inmemTrio(t)
	links[1].Send([]*raftpb.Message{app(1, 2, 1), app(1, 2, 2), app(1, 3, 3)})
	links[1].SendNote(2, []byte("n"))
	waitIdle(t, n)
	if got, _ := boxes[2].take(); !slices.Equal(got, []string{"1:MsgApp:1", "1:MsgApp:2", "1:note:n"}) {
		t.Errorf("member 2 got %q", got)
	}
	if got, _ := boxes[3].take(); !slices.Equal(got, []string{"1:MsgApp:3"}) {
		t.Errorf("member 3 got %q", got)
	}

	// Disconnect cuts both ways and reports the loss to the sender; Connect restores.
	n.Disconnect(1, 2)
	links[1].Send([]*raftpb.Message{app(1, 2, 4)})
	links[2].Send([]*raftpb.Message{app(2, 1, 5), app(2, 3, 6)})
	waitIdle(t, n)
	if got, unr := boxes[1].take(); len(got) != 0 || !slices.Equal(unr, []uint64{2}) {
		t.Errorf("member 1 across a cut link: got %q, unreachable %v", got, unr)
	}
	if got, unr := boxes[2].take(); len(got) != 0 || !slices.Equal(unr, []uint64{1}) {
		t.Errorf("member 2 across a cut link: got %q, unreachable %v", got, unr)
	}
	if got, _ := boxes[3].take(); !slices.Equal(got, []string{"2:MsgApp:6"}) {
		t.Errorf("member 3 got %q", got)
	}
	n.Connect(1, 2)

	// Partition: members reach their own side only; one on no side reaches nobody.
	n.Partition([]uint64{1, 2})
	links[1].Send([]*raftpb.Message{app(1, 2, 7), app(1, 3, 8)})
	links[3].Send([]*raftpb.Message{app(3, 1, 9)})
	waitIdle(t, n)
	if got, _ := boxes[2].take(); !slices.Equal(got, []string{"1:MsgApp:7"}) {
		t.Errorf("member 2 in the partition got %q", got)
	}
	if got, _ := boxes[3].take(); len(got) != 0 {
		t.Errorf("member 3, on no side, got %q", got)
	}
	if got, _ := boxes[1].take(); len(got) != 0 {
		t.Errorf("member 1 got %q from member 3 across the partition", got)
	}
	n.Heal()

	// A member accepts its peers only; a removed peer is not sent to either.
	links[2].SetPeers(map[uint64]string{3: "inmem-3"})
	links[1].Send([]*raftpb.Message{app(1, 2, 10)})
	waitIdle(t, n)
	if got, unr := boxes[1].take(); len(got) != 0 || !slices.Equal(unr, []uint64{2}) {
		t.Errorf("member 1, no peer of member 2: got %q, unreachable %v", got, unr)
	}
	if got, _ := boxes[2].take(); len(got) != 0 {
		t.Errorf("member 2 accepted %q from a member that is not its peer", got)
	}
	if st := n.Stats(); st.Sent != 11 || st.Delivered != 6 || st.Dropped != 5 {
		t.Errorf("stats %+v, want 11 sent, 6 delivered, 5 dropped", st)
	}
}

func TestInmemDropsAndHolds(t *testing.T) {
	n, links, boxes := inmemTrio(t)
	// A dropped message is lost silently: a lossy wire, not an unreachable peer.
	n.Drop(func(from, to uint64, m *raftpb.Message) bool { return m != nil && m.GetIndex()%2 == 0 })
	links[1].Send([]*raftpb.Message{app(1, 2, 1), app(1, 2, 2), app(1, 2, 3)})
	waitIdle(t, n)
	if got, unr := boxes[2].take(); !slices.Equal(got, []string{"1:MsgApp:1", "1:MsgApp:3"}) || len(unr) != 0 {
		t.Errorf("member 2 with even indexes dropped: got %q", got)
	}
	if _, unr := boxes[1].take(); len(unr) != 0 {
		t.Errorf("dropped messages reported unreachable: %v", unr)
	}
	n.Drop(nil)

	// The same seed loses the same messages.
	lost := func(seed uint64) []string {
		n.DropRate(0.5, seed)
		var msgs []*raftpb.Message
		for i := range uint64(40) {
			msgs = append(msgs, app(1, 3, i))
		}
		links[1].Send(msgs)
		waitIdle(t, n)
		got, _ := boxes[3].take()
		return got
	}
	a, b := lost(7), lost(7)
	if !slices.Equal(a, b) || len(a) == 0 || len(a) == 40 {
		t.Errorf("drop rate 0.5 with one seed twice: %d then %d delivered, want the same, some", len(a), len(b))
	}
	n.DropRate(0, 0)

	// Held messages wait, in order, until released; the network counts as idle.
	n.Hold(1, 2)
	links[1].Send([]*raftpb.Message{app(1, 2, 20), app(1, 2, 21)})
	links[3].Send([]*raftpb.Message{app(3, 2, 22)})
	waitIdle(t, n)
	if got, _ := boxes[2].take(); !slices.Equal(got, []string{"3:MsgApp:22"}) {
		t.Errorf("member 2 while 1→2 is held: got %q", got)
	}
	links[1].Send([]*raftpb.Message{app(1, 2, 23)})
	n.Release(1, 2)
	waitIdle(t, n)
	if got, _ := boxes[2].take(); !slices.Equal(got, []string{"1:MsgApp:20", "1:MsgApp:21", "1:MsgApp:23"}) {
		t.Errorf("member 2 after release: got %q", got)
	}

	// Delayed messages arrive, still in order.
	n.Delay(2 * time.Millisecond)
	links[1].Send([]*raftpb.Message{app(1, 2, 30), app(1, 2, 31)})
	if n.Idle() {
		t.Error("idle with delayed messages in flight")
	}
	waitIdle(t, n)
	if got, _ := boxes[2].take(); !slices.Equal(got, []string{"1:MsgApp:30", "1:MsgApp:31"}) {
		t.Errorf("member 2 with a delay: got %q", got)
	}
}

// TestInmemCloseAndReattach: a closed member's queue is discarded, messages to it are
// reported unreachable, and it may attach again (a restart).
func TestInmemCloseAndReattach(t *testing.T) {
	n, links, boxes := inmemTrio(t)
	n.Hold(1, 2)
	links[1].Send([]*raftpb.Message{app(1, 2, 1)})
	if err := links[2].Close(); err != nil {
		t.Fatal(err)
	}
	links[2].Close() // idempotent
	n.Release(1, 2)
	links[1].Send([]*raftpb.Message{app(1, 2, 2)})
	waitIdle(t, n)
	if _, unr := boxes[1].take(); !slices.Equal(unr, []uint64{2}) {
		t.Errorf("member 1 sending to a closed member: unreachable %v", unr)
	}
	again := &inbox{}
	l, err := n.Attach(2, map[uint64]string{1: "inmem-1", 3: "inmem-3"}, again.delivery())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	links[1].Send([]*raftpb.Message{app(1, 2, 3)})
	waitIdle(t, n)
	if got, _ := again.take(); !slices.Equal(got, []string{"1:MsgApp:3"}) {
		t.Errorf("re-attached member 2 got %q", got)
	}
	if got, _ := boxes[2].take(); len(got) != 0 {
		t.Errorf("closed link delivered %q", got)
	}
}
