package logcollector

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

const (
	testPoll = 10 * time.Millisecond
	waitLong = 10 * time.Second
	tick     = 5 * time.Millisecond
)

// memSink keeps the lines written to it; it refuses writes while down is set.
type memSink struct {
	mu     sync.Mutex
	lines  []Line
	down   bool
	writes int // refused and accepted
}

func (m *memSink) Write(lines []Line) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if m.down {
		return errors.New("sink down")
	}
	m.lines = append(m.lines, lines...)
	return nil
}

func (m *memSink) all() []Line {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.lines)
}

// texts returns the lines' texts.
func texts(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.Text
	}
	return out
}

// startTestTail starts a tail of source "src" on pattern into sink, stopped when the
// test ends.
func startTestTail(t *testing.T, pattern string, resume SourceStatus, sink Sink) *sourceTail {
	t.Helper()
	tl := startTail("src", Source{Host: "web1", Path: pattern}, resume, sink, testPoll, testutil.TestLogger())
	t.Cleanup(func() { tl.stop(); tl.wait() })
	return tl
}

// waitPolls waits until tl has polled n more times: whatever it was to see, it saw.
func waitPolls(t *testing.T, tl *sourceTail, n int64) {
	t.Helper()
	from := tl.polls.Load()
	testutil.Eventually(t, waitLong, tick, func() bool { return tl.polls.Load() >= from+n }, "tail stopped polling")
}

// waitTexts waits until sink holds exactly want, in order.
func waitTexts(t *testing.T, sink *memSink, want ...string) {
	t.Helper()
	var got []string
	if !testutil.WaitFor(waitLong, tick, func() bool { got = texts(sink.all()); return slices.Equal(got, want) }) {
		t.Fatalf("sink holds %q, want %q", got, want)
	}
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func inodeOfPath(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return inodeOf(fi)
}

func TestTailLinesInPieces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	appendFile(t, path, "a\nb")
	sink := &memSink{}
	tl := startTestTail(t, path, SourceStatus{}, sink)
	waitTexts(t, sink, "a")
	waitPolls(t, tl, 2)
	if got := texts(sink.all()); len(got) != 1 {
		t.Fatalf("a partial last line was shipped: %q", got)
	}
	appendFile(t, path, "c\nd")
	waitTexts(t, sink, "a", "bc")
	appendFile(t, path, "\n\ne\n")
	waitTexts(t, sink, "a", "bc", "d", "", "e")
	lines := sink.all()
	for i, want := range []int64{0, 2, 5, 7, 8} {
		l := lines[i]
		if l.Offset != want || l.File != path || l.Source != "src" || l.Host != "web1" || l.Time.IsZero() {
			t.Errorf("line %d = %+v, want offset %d in %s of src on web1", i, l, want, path)
		}
	}
	testutil.Eventually(t, waitLong, tick, func() bool {
		fo := tl.snapshot().Files[path]
		return fo.Offset == 10 && fo.Size == 10 && fo.Inode == inodeOfPath(t, path)
	}, "progress %+v, want offset = size = 10", tl.snapshot())
	if lag := tl.snapshot().LagBytes; lag != 0 {
		t.Errorf("lag %d, want 0", lag)
	}
}

func TestTailRotationByRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendFile(t, path, "1\n2\n")
	sink := &memSink{}
	tl := newTail("src", Source{Host: "web1", Path: path}, SourceStatus{}, sink, testPoll, testutil.TestLogger())
	tl.rotatedIdle = 1 << 30 // the old file stays open whatever the test's pace
	tl.start()
	t.Cleanup(func() { tl.stop(); tl.wait() })
	waitTexts(t, sink, "1", "2")

	// The writer logs a line, logrotate renames the file, the writer logs one more
	// to its open file before it reopens the path.
	old, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.WriteString("3\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if _, err := old.WriteString("4\n"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "5\n")
	waitTexts(t, sink, "1", "2", "3", "4", "5")
	lines := sink.all()
	if lines[2].Offset != 4 || lines[3].Offset != 6 || lines[4].Offset != 0 || lines[4].File != path {
		t.Errorf("offsets after rotation: %+v, want 4, 6 in the old file, 0 in the new", lines[2:])
	}
	testutil.Eventually(t, waitLong, tick, func() bool {
		p := tl.snapshot()
		fo, ok := p.Files[path]
		return len(p.Files) == 1 && ok && fo.Offset == 2 && fo.Inode == inodeOfPath(t, path) && p.LagBytes == 0
	}, "progress %+v, want only the new file, at offset 2", tl.snapshot())
}

