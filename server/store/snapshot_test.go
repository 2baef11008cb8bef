package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSnapshot writes a snapshot of payloads at zxid in dir and returns its path.
func writeSnapshot(t testing.TB, dir string, zxid int64, payloads [][]byte) string {
	t.Helper()
	return writeSnapshotOn(t, nil, dir, zxid, snapshotVersion, payloads)
}

// writeSnapshotOn writes a snapshot of payloads at zxid in dir on fsys, in the given
// version of the format, and returns its path.
func writeSnapshotOn(t testing.TB, fsys FS, dir string, zxid int64, version uint32, payloads [][]byte) string {
	t.Helper()
	writeSnapshotStats(t, fsys, dir, zxid, version, payloads)
	return filepath.Join(dir, snapshotName(zxid))
}

// writeSnapshotStats is writeSnapshotOn returning the writer's Stats.
func writeSnapshotStats(t testing.TB, fsys FS, dir string, zxid int64, version uint32, payloads [][]byte) SnapshotStats {
	t.Helper()
	w, err := createSnapshot(dir, zxid, fsys, version)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range payloads {
		if err := w.Append(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	return w.Stats()
}

// snapshotVersions are the formats ReadSnapshot reads: the one written and the one
// before it.
var snapshotVersions = []struct {
	name    string
	version uint32
}{{"v1", snapshotVersion1}, {"v2", snapshotVersion}}

// readSnapshotFile reads the snapshot at path and returns its zxid and records.
func readSnapshotFile(path string) (int64, [][]byte, error) {
	var got [][]byte
	zxid, err := ReadSnapshot(path, nil, func(p []byte) error {
		got = append(got, bytes.Clone(p))
		return nil
	})
	return zxid, got, err
}

func snapshotPayloads(n int, size func(i int) int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = payloadFor(int64(i), size(i))
	}
	return out
}

func TestSnapshotRoundTrip(t *testing.T) {
	b := snapshotBlockSize
	tests := []struct {
		name     string
		payloads [][]byte
	}{
		{"no records", nil},
		{"one record", [][]byte{[]byte("the only one")}},
		{"one empty record", [][]byte{{}}},
		{"100000 records", snapshotPayloads(100_000, func(i int) int { return i % 300 })},
		{"records around the buffer size", snapshotPayloads(7, func(i int) int {
			return []int{10, snapshotWriteSize/2 - 1, snapshotWriteSize / 2, 5, snapshotWriteSize + 3, 0, 3 * snapshotWriteSize}[i]
		})},
		// A record and its length exactly fill a block, miss it by one, pass it by one;
		// then records that span blocks.
		{"records around the block size", snapshotPayloads(9, func(i int) int {
			return []int{b - snapshotLenSize, b - snapshotLenSize - 1, 0, b - 2*snapshotLenSize - 1, 1, b, 3*b + 5, 0, 2}[i]
		})},
		{"records that do not compress", randomPayloads(2000, 700)},
	}
	// The operating system's file system takes writes around the page cache where
	// it can, in whole blocks; any other FS gets them as they come.
	systems := []struct {
		name string
		fs   FS
	}{{"direct", nil}, {"cached", struct{ FS }{OS}}}
	for _, tt := range tests {
		for _, sys := range systems {
			for _, v := range snapshotVersions {
				t.Run(tt.name+"/"+sys.name+"/"+v.name, func(t *testing.T) {
					dir := filepath.Join(t.TempDir(), "snap") // created by CreateSnapshot
					path := writeSnapshotOn(t, sys.fs, dir, 0x300000042, v.version, tt.payloads)
					checkSnapshotFile(t, path, 0x300000042, tt.payloads)
					snaps, err := ListSnapshots(dir, nil)
					fi, _ := os.Stat(path)
					if err != nil || len(snaps) != 1 || snaps[0] != (SnapshotInfo{0x300000042, path, fi.Size()}) {
						t.Fatalf("ListSnapshots: %+v %v", snaps, err)
					}
					if entries, _ := os.ReadDir(dir); len(entries) != 1 {
						t.Fatalf("directory holds %d files, want the snapshot alone", len(entries))
					}
				})
			}
		}
	}
}

// checkSnapshotFile reads the snapshot at path and checks that it holds want at zxid.
func checkSnapshotFile(t *testing.T, path string, zxid int64, want [][]byte) {
	t.Helper()
	got, records, err := readSnapshotFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != zxid || len(records) != len(want) {
		t.Fatalf("read zxid %#x and %d records, want %#x and %d", got, len(records), zxid, len(want))
	}
	for i := range records {
		if !bytes.Equal(records[i], want[i]) {
			t.Fatalf("record %d differs: %d bytes, want %d", i, len(records[i]), len(want[i]))
		}
	}
}

// randomPayloads returns n payloads of size random bytes.
func randomPayloads(n, size int) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(size)))
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size)
		for j := range out[i] {
			out[i][j] = byte(rng.Uint32())
		}
	}
	return out
}

