package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/server/store"
)

func entry(term, index uint64, data string) *raftpb.Entry {
	return &raftpb.Entry{Term: new(term), Index: new(index), Type: raftpb.EntryNormal.Enum(), Data: []byte(data)}
}

// records is a StateSnapshot of the given records.
type records []string

func (r records) Records(fn func([]byte) error) error {
	for _, p := range r {
		if err := fn([]byte(p)); err != nil {
			return err
		}
	}
	return nil
}

// readRecords returns what read yields.
func readRecords(read ReadFunc) ([]string, error) {
	var got []string
	err := read(func(p []byte) error { got = append(got, string(p)); return nil })
	return got, err
}

func meta(index, term uint64) *raftpb.SnapshotMetadata {
	return &raftpb.SnapshotMetadata{Index: new(index), Term: new(term), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}
}

// openStorage opens the storage in dir with small segments.
func openStorage(t *testing.T, dir string, fsys store.FS) *WALStorage {
	t.Helper()
	s, err := OpenStorage(StorageConfig{Dir: dir, FS: fsys, SegmentSize: 1024, NoPrepare: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStorageRecovers(t *testing.T) {
	dir := t.TempDir()
	s := openStorage(t, dir, nil)
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(1)), Vote: new(uint64(2))},
		[]*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b"), entry(1, 3, "c")}, nil, true))
	// A new leader overwrites index 3 in term 2 (a conflicting tail is replaced).
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(2)), Vote: new(uint64(3)), Commit: new(uint64(3))},
		[]*raftpb.Entry{entry(2, 3, "C"), entry(2, 4, "d")}, nil, true))
	must(t, s.Close())

	s = openStorage(t, dir, nil)
	defer s.Close()
	hs, _, err := s.InitialState()
	must(t, err)
	if hs.GetTerm() != 2 || hs.GetVote() != 3 || hs.GetCommit() != 3 {
		t.Fatalf("hard state = %v, want term 2 vote 3 commit 3", hs)
	}
	checkEntries(t, s, 1, []string{"a", "b", "C", "d"}, []uint64{1, 1, 2, 2})
	if _, err := os.Stat(filepath.Join(dir, logSubdir)); err != nil {
		t.Fatalf("no WAL directory: %v", err)
	}
}

// checkEntries checks that s holds data (in terms, if not nil) from index first on.
func checkEntries(t *testing.T, s *WALStorage, first uint64, data []string, terms []uint64) {
	t.Helper()
	last, err := s.LastIndex()
	must(t, err)
	if last != first+uint64(len(data))-1 {
		t.Fatalf("last index = %d, want %d", last, first+uint64(len(data))-1)
	}
	ents, err := s.Entries(first, last+1, 1<<30)
	must(t, err)
	for i, e := range ents {
		if string(e.GetData()) != data[i] || e.GetIndex() != first+uint64(i) {
			t.Fatalf("entry %d = %q at index %d, want %q", i, e.GetData(), e.GetIndex(), data[i])
		}
		if terms != nil && e.GetTerm() != terms[i] {
			t.Fatalf("entry %d term = %d, want %d", i, e.GetTerm(), terms[i])
		}
	}
}

// snapErr is WriteSnapshot's error alone.
func snapErr(_ store.SnapshotStats, err error) error { return err }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A crash between a snapshot file and its record in the WAL: Open loads the snapshot,
// replays the entries after it and raises the hard state.
func TestStorageRecoversSnapshotBeforeCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s := openStorage(t, dir, nil)
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(1)), Commit: new(uint64(2))},
		[]*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b"), entry(1, 3, "c"), entry(1, 4, "d")}, nil, true))
	must(t, snapErr(s.WriteSnapshot(meta(3, 1), records{"x", "y"}, nil))) // the crash: no Checkpoint
	must(t, s.Close())

	s = openStorage(t, dir, nil)
	defer s.Close()
	if md := s.SnapshotMetadata(); md.GetIndex() != 3 {
		t.Fatalf("snapshot = %v, want index 3", md)
	}
	got, err := readRecords(s.ReadSnapshot(3))
	must(t, err)
	if fmt.Sprint(got) != "[x y]" {
		t.Fatalf("snapshot records %q, want x, y", got)
	}
	hs, _, err := s.InitialState()
	must(t, err)
	if hs.GetCommit() != 3 || hs.GetTerm() != 1 {
		t.Fatalf("hard state = %v, want commit raised to 3", hs)
	}
	checkEntries(t, s, 4, []string{"d"}, nil)
}