func TestTailRotationWithinGlob(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendFile(t, path, "1\n")
	sink := &memSink{}
	tl := startTestTail(t, path+"*", SourceStatus{}, sink)
	waitTexts(t, sink, "1")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path+".1", "2\n")
	appendFile(t, path, "3\n")
	testutil.Eventually(t, waitLong, tick, func() bool { return len(sink.all()) == 3 }, "lines %q", texts(sink.all()))
	byText := map[string]Line{}
	for _, l := range sink.all() {
		byText[l.Text] = l
	}
	if l := byText["2"]; l.File != path+".1" || l.Offset != 2 {
		t.Errorf("line 2 = %+v, want offset 2 of the renamed file", l)
	}
	if l := byText["3"]; l.File != path || l.Offset != 0 {
		t.Errorf("line 3 = %+v, want offset 0 of the new file", l)
	}
	testutil.Eventually(t, waitLong, tick, func() bool {
		p := tl.snapshot()
		return p.Files[path].Offset == 2 && p.Files[path+".1"].Offset == 4
	}, "progress %+v, want both files read to their end", tl.snapshot())
}

func TestTailRotationByTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	appendFile(t, path, "one\ntwo\n")
	sink := &memSink{}
	tl := startTestTail(t, path, SourceStatus{}, sink)
	waitTexts(t, sink, "one", "two")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, "3\n")
	waitTexts(t, sink, "one", "two", "3")
	if l := sink.all()[2]; l.Offset != 0 {
		t.Errorf("line after truncation at offset %d, want 0", l.Offset)
	}
	testutil.Eventually(t, waitLong, tick, func() bool { return tl.snapshot().Files[path].Offset == 2 },
		"progress %+v, want offset 2", tl.snapshot())
}

func TestTailNewFileMatchingGlob(t *testing.T) {
	dir := t.TempDir()
	appendFile(t, filepath.Join(dir, "a.log"), "a1\n")
	sink := &memSink{}
	tl := startTestTail(t, filepath.Join(dir, "*.log"), SourceStatus{}, sink)
	waitTexts(t, sink, "a1")
	appendFile(t, filepath.Join(dir, "b.log"), "b1\n")
	appendFile(t, filepath.Join(dir, "c.txt"), "not matched\n")
	if err := os.Mkdir(filepath.Join(dir, "d.log"), 0o755); err != nil { // a directory: ignored
		t.Fatal(err)
	}
	waitTexts(t, sink, "a1", "b1")
	if l := sink.all()[1]; l.File != filepath.Join(dir, "b.log") || l.Offset != 0 {
		t.Errorf("line of the new file = %+v", l)
	}
	waitPolls(t, tl, 2)
	if got := texts(sink.all()); len(got) != 2 {
		t.Errorf("sink holds %q: a file outside the glob was read", got)
	}
}