// TestSnapshotDamage damages a small snapshot of each format in every way a byte can
// be damaged — each byte flipped, the file cut at each length, a byte added — and
// checks that every one is reported as corruption of that file.
func TestSnapshotDamage(t *testing.T) {
	payloads := [][]byte{{}, []byte("hello"), bytes.Repeat([]byte("x"), 40), {0}}
	for _, v := range snapshotVersions {
		t.Run(v.name, func(t *testing.T) {
			path := writeSnapshotOn(t, nil, t.TempDir(), 7, v.version, payloads)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := snapshotMinSize + 4*snapshotFrameSize + 46; v.version == snapshotVersion1 && len(good) != want {
				t.Fatalf("snapshot is %d bytes, want %d", len(good), want)
			}
			for off := range good {
				for _, mask := range []byte{0x01, 0x80, 0xff} {
					b := bytes.Clone(good)
					b[off] ^= mask
					checkCorrupt(t, path, fmt.Sprintf("byte %d ^ %#x", off, mask), b)
				}
			}
			for n := range good {
				checkCorrupt(t, path, fmt.Sprintf("cut to %d bytes", n), good[:n])
			}
			checkCorrupt(t, path, "a byte added", append(bytes.Clone(good), 0))
			if v.version == snapshotVersion1 {
				checkCorrupt(t, path, "records swapped", swapRecords(good))
			}
			if err := os.WriteFile(path, good, 0o640); err != nil {
				t.Fatal(err)
			}
			checkSnapshotFile(t, path, 7, payloads)
		})
	}
}

// checkCorrupt writes data over the snapshot file at path and checks that reading it
// reports a CorruptError for that file at an offset within data.
func checkCorrupt(t *testing.T, path, what string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	_, _, err := readSnapshotFile(path)
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.File != filepath.Base(path) ||
		ce.Offset < 0 || ce.Offset > int64(len(data)) {
		t.Fatalf("%s: got %v, want a CorruptError for %s", what, err, filepath.Base(path))
	}
}

// swapRecords swaps the second and third records of the damage test's version 1
// snapshot, each whole with its checksum: only the checksum of the whole file can tell.
func swapRecords(good []byte) []byte {
	second := snapshotHeaderSize + snapshotFrameSize
	third := second + snapshotFrameSize + 5
	end := third + snapshotFrameSize + 40
	b := bytes.Clone(good[:second])
	b = append(b, good[third:end]...)
	b = append(b, good[second:third]...)
	return append(b, good[end:]...)
}

func TestSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	path := writeSnapshot(t, dir, 5, [][]byte{[]byte("a")})
	t.Run("file renamed to another zxid", func(t *testing.T) {
		other := filepath.Join(dir, snapshotName(6))
		b, _ := os.ReadFile(path)
		if err := os.WriteFile(other, b, 0o640); err != nil {
			t.Fatal(err)
		}
		_, _, err := readSnapshotFile(other)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "header says zxid 0x5") {
			t.Fatalf("got %v", err)
		}
		os.Remove(other)
	})
	t.Run("callback error", func(t *testing.T) {
		stop := errors.New("stop")
		_, err := ReadSnapshot(path, nil, func([]byte) error { return stop })
		if !errors.Is(err, stop) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("got %v, want stop", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		if _, _, err := readSnapshotFile(filepath.Join(dir, snapshotName(99))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("negative zxid", func(t *testing.T) {
		if _, err := CreateSnapshot(dir, -1, nil); err == nil {
			t.Fatal("CreateSnapshot(-1) succeeded")
		}
	})
	t.Run("use after commit and abort", func(t *testing.T) {
		w, err := CreateSnapshot(dir, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := w.Append(nil); !errors.Is(err, ErrSnapshotDone) {
			t.Fatalf("Append after Commit: %v", err)
		}
		if err := w.Commit(); !errors.Is(err, ErrSnapshotDone) {
			t.Fatalf("second Commit: %v", err)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort after Commit: %v", err)
		}
		if _, _, err := readSnapshotFile(filepath.Join(dir, snapshotName(10))); err != nil {
			t.Fatalf("Abort after Commit damaged the snapshot: %v", err)
		}
	})
	t.Run("abort", func(t *testing.T) {
		w, err := CreateSnapshot(dir, 11, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{snapshotName(11), snapshotName(11) + tmpExt} {
			if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
				t.Fatalf("%s after Abort: %v", name, err)
			}
		}
		if err := w.Append(nil); !errors.Is(err, ErrSnapshotDone) {
			t.Fatalf("Append after Abort: %v", err)
		}
	})
}

// makeSnapshotDir creates files by name in a fresh directory: a snapshot of one
// record, or of the given size in bytes when the name carries "=SIZE".
func makeSnapshotDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		name, size, sized := strings.Cut(name, "=")
		if strings.HasSuffix(name, "/") {
			if err := os.Mkdir(filepath.Join(dir, name), 0o750); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var n int
		if sized {
			fmt.Sscan(size, &n)
		} else if zxid, ok := parseSnapshotName(name); ok {
			b, err := os.ReadFile(writeSnapshot(t, t.TempDir(), zxid, [][]byte{[]byte("r")}))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o640); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func snapName(zxid int64) string { return snapshotName(zxid) }

func TestListSnapshots(t *testing.T) {
	dir := makeSnapshotDir(t, snapName(0x10), snapName(0x300000001), snapName(0x2), snapName(0x5)+tmpExt,
		"snapshot.10", "snapshot.000000000000001G", "snapshot.000000000000001A", "0000000000000001.wal",
		snapName(0x7)+"/")
	snaps, err := ListSnapshots(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range snaps {
		got = append(got, fmt.Sprintf("%#x %s", s.Zxid, filepath.Base(s.Path)))
	}
	want := []string{"0x300000001 " + snapName(0x300000001), "0x10 " + snapName(0x10), "0x2 " + snapName(0x2)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ListSnapshots: %v, want %v", got, want)
	}
	if snaps, err := ListSnapshots(filepath.Join(dir, "missing"), nil); err != nil || snaps != nil {
		t.Fatalf("ListSnapshots of a missing directory: %v %v", snaps, err)
	}
}

func TestPurgeSnapshots(t *testing.T) {
	tiny := fmt.Sprintf("=%d", snapshotMinSize-1)
	tests := []struct {
		name        string
		files       []string
		keep        int
		wantRemoved []int64
		wantOldest  int64
	}{
		{"none", nil, 3, nil, 0},
		{"fewer than kept", []string{snapName(1), snapName(2)}, 3, nil, 0},
		{"exactly kept", []string{snapName(1), snapName(2), snapName(3)}, 3, nil, 1},
		{"older ones removed", []string{snapName(1), snapName(2), snapName(3), snapName(4), snapName(5)}, 3, []int64{1, 2}, 3},
		{"keep one", []string{snapName(8), snapName(9)}, 1, []int64{8}, 9},
		{"too small to count, newest", []string{snapName(1), snapName(2), snapName(3), snapName(4) + tiny}, 2, []int64{1}, 2},
		{"too small to count, oldest", []string{snapName(1) + tiny, snapName(2), snapName(3)}, 2, []int64{1}, 2},
		{"temporary files stay", []string{snapName(1), snapName(2), snapName(3) + tmpExt, snapName(0) + tmpExt}, 1, []int64{1}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := makeSnapshotDir(t, tt.files...)
			before, _ := os.ReadDir(dir)
			removed, oldest, err := PurgeSnapshots(dir, nil, tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, z := range tt.wantRemoved {
				want = append(want, filepath.Join(dir, snapName(z)))
			}
			if fmt.Sprint(removed) != fmt.Sprint(want) || oldest != tt.wantOldest {
				t.Fatalf("removed %v, oldest kept %#x; want %v, %#x", removed, oldest, want, tt.wantOldest)
			}
			after, _ := os.ReadDir(dir)
			if len(after) != len(before)-len(want) {
				t.Fatalf("%d files left of %d, %d removed", len(after), len(before), len(want))
			}
		})
	}
	if _, _, err := PurgeSnapshots(t.TempDir(), nil, 0); err == nil {
		t.Fatal("PurgeSnapshots with keep 0 succeeded")
	}
}

func TestRemoveSnapshotTemps(t *testing.T) {
	dir := makeSnapshotDir(t, snapName(1), snapName(2)+tmpExt, snapName(3)+tmpExt, "other.tmp")
	removed, err := RemoveSnapshotTemps(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, snapName(2)+tmpExt), filepath.Join(dir, snapName(3)+tmpExt)}
	if fmt.Sprint(removed) != fmt.Sprint(want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("%d files left, want the snapshot and other.tmp", len(entries))
	}
	if removed, err := RemoveSnapshotTemps(filepath.Join(dir, "missing"), nil); err != nil || removed != nil {
		t.Fatalf("missing directory: %v %v", removed, err)
	}
}

// version1Zxid and version1Records are what testdata/snapshot.0000000100000abc holds:
// a snapshot written by the build before snapshots were compressed (version 1).
const version1Zxid = 0x100000abc

func version1Records() [][]byte {
	out := [][]byte{[]byte("header"), {}}
	for i := range 20 {
		out = append(out, fmt.Appendf(nil, "/bench/d%03d/n%06d=%s", i/10, i, "abcdefghijklmnopqrstuvwxyz"))
	}
	return append(out, payloadFor(7, 5000))
}

// TestSnapshotReadsVersion1 reads a snapshot file as the build before this one wrote
// it: data directories written by it must keep working.
func TestSnapshotReadsVersion1(t *testing.T) {
	path := filepath.Join("testdata", snapshotName(version1Zxid))
	checkSnapshotFile(t, path, version1Zxid, version1Records())
	// What the build before wrote is what version 1 still is, byte for byte.
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	now, err := os.ReadFile(writeSnapshotOn(t, nil, t.TempDir(), version1Zxid, snapshotVersion1, version1Records()))
	if err != nil || !bytes.Equal(now, old) {
		t.Fatalf("version 1 written now differs from testdata (%v)", err)
	}
}

// TestWriteSnapshot writes a snapshot from a record function, whole with its stats, or
// not at all once stop is closed.
func TestWriteSnapshot(t *testing.T) {
	payloads := snapshotPayloads(3000, func(i int) int { return i % 200 })
	records := func(fn func([]byte) error) error {
		for _, p := range payloads {
			if err := fn(p); err != nil {
				return err
			}
		}
		return nil
	}
	dir := t.TempDir()
	if st, err := WriteSnapshot(dir, 5, nil, nil, nil, records); err != nil || st.Records != int64(len(payloads)) {
		t.Fatalf("WriteSnapshot: %d records, %v", st.Records, err)
	}
	checkSnapshotFile(t, filepath.Join(dir, snapshotName(5)), 5, payloads)
	stats, err := WriteSnapshot(dir, 6, nil, nil, nil, records)
	fi, _ := os.Stat(filepath.Join(dir, snapshotName(6)))
	if err != nil || stats.Records != int64(len(payloads)) || fi == nil || stats.FileBytes != fi.Size() || stats.Ratio() <= 1 {
		t.Fatalf("WriteSnapshot: %+v, %v", stats, err)
	}
	stop, stopped := make(chan struct{}), errors.New("stopped")
	close(stop)
	if stats, err := WriteSnapshot(dir, 7, nil, stop, stopped, records); err != stopped || stats != (SnapshotStats{}) {
		t.Fatalf("after stop: %+v, %v", stats, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("%d files, want the two snapshots written", len(entries))
	}
}
