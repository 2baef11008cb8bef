package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The single-segment log the recovery tests damage: three synced batches of 10, 10
// and 5 records of 100 bytes; the last batch starts at record 20.
const (
	tailSegment  = 64 << 10
	newestBatch  = 20
	tailRecords  = 25
	tailRecBytes = 100
)

func writeTailLog(t *testing.T) (Config, []rec, string) {
	t.Helper()
	cfg := testConfig(t, tailSegment)
	w := openWAL(t, cfg, nil)
	next := int64(1)
	want := appendBatches(t, w, &next, sizes(10, tailRecBytes), sizes(10, tailRecBytes), sizes(5, tailRecBytes))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg, want, filepath.Join(cfg.Dir, segmentName(1))
}

// tailOffsets returns the offsets of the records of writeTailLog's segment, and of the
// end of the last one.
func tailOffsets() ([]int64, int64) {
	offs := make([]int64, tailRecords+1)
	for i := range offs {
		offs[i] = segmentHeaderSize + int64(i)*recordSize(tailRecBytes)
	}
	return offs[:tailRecords], offs[tailRecords]
}

func TestTornTail(t *testing.T) {
	offs, end := tailOffsets()
	garbage := func(from, n int64) func([]byte) []byte {
		return func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(uint64(from), uint64(n)))
			for i := from; i < from+n; i++ {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
	}
	zero := func(from, n int64) func([]byte) []byte {
		return func(b []byte) []byte {
			clear(b[from : from+n])
			return b
		}
	}
	tests := []struct {
		name string
		edit func([]byte) []byte
		keep int // records that survive
	}{
		{"file cut mid-payload", func(b []byte) []byte { return b[:offs[24]+30] }, 24},
		{"file cut mid-header", func(b []byte) []byte { return b[:offs[24]+10] }, 24},
		{"file cut in the second record", func(b []byte) []byte { return b[:offs[1]+recordHeaderSize] }, 1},
		{"garbage after the last record", garbage(end, 100), 25},
		{"garbage over the whole preallocation", garbage(end, tailSegment-end), 25},
		{"one byte after the last record", garbage(end+500, 1), 25},
		{"zeroed sector in the last record", zero(offs[24]+40, 60), 24},
		{"zeroed header of the last record", zero(offs[24], recordHeaderSize), 24},
		{"newest batch persisted out of order", flipByte(offs[21] + 50), 21},
		{"newest batch's first header lost", zero(offs[newestBatch], recordHeaderSize), newestBatch},
		{"newest batch overwritten with garbage", garbage(offs[newestBatch], tailSegment-offs[newestBatch]), newestBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, want, path := writeTailLog(t)
			patchFile(t, path, tt.edit)
			logger, logs := newLogger()
			w := openWAL(t, cfg, logger)
			checkRecords(t, replayAll(t, w, 0), want[:tt.keep])
			cut := end
			if tt.keep < tailRecords {
				cut = offs[tt.keep]
			}
			wantLog := fmt.Sprintf(`level=WARN msg="log tail torn, truncating" file=%s offset=%d`, filepath.Base(path), cut)
			if !strings.Contains(logs.String(), wantLog) {
				t.Fatalf("log lacks %q:\n%s", wantLog, logs)
			}
			if got := w.LastZxid(); got != int64(tt.keep) {
				t.Fatalf("LastZxid = %d, want %d", got, tt.keep)
			}

			// The tail was zeroed and the preallocation restored.
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(b)) != tailSegment || !bytes.Equal(b[cut:], make([]byte, tailSegment-cut)) {
				t.Fatalf("after recovery the segment is %d bytes and not zero after offset %d", len(b), cut)
			}

			// The log goes on from the last good record, and stays healthy.
			next := int64(tt.keep) + 1
			want = append(want[:tt.keep:tt.keep], appendBatches(t, w, &next, sizes(3, 70), sizes(4, 30))...)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			logger, logs = newLogger()
			w = openWAL(t, cfg, logger)
			checkRecords(t, replayAll(t, w, 0), want)
			if strings.Contains(logs.String(), "level=WARN") {
				t.Fatalf("second recovery warned:\n%s", logs)
			}
		})
	}
}

func TestCorruption(t *testing.T) {
	offs, _ := tailOffsets()
	// rezxid rewrites the zxid of the record at off, with a checksum that matches.
	rezxid := func(off, zxid int64) func([]byte) []byte {
		return func(b []byte) []byte {
			mark := binary.LittleEndian.Uint32(b[off+16:])
			payload := bytes.Clone(b[off+recordHeaderSize : off+recordHeaderSize+tailRecBytes])
			putRecordHeader(b[off:], zxid, mark, payload)
			return b
		}
	}
	tests := []struct {
		name   string
		edit   func([]byte) []byte
		offset int64
		reason string
	}{
		{"flipped byte in the first batch", flipByte(offs[3] + 60), offs[3], "checksum"},
		{"flipped byte in the last synced batch", flipByte(offs[19] + 20), offs[19], "checksum"},
		{"flipped byte in a length", flipByte(offs[2] + 6), offs[2], "overruns"},
		{"zeroed header mid-log", func(b []byte) []byte { clear(b[offs[5] : offs[5]+recordHeaderSize]); return b }, offs[5], "zero record header"},
		{"zxid going backwards", rezxid(offs[7], 3), offs[7], "does not follow"},
		{"zxid repeated", rezxid(offs[7], 7), offs[7], "does not follow"},
		{"zxid backwards in the newest batch", rezxid(offs[23], 5), offs[23], "does not follow"},
		{"bad segment magic", flipByte(1), 0, "magic"},
		{"segment header checksum", flipByte(12), 0, "segment header checksum"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, path := writeTailLog(t)
			patchFile(t, path, tt.edit)
			_, err := Open(cfg, nil)
			wantCorrupt(t, err, filepath.Base(path), tt.offset)
			if !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("error %q does not say %q", err, tt.reason)
			}
		})
	}
}

