package quorum

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

func entry(term, index uint64, data string) *raftpb.Entry {
	return &raftpb.Entry{Term: new(term), Index: new(index), Type: raftpb.EntryNormal.Enum(), Data: []byte(data)}
}

func TestFileStorageRecovers(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := OpenFileStorage(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(1)), Vote: new(uint64(2))},
		[]*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b"), entry(1, 3, "c")}, nil, true))
	// A new leader overwrites index 3 in term 2 (a conflicting tail is replaced).
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(2)), Vote: new(uint64(3)), Commit: new(uint64(3))},
		[]*raftpb.Entry{entry(2, 3, "C"), entry(2, 4, "d")}, nil, true))
	must(t, s.Close())

	s, err = OpenFileStorage(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs, _, err := s.InitialState()
	must(t, err)
	if hs.GetTerm() != 2 || hs.GetVote() != 3 || hs.GetCommit() != 3 {
		t.Fatalf("hard state = %v, want term 2 vote 3 commit 3", hs)
	}
	checkEntries(t, s, []string{"a", "b", "C", "d"}, []uint64{1, 1, 2, 2})
}

func TestFileStorageTruncatesTornTail(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := OpenFileStorage(dir, logger)
	must(t, err)
	must(t, s.Save(nil, []*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b")}, nil, true))
	must(t, s.Close())
	path := filepath.Join(dir, logFile)

	tests := []struct {
		name string
		mod  func(b []byte) []byte
		want []string
	}{
		{"half a record", func(b []byte) []byte { return b[:len(b)-3] }, []string{"a"}},
		{"flipped bit", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, []string{"a"}},
		{"garbage after", func(b []byte) []byte { return append(b, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7) }, []string{"a", "b"}},
	}
	orig, err := os.ReadFile(path)
	must(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			must(t, os.WriteFile(path, tt.mod(append([]byte(nil), orig...)), 0o644))
			s, err := OpenFileStorage(dir, logger)
			must(t, err)
			checkEntries(t, s, tt.want, nil)
			// The log is writable after the truncation and the new record survives.
			next := uint64(len(tt.want) + 1)
			must(t, s.Save(nil, []*raftpb.Entry{entry(1, next, "z")}, nil, true))
			must(t, s.Close())
			s, err = OpenFileStorage(dir, logger)
			must(t, err)
			checkEntries(t, s, append(tt.want, "z"), nil)
			must(t, s.Close())
		})
	}
}

