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

// memberModel is what a test knows of a member's storage: the data of every entry
// saved, by index, and how far Saves acknowledged them.
type memberModel struct {
	data  []string // data[i-1]: entry i's data
	acked uint64   // entries 1..acked were acknowledged by a synced Save
	hs    uint64   // the commit of the last acknowledged hard state
}

// state is what a snapshot at index holds: the data of the entries up to it.
func (m *memberModel) state(index uint64) records { return records(m.data[:index]) }

// run saves entries in batches, snapshotting now and then, until the storage fails.
func (m *memberModel) run(s *WALStorage, rng *rand.Rand, steps int) error {
	for range steps {
		if rng.IntN(8) == 0 && m.acked > 0 {
			idx := m.acked - uint64(rng.IntN(int(min(m.acked, 3))))
			md := meta(idx, 1)
			if err := s.WriteSnapshot(md, m.state(idx), nil); err != nil {
				return err
			}
			if err := s.Checkpoint(md, uint64(rng.IntN(4))); err != nil {
				return err
			}
			continue
		}
		last, _ := s.LastIndex()
		var ents []*raftpb.Entry
		for range 1 + rng.IntN(6) {
			last++
			d := fmt.Sprintf("e%d-%s", last, string(make([]byte, rng.IntN(300))))
			m.data = append(m.data[:last-1], d)
			ents = append(ents, entry(1, last, d))
		}
		hs := &raftpb.HardState{Term: new(uint64(1)), Commit: new(last)}
		if err := s.Save(hs, ents, nil, true); err != nil {
			return err
		}
		m.acked, m.hs = last, last
	}
	return nil
}

// check checks what a restarted storage holds against the model, and resets the
// model to it.
func (m *memberModel) check(t *testing.T, s *WALStorage) {
	t.Helper()
	snap := s.SnapshotMetadata().GetIndex()
	last, err := s.LastIndex()
	must(t, err)
	if last < m.acked {
		t.Fatalf("last index %d after the crash, but %d were acknowledged", last, m.acked)
	}
	if snap > 0 {
		got, err := readRecords(s.ReadSnapshot(snap))
		must(t, err)
		if fmt.Sprint(got) != fmt.Sprint(m.state(snap)) {
			t.Fatalf("snapshot at %d holds %d records, not the state at %d", snap, len(got), snap)
		}
	}
	if last > snap {
		ents, err := s.Entries(snap+1, last+1, 1<<40)
		must(t, err)
		for _, e := range ents {
			if want := m.data[e.GetIndex()-1]; string(e.GetData()) != want {
				t.Fatalf("entry %d = %.10q, want %.10q", e.GetIndex(), e.GetData(), want)
			}
		}
	}
	hs, _, err := s.InitialState()
	must(t, err)
	if hs.GetCommit() < m.hs {
		t.Fatalf("commit %d after the crash, %d acknowledged", hs.GetCommit(), m.hs)
	}
	m.data, m.acked, m.hs = m.data[:last], last, hs.GetCommit()
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
				m := &memberModel{}
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