func TestCorruptionAcrossSegments(t *testing.T) {
	// Segments of 1024 bytes hold 8 records of 100 bytes: records 1-8, 9-16, ...
	const perSegment = 8
	write := func(t *testing.T) (Config, []string) {
		cfg := testConfig(t, 1024)
		w := openWAL(t, cfg, nil)
		next := int64(1)
		appendBatches(t, w, &next, sizes(3, 100), sizes(3, 100), sizes(3, 100), sizes(3, 100),
			sizes(3, 100), sizes(3, 100), sizes(3, 100), sizes(3, 100), sizes(3, 100), sizes(3, 100))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		names := segmentFiles(t, cfg.Dir)
		if len(names) != 4 {
			t.Fatalf("segments %v, want 4", names)
		}
		return cfg, names
	}
	lastRec := int64(segmentHeaderSize) + (perSegment-1)*recordSize(100)
	endRecs := lastRec + recordSize(100)
	tests := []struct {
		name   string
		seg    int // which segment to damage
		edit   func([]byte) []byte
		offset int64
		reason string
	}{
		{"last record of the first segment", 0, flipByte(lastRec + 30), lastRec, "not the last"},
		{"last record of a middle segment", 2, flipByte(lastRec + 30), lastRec, "not the last"},
		{"file of a middle segment cut short", 1, func(b []byte) []byte { return b[:lastRec+50] }, lastRec, "not the last"},
		{"garbage in a middle segment's spare space", 1, func(b []byte) []byte { b[1020] = 1; return b }, endRecs, "non-zero byte at offset 1020"},
		{"segment header names another zxid", 1, func(b []byte) []byte {
			putSegmentHeader(b, segmentHeader{base: 10, prev: 8})
			return b
		}, 0, "header names zxid 0xa"},
		{"segment that does not follow on", 2, func(b []byte) []byte {
			putSegmentHeader(b, segmentHeader{base: 17, prev: 15})
			return b
		}, 0, "follows zxid 0xf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, names := write(t)
			patchFile(t, filepath.Join(cfg.Dir, names[tt.seg]), tt.edit)
			_, err := Open(cfg, nil)
			wantCorrupt(t, err, names[tt.seg], tt.offset)
			if !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("error %q does not say %q", err, tt.reason)
			}
		})
	}

	t.Run("missing middle segment", func(t *testing.T) {
		cfg, names := write(t)
		if err := os.Remove(filepath.Join(cfg.Dir, names[1])); err != nil {
			t.Fatal(err)
		}
		_, err := Open(cfg, nil)
		wantCorrupt(t, err, names[2], 0)
	})

	t.Run("purged head: replay refuses to start before it", func(t *testing.T) {
		cfg, names := write(t)
		if err := os.Remove(filepath.Join(cfg.Dir, names[0])); err != nil {
			t.Fatal(err)
		}
		w := openWAL(t, cfg, nil)
		if err := w.Replay(0, func(int64, []byte) error { return nil }); !errors.Is(err, ErrGap) {
			t.Fatalf("Replay(0) without the first segment: %v, want ErrGap", err)
		}
		got := replayAll(t, w, perSegment)
		if len(got) != 30-perSegment || got[0].zxid != perSegment+1 {
			t.Fatalf("Replay(%d) gave %d records from %#x", perSegment, len(got), got[0].zxid)
		}
	})
}

// TestNewestBatchAmbiguity pins down the one case the sync marks cannot decide: damage
// inside the newest batch looks the same whether that batch's fdatasync returned
// or not, so it is treated as torn (and warned about) rather than as corruption.
func TestNewestBatchAmbiguity(t *testing.T) {
	cfg, want, path := writeTailLog(t)
	offs, _ := tailOffsets()
	off := offs[newestBatch]
	patchFile(t, path, flipByte(off+30))
	w := openWAL(t, cfg, nil)
	checkRecords(t, replayAll(t, w, 0), want[:newestBatch])
	// One batch later the same damage is corruption: the new batch's marks cover it.
	cfg, _, path = writeTailLog(t)
	w = openWAL(t, cfg, nil)
	next := int64(tailRecords + 1)
	appendBatches(t, w, &next, sizes(2, 10))
	w.Close()
	patchFile(t, path, flipByte(off+30))
	_, err := Open(cfg, nil)
	wantCorrupt(t, err, filepath.Base(path), off)
}
