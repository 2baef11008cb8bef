package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// rec is a record as Replay hands it out.
type rec struct {
	zxid    int64
	payload []byte
}

// testConfig is a config in a fresh directory with fsync on.
func testConfig(t *testing.T, segmentSize int64) Config {
	t.Helper()
	return Config{Dir: t.TempDir(), SegmentSize: segmentSize, ForceSync: true}
}

// logBuffer collects text logs for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// openWAL opens cfg, failing the test on error, and closes the WAL at cleanup.
func openWAL(t *testing.T, cfg Config, logger *slog.Logger) *WAL {
	t.Helper()
	w, err := Open(cfg, logger)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// payloadFor is a deterministic payload of n bytes for zxid.
func payloadFor(zxid int64, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(zxid*31 + int64(i)*7)
	}
	return p
}

// appendBatches appends one batch per element of sizes, each batch a run of records
// with the given payload sizes and consecutive zxids from *next, syncing after each.
func appendBatches(t *testing.T, w *WAL, next *int64, sizes ...[]int) []rec {
	t.Helper()
	var out []rec
	for _, batch := range sizes {
		for _, n := range batch {
			r := rec{zxid: *next, payload: payloadFor(*next, n)}
			*next++
			if err := w.Append(r.zxid, r.payload); err != nil {
				t.Fatalf("Append(%#x): %v", r.zxid, err)
			}
			out = append(out, r)
		}
		if err := w.Sync(); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
	return out
}

// replayAll returns every record after after.
func replayAll(t *testing.T, w *WAL, after int64) []rec {
	t.Helper()
	var out []rec
	err := w.Replay(after, func(zxid int64, payload []byte) error {
		out = append(out, rec{zxid, bytes.Clone(payload)})
		return nil
	})
	if err != nil {
		t.Fatalf("Replay(%#x): %v", after, err)
	}
	return out
}

func checkRecords(t *testing.T, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].zxid != want[i].zxid || !bytes.Equal(got[i].payload, want[i].payload) {
			t.Fatalf("record %d: got zxid %#x (%d bytes), want zxid %#x (%d bytes)",
				i, got[i].zxid, len(got[i].payload), want[i].zxid, len(want[i].payload))
		}
	}
}

// segmentFiles lists the segment file names in dir, in order.
func segmentFiles(t testing.TB, dir string) []string {
	t.Helper()
	segs, _, err := listSegments(OS, dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range segs {
		names = append(names, filepath.Base(s.path))
	}
	return names
}

// crash abandons w as a killed process would: buffered records are lost and nothing
// more is synced; what was written stays in the file.
func crash(w *WAL) {
	w.buf = nil
	if w.f != nil {
		w.f.Close()
	}
	w.lock.Close()
	w.closed = true
}

// patchFile applies edit to the contents of path.
func patchFile(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(b), 0o640); err != nil {
		t.Fatal(err)
	}
}

func flipByte(off int64) func([]byte) []byte {
	return func(b []byte) []byte {
		b[off] ^= 0x40
		return b
	}
}

// wantCorrupt checks that err is a *CorruptError for file at offset.
func wantCorrupt(t *testing.T, err error, file string, offset int64) {
	t.Helper()
	var ce *CorruptError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("got error %v, want a CorruptError", err)
	}
	if ce.File != file || ce.Offset != offset {
		t.Fatalf("corruption reported at %s offset %d, want %s offset %d (%v)", ce.File, ce.Offset, file, offset, err)
	}
	if msg := err.Error(); !bytes.Contains([]byte(msg), []byte(fmt.Sprintf("%s at offset %d", file, offset))) {
		t.Fatalf("error %q does not name the file and offset", msg)
	}
}

func sizes(n, size int) []int { return slices.Repeat([]int{size}, n) }