func TestTailResumesFromRecordedOffsets(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"kept.log":      "k1\nk2\nk3\n",
		"renamed.log":   "r1\nr2\n",
		"truncated.log": "t1\n",
		"new.log":       "n1\n",
		"other.log":     "o1\n",
	}
	for name, data := range files {
		appendFile(t, filepath.Join(dir, name), data)
	}
	at := func(name string) string { return filepath.Join(dir, name) }
	resume := SourceStatus{Epoch: 3, Files: map[string]FileOffset{
		at("kept.log"):      {Inode: inodeOfPath(t, at("kept.log")), Offset: 6},
		at("renamed-0.log"): {Inode: inodeOfPath(t, at("renamed.log")), Offset: 3}, // its path before a rename
		at("truncated.log"): {Inode: inodeOfPath(t, at("truncated.log")), Offset: 100},
		at("other.log"):     {Inode: 1 << 62, Offset: 3}, // another file then
	}}
	want := []string{"k3", "r2", "t1", "n1", "o1"}
	if inodeOfPath(t, at("kept.log")) == 0 {
		// Without inodes records match by path: the renamed file is read again, and
		// the one at other.log is taken for the recorded one.
		want = []string{"k3", "r1", "r2", "t1", "n1"}
	}
	sink := &memSink{}
	tl := startTestTail(t, filepath.Join(dir, "*.log"), resume, sink)
	testutil.Eventually(t, waitLong, tick, func() bool { return len(sink.all()) >= len(want) })
	waitPolls(t, tl, 2)
	got := texts(sink.all())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("resumed and shipped %q, want %q", got, want)
	}
}

func TestTailSinkFailureHoldsOffsets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	appendFile(t, path, "1\n2\n")
	sink := &memSink{down: true}
	tl := startTestTail(t, path, SourceStatus{}, sink)
	testutil.Eventually(t, waitLong, tick, func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.writes >= 3
	}, "the tail does not try the sink again")
	if p := tl.snapshot(); p.Files[path].Offset != 0 || p.LagBytes != 4 {
		t.Errorf("progress %+v while the sink refused the lines, want offset 0, lag 4", p)
	}
	sink.mu.Lock()
	sink.down = false
	sink.mu.Unlock()
	waitTexts(t, sink, "1", "2")
	testutil.Eventually(t, waitLong, tick, func() bool { return tl.snapshot().Files[path].Offset == 4 })
}

func TestTailLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	long := strings.Repeat("x", 3*tailChunk)
	huge := strings.Repeat("y", maxLineBytes+10)
	appendFile(t, path, "short\n"+long+"\n"+huge+"\n")
	sink := &memSink{}
	startTestTail(t, path, SourceStatus{}, sink)
	waitTexts(t, sink, "short", long, huge[:maxLineBytes], huge[maxLineBytes:])
	lines := sink.all()
	if lines[3].Offset != lines[2].Offset+maxLineBytes {
		t.Errorf("second piece of the huge line at %d, want %d", lines[3].Offset, lines[2].Offset+maxLineBytes)
	}
}

func TestTailStopDrainsRotatedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendFile(t, path, "x\ny")
	sink := &memSink{}
	tl := startTail("src", Source{Host: "web1", Path: path}, SourceStatus{}, sink, testPoll, testutil.TestLogger())
	waitTexts(t, sink, "x")
	if err := os.Rename(path, filepath.Join(dir, "app.old")); err != nil {
		t.Fatal(err)
	}
	waitPolls(t, tl, 2)
	tl.stop()
	final := tl.wait()
	if got := texts(sink.all()); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("after stopping the sink holds %q, want the rotated file's last line too", got)
	}
	if len(final.Files) != 0 || final.LagBytes != 0 {
		t.Errorf("final progress %+v, want no files", final)
	}
}

func TestTailBadGlobStillStops(t *testing.T) {
	sink := &memSink{}
	tl := startTestTail(t, filepath.Join(t.TempDir(), "[bad"), SourceStatus{}, sink)
	waitPolls(t, tl, 2)
	if n := len(sink.all()); n != 0 {
		t.Errorf("%d lines from a bad glob", n)
	}
}

func TestTailRotatedFileRetiredWhenIdle(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	appendFile(t, path, "x\ny")
	sink := &memSink{}
	tl := startTestTail(t, path, SourceStatus{}, sink)
	waitTexts(t, sink, "x")
	if err := os.Rename(path, filepath.Join(dir, "app.old")); err != nil {
		t.Fatal(err)
	}
	// Its unterminated last line goes once the file has stayed idle, and its lag with it.
	waitTexts(t, sink, "x", "y")
	testutil.Eventually(t, waitLong, tick, func() bool {
		p := tl.snapshot()
		return len(p.Files) == 0 && p.LagBytes == 0
	}, "progress %+v, want no files left", tl.snapshot())
}
