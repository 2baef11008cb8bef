package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzSegment feeds arbitrary bytes to the segment reader as both a last and an
// earlier segment. It must never panic; whatever it accepts must re-encode to the
// very bytes it was read from, in zxid order; and a clean end must be followed by
// zeros alone.
func FuzzSegment(f *testing.F) {
	for _, seed := range seedSegments(f) {
		f.Add(seed)
		f.Add(seed[:len(seed)/2])
		f.Add(seed[:segmentHeaderSize+5])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		base := int64(1)
		if len(data) >= 16 {
			base = int64(binary.LittleEndian.Uint64(data[8:])) // let headers pass the name check
		}
		for _, last := range []bool{false, true} {
			seg := segment{path: "fuzz.wal", base: base, size: int64(len(data))}
			torn, err := checkSegment(bytes.NewReader(data), &seg, last)
			if err != nil {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.File != "fuzz.wal" || ce.Offset < 0 || ce.Offset > int64(len(data)) {
					t.Fatalf("last=%v: error %v is not a CorruptError within the data", last, err)
				}
				continue
			}
			if torn != nil && (!last || torn.offset != seg.end) {
				t.Fatalf("last=%v: torn tail at %d, segment end %d", last, torn.offset, seg.end)
			}
			if seg.end < segmentHeaderSize || seg.end > int64(len(data)) || seg.end%recordAlign != 0 {
				t.Fatalf("last=%v: segment end %d out of range (%d bytes)", last, seg.end, len(data))
			}
			if torn == nil && !bytes.Equal(data[seg.end:], make([]byte, len(data)-int(seg.end))) {
				t.Fatalf("last=%v: clean end at %d but non-zero bytes follow", last, seg.end)
			}
			checkAccepted(t, data, seg)
		}
	})
}

// checkAccepted re-reads the accepted part of data and checks every record re-encodes
// to its bytes.
func checkAccepted(t *testing.T, data []byte, seg segment) {
	t.Helper()
	s := newScanner(bytes.NewReader(data), seg.end)
	prev, last := seg.prev, int64(0)
	for {
		at := s.off
		st, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		if st == recordEnd && at == seg.end {
			break
		}
		if st != recordOK {
			t.Fatalf("accepted region holds a bad record at %d: %s", at, s.why())
		}
		enc := appendRecord(nil, s.zxid, s.mark, s.payload)
		if !bytes.Equal(enc, data[at:at+int64(len(enc))]) {
			t.Fatalf("record at %d does not re-encode to its bytes", at)
		}
		if s.zxid <= prev {
			t.Fatalf("accepted zxid %#x after %#x", s.zxid, prev)
		}
		prev, last = s.zxid, s.zxid
	}
	if last != seg.last {
		t.Fatalf("last accepted zxid %#x, checkSegment said %#x", last, seg.last)
	}
}

// seedSegments writes a few small logs through the WAL and returns their segment files.
func seedSegments(f *testing.F) [][]byte {
	cfg := Config{Dir: f.TempDir(), SegmentSize: MinSegmentSize, ForceSync: false}
	w, err := Open(cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	zxid := int64(0x300000000)
	for i, n := range []int{0, 1, 7, 8, 100, 300, 13, 2000, 40, 40, 40, 40, 40, 40, 5} {
		zxid++
		if err := w.Append(zxid, bytes.Repeat([]byte{byte(i + 1)}, n)); err != nil {
			f.Fatal(err)
		}
		if i%3 == 0 {
			if err := w.Sync(); err != nil {
				f.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	var seeds [][]byte // the first and middle segments are full, the last is not
	for _, name := range segmentFiles(f, cfg.Dir) {
		b, err := os.ReadFile(filepath.Join(cfg.Dir, name))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}
