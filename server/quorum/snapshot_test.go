package quorum

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/server/store"
)

// Snapshot implements Snapshotter: a copy of the records, each encoded as index,
// term, proposer, sequence and data length (uint64s big-endian), then data.
func (m *member) Snapshot() (StateSnapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var view encodedRecords
	for _, r := range m.records {
		var b []byte
		b = binary.BigEndian.AppendUint64(b, r.index)
		b = binary.BigEndian.AppendUint64(b, r.term)
		b = binary.BigEndian.AppendUint64(b, r.from)
		b = binary.BigEndian.AppendUint64(b, r.seq)
		b = binary.BigEndian.AppendUint64(b, uint64(len(r.data)))
		view = append(view, append(b, r.data...))
	}
	if m.gate != nil {
		return gatedRecords{view, m.gate}, nil
	}
	return view, nil
}

// gatedRecords hands out its records once gate is closed.
type gatedRecords struct {
	encodedRecords
	gate chan struct{}
}

func (g gatedRecords) Records(fn func([]byte) error) error {
	<-g.gate
	return g.encodedRecords.Records(fn)
}

type encodedRecords [][]byte

func (v encodedRecords) Records(fn func([]byte) error) error {
	for _, p := range v {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// Restore implements Snapshotter.
func (m *member) Restore(read ReadFunc, index, term uint64) error {
	recs, err := decodeRecords(read, index)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = recs
	m.restores++
	return nil
}

// CheckSnapshot implements SnapshotChecker: the records decode as Restore reads them.
func (m *member) CheckSnapshot(read ReadFunc, md *raftpb.SnapshotMetadata) error {
	_, err := decodeRecords(read, md.GetIndex())
	return err
}

// decodeRecords reads a test snapshot at index: records of entries up to it, in order.
func decodeRecords(read ReadFunc, index uint64) ([]record, error) {
	var recs []record
	err := read(func(data []byte) error {
		if len(data) < 40 || uint64(len(data)-40) != binary.BigEndian.Uint64(data[32:]) {
			return errors.New("test snapshot: bad record")
		}
		r := record{binary.BigEndian.Uint64(data), binary.BigEndian.Uint64(data[8:]),
			binary.BigEndian.Uint64(data[16:]), binary.BigEndian.Uint64(data[24:]), string(data[40:])}
		if n := len(recs); r.index > index || (n > 0 && recs[n-1].index >= r.index) {
			return fmt.Errorf("test snapshot at %d holds record %d out of order", index, r.index)
		}
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

func (m *member) restoreCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restores
}

// storageFiles returns the log segments of the member in dir with the bytes of
// records they hold (zeros written ahead of need left out), and its snapshot files.
func storageFiles(t *testing.T, dir string) (logs map[string]int64, snaps []string) {
	t.Helper()
	logs = map[string]int64{}
	for _, name := range segmentNames(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, logSubdir, name))
		if err != nil {
			t.Fatal(err)
		}
		logs[name] = int64(len(bytes.TrimRight(b, "\x00")))
	}
	infos, err := store.ListSnapshots(filepath.Join(dir, snapSubdir), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range infos {
		snaps = append(snaps, filepath.Base(info.Path))
	}
	return logs, snaps
}

func TestLogFileBoundedByCompaction(t *testing.T) {
	const snapEvery, batches, perBatch = 20, 6, 40
	c := newSnapshotCluster(t, 3, 0, snapEvery, 5)
	lead := c.leader(5 * time.Second)
	// One entry's records (entry plus the hard states of its Readies) take well
	// under 200 bytes; without compaction the log would hold batches*perBatch
	// entries.
	const bound = 2 * snapEvery * 200
	for b := range batches {
		for i := range perBatch {
			c.propose(lead, fmt.Sprintf("b%d-%03d", b, i))
		}
		c.converged((b + 1) * perBatch)
		if b == 0 {
			continue // the first snapshot may still be pending on some member
		}
		for id, m := range c.members {
			// A snapshot just written is on disk a moment before the append loop
			// records it and removes the one before (snapshotWritten).
			var logs map[string]int64
			var snaps []string
			deadline := time.Now().Add(5 * time.Second)
			for {
				logs, snaps = storageFiles(t, m.dir)
				if len(snaps) == 1 && !m.node.writing.Load() || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if len(snaps) != 1 {
				t.Fatalf("member %d after %d entries: snapshots %v; want one", id, (b+1)*perBatch, snaps)
			}
			// The segment being appended to stays whole, and the one before it may
			// still hold the entries after the snapshot.
			total := int64(0)
			for _, size := range logs {
				total += size
			}
			if total > bound+2*testSegmentSize {
				t.Fatalf("member %d after %d entries: log segments %v hold %d bytes, want under %d",
					id, (b+1)*perBatch, logs, total, bound+2*testSegmentSize)
			}
		}
	}
}

func TestRestartAfterCompactionRecoversState(t *testing.T) {
	c := newSnapshotCluster(t, 1, 0, 10, 3)
	c.leader(5 * time.Second)
	for i := range 57 {
		c.propose(1, fmt.Sprintf("v%d", i))
	}
	want := c.converged(57)
	// A snapshot still being written when the member stops is left beside the one before
	// (compaction records it and removes the older); wait for the last to be recorded.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, snaps := storageFiles(t, c.members[1].dir); len(snaps) == 1 && !c.members[1].node.writing.Load() {
			break
		}
	}
	c.stop(1)
	if _, snaps := storageFiles(t, c.members[1].dir); len(snaps) != 1 {
		t.Fatalf("snapshots %v, want one", snaps)
	}
	// A fresh state machine: everything comes from the snapshot and the log after it.
	m := c.members[1]
	m.mu.Lock()
	m.records, m.restores = nil, 0
	m.mu.Unlock()
	c.start(1, nil)
	got := c.converged(57)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart: %v, want %v", got, want)
	}
	if m.restoreCount() != 1 {
		t.Fatalf("restores = %d, want 1 (from the local snapshot)", m.restoreCount())
	}
	if st := m.node.Status(); st.Applied < want[len(want)-1].index {
		t.Fatalf("applied %d, want at least %d", st.Applied, want[len(want)-1].index)
	}
	c.leader(5 * time.Second)
	c.propose(1, "after-restart")
	c.converged(58)
}

func TestLaggingMemberCatchesUpBySnapshot(t *testing.T) {
	c := newSnapshotCluster(t, 3, 0, 20, 5)
	lead := c.leader(5 * time.Second)
	for i := range 5 {
		c.propose(lead, fmt.Sprintf("early-%d", i))
	}
	c.converged(5)
	down := lead%3 + 1 // a follower
	c.stop(down)
	lagged := c.members[down].lastApplied()
	lead = c.leader(5 * time.Second)
	for i := range 100 {
		c.propose(lead, fmt.Sprintf("late-%d", i))
	}
	want := c.converged(105)
	first, err := c.members[lead].node.storage.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if first <= lagged+1 {
		t.Fatalf("leader's log starts at %d: not compacted past the lagging member's %d", first, lagged)
	}
	m := c.members[down]
	c.start(down, nil)
	got := c.converged(105)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lagging member: %v, want %v", got, want)
	}
	if m.restoreCount() == 0 {
		t.Fatal("lagging member caught up without a snapshot")
	}
	c.propose(down, "from-lagged")
	c.converged(106)
}

