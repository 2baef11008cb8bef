package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// FuzzSnapshot feeds arbitrary bytes to the snapshot reader, seeded with snapshots of
// both formats (whole, cut short, several blocks) and the hostile ones. It must never
// panic; damage must be a CorruptError within the file; and whatever it accepts must
// be what a writer makes of the records it read: byte for byte in version 1, whose
// encoding is canonical; read back the same in version 2, where another encoder could
// have compressed the same records otherwise.
func FuzzSnapshot(f *testing.F) {
	dir := f.TempDir()
	seeds := [][][]byte{nil, {{}}, {[]byte("a"), bytes.Repeat([]byte("bc"), 50), {}}}
	for _, v := range snapshotVersions {
		for i, records := range seeds {
			b, err := os.ReadFile(writeSnapshotOn(f, nil, dir, int64(i), v.version, records))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
			f.Add(b[:len(b)-3])
		}
	}
	twoBlocks := snapshotPayloads(700, func(i int) int { return i })
	b, err := os.ReadFile(writeSnapshot(f, dir, 9, twoBlocks))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, h := range hostileSnapshots() {
		if len(h.file) < 64<<10 { // a large seed's mutants take the fuzzer minutes to minimize
			f.Add(h.file)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var records [][]byte
		zxid, err := readSnapshot("fuzz.snap", bytes.NewReader(data), int64(len(data)), func(p []byte) error {
			records = append(records, bytes.Clone(p))
			return nil
		})
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != "fuzz.snap" || ce.Offset < 0 || ce.Offset > int64(len(data)) {
				t.Fatalf("error %v is not a CorruptError within the data", err)
			}
			return
		}
		version := binary.LittleEndian.Uint32(data[4:])
		path := writeSnapshotOn(t, nil, t.TempDir(), zxid, version, records)
		if version == snapshotVersion1 {
			if enc, err := os.ReadFile(path); err != nil || !bytes.Equal(enc, data) {
				t.Fatalf("accepted %d bytes that do not re-encode to themselves (%v)", len(data), err)
			}
			return
		}
		checkSnapshotFile(t, path, zxid, records)
	})
}
