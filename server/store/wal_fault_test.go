package store_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/faultfs"
	"github.com/paddock/paddock/server/store"
)

// These tests run the log on faultfs and check the durability contract: after a crash,
// Open recovers every record whose Sync returned nil, and beyond those only a prefix of
// what was appended after them, never anything else; and a failed write or sync fails
// every later Append and Sync.

const logDir = "/data/log"

// record is a record appended to, or replayed from, the log.
type record struct {
	zxid    int64
	payload []byte
}

// model is what a test knows of the log: every record appended, in order, and how
// many of them a Sync has vouched for.
type model struct {
	appended []record
	synced   int
}

func payload(zxid int64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(zxid*131 + int64(i)*7 + 1)
	}
	return p
}

func faultConfig(fsys *faultfs.FS, segmentSize int64) store.Config {
	return store.Config{Dir: logDir, SegmentSize: segmentSize, ForceSync: true, FS: fsys}
}

// appendBatch appends n records of size bytes with zxids from next on, then syncs if
// sync is set. It returns the first error, with the model updated to what was
// accepted: a record counts as appended once Append returned nil, and the batch as
// synced once Sync did.
func (m *model) appendBatch(w *store.WAL, next *int64, sizes []int, sync bool) error {
	for _, n := range sizes {
		r := record{*next, payload(*next, n)}
		if err := w.Append(r.zxid, r.payload); err != nil {
			return err
		}
		*next++
		m.appended = append(m.appended, r)
	}
	if !sync {
		return nil
	}
	if err := w.Sync(); err != nil {
		return err
	}
	m.synced = len(m.appended)
	return nil
}

// recover opens the log after a crash, checks what it holds against the model, and
// resets the model to it. exact demands exactly the synced records.
func (m *model) recover(t *testing.T, cfg store.Config, after int64, exact bool) *store.WAL {
	t.Helper()
	w, err := store.Open(cfg, nil)
	if err != nil {
		t.Fatalf("Open after crash: %v", err)
	}
	var got []record
	err = w.Replay(after, func(zxid int64, p []byte) error {
		got = append(got, record{zxid, bytes.Clone(p)})
		return nil
	})
	if err != nil {
		t.Fatalf("Replay after crash: %v", err)
	}
	var want []record // the records after `after` the model holds
	skipped := 0
	for _, r := range m.appended {
		if r.zxid > after {
			want = append(want, r)
		} else {
			skipped++
		}
	}
	synced := max(m.synced-skipped, 0)
	if len(got) < synced || len(got) > len(want) || (exact && len(got) != synced) {
		t.Fatalf("recovered %d records after %#x; %d were synced, %d appended", len(got), after, synced, len(want))
	}
	for i, r := range got {
		if r.zxid != want[i].zxid || !bytes.Equal(r.payload, want[i].payload) {
			t.Fatalf("recovered record %d is zxid %#x (%d bytes), appended was zxid %#x (%d bytes)",
				i, r.zxid, len(r.payload), want[i].zxid, len(want[i].payload))
		}
	}
	var wantLast int64
	if n := skipped + len(got); n > 0 {
		wantLast = m.appended[n-1].zxid
	}
	if last := w.LastZxid(); last != wantLast {
		t.Fatalf("LastZxid %#x after recovering %d records, want %#x", last, len(got), wantLast)
	}
	// Forget the records at or below after, but the last, which LastZxid may still be.
	m.appended = m.appended[max(skipped-1, 0) : skipped+len(got)]
	m.synced = len(m.appended)
	return w
}

func newLogFS(t *testing.T, seed uint64) *faultfs.FS {
	t.Helper()
	fsys := faultfs.New(seed)
	if err := fsys.MkdirAll(logDir, 0o750); err != nil {
		t.Fatal(err)
	}
	return fsys
}

