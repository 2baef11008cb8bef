package quorum

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// TestSubmitNamesItsEntries: an entry submitted on a follower reaches every member's
// apply with the follower's id and the sequence number it was submitted under.
func TestSubmitNamesItsEntries(t *testing.T) {
	c := newCluster(t, 3, 0)
	lead := c.leader(5 * time.Second)
	follower := lead%3 + 1
	n := c.members[follower].node
	seq := n.NextSeq()
	if err := n.Submit(context.Background(), seq, []byte("submitted")); err != nil {
		t.Fatal(err)
	}
	recs := c.converged(1)
	i := slices.IndexFunc(recs, func(r record) bool { return r.data == "submitted" })
	if i < 0 || recs[i].from != follower || recs[i].seq != seq {
		t.Fatalf("records %v: want \"submitted\" from %d with sequence %d", recs, follower, seq)
	}
	if err := n.Submit(context.Background(), n.NextSeq(), nil); err != ErrEmpty {
		t.Errorf("empty Submit: %v, want ErrEmpty", err)
	}
}

func TestNotesReachTheirMember(t *testing.T) {
	c := newCluster(t, 3, 0)
	c.leader(5 * time.Second)
	c.members[1].node.SendNote(2, []byte("hello"))
	c.members[3].node.SendNote(2, []byte("hi"))
	eventually(t, 5*time.Second, func() error {
		m := c.members[2]
		m.mu.Lock()
		defer m.mu.Unlock()
		if !slices.Contains(m.notes, "1: hello") || !slices.Contains(m.notes, "3: hi") {
			return fmt.Errorf("member 2 got notes %q", m.notes)
		}
		return nil
	})
}

func TestLeaderCountsSyncedFollowersAndLearners(t *testing.T) {
	c := newCluster(t, 3, 1)
	lead := c.leader(5 * time.Second)
	c.propose(lead, "x")
	c.converged(1)
	eventually(t, 5*time.Second, func() error {
		st := c.members[lead].node.Status()
		if st.Followers != 2 || st.SyncedFollowers != 2 || st.Learners != 1 || st.SyncedLearners != 1 {
			return fmt.Errorf("leader status %+v: want 2 of 2 followers and 1 of 1 learners synced", st)
		}
		return nil
	})
	if st := c.members[lead%3+1].node.Status(); st.Followers != 0 || st.Learners != 0 {
		t.Errorf("a follower counts followers: %+v", st)
	}
}

// TestJoinAndLeave adds a joining member with a conf change, which catches up and
// proposes; then removes and re-adds a member, which can still propose.
func TestJoinAndLeave(t *testing.T) {
	c := newCluster(t, 3, 0)
	lead := c.leader(5 * time.Second)
	for i := range 5 {
		c.propose(lead, fmt.Sprint("before-", i))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.voters[4] = ln.Addr().String()
	c.members[4] = &member{id: 4, dir: t.TempDir(), join: true}
	c.start(4, ln)
	if st := c.members[4].node.Status(); st.Leader != 0 || st.Applied != 0 {
		t.Fatalf("a joining member before it is added: %+v", st)
	}
	change := func(via uint64, typ raftpb.ConfChangeType, id uint64, note string) {
		t.Helper()
		// A change proposed while there is no leader (the last one removed it) is
		// dropped: retry, as a client would. Adding or removing twice changes nothing.
		eventually(t, 10*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := c.members[via].node.ProposeConfChange(ctx,
				[]*raftpb.ConfChangeSingle{{Type: typ.Enum(), NodeId: new(id)}}, []byte(note))
			return err
		})
		for _, m := range c.members {
			if m.node != nil {
				m.node.SetPeers(c.others(m.id))
			}
		}
	}
	change(lead%3+1, raftpb.ConfChangeAddNode, 4, "add 4")
	c.propose(4, "from-4")
	c.converged(6)
	eventually(t, 5*time.Second, func() error {
		for id, m := range c.members {
			m.mu.Lock()
			changes := slices.Clone(m.changes)
			m.mu.Unlock()
			// The initial membership has no context; the change made here has.
			if !slices.Contains(changes, "add 4") {
				return fmt.Errorf("member %d saw conf changes %q", id, changes)
			}
		}
		return nil
	})
	if st := c.members[c.leader(5*time.Second)].node.Status(); st.Followers != 3 {
		t.Errorf("leader counts %d followers after the join, want 3", st.Followers)
	}
	// Member 2 is removed and added back: it proposes again (etcd's raft.Node alone
	// would refuse its proposals until the next election).
	change(1, raftpb.ConfChangeRemoveNode, 2, "remove 2")
	change(1, raftpb.ConfChangeAddNode, 2, "add 2")
	c.propose(2, "from-2-again")
	c.converged(7)
}

// others maps every member but id to its address.
func (c *cluster) others(id uint64) map[uint64]string {
	out := map[uint64]string{}
	for _, set := range []map[uint64]string{c.voters, c.learners} {
		for k, a := range set {
			if k != id {
				out[k] = a
			}
		}
	}
	return out
}

func TestChangedSignalsANewLeader(t *testing.T) {
	c := newCluster(t, 3, 0)
	lead := c.leader(5 * time.Second)
	follower := lead%3 + 1
	select { // drain what the first election signalled
	case <-c.members[follower].node.Changed():
	default:
	}
	c.stop(lead)
	select {
	case <-c.members[follower].node.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("no signal after the leader stopped")
	}
}
