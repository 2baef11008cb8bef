package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{"default", func(*Config) {}, ""},
		{"no dir", func(c *Config) { c.Dir = "" }, "dir"},
		{"segment too small", func(c *Config) { c.SegmentSize = MinSegmentSize - 1 }, "segment size 1023"},
		{"segment too large", func(c *Config) { c.SegmentSize = MaxSegmentSize + 1 }, "must be between"},
		{"smallest segment", func(c *Config) { c.SegmentSize = MinSegmentSize }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Dir = filepath.Join(t.TempDir(), "log") // not the default, under the package's source
			tt.edit(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate: got %v, want an error containing %q", err, tt.wantErr)
			}
			w, err := Open(cfg, nil)
			if tt.wantErr != "" && err == nil {
				t.Fatal("Open accepted an invalid config")
			}
			if err == nil {
				w.Close()
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		segment   int64
		forceSync bool
		batches   [][]int
	}{
		{"one record", DefaultSegmentSize, true, [][]int{{100}}},
		{"empty and odd payloads", DefaultSegmentSize, true, [][]int{{0, 1, 7, 8, 9, 15, 16, 17}, {0}}},
		{"batches", DefaultSegmentSize, true, [][]int{sizes(10, 100), sizes(100, 100), sizes(1, 100)}},
		{"payload written directly", DefaultSegmentSize, true, [][]int{{directWriteSize - 1, directWriteSize, 3 * directWriteSize}}},
		{"records larger than a segment", 4096, true, [][]int{{10, 5000, 10}, {9000}, {10}}},
		{"more than the write buffer", DefaultSegmentSize, true, [][]int{sizes(300, 5000)}},
		{"force sync off", 4096, false, [][]int{sizes(50, 100), {5000}, sizes(50, 100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, tt.segment)
			cfg.ForceSync = tt.forceSync
			w := openWAL(t, cfg, nil)
			next := int64(1)
			want := appendBatches(t, w, &next, tt.batches...)
			if got := w.LastZxid(); got != next-1 {
				t.Fatalf("LastZxid = %d, want %d", got, next-1)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			w = openWAL(t, cfg, nil)
			if got := w.LastZxid(); got != next-1 {
				t.Fatalf("LastZxid after reopen = %d, want %d", got, next-1)
			}
			checkRecords(t, replayAll(t, w, 0), want)
		})
	}
}

func TestRotation(t *testing.T) {
	cfg := testConfig(t, 2048)
	w := openWAL(t, cfg, nil)
	next := int64(0x500000001)
	var batches [][]int
	for i := range 100 {
		batches = append(batches, sizes(1+i%13, 100))
	}
	want := appendBatches(t, w, &next, batches...)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Each full segment holds (2048-24)/120 = 16 records; its name is its first zxid.
	names := segmentFiles(t, cfg.Dir)
	if wantN := (len(want) + 15) / 16; len(names) != wantN {
		t.Fatalf("%d segments, want %d", len(names), wantN)
	}
	for i, name := range names {
		if wantName := segmentName(want[16*i].zxid); name != wantName {
			t.Fatalf("segment %d is %s, want %s", i, name, wantName)
		}
	}

	w = openWAL(t, cfg, nil)
	for _, after := range []int64{0, want[0].zxid, want[15].zxid, want[16].zxid, want[100].zxid, next - 2, next - 1, next + 100} {
		t.Run(fmt.Sprintf("after %#x", after), func(t *testing.T) {
			var tail []rec
			for _, r := range want {
				if r.zxid > after {
					tail = append(tail, r)
				}
			}
			checkRecords(t, replayAll(t, w, after), tail)
		})
	}
}

func TestReopenAndContinue(t *testing.T) {
	cfg := testConfig(t, 4096)
	var want []rec
	next := int64(1)
	for round := range 4 {
		w := openWAL(t, cfg, nil)
		checkRecords(t, replayAll(t, w, 0), want)
		if err := w.Append(next-1, nil); next > 1 && !errors.Is(err, ErrZxidOrder) {
			t.Fatalf("round %d: Append of the last zxid: got %v, want ErrZxidOrder", round, err)
		}
		next += 1000 // a gap, as at an epoch change
		want = append(want, appendBatches(t, w, &next, sizes(20, 100), sizes(7, 300))...)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	w := openWAL(t, cfg, nil)
	checkRecords(t, replayAll(t, w, 0), want)
}

func TestAppendErrors(t *testing.T) {
	cfg := testConfig(t, 4096)
	w := openWAL(t, cfg, nil)
	if err := w.Append(0, nil); !errors.Is(err, ErrZxidOrder) {
		t.Fatalf("Append(0): %v, want ErrZxidOrder", err)
	}
	if err := w.Append(-5, nil); !errors.Is(err, ErrZxidOrder) {
		t.Fatalf("Append(-5): %v, want ErrZxidOrder", err)
	}
	if err := w.Append(10, []byte("a")); err != nil {
		t.Fatal(err)
	}
	for _, z := range []int64{10, 9} {
		if err := w.Append(z, nil); !errors.Is(err, ErrZxidOrder) {
			t.Fatalf("Append(%d) after 10: %v, want ErrZxidOrder", z, err)
		}
	}
	if err := w.Append(11, make([]byte, MaxPayload+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized Append: %v, want ErrTooLarge", err)
	}
	if err := w.Replay(0, func(int64, []byte) error { return nil }); !errors.Is(err, ErrReplayAfterAppend) {
		t.Fatalf("Replay after Append: %v, want ErrReplayAfterAppend", err)
	}
	if _, err := Open(cfg, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open of one dir: %v, want ErrLocked", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Append(11, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if err := w.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if err := w.Replay(0, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Replay after Close: %v", err)
	}
	if got := w.LastZxid(); got != 10 {
		t.Fatalf("LastZxid after Close = %d", got)
	}
}

func TestReplayStopsOnCallbackError(t *testing.T) {
	cfg := testConfig(t, 4096)
	w := openWAL(t, cfg, nil)
	next := int64(1)
	appendBatches(t, w, &next, sizes(100, 50))
	w.Close()
	w = openWAL(t, cfg, nil)
	stop := errors.New("stop")
	var seen int
	err := w.Replay(0, func(zxid int64, _ []byte) error {
		seen++
		if zxid == 42 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 42 {
		t.Fatalf("Replay: err %v after %d records, want stop after 42", err, seen)
	}
	// Replay may run again: it does not consume the log.
	checkRecords(t, replayAll(t, w, 99), []rec{{100, payloadFor(100, 50)}})
}

func TestRecoveryHousekeeping(t *testing.T) {
	t.Run("empty last segment removed", func(t *testing.T) {
		cfg := testConfig(t, 1024)
		w := openWAL(t, cfg, nil)
		next := int64(1)
		want := appendBatches(t, w, &next, sizes(8, 100))           // fills the first segment
		if err := w.Append(500, payloadFor(500, 100)); err != nil { // rotates; never synced
			t.Fatal(err)
		}
		crash(w)
		if names := segmentFiles(t, cfg.Dir); len(names) != 2 || names[1] != segmentName(500) {
			t.Fatalf("segments before recovery: %v", names)
		}
		logger, logs := newLogger()
		w = openWAL(t, cfg, logger)
		if !strings.Contains(logs.String(), "removing empty last segment") {
			t.Fatalf("no warning logged:\n%s", logs)
		}
		if got := w.LastZxid(); got != 8 {
			t.Fatalf("LastZxid = %d, want 8", got)
		}
		checkRecords(t, replayAll(t, w, 0), want)
		want = append(want, appendBatches(t, w, &next, sizes(3, 100))...) // zxid 9 < 500: allowed
		w.Close()
		w = openWAL(t, cfg, nil)
		checkRecords(t, replayAll(t, w, 0), want)
	})
	t.Run("unfinished segment file removed", func(t *testing.T) {
		cfg := testConfig(t, 4096)
		tmp := filepath.Join(cfg.Dir, segmentName(7)+tmpExt)
		other := filepath.Join(cfg.Dir, "snapshot.1")
		for _, p := range []string{tmp, other} {
			if err := os.WriteFile(p, []byte("junk"), 0o640); err != nil {
				t.Fatal(err)
			}
		}
		w := openWAL(t, cfg, nil)
		if _, err := os.Stat(tmp); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", tmp, err)
		}
		if _, err := os.Stat(other); err != nil {
			t.Fatalf("a file that is not the log's was touched: %v", err)
		}
		if w.LastZxid() != 0 {
			t.Fatalf("LastZxid = %d", w.LastZxid())
		}
	})
	t.Run("appended but unsynced records lost in a crash", func(t *testing.T) {
		cfg := testConfig(t, 4096)
		w := openWAL(t, cfg, nil)
		next := int64(1)
		want := appendBatches(t, w, &next, sizes(5, 100))
		for z := next; z < next+5; z++ {
			if err := w.Append(z, payloadFor(z, 100)); err != nil {
				t.Fatal(err)
			}
		}
		crash(w)
		w = openWAL(t, cfg, nil)
		checkRecords(t, replayAll(t, w, 0), want)
	})
}

func TestAppendDoesNotAllocate(t *testing.T) {
	cfg := testConfig(t, DefaultSegmentSize)
	cfg.ForceSync = false
	w := openWAL(t, cfg, nil)
	payload := payloadFor(1, 100)
	zxid := int64(0)
	batch := func() {
		for range 100 {
			zxid++
			if err := w.Append(zxid, payload); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	batch() // creates the segment and grows the buffer
	if allocs := testing.AllocsPerRun(50, batch); allocs != 0 {
		t.Fatalf("a batch of 100 Appends and a Sync made %v allocations, want 0", allocs)
	}
}

func TestWriteErrorIsSticky(t *testing.T) {
	cfg := testConfig(t, 4096)
	w := openWAL(t, cfg, nil)
	next := int64(1)
	appendBatches(t, w, &next, sizes(3, 10))
	if err := w.Append(next, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	w.f.Close() // the next write fails, as on a dead disk
	err := w.Sync()
	if err == nil {
		t.Fatal("Sync on a closed file succeeded")
	}
	if err2 := w.Append(next+1, nil); err2 != err {
		t.Fatalf("Append after a failed Sync: %v, want the same error %v", err2, err)
	}
	if err2 := w.Sync(); err2 != err {
		t.Fatalf("second Sync: %v, want the same error", err2)
	}
}

// TestSegmentFilledToNearItsEnd fills segments to within less than a record header of
// their end: the few zero bytes left are the end of the records, not a torn header.
func TestSegmentFilledToNearItsEnd(t *testing.T) {
	for _, size := range []int64{1024, 1029} {
		for _, gap := range []int64{0, 8, 16} {
			t.Run(fmt.Sprintf("segment %d, %d bytes left", size, gap), func(t *testing.T) {
				cfg := testConfig(t, size)
				w := openWAL(t, cfg, nil)
				fill := int(alignDown(size-gap-segmentHeaderSize) - recordHeaderSize)
				next := int64(1)
				want := appendBatches(t, w, &next, []int{fill}, []int{10}, []int{fill}, []int{10})
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				logger, logs := newLogger()
				w = openWAL(t, cfg, logger)
				checkRecords(t, replayAll(t, w, 0), want)
				if strings.Contains(logs.String(), "level=WARN") {
					t.Fatalf("recovery warned:\n%s", logs)
				}
			})
		}
	}
}
