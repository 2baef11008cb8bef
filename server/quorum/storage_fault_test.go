package quorum

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/internal/faultfs"
	"github.com/paddock/paddock/server/store"
)

// These tests run a member's storage on faultfs and crash it at random points of its
// WAL writes and snapshot writes: after the restart, everything a Save with sync
// acknowledged is there (in the log, or in the snapshot that covers it), and the
// storage goes on from there.

const faultDir = "/member"

// memberModel is what a test knows of a member's storage: every entry record saved
// (an entry at an index already held replaces it and all after it, as a new leader's
// do), and how many of them a synced Save acknowledged.
type memberModel struct {
	recs   []entRec
	synced int               // recs[:synced] were acknowledged
	snaps  map[uint64]string // the state each snapshot was taken of, by index
	snapAt uint64            // the newest snapshot index written: entries up to it never change
	commit uint64            // the commit of the last acknowledged hard state
}

type entRec struct {
	index uint64
	data  string
}

// resolve returns the log recs make: the data of entries 1..n.
func resolve(recs []entRec) []string {
	var log []string
	for _, r := range recs {
		log = append(log[:r.index-1], r.data)
	}
	return log
}

// run saves entries in batches, now and then overwriting the last few and taking a
// snapshot, until the storage fails.
func (m *memberModel) run(s *WALStorage, rng *rand.Rand, steps int) error {
	for range steps {
		last := uint64(len(resolve(m.recs)))
		room := int(min(last-m.snapAt, 3)) // entries above the newest snapshot, up to 3
		switch {
		case rng.IntN(8) == 0 && room > 0:
			idx := last - uint64(rng.IntN(room))
			md := meta(idx, 1)
			m.snaps[idx] = fmt.Sprint(resolve(m.recs)[:idx])
			m.snapAt = idx
			if _, err := s.WriteSnapshot(md, records(resolve(m.recs)[:idx]), nil); err != nil {
				return err
			}
			if err := s.Checkpoint(md, uint64(rng.IntN(4))); err != nil {
				return err
			}
			continue
		case rng.IntN(5) == 0 && room > 0:
			last -= uint64(rng.IntN(room)) + 1 // a new leader's entries replace the last few
		}
		var ents []*raftpb.Entry
		for range 1 + rng.IntN(6) {
			last++
			d := fmt.Sprintf("e%d-%d-%s", last, len(m.recs), string(make([]byte, rng.IntN(300))))
			m.recs = append(m.recs, entRec{last, d})
			ents = append(ents, entry(1, last, d))
		}
		hs := &raftpb.HardState{Term: new(uint64(1)), Commit: new(m.snapAt)}
		if err := s.Save(hs, ents, nil, true); err != nil {
			return err
		}
		m.synced, m.commit = len(m.recs), m.snapAt
	}
	return nil
}

// check checks what a restarted storage holds against the model — the log some
// prefix of the records saved makes, all acknowledged ones included — and resets the
// model to it.
func (m *memberModel) check(t *testing.T, s *WALStorage) {
	t.Helper()
	snap := s.SnapshotMetadata().GetIndex()
	if snap > 0 {
		got, err := readRecords(s.ReadSnapshot(snap))
		must(t, err)
		if want, ok := m.snaps[snap]; !ok || fmt.Sprint(got) != want {
			t.Fatalf("snapshot at %d holds %d records, not the state it was taken of", snap, len(got))
		}
	}
	last, err := s.LastIndex()
	must(t, err)
	var got []string
	if last > snap {
		ents, err := s.Entries(snap+1, last+1, 1<<40)
		must(t, err)
		for _, e := range ents {
			got = append(got, string(e.GetData()))
		}
	}
	var match []string
	found := false
	for p := len(m.recs); p >= m.synced && !found; p-- {
		log := resolve(m.recs[:p])
		if uint64(len(log)) == last && last >= snap && fmt.Sprint(log[snap:]) == fmt.Sprint(got) {
			match, found = log, true
		}
	}
	if !found {
		t.Fatalf("after the crash: a log of %d entries (snapshot at %d) that no prefix of the %d records saved, "+
			"the %d acknowledged ones included, makes", last, snap, len(m.recs), m.synced)
	}
	hs, _, err := s.InitialState()
	must(t, err)
	if hs.GetCommit() < m.commit {
		t.Fatalf("commit %d after the crash, %d acknowledged", hs.GetCommit(), m.commit)
	}
	m.recs = m.recs[:0]
	for i, d := range match {
		m.recs = append(m.recs, entRec{uint64(i + 1), d})
	}
	m.synced, m.commit = len(m.recs), hs.GetCommit()
	m.snapAt = max(m.snapAt, snap)
}