func repeat(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

func TestCrashKeepsSyncedRecords(t *testing.T) {
	type step struct {
		sizes []int
		sync  bool
	}
	tests := []struct {
		name    string
		segment int64
		steps   []step
		rotates bool // unsynced records fill segments, which the log syncs as it leaves them
	}{
		{"nothing appended", 4096, nil, false},
		{"everything synced", 4096, []step{{repeat(5, 100), true}, {repeat(3, 50), true}}, false},
		{"last batch buffered only", 4096, []step{{repeat(5, 100), true}, {repeat(4, 100), false}}, false},
		{"unsynced batch written out past the buffer", 2 << 20, []step{{repeat(3, 100), true}, {repeat(250, 5000), false}}, false},
		{"several unsynced batches written out", 2 << 20, []step{{repeat(3, 100), true}, {repeat(100, 5000), false}, {repeat(100, 5000), false}, {repeat(100, 5000), false}}, false},
		{"large payloads written directly", 1 << 20, []step{{[]int{70000, 10}, true}, {[]int{100000, 70000}, false}}, false},
		{"rotation into an unsynced segment", 1024, []step{{repeat(8, 100), true}, {repeat(3, 100), false}}, false},
		{"many segments, the newest unsynced", 1024, []step{{repeat(20, 100), true}, {repeat(19, 100), true}, {repeat(12, 100), false}}, true},
		{"first segment never synced", 4096, []step{{repeat(5, 100), false}}, false},
	}
	for _, tt := range tests {
		for _, mode := range faultfs.CrashModes {
			t.Run(fmt.Sprintf("%s/%s", tt.name, mode), func(t *testing.T) {
				seeds := uint64(10)
				if tt.segment > 1<<20 {
					seeds = 3 // megabytes of unsynced data: each seed is slow under the race detector
				}
				for seed := range seeds {
					fsys := newLogFS(t, seed)
					cfg := faultConfig(fsys, tt.segment)
					w, err := store.Open(cfg, nil)
					if err != nil {
						t.Fatal(err)
					}
					var m model
					next := int64(0x100000001)
					for _, s := range tt.steps {
						if err := m.appendBatch(w, &next, s.sizes, s.sync); err != nil {
							t.Fatal(err)
						}
					}
					fsys.Crash(mode)
					w = m.recover(t, cfg, 0, mode == faultfs.DropUnsynced && !tt.rotates)
					// The log goes on from what it recovered, and keeps it.
					next = w.LastZxid() + 1
					if err := m.appendBatch(w, &next, repeat(3, 60), true); err != nil {
						t.Fatalf("seed %d: append after recovery: %v", seed, err)
					}
					fsys.Crash(mode)
					m.recover(t, cfg, 0, true).Close()
				}
			})
		}
	}
}

// TestFailedIOIsSticky fails one operation of the log's writer and checks that the
// Append or Sync that met it fails, that every later one fails the same way, and that
// a crash then loses nothing that was synced.
func TestFailedIOIsSticky(t *testing.T) {
	tests := []struct {
		name string
		rule faultfs.Rule
	}{
		{"write", faultfs.Rule{Ops: faultfs.OpWrite, Path: "*.wal"}},
		{"torn write", faultfs.Rule{Ops: faultfs.OpWrite, Path: "*.wal", Torn: true}},
		{"fdatasync", faultfs.Rule{Ops: faultfs.OpSync, Path: "*.wal"}},
		{"segment create", faultfs.Rule{Ops: faultfs.OpCreate, Path: "*.wal.tmp"}},
		{"segment preallocation", faultfs.Rule{Ops: faultfs.OpWrite, Path: "*.wal.tmp"}}, // its zeros
		{"segment header sync", faultfs.Rule{Ops: faultfs.OpSync, Path: "*.wal.tmp"}},
		{"segment rename", faultfs.Rule{Ops: faultfs.OpRename}},
		{"directory sync", faultfs.Rule{Ops: faultfs.OpSyncDir}},
		{"write, process dies", faultfs.Rule{Ops: faultfs.OpWrite, Path: "*.wal", Torn: true, Halt: true}},
		{"directory sync, process dies", faultfs.Rule{Ops: faultfs.OpSyncDir, Halt: true}},
	}
	for _, tt := range tests {
		for _, after := range []int{0, 1, 3, 7} {
			for _, mode := range faultfs.CrashModes {
				t.Run(fmt.Sprintf("%s/after %d/%s", tt.name, after, mode), func(t *testing.T) {
					fsys := newLogFS(t, uint64(after))
					cfg := faultConfig(fsys, 2048)
					w, err := store.Open(cfg, nil)
					if err != nil {
						t.Fatal(err)
					}
					var m model
					next := int64(1)
					r := tt.rule
					r.After = after
					fault := fsys.Inject(r)
					var failed error
					for batch := 0; failed == nil && batch < 50; batch++ {
						failed = m.appendBatch(w, &next, repeat(1+batch%4, 150), true)
					}
					if failed == nil || fault.Fired() != 1 {
						t.Fatalf("no failure after 50 batches (rule fired %d times)", fault.Fired())
					}
					if !errors.Is(failed, faultfs.ErrInjected) {
						t.Fatalf("the failure %v is not the injected one", failed)
					}
					if err := w.Append(next+10, []byte("x")); err != failed {
						t.Fatalf("Append after the failure: %v, want %v", err, failed)
					}
					if err := w.Sync(); err != failed {
						t.Fatalf("Sync after the failure: %v, want %v", err, failed)
					}
					w.Close()
					fsys.Crash(mode)
					w = m.recover(t, cfg, 0, false)
					next = w.LastZxid() + 1
					if err := m.appendBatch(w, &next, repeat(5, 150), true); err != nil {
						t.Fatalf("append after recovery: %v", err)
					}
					w.Close()
					fsys.Crash(mode)
					m.recover(t, cfg, 0, true).Close()
				})
			}
		}
	}
}

// TestCrashDuringRecovery crashes Open itself, at each of its file operations in turn,
// while it repairs a torn tail; the next Open must still recover the synced records.
func TestCrashDuringRecovery(t *testing.T) {
	for n := 0; ; n++ {
		fsys := newLogFS(t, uint64(n))
		cfg := faultConfig(fsys, 1024)
		w, err := store.Open(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		var m model
		next := int64(1)
		if err := m.appendBatch(w, &next, repeat(10, 100), true); err != nil {
			t.Fatal(err)
		}
		if err := m.appendBatch(w, &next, repeat(7, 100), false); err != nil {
			t.Fatal(err)
		}
		// Leave garbage after the synced records, as a crash mid-write can, and an
		// empty new segment.
		if err := m.appendBatch(w, &next, repeat(7, 100), false); err != nil {
			t.Fatal(err)
		}
		fsys.Crash(faultfs.KeepPrefix)
		fsys.ResetCounts()
		fsys.Inject(faultfs.Rule{Ops: faultfs.AllOps, After: n, Halt: true})
		w, err = store.Open(cfg, nil)
		if err == nil {
			w.Close()
			if !fsys.Halted() {
				if n < 10 {
					t.Fatalf("Open ran to the end after %d file operations; the test means to crash it during repairs", n)
				}
				return // Open ran to the end: every point was tried
			}
		}
		fsys.Crash(faultfs.KeepPrefix)
		m.recover(t, cfg, 0, false).Close()
	}
}

var (
	randomRounds = flag.Int("store.rounds", 300, "rounds of TestRandomCrashes")
	randomSeed   = flag.Uint64("store.seed", 0, "seed of TestRandomCrashes; 0 picks one from the clock")
)

// TestRandomCrashes runs a log through many rounds of random batches, random syncs, a
// random fault or a halt at a random operation, a crash of a random kind and a
// recovery, checking every recovery against what was synced. A failure prints the
// seed; -store.seed replays it.
func TestRandomCrashes(t *testing.T) {
	seed := *randomSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d (rerun with -store.seed=%d)", seed, seed)
		}
	})
	rounds := *randomRounds
	if testing.Short() {
		rounds = min(rounds, 30)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	fsys := newLogFS(t, seed)
	cfg := faultConfig(fsys, int64(1024+rng.IntN(4096)))
	var m model
	next := int64(1)
	purged := int64(0) // the highest zxid purged before, so far
	for round := range rounds {
		w, err := store.Open(cfg, nil)
		if err != nil {
			t.Fatalf("round %d: Open: %v", round, err)
		}
		if round > 0 {
			w.Close()
			w = m.recover(t, cfg, purged, false)
		}
		next = w.LastZxid() + 1
		if rng.IntN(4) == 0 {
			next += int64(rng.IntN(1000)) // a new epoch
		}
		fsys.ResetCounts()
		injectRandomFault(rng, fsys)
		for batch := rng.IntN(20); batch >= 0; batch-- {
			sizes := make([]int, 1+rng.IntN(30))
			for i := range sizes {
				sizes[i] = randomSize(rng)
			}
			if err := m.appendBatch(w, &next, sizes, rng.IntN(3) > 0); err != nil {
				if !errors.Is(err, faultfs.ErrInjected) && !errors.Is(err, faultfs.ErrHalted) {
					t.Fatalf("round %d: unexpected error %v", round, err)
				}
				break
			}
			if rng.IntN(5) == 0 && m.synced > 0 {
				// As after a snapshot of what is applied, and so synced.
				z := m.appended[rng.IntN(m.synced)].zxid
				if _, err := w.PurgeBefore(z); err != nil && !errors.Is(err, faultfs.ErrInjected) && !errors.Is(err, faultfs.ErrHalted) {
					t.Fatalf("round %d: PurgeBefore: %v", round, err)
				}
				purged = max(purged, z)
			}
		}
		w.Close()
		fsys.Crash(faultfs.CrashModes[rng.IntN(len(faultfs.CrashModes))])
	}
	w := m.recover(t, cfg, purged, false)
	w.Close()
}

