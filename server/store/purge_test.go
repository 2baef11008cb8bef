package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// writePurgeLog writes 30 records of 100 bytes in 1024-byte segments of 8 records:
// 1-8, 9-16, 17-24 and 25-30, the last one open.
func writePurgeLog(t *testing.T) (Config, *WAL, []rec) {
	t.Helper()
	cfg := testConfig(t, 1024)
	w := openWAL(t, cfg, nil)
	next := int64(1)
	want := appendBatches(t, w, &next, sizes(10, 100), sizes(10, 100), sizes(10, 100))
	if names := segmentFiles(t, cfg.Dir); len(names) != 4 {
		t.Fatalf("segments %v, want 4", names)
	}
	return cfg, w, want
}

func TestPurgeBefore(t *testing.T) {
	tests := []struct {
		zxid    int64
		removed []int64 // bases of the segments removed
	}{
		{0, nil},
		{7, nil},
		{8, []int64{1}},
		{9, []int64{1}},
		{16, []int64{1, 9}},
		{24, []int64{1, 9, 17}},
		{30, []int64{1, 9, 17}}, // never the last segment
		{1000, []int64{1, 9, 17}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("before %d", tt.zxid), func(t *testing.T) {
			cfg, w, want := writePurgeLog(t)
			removed, err := w.PurgeBefore(tt.zxid)
			if err != nil {
				t.Fatal(err)
			}
			var wantRemoved []string
			for _, base := range tt.removed {
				wantRemoved = append(wantRemoved, filepath.Join(cfg.Dir, segmentName(base)))
			}
			if fmt.Sprint(removed) != fmt.Sprint(wantRemoved) {
				t.Fatalf("removed %v, want %v", removed, wantRemoved)
			}
			if again, err := w.PurgeBefore(tt.zxid); err != nil || len(again) != 0 {
				t.Fatalf("second purge removed %v: %v", again, err)
			}
			// The log goes on, and a restart finds it whole from its first segment.
			next := int64(31)
			want = append(want, appendBatches(t, w, &next, sizes(10, 100))...)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			w = openWAL(t, cfg, nil)
			oldest := int64(0)
			if n := len(tt.removed); n > 0 {
				oldest = tt.removed[n-1] + 7
			}
			if err := w.Replay(oldest-1, func(int64, []byte) error { return nil }); oldest > 0 && !errors.Is(err, ErrGap) {
				t.Fatalf("Replay(%d) after purging up to %d: %v, want ErrGap", oldest-1, oldest, err)
			}
			from := min(max(oldest, tt.zxid), int64(len(want)))
			checkRecords(t, replayAll(t, w, from), want[from:])
		})
	}
}

func TestPurgeBeforeBeforeAnyAppend(t *testing.T) {
	cfg, w, want := writePurgeLog(t)
	w.Close()
	w = openWAL(t, cfg, nil)
	if removed, err := w.PurgeBefore(20); err != nil || len(removed) != 2 {
		t.Fatalf("PurgeBefore(20) of a reopened log removed %v: %v", removed, err)
	}
	checkRecords(t, replayAll(t, w, 16), want[16:])
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PurgeBefore(30); !errors.Is(err, ErrClosed) {
		t.Fatalf("PurgeBefore after Close: %v, want ErrClosed", err)
	}
}

// TestPurgeWhileAppending purges from another goroutine while the writer appends,
// rotates and syncs; run with -race.
func TestPurgeWhileAppending(t *testing.T) {
	cfg := testConfig(t, 1024)
	w := openWAL(t, cfg, nil)
	var purged []string
	var purgedTo int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			z := w.LastZxid() - 20
			removed, err := w.PurgeBefore(z)
			if err != nil {
				t.Errorf("PurgeBefore: %v", err)
				return
			}
			purged = append(purged, removed...)
			purgedTo = max(purgedTo, z)
		}
	})
	next := int64(1)
	var want []rec
	for range 200 {
		want = append(want, appendBatches(t, w, &next, sizes(3, 100))...)
	}
	close(done)
	wg.Wait()
	if len(purged) == 0 {
		t.Fatal("nothing was purged while appending")
	}
	// The purger may have been starved of CPU near the end: one last purge, so the
	// count of segments left below does not depend on scheduling.
	z := w.LastZxid() - 20
	removed, err := w.PurgeBefore(z)
	if err != nil {
		t.Fatalf("PurgeBefore(%d): %v", z, err)
	}
	purged = append(purged, removed...)
	purgedTo = max(purgedTo, z)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = openWAL(t, cfg, nil)
	checkRecords(t, replayAll(t, w, purgedTo), want[purgedTo:])
	if got := len(segmentFiles(t, cfg.Dir)); got > 5 {
		t.Fatalf("%d segments left, want the few after zxid %d", got, purgedTo)
	}
}

// TestStartAfterPurge: Start says from where the log is whole, and Replay(Start())
// replays what is left of it; before any purge, from 0.
func TestStartAfterPurge(t *testing.T) {
	cfg, w, want := writePurgeLog(t)
	if got := w.Start(); got != 0 {
		t.Fatalf("Start before a purge = %d, want 0", got)
	}
	if _, err := w.PurgeBefore(16); err != nil {
		t.Fatal(err)
	}
	if got := w.Start(); got != 16 {
		t.Fatalf("Start after purging up to 16 = %d, want 16", got)
	}
	w.Close()
	w = openWAL(t, cfg, nil)
	if got := w.Start(); got != 16 {
		t.Fatalf("Start after reopening = %d, want 16", got)
	}
	checkRecords(t, replayAll(t, w, w.Start()), want[16:])
}