// Checkpoint leaves one snapshot and the WAL segments holding what follows it, and a
// reopened storage holds the same.
func TestStorageCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s := openStorage(t, dir, nil)
	var data []string
	for i := uint64(1); i <= 60; i++ {
		d := strings.Repeat(string(rune('a'+i%26)), 40)
		data = append(data, d)
		must(t, s.Save(&raftpb.HardState{Term: new(uint64(1)), Commit: new(i)}, []*raftpb.Entry{entry(1, i, d)}, nil, true))
	}
	segs := len(segmentNames(t, dir))
	must(t, snapErr(s.WriteSnapshot(meta(20, 1), records{"s20"}, nil)))
	must(t, s.Checkpoint(meta(20, 1), 5))
	must(t, snapErr(s.WriteSnapshot(meta(50, 1), records{"s50"}, nil)))
	must(t, s.Checkpoint(meta(50, 1), 5))
	if first, _ := s.FirstIndex(); first != 46 {
		t.Fatalf("memory first index %d, want 46 (five entries kept)", first)
	}
	if after := len(segmentNames(t, dir)); after >= segs {
		t.Fatalf("%d segments before the snapshots, %d after: none purged", segs, after)
	}
	snaps, err := store.ListSnapshots(filepath.Join(dir, snapSubdir), nil)
	must(t, err)
	if len(snaps) != 1 || snaps[0].Zxid != 50 {
		t.Fatalf("snapshots %v, want only the one at 50", snaps)
	}
	must(t, s.Save(nil, []*raftpb.Entry{entry(1, 61, "f")}, nil, true))
	must(t, s.Close())

	s = openStorage(t, dir, nil)
	defer s.Close()
	if md := s.SnapshotMetadata(); md.GetIndex() != 50 {
		t.Fatalf("reopened snapshot %v, want index 50", md)
	}
	checkEntries(t, s, 51, append(data[50:], "f"), nil)
	hs, _, _ := s.InitialState()
	if hs.GetCommit() != 60 {
		t.Fatalf("reopened hard state %v, want commit 60", hs)
	}
}

func segmentNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, logSubdir))
	must(t, err)
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".wal") {
			names = append(names, de.Name())
		}
	}
	return names
}

