package store

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// FuzzSnapshot feeds arbitrary bytes to the snapshot reader. It must never panic;
// damage must be a CorruptError within the file; and whatever it accepts must be
// exactly what a writer makes of the records it read.
func FuzzSnapshot(f *testing.F) {
	dir := f.TempDir()
	for i, records := range [][][]byte{nil, {{}}, {[]byte("a"), bytes.Repeat([]byte("bc"), 50), {}}} {
		b, err := os.ReadFile(writeSnapshot(f, dir, int64(i), records))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-3])
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
		enc, err := os.ReadFile(writeSnapshot(t, t.TempDir(), zxid, records))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("accepted %d bytes that do not re-encode to themselves", len(data))
		}
	})
}