// TestSnapshotWrittenOffTheReadyLoop: while a snapshot's records are being written
// (here: held back), the member goes on committing and applying proposals; the log
// is compacted once the file is done.
func TestSnapshotWrittenOffTheReadyLoop(t *testing.T) {
	gate := make(chan struct{})
	c := newClusterWith(t, 1, 0, func(c *cluster) {
		c.snapEvery, c.keep, c.gate = 5, 1, gate
	})
	c.leader(5 * time.Second)
	for i := range 30 { // the first snapshot starts after 5 and waits at the gate
		c.propose(1, fmt.Sprintf("v%d", i))
	}
	c.converged(30)
	if _, snaps := storageFiles(t, c.members[1].dir); len(snaps) != 0 {
		t.Fatalf("snapshots %v written while their records were held back", snaps)
	}
	if first, _ := c.members[1].node.storage.FirstIndex(); first > 2 {
		t.Fatalf("log compacted to %d before any snapshot was written", first)
	}
	close(gate)
	eventually(t, 5*time.Second, func() error {
		_, snaps := storageFiles(t, c.members[1].dir)
		if first, _ := c.members[1].node.storage.FirstIndex(); len(snaps) != 1 || first <= 2 {
			return fmt.Errorf("snapshots %v, log from %d: not compacted after the snapshot", snaps, first)
		}
		return nil
	})
}