// A snapshot goes from a leader's storage (SnapshotRecords: its file's records) to a
// follower's (Receive, then Save), whose log it replaces.
func TestStorageReceive(t *testing.T) {
	lead := openStorage(t, t.TempDir(), nil)
	defer lead.Close()
	must(t, lead.Save(&raftpb.HardState{Term: new(uint64(2)), Commit: new(uint64(3))},
		[]*raftpb.Entry{entry(1, 1, "a"), entry(2, 2, "b"), entry(2, 3, "c")}, nil, true))
	must(t, snapErr(lead.WriteSnapshot(meta(3, 2), records{"r1", "r2", "r3"}, nil)))
	must(t, lead.Checkpoint(meta(3, 2), 0))
	snap, err := lead.Snapshot()
	must(t, err)
	if snap.GetMetadata().GetIndex() != 3 || len(snap.GetData()) != 0 {
		t.Fatalf("leader's snapshot %v, want index 3 without data", snap.GetMetadata())
	}
	sent := lead.SnapshotRecords(3)

	dir := t.TempDir()
	f := openStorage(t, dir, nil)
	must(t, f.Save(&raftpb.HardState{Term: new(uint64(1))}, []*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "old")}, nil, true))

	// Records of another snapshot are refused, and a checker's refusal too.
	if err := f.Receive(meta(3, 1), sent, nil); err == nil || !strings.Contains(err.Error(), "metadata") {
		t.Fatalf("records of another snapshot: %v, want refused for their metadata", err)
	}
	no := errors.New("no")
	if err := f.Receive(snap.GetMetadata(), sent, func(read ReadFunc) error {
		if err := read(func([]byte) error { return nil }); err != nil {
			return err
		}
		return no
	}); !errors.Is(err, no) {
		t.Fatalf("refused snapshot: %v, want the checker's error", err)
	}
	if infos, _ := store.ListSnapshots(filepath.Join(dir, recvSubdir), nil); len(infos) != 0 {
		t.Fatalf("refused snapshots were kept: %v", infos)
	}

	var checked []string
	must(t, f.Receive(snap.GetMetadata(), sent, func(read ReadFunc) error {
		var err error
		checked, err = readRecords(read)
		return err
	}))
	if fmt.Sprint(checked) != "[r1 r2 r3]" {
		t.Fatalf("checker saw %q", checked)
	}
	must(t, f.Save(&raftpb.HardState{Term: new(uint64(2)), Commit: new(uint64(3))}, nil, snap, true))
	must(t, f.Save(nil, []*raftpb.Entry{entry(2, 4, "d")}, nil, true))
	must(t, f.Close())

	f = openStorage(t, dir, nil)
	defer f.Close()
	if md := f.SnapshotMetadata(); md.GetIndex() != 3 || md.GetTerm() != 2 {
		t.Fatalf("follower's snapshot %v, want index 3 term 2", md)
	}
	got, err := readRecords(f.ReadSnapshot(3))
	must(t, err)
	if fmt.Sprint(got) != "[r1 r2 r3]" {
		t.Fatalf("follower's snapshot records %q", got)
	}
	checkEntries(t, f, 4, []string{"d"}, nil)
}

// legacyRecord frames m as a record of the previous format.
func legacyRecord(t *testing.T, typ byte, m proto.Message) []byte {
	t.Helper()
	p, err := proto.Marshal(m)
	must(t, err)
	body := append([]byte{typ}, p...)
	b := binary.LittleEndian.AppendUint32(nil, crc32.Checksum(body, legacyCRC))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
	return append(b, body...)
}

// splitUvarint is the state machine's split of an old snapshot: records behind their
// uvarint lengths, as server/ wrote them.
func splitUvarint(data []byte, fn func([]byte) error) error {
	for len(data) > 0 {
		n, k := binary.Uvarint(data)
		if k <= 0 || n > uint64(len(data)-k) {
			return errors.New("bad length")
		}
		if err := fn(data[k : k+int(n)]); err != nil {
			return err
		}
		data = data[k+int(n):]
	}
	return nil
}

