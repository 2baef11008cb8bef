package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/paddock/paddock/internal/faultfs"
	"github.com/paddock/paddock/server/store"
)

const snapDir = "/data/snap"

// writeSnapshot writes a snapshot of records at zxid on fsys, stopping at the first
// error, which it returns after Abort.
func writeSnapshot(fsys *faultfs.FS, zxid int64, records [][]byte) error {
	w, err := store.CreateSnapshot(snapDir, zxid, fsys)
	if err != nil {
		return err
	}
	for _, r := range records {
		if err = w.Append(r); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Commit()
	}
	if err != nil {
		w.Abort()
	}
	return err
}

// checkSnapshots checks that the snapshots in snapDir are exactly those of want (by
// zxid), each reading back whole.
func checkSnapshots(t *testing.T, fsys *faultfs.FS, want map[int64][][]byte) {
	t.Helper()
	snaps, err := store.ListSnapshots(snapDir, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != len(want) {
		t.Fatalf("%d snapshots, want %d: %+v", len(snaps), len(want), snaps)
	}
	for _, s := range snaps {
		var got [][]byte
		zxid, err := store.ReadSnapshot(s.Path, fsys, func(p []byte) error {
			got = append(got, bytes.Clone(p))
			return nil
		})
		if err != nil {
			t.Fatalf("snapshot %s: %v", s.Path, err)
		}
		records, ok := want[zxid]
		if !ok || len(got) != len(records) {
			t.Fatalf("snapshot %#x has %d records, want %d", zxid, len(got), len(records))
		}
		for i := range got {
			if !bytes.Equal(got[i], records[i]) {
				t.Fatalf("snapshot %#x: record %d differs", zxid, i)
			}
		}
	}
}

// snapshotRecords returns n records of random bytes, which do not compress: the
// file holds about as many bytes as the records.
func snapshotRecords(n int) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, 1+i*37%3000)
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

// TestCrashDuringSnapshot halts the file system at each operation of writing a
// snapshot in turn and crashes it: the new snapshot is then either missing or whole,
// never a part under its final name, and the older snapshot is untouched.
func TestCrashDuringSnapshot(t *testing.T) {
	old, records := snapshotRecords(3), snapshotRecords(1000)
	for _, mode := range faultfs.CrashModes {
		t.Run(mode.String(), func(t *testing.T) {
			complete := false
			for n := 0; !complete; n++ {
				fsys := faultfs.New(uint64(n))
				if err := writeSnapshot(fsys, 5, old); err != nil {
					t.Fatal(err)
				}
				fsys.ResetCounts()
				fsys.Inject(faultfs.Rule{Ops: faultfs.AllOps, After: n, Halt: true, Torn: true})
				err := writeSnapshot(fsys, 9, records)
				complete = err == nil && !fsys.Halted()
				fsys.Crash(mode)
				removed, err := store.RemoveSnapshotTemps(snapDir, fsys)
				if err != nil {
					t.Fatal(err)
				}
				snaps, _ := store.ListSnapshots(snapDir, fsys)
				if len(snaps) == 2 || complete {
					checkSnapshots(t, fsys, map[int64][][]byte{5: old, 9: records})
				} else {
					checkSnapshots(t, fsys, map[int64][][]byte{5: old})
				}
				if complete && len(removed) > 0 {
					t.Fatalf("temporary files %v left by a committed snapshot", removed)
				}
			}
		})
	}
}

// TestSnapshotFaults fails each kind of operation of a snapshot's writing: Append or
// Commit fails, Abort leaves no file behind, and the older snapshot is untouched.
func TestSnapshotFaults(t *testing.T) {
	old, records := snapshotRecords(3), snapshotRecords(1000)
	// The records fill 5.6 write buffers: write 0 fails in an Append, write 5 in Commit.
	faults := []struct {
		op    faultfs.Op
		after int
	}{
		{faultfs.OpMkdir, 0}, {faultfs.OpCreate, 0}, {faultfs.OpWrite, 0}, {faultfs.OpWrite, 5},
		{faultfs.OpSync, 0}, {faultfs.OpRename, 0}, {faultfs.OpSyncDir, 0},
	}
	for _, f := range faults {
		t.Run(fmt.Sprintf("%s after %d", f.op, f.after), func(t *testing.T) {
			fsys := faultfs.New(1)
			if err := writeSnapshot(fsys, 5, old); err != nil {
				t.Fatal(err)
			}
			fsys.Inject(faultfs.Rule{Ops: f.op, Path: "snap*", After: f.after, Torn: true})
			if err := writeSnapshot(fsys, 9, records); !errors.Is(err, faultfs.ErrInjected) {
				t.Fatalf("writing the snapshot: %v, want the injected fault", err)
			}
			fsys.ClearFaults()
			want := map[int64][][]byte{5: old}
			if f.op == faultfs.OpSyncDir {
				want[9] = records // renamed, whole, only not yet durable
			}
			checkSnapshots(t, fsys, want)
			if removed, _ := store.RemoveSnapshotTemps(snapDir, fsys); len(removed) > 0 {
				t.Fatalf("Abort left %v", removed)
			}
		})
	}
}
