package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPreparedSegments: with segments prepared in the background, the log rotates
// into zero-filled files and reads back exactly; a ready file survives a reopen and a
// half-filled one does not.
func TestPreparedSegments(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, SegmentSize: 64 << 10, ForceSync: true, PrepareSegments: true}
	w, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, preparedName)
	waitFile := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(ready); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no segment was prepared")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	payload := make([]byte, 1000)
	zxid := int64(0)
	for seg := 0; seg < 4; seg++ {
		waitFile()
		for i := 0; i < 70; i++ { // about 70 KB: past one 64 KiB segment
			zxid++
			copy(payload, fmt.Sprintf("record %d", zxid))
			if err := w.Append(zxid, payload); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	waitFile()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, preparingName), []byte("half"), 0o640); err != nil {
		t.Fatal(err)
	}
	w, err = Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Stat(filepath.Join(dir, preparingName)); err == nil {
		t.Error("a half-prepared file survived Open")
	}
	n := int64(0)
	err = w.Replay(0, func(z int64, p []byte) error {
		n++
		if want := fmt.Sprintf("record %d", z); z != n || string(p[:len(want)]) != want {
			return fmt.Errorf("record %d reads %q", z, p[:16])
		}
		return nil
	})
	if err != nil || n != zxid {
		t.Fatalf("replayed %d of %d records: %v", n, zxid, err)
	}
}

// TestPreparerOutpaced: when the log rotates faster than files are prepared, rotation
// falls back to allocating its own, the asks for a prepared file pile up, and Close
// still returns promptly (it once hung on a second prepared file nobody took).
func TestPreparerOutpaced(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(Config{Dir: dir, SegmentSize: 64 << 10, ForceSync: true, PrepareSegments: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 16<<10)
	for zxid := int64(1); zxid <= 64; zxid++ { // 16 segments, back to back
		if err := w.Append(zxid, payload); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond) // long enough to prepare a file, then be asked again
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// TestShortSegmentWithoutPreparedFile: a new log, whose first segment no prepared file
// can be ready for, writes a short segment of zeros itself rather than fallocate a whole
// one, fills it, and then rotates; what it holds reads back.
func TestShortSegmentWithoutPreparedFile(t *testing.T) {
	dir := t.TempDir()
	// No preparer: every segment is one the log made itself.
	w, err := Open(Config{Dir: dir, SegmentSize: 16 << 20, ForceSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 64<<10)
	const n = 100 // 6.4 MB: past one short segment
	for zxid := int64(1); zxid <= n; zxid++ {
		if err := w.Append(zxid, payload); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	segs, _, err := listSegments(OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 2 {
		t.Fatalf("%d segments, want 2 short ones", len(segs))
	}
	fi, err := os.Stat(segs[0].path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != shortSegmentSize {
		t.Errorf("first segment %d bytes, want %d", fi.Size(), shortSegmentSize)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = Open(Config{Dir: dir, SegmentSize: 16 << 20, ForceSync: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got := 0
	if err := w.Replay(0, func(int64, []byte) error { got++; return nil }); err != nil || got != n {
		t.Fatalf("replayed %d records, %v; want %d", got, err, n)
	}
	// Reopened, the log leaves its short last segment when it is full rather than grow it.
	for zxid := int64(n + 1); zxid <= 2*n; zxid++ {
		if err := w.Append(zxid, payload); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if segs, _, err = listSegments(OS, dir); err != nil {
		t.Fatal(err)
	}
	for _, seg := range segs {
		fi, err := os.Stat(seg.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > shortSegmentSize {
			t.Errorf("segment %s: %d bytes, want at most %d", seg.path, fi.Size(), shortSegmentSize)
		}
	}
}