// A directory the previous format wrote is converted at start: its snapshot and the
// log after it become the new files, the old ones move into legacy/; a conversion
// cut short is done again.
func TestStorageConvertsPreviousFormat(t *testing.T) {
	dir := t.TempDir()
	var data []byte
	for _, r := range []string{"n1", "n2", "n3"} {
		data = binary.AppendUvarint(data, uint64(len(r)))
		data = append(data, r...)
	}
	snap := &raftpb.Snapshot{Data: data, Metadata: meta(5, 2)}
	must(t, os.WriteFile(filepath.Join(dir, "snap-0000000000000005.snap"), legacyRecord(t, 3, snap), 0o644))
	var log []byte
	for _, e := range []*raftpb.Entry{entry(2, 4, "old"), entry(2, 6, "f"), entry(2, 7, "g"), entry(3, 7, "G")} {
		log = append(log, legacyRecord(t, 1, e)...)
	}
	log = append(log, legacyRecord(t, 2, &raftpb.HardState{Term: new(uint64(3)), Vote: new(uint64(2)), Commit: new(uint64(7))})...)
	log = append(log, 1, 2, 3) // a torn tail
	must(t, os.WriteFile(filepath.Join(dir, "raft-0000000000000005.log"), log, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "raft.log"), legacyRecord(t, 1, entry(1, 1, "stale")), 0o644))

	if _, err := OpenStorage(StorageConfig{Dir: dir}, nil); !errors.Is(err, errLegacyFormat) ||
		!strings.Contains(err.Error(), filepath.Join(dir, legacySubdir)) {
		t.Fatalf("without a way to split its snapshot: %v, want errLegacyFormat naming the directory", err)
	}
	check := func() {
		t.Helper()
		s, err := OpenStorage(StorageConfig{Dir: dir, SegmentSize: 1024, NoPrepare: true, SplitLegacySnapshot: splitUvarint}, nil)
		must(t, err)
		defer s.Close()
		if md := s.SnapshotMetadata(); md.GetIndex() != 5 || md.GetTerm() != 2 {
			t.Fatalf("converted snapshot %v, want index 5 term 2", md)
		}
		got, err := readRecords(s.ReadSnapshot(5))
		must(t, err)
		if fmt.Sprint(got) != "[n1 n2 n3]" {
			t.Fatalf("converted snapshot records %q", got)
		}
		checkEntries(t, s, 6, []string{"f", "G"}, []uint64{2, 3})
		hs, _, _ := s.InitialState()
		if hs.GetTerm() != 3 || hs.GetVote() != 2 || hs.GetCommit() != 7 {
			t.Fatalf("converted hard state %v", hs)
		}
	}
	check()
	for _, name := range []string{"raft.log", "raft-0000000000000005.log", "snap-0000000000000005.snap", legacyDoneFile} {
		if _, err := os.Stat(filepath.Join(dir, legacySubdir, name)); err != nil {
			t.Errorf("legacy/%s: %v", name, err)
		}
	}
	check() // converted once only: the new files are read as they are
	// A conversion cut short (no CONVERTED yet, some new records written) is redone.
	s := openStorage(t, dir, nil)
	must(t, s.Save(nil, []*raftpb.Entry{entry(3, 8, "half-converted")}, nil, true))
	must(t, s.Close())
	must(t, os.Remove(filepath.Join(dir, legacySubdir, legacyDoneFile)))
	check()
}

// After a purge, the oldest segment left may start with entries a new leader
// overwrote, after a hole: replay starts at the lsn the last snapshot record names, so
// they are not taken for a damaged log.
func TestStorageReplayAfterPurgeSkipsOverwrittenEntries(t *testing.T) {
	dir := t.TempDir()
	s := openStorage(t, dir, nil)
	var ents []*raftpb.Entry
	for i := uint64(1); i <= 10; i++ {
		size := 150 // five of these and one small one fill the first 1024-byte segment
		if i > 5 {
			size = 30 // the rest, and the overwriting entries, to the second
		}
		ents = append(ents, entry(1, i, strings.Repeat("x", size)))
	}
	must(t, s.Save(nil, ents, nil, true))
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(2)), Commit: new(uint64(4))},
		[]*raftpb.Entry{entry(2, 3, "c2"), entry(2, 4, "d2")}, nil, true))
	must(t, snapErr(s.WriteSnapshot(meta(3, 2), records{"s3"}, nil)))
	must(t, s.Checkpoint(meta(3, 2), 0))
	// The first segment (entries 1-6) is purged; the second starts with term 1's
	// entries 7-10, overwritten, after a hole.
	if segs := segmentNames(t, dir); len(segs) != 1 || segs[0] != "0000000000000007.wal" {
		t.Fatalf("segments after the purge %v, want the one from lsn 7", segs)
	}
	must(t, s.Close())
	s = openStorage(t, dir, nil)
	defer s.Close()
	checkEntries(t, s, 4, []string{"d2"}, []uint64{2})
}