func checkEntries(t *testing.T, s *FileStorage, data []string, terms []uint64) {
	t.Helper()
	last, err := s.LastIndex()
	must(t, err)
	if last != uint64(len(data)) {
		t.Fatalf("last index = %d, want %d", last, len(data))
	}
	ents, err := s.Entries(1, last+1, 1<<30)
	must(t, err)
	for i, e := range ents {
		if string(e.GetData()) != data[i] || e.GetIndex() != uint64(i+1) {
			t.Fatalf("entry %d = %q at index %d, want %q", i, e.GetData(), e.GetIndex(), data[i])
		}
		if terms != nil && e.GetTerm() != terms[i] {
			t.Fatalf("entry %d term = %d, want %d", i, e.GetTerm(), terms[i])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A crash between a snapshot file and the log that follows it: Open loads the
// snapshot, replays the older log's entries after it and raises the hard state.
func TestFileStorageRecoversSnapshotBeforeRotation(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := OpenFileStorage(dir, logger)
	must(t, err)
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(1)), Commit: new(uint64(2))},
		[]*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b"), entry(1, 3, "c"), entry(1, 4, "d")}, nil, true))
	snap := &raftpb.Snapshot{Data: []byte("state"), Metadata: &raftpb.SnapshotMetadata{
		Index: new(uint64(3)), Term: new(uint64(1)), ConfState: &raftpb.ConfState{Voters: []uint64{1}}}}
	must(t, s.writeSnapshot(snap)) // the crash: no rotation, no removal
	must(t, s.Close())

	s, err = OpenFileStorage(dir, logger)
	must(t, err)
	defer s.Close()
	got, err := s.Snapshot()
	must(t, err)
	if got.GetMetadata().GetIndex() != 3 || string(got.GetData()) != "state" {
		t.Fatalf("snapshot = %v, want index 3 with its data", got)
	}
	hs, _, err := s.InitialState()
	must(t, err)
	if hs.GetCommit() != 3 || hs.GetTerm() != 1 {
		t.Fatalf("hard state = %v, want commit raised to 3", hs)
	}
	first, err := s.FirstIndex()
	must(t, err)
	last, err := s.LastIndex()
	must(t, err)
	if first != 4 || last != 4 {
		t.Fatalf("log [%d, %d], want [4, 4]", first, last)
	}
}

// Checkpoint leaves one snapshot and one log holding only what follows it, and a
// reopened storage holds the same.
func TestFileStorageCheckpoint(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := OpenFileStorage(dir, logger)
	must(t, err)
	must(t, s.Save(&raftpb.HardState{Term: new(uint64(1)), Commit: new(uint64(5))},
		[]*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b"), entry(1, 3, "c"), entry(1, 4, "d"), entry(1, 5, "e")}, nil, true))
	must(t, s.Checkpoint(4, &raftpb.ConfState{Voters: []uint64{1}}, []byte("s4"), 2))
	if first, _ := s.FirstIndex(); first != 3 {
		t.Fatalf("memory first index %d, want 3 (two entries kept)", first)
	}
	must(t, s.Save(nil, []*raftpb.Entry{entry(1, 6, "f")}, nil, true))
	must(t, s.Close())
	if _, err := os.Stat(filepath.Join(dir, logFile)); !os.IsNotExist(err) {
		t.Fatalf("old log still there: %v", err)
	}

	s, err = OpenFileStorage(dir, logger)
	must(t, err)
	defer s.Close()
	if first, _ := s.FirstIndex(); first != 5 {
		t.Fatalf("reopened first index %d, want 5", first)
	}
	ents, err := s.Entries(5, 7, 1<<30)
	must(t, err)
	if len(ents) != 2 || string(ents[0].GetData()) != "e" || string(ents[1].GetData()) != "f" {
		t.Fatalf("reopened entries = %v, want e, f", ents)
	}
}

// TestFileStoragePreallocates: the log is written into zeros written ahead of need,
// which a restart after a crash (no Close) reads as the end of the log, not as a torn
// record; a clean Close cuts them off.
func TestFileStoragePreallocates(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.DiscardHandler)
	s, err := OpenFileStorage(dir, logger)
	must(t, err)
	must(t, s.Save(nil, []*raftpb.Entry{entry(1, 1, "a"), entry(1, 2, "b")}, nil, true))
	path := filepath.Join(dir, logFile)
	fi, err := os.Stat(path)
	must(t, err)
	if fi.Size() < preallocChunk {
		t.Fatalf("log is %d bytes, want it preallocated to at least %d", fi.Size(), preallocChunk)
	}
	// A crash: the file is left as it is, and opened again.
	crashed, err := os.ReadFile(path)
	must(t, err)
	must(t, s.Close())
	must(t, os.WriteFile(path, crashed, 0o644))
	var logs bytes.Buffer
	s, err = OpenFileStorage(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	must(t, err)
	checkEntries(t, s, []string{"a", "b"}, nil)
	if strings.Contains(logs.String(), "torn") {
		t.Errorf("zeros ahead of the last record taken for a torn tail: %s", logs.String())
	}
	must(t, s.Save(nil, []*raftpb.Entry{entry(1, 3, "c")}, nil, true))
	must(t, s.Close())
	fi, err = os.Stat(path)
	must(t, err)
	if fi.Size() >= preallocChunk {
		t.Errorf("a closed log is %d bytes: the zeros ahead were not cut off", fi.Size())
	}
	s, err = OpenFileStorage(dir, logger)
	must(t, err)
	checkEntries(t, s, []string{"a", "b", "c"}, nil)
	must(t, s.Close())
}