func TestStorageCrashKeepsAcknowledged(t *testing.T) {
	ops := []faultfs.Op{faultfs.OpWrite, faultfs.OpSync, faultfs.OpRename, faultfs.OpSyncDir, faultfs.OpCreate, faultfs.OpRemove}
	crashes, rounds := 0, 0
	t.Cleanup(func() {
		// Most rounds must end in a crash in the middle, or the test tests little.
		if !t.Failed() && crashes < rounds/2 {
			t.Errorf("only %d of %d rounds crashed while writing", crashes, rounds)
		}
		t.Logf("%d of %d rounds crashed while writing", crashes, rounds)
	})
	for seed := uint64(1); seed <= 24; seed++ {
		for _, mode := range faultfs.CrashModes {
			t.Run(fmt.Sprintf("seed %d %s", seed, mode), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(mode)))
				fsys := faultfs.New(seed)
				m := &memberModel{snaps: map[uint64]string{}}
				for round := range 4 {
					s, err := OpenStorage(StorageConfig{Dir: faultDir, FS: fsys, SegmentSize: 2048, NoPrepare: true}, nil)
					if err != nil {
						t.Fatalf("round %d: open after the crash: %v", round, err)
					}
					m.check(t, s)
					fsys.Inject(faultfs.Rule{Ops: ops[rng.IntN(len(ops))], After: rng.IntN(60), Count: 1,
						Torn: true, Halt: true})
					err = m.run(s, rng, 40)
					rounds++
					if err != nil {
						crashes++
					}
					if err != nil && !errors.Is(err, faultfs.ErrHalted) && !errors.Is(err, faultfs.ErrInjected) {
						t.Fatalf("round %d: %v", round, err)
					}
					fsys.Crash(mode)
				}
			})
		}
	}
}

// Damage in a segment the log has left is corruption: start fails naming the file and
// the offset, and drops nothing.
func TestStorageCorruptionStopsStart(t *testing.T) {
	dir := t.TempDir()
	s := openStorage(t, dir, nil)
	for i := uint64(1); i <= 40; i++ {
		must(t, s.Save(&raftpb.HardState{Term: new(uint64(1)), Commit: new(i)},
			[]*raftpb.Entry{entry(1, i, fmt.Sprintf("%0100d", i))}, nil, true))
	}
	must(t, s.Close())
	segs := segmentNames(t, dir)
	if len(segs) < 3 {
		t.Fatalf("segments %v, want several", segs)
	}
	path := filepath.Join(dir, logSubdir, segs[1])
	b, err := os.ReadFile(path)
	must(t, err)
	b[200] ^= 0x40
	must(t, os.WriteFile(path, b, 0o644))
	_, err = OpenStorage(StorageConfig{Dir: dir, SegmentSize: 1024, NoPrepare: true}, nil)
	var ce *store.CorruptError
	if !errors.As(err, &ce) || ce.File != segs[1] || ce.Offset > 200 || ce.Offset < 32 {
		t.Fatalf("OpenStorage = %v, want a *CorruptError in %s before offset 200", err, segs[1])
	}
}