func randomSize(rng *rand.Rand) int {
	switch r := rng.IntN(100); {
	case r < 80:
		return rng.IntN(200)
	case r < 98:
		return rng.IntN(3000)
	default:
		return 60000 + rng.IntN(20000) // written directly, larger than a segment
	}
}

// injectRandomFault injects nothing, a failing operation or a halt, at random.
func injectRandomFault(rng *rand.Rand, fsys *faultfs.FS) {
	ops := []faultfs.Op{faultfs.OpWrite, faultfs.OpSync, faultfs.OpCreate, faultfs.OpRename,
		faultfs.OpSyncDir, faultfs.OpAllocate, faultfs.OpRemove, faultfs.AllOps}
	switch rng.IntN(3) {
	case 0:
	case 1:
		fsys.Inject(faultfs.Rule{Ops: ops[rng.IntN(len(ops))], After: rng.IntN(50), Count: 1, Torn: rng.IntN(2) == 0})
	case 2:
		fsys.Inject(faultfs.Rule{Ops: faultfs.AllOps, After: rng.IntN(200), Halt: true, Torn: rng.IntN(2) == 0})
	}
}

// TestCrashDuringPurge halts the file system at each operation of a PurgeBefore in
// turn and crashes it: the log must open whole from its oldest remaining segment, and
// replay after the purge point.
func TestCrashDuringPurge(t *testing.T) {
	for _, mode := range faultfs.CrashModes {
		for n := 0; ; n++ {
			fsys := newLogFS(t, uint64(n))
			cfg := faultConfig(fsys, 1024)
			w, err := store.Open(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			var m model
			next := int64(1)
			for range 10 {
				if err := m.appendBatch(w, &next, repeat(5, 100), true); err != nil {
					t.Fatal(err)
				}
			}
			fsys.ResetCounts()
			fsys.Inject(faultfs.Rule{Ops: faultfs.AllOps, After: n, Halt: true})
			removed, err := w.PurgeBefore(40)
			if err == nil && !fsys.Halted() {
				if len(removed) != 5 || n != 10 {
					t.Fatalf("PurgeBefore(40) removed %v in %d operations, want 5 segments in 10", removed, n)
				}
				break // every operation of the purge was tried
			}
			w.Close()
			fsys.Crash(mode)
			m.recover(t, cfg, 40, false).Close()
		}
	}
}
