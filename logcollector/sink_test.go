package logcollector

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testLine returns a line of source at offset.
func testLine(source string, offset int64, text string) Line {
	return Line{Source: source, File: "/var/log/" + source + ".log", Offset: offset, Host: "web1",
		Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Text: text}
}

// decodeLines parses JSON lines, failing t on anything else.
func decodeLines(t *testing.T, data []byte) []Line {
	t.Helper()
	var out []Line
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var l Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("sink line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// readSinkFile returns the lines in a DirSink's file of source (none if missing).
func readSinkFile(t *testing.T, dir, source string) []Line {
	t.Helper()
	data, err := os.ReadFile(dirSinkPath(dir, source))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return decodeLines(t, data)
}

// sameLine compares lines, their times by Equal.
func sameLine(a, b Line) bool {
	return a.Source == b.Source && a.File == b.File && a.Offset == b.Offset && a.Host == b.Host &&
		a.Text == b.Text && a.Time.Equal(b.Time)
}

func dirSinkPath(dir, source string) string { return dir + "/" + source + ".jsonl" }

func newDirSink(t *testing.T) (*DirSink, *int) {
	t.Helper()
	s, err := NewDirSink(t.TempDir() + "/sink")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	syncs := new(int)
	s.sync = func(f *os.File) error { *syncs++; return f.Sync() }
	return s, syncs
}

func TestDirSinkWritesJSONLinesPerSource(t *testing.T) {
	s, syncs := newDirSink(t)
	first := []Line{testLine("a", 0, "one"), testLine("b", 0, `{"json":"in a line"}`), testLine("a", 4, "two")}
	if err := s.Write(first); err != nil {
		t.Fatal(err)
	}
	if *syncs != 2 {
		t.Errorf("fsyncs after a write to 2 sources = %d, want 2", *syncs)
	}
	if err := s.Write([]Line{testLine("a", 8, "three\twith tab")}); err != nil {
		t.Fatal(err)
	}
	for source, want := range map[string][]Line{
		"a": {first[0], first[2], testLine("a", 8, "three\twith tab")},
		"b": {first[1]},
	} {
		if got := readSinkFile(t, s.dir, source); !slices.EqualFunc(got, want, sameLine) {
			t.Errorf("source %s: sink holds %+v, want %+v", source, got, want)
		}
	}
	if s.Path("a") != dirSinkPath(s.dir, "a") {
		t.Errorf("Path(a) = %s", s.Path("a"))
	}
}

func TestDirSinkFailedWriteLeavesWholeLines(t *testing.T) {
	s, _ := newDirSink(t)
	if err := s.Write([]Line{testLine("a", 0, "kept")}); err != nil {
		t.Fatal(err)
	}
	s.sync = func(*os.File) error { return errors.New("disk on fire") }
	if err := s.Write([]Line{testLine("a", 5, "lost"), testLine("a", 10, "also lost")}); err == nil {
		t.Fatal("Write succeeded although fsync failed")
	}
	if got := readSinkFile(t, s.dir, "a"); len(got) != 1 || got[0].Text != "kept" {
		t.Errorf("after a failed write the sink holds %+v, want only the line before", got)
	}
	s.sync = (*os.File).Sync
	if err := s.Write([]Line{testLine("a", 5, "again")}); err != nil {
		t.Fatal(err)
	}
	if got := readSinkFile(t, s.dir, "a"); len(got) != 2 || got[1].Text != "again" {
		t.Errorf("after a retry the sink holds %+v", got)
	}
}

func TestDirSinkRejectsBadSourceAndClose(t *testing.T) {
	s, _ := newDirSink(t)
	if err := s.Write([]Line{testLine("../escape", 0, "x")}); err == nil {
		t.Error("Write of source ../escape succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.Write([]Line{testLine("a", 0, "x")}); !errors.Is(err, ErrSinkClosed) {
		t.Errorf("Write after Close = %v, want ErrSinkClosed", err)
	}
}

func TestNewDirSinkBadDir(t *testing.T) {
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDirSink(file + "/sub"); err == nil {
		t.Error("NewDirSink under a regular file succeeded")
	}
}

func TestWriterSinkKeepsEachWriteTogether(t *testing.T) {
	var buf lockedBuffer
	s := NewWriterSink(&buf)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				batch := []Line{testLine(fmt.Sprintf("s%d", w), int64(i*10), "first"), testLine(fmt.Sprintf("s%d", w), int64(i*10+6), "second")}
				if err := s.Write(batch); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	lines := decodeLines(t, buf.Bytes())
	if len(lines) != 4*20*2 {
		t.Fatalf("%d lines written, want %d", len(lines), 4*20*2)
	}
	for i := 0; i < len(lines); i += 2 {
		a, b := lines[i], lines[i+1]
		if a.Text != "first" || b.Text != "second" || a.Source != b.Source || b.Offset != a.Offset+6 {
			t.Fatalf("lines %d and %d are not one batch: %+v %+v", i, i+1, a, b)
		}
	}
	if !strings.HasSuffix(buf.String(), "\n") {
		t.Error("output does not end with a newline")
	}
}

func TestWriterSinkReportsWriteError(t *testing.T) {
	s := NewWriterSink(failingWriter{})
	if err := s.Write([]Line{testLine("a", 0, "x")}); err == nil {
		t.Error("Write to a failing writer succeeded")
	}
}

func TestOpenSink(t *testing.T) {
	s, closeSink, err := openSink("-")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*WriterSink); !ok {
		t.Errorf(`openSink("-") = %T, want *WriterSink`, s)
	}
	closeSink()
	dir := t.TempDir() + "/lines"
	s, closeSink, err = openSink(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSink()
	if ds, ok := s.(*DirSink); !ok || ds.dir != dir {
		t.Errorf("openSink(%s) = %#v, want a DirSink there", dir, s)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.b.Bytes())
}

func (l *lockedBuffer) String() string { return string(l.Bytes()) }

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("pipe closed") }
