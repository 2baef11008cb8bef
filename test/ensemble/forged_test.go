package ensemble

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/wire"
)

// The attacks of issue 31 on a plain peer port, each replayed by an intruder speaking
// the member protocol by hand: a term the old bound let through that no member could be
// elected past, and forged snapshots that panicked every member at every start or grew
// one to gigabytes. The property tests behind them are quorum's TestSimForgedMessages
// and server's TestSnapshotCheckProvesRestore.

// Frame kinds of a snapshot stream (server/quorum/frame.go, snapstream.go).
const (
	frameSnap      byte = 3
	frameSnapChunk byte = 5
	frameSnapEnd   byte = 6
)

// snapshotFloor is the members' snapshot.receiveFloor in these tests: a forged stream
// past it is refused.
const snapshotFloor = 8 << 20

// memoryBound bounds a member's peak RSS (VmHWM) through the attacks: a few times the
// floor over what an idle member holds.
const memoryBound = 256 << 20

func TestForgedTermsAndSnapshots(t *testing.T) {
	c := newCluster(t, 3, clusterOptions{env: []string{"PADDOCK_SERVER_SNAPSHOT_RECEIVE_FLOOR=" + strconv.Itoa(snapshotFloor)}})
	w := &writer{c: c}
	w.write(t, "before")

	t.Run("a heartbeat of term 2^31-1", func(t *testing.T) {
		// In the issue no member served within 5 s of this frame, and none after a
		// restart of all three: the term was past the bound the members checked peers'
		// terms against, and their own campaigns were dropped by each other.
		lead := c.waitLeader(recoverBound)
		f := follower(lead)
		in, err := dialIntruder(t, c.members[f].peerAddr(), nil, lead+1, f+1)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.raft(message(raftpb.MsgHeartbeat, lead+1, f+1, 1<<31-1)); err != nil {
			t.Fatal(err)
		}
		servesAgain(t, c)
		w.write(t, "after 2^31-1")
		if term := termOf(t, c.members[f]); term < 1<<31-1 {
			t.Errorf("member %d's term is %d: it dropped the heartbeat it may take", f+1, term)
		}
	})
	t.Run("terms pushed a climb past the others three times", func(t *testing.T) {
		for range 3 {
			lead := c.waitLeader(recoverBound)
			f := follower(lead)
			want := termOf(t, c.members[f]) + quorum.TermCatchUp
			// The member climbs one such step an election timeout, and the real leader's
			// connection replaces the intruder's when it reconnects: the intruder dials
			// again and sends again until the member took the term.
			deadline := time.Now().Add(recoverBound)
			for termOf(t, c.members[f]) < want {
				if time.Now().After(deadline) {
					t.Fatalf("member %d never took term %d\n%s", f+1, want, c.diagnose())
				}
				if in, err := dialIntruder(t, c.members[f].peerAddr(), nil, lead+1, f+1); err == nil {
					in.raft(message(raftpb.MsgHeartbeat, lead+1, f+1, want))
				}
				time.Sleep(electionTimeout / 2)
			}
			servesAgain(t, c)
			w.write(t, fmt.Sprintf("after term %d", want))
		}
	})
	t.Run("a snapshot of the root alone, from a member that does not lead", func(t *testing.T) {
		lead := c.waitLeader(recoverBound)
		from, to := follower(lead), other(lead)
		before := c.members[to].counter(t, "zk_peer_messages_dropped")
		term := termOf(t, c.members[to])
		in, err := dialIntruder(t, c.members[to].peerAddr(), nil, from+1, to+1)
		if err != nil {
			t.Fatal(err)
		}
		if err := in.snapshot(from+1, to+1, term, rootOnly()); err != nil {
			t.Fatal(err)
		}
		c.members[to].waitCounter(t, "zk_peer_messages_dropped", before+1)
		if got := c.members[to].counter(t, "zk_peer_snapshots_refused"); got != 0 {
			t.Errorf("member %d read the records of a snapshot from a member it does not follow (%d refused)", to+1, got)
		}
		servesAgain(t, c)
		w.write(t, "after a non-leader's snapshot")
	})
	t.Run("a snapshot of the root alone, as the leader", func(t *testing.T) {
		// In the issue this one passed the check before Raft and panicked in Restore,
		// after it was committed: the member panicked again at every start.
		if _, err := snapshotAsLeader(t, c, rootOnly()); err != nil {
			t.Fatal(err)
		}
		servesAgain(t, c)
		w.write(t, "after the leader's forged snapshot")
	})
	t.Run("a snapshot four times the floor, as the leader", func(t *testing.T) {
		// In the issue 3.3 GB sent grew a member from 30 MiB to 4.3 GB: the check built
		// the tree whole, and Restore again, under a bound of 32 GiB.
		f, err := snapshotAsLeader(t, c, largeTree(4*snapshotFloor))
		t.Logf("streaming %d MiB: %v (the member closes the connection past its bound)", 4*snapshotFloor>>20, err)
		servesAgain(t, c)
		w.write(t, "after the large snapshot")
		if hwm := peakRSS(t, c.members[f].child.PID()); hwm > memoryBound {
			t.Errorf("member %d's peak RSS %d MiB, over the %d MiB bound", f+1, hwm>>20, memoryBound>>20)
		} else {
			t.Logf("member %d's peak RSS: %d MiB", f+1, hwm>>20)
		}
	})
	t.Run("every member restarted", func(t *testing.T) {
		for i := range c.members {
			c.kill(i)
		}
		for i := range c.members {
			c.start(i)
		}
		servesAgain(t, c)
		w.write(t, "after the restart")
	})
}

// termOf returns the member's Raft term, once it serves (mntr answers only then).
func termOf(t *testing.T, m *member) uint64 {
	t.Helper()
	deadline := time.Now().Add(recoverBound)
	for !m.serving() {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve: mode %s", m, m.mode())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return uint64(m.counter(t, "zk_raft_term"))
}

// servesAgain waits until every member serves and one leads, describing each member
// if they do not.
func servesAgain(t *testing.T, c *cluster) {
	t.Helper()
	deadline := time.Now().Add(recoverBound)
	for !c.allServing() {
		if time.Now().After(deadline) {
			t.Fatalf("not every member serves after %v: modes %v\n%s", recoverBound, c.modes(), c.diagnose())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// snapshotAsLeader streams records to a follower as its leader, in its term, and waits
// until the follower has refused the snapshot. It returns the follower and the
// stream's error (a follower past its bound closes the connection).
func snapshotAsLeader(t *testing.T, c *cluster, records func(func([]byte) error) error) (int, error) {
	t.Helper()
	lead := c.waitLeader(recoverBound)
	f := follower(lead)
	term := termOf(t, c.members[f])
	before := c.members[f].counter(t, "zk_peer_snapshots_refused")
	in, err := dialIntruder(t, c.members[f].peerAddr(), nil, lead+1, f+1)
	if err != nil {
		t.Fatal(err)
	}
	err = in.snapshot(lead+1, f+1, term, records)
	c.members[f].waitCounter(t, "zk_peer_snapshots_refused", before+1)
	return f, err
}

// writer writes through the ensemble and checks that zxids only grow and stay
// positive, whatever the terms did.
type writer struct {
	c    *cluster
	conn *zk.Conn
	last int64
}

func (w *writer) write(t *testing.T, note string) {
	t.Helper()
	if w.conn == nil {
		w.conn, _ = connect(t, w.c.addrs())
	}
	path := fmt.Sprintf("/forged-%d", time.Now().UnixNano())
	if err := createRetry(w.conn, path, nil, recoverBound); err != nil {
		t.Fatalf("%s: %v\n%s", note, err, w.c.diagnose())
	}
	_, stat, err := w.conn.Exists(path)
	if err != nil || stat == nil {
		t.Fatalf("%s: exists %s: %v", note, path, err)
	}
	if stat.Czxid <= w.last || stat.Czxid <= 0 {
		t.Fatalf("%s: zxid %#x after %#x: zxids must grow and stay positive", note, stat.Czxid, w.last)
	}
	w.last = stat.Czxid
}

// snapshot sends a MsgSnap as member from in term, then the records — the snapshot's
// Raft metadata first — in chunks, then the end.
func (in *intruder) snapshot(from, to int, term uint64, records func(yield func([]byte) error) error) error {
	md := &raftpb.SnapshotMetadata{Index: new(uint64(1 << 40)), Term: new(term),
		ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}}}
	m := message(raftpb.MsgSnap, from, to, term)
	m.Snapshot = &raftpb.Snapshot{Metadata: md}
	body, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	if err := in.frame(frameSnap, body); err != nil {
		return err
	}
	first, err := proto.Marshal(md)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(in.conn, 1<<20)
	var chunk []byte
	count := uint64(0)
	flush := func() error {
		b := binary.BigEndian.AppendUint32(nil, uint32(len(chunk)+1))
		b = append(b, frameSnapChunk)
		in.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(append(b, chunk...)); err != nil {
			return err
		}
		chunk = chunk[:0]
		return w.Flush()
	}
	add := func(rec []byte) error {
		chunk = binary.AppendUvarint(chunk, uint64(len(rec)))
		chunk = append(chunk, rec...)
		count++
		if len(chunk) >= 1<<20 {
			return flush()
		}
		return nil
	}
	if err := add(first); err != nil {
		return err
	}
	if err := records(add); err != nil {
		return err
	}
	if len(chunk) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	return in.frame(frameSnapEnd, binary.BigEndian.AppendUint64(nil, count))
}

// Snapshot records, written from their layout (server/datatree/snapshot.go): a header
// {kind 1, version 1, zxid, nodes, sessions}, then nodes {kind 2, path, data, ACL, stat}.
func snapHeader(nodes int64) []byte {
	var e wire.Encoder
	e.Int(1)
	e.Int(1)
	e.Long(5 << 32)
	e.Long(nodes)
	e.Long(0)
	return e.Bytes()
}

func snapNode(path string, data []byte) []byte {
	var e wire.Encoder
	e.Int(2)
	e.String(path)
	e.Buffer(data)
	e.Int(1)
	e.Int(31)
	e.String("world")
	e.String("anyone")
	for range 5 {
		e.Long(1) // czxid, mzxid, pzxid, ctime, mtime
	}
	e.Int(0)  // version
	e.Int(0)  // aversion
	e.Long(0) // owner
	e.Int(0)  // childCreates
	return e.Bytes()
}

// rootOnly is the forged snapshot: a header announcing one node, and the root.
func rootOnly() func(func([]byte) error) error {
	return func(add func([]byte) error) error {
		if err := add(snapHeader(1)); err != nil {
			return err
		}
		return add(snapNode("/", nil))
	}
}

// largeTree is a snapshot of well-formed nodes of 64 KiB each, size bytes of them: a
// member builds what it takes, so only its bound stops it.
func largeTree(size int) func(func([]byte) error) error {
	return func(add func([]byte) error) error {
		n := size / (64 << 10)
		if err := add(snapHeader(int64(n + 1))); err != nil {
			return err
		}
		if err := add(snapNode("/", nil)); err != nil {
			return err
		}
		data := make([]byte, 64<<10)
		for i := range n {
			if err := add(snapNode(fmt.Sprintf("/n%08d", i), data)); err != nil {
				return err
			}
		}
		return nil
	}
}

// peakRSS reads a process's peak resident set size (VmHWM) from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal(errors.New("no VmHWM in /proc/PID/status"))
	return 0
}
