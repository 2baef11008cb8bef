package worker

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// tailSize is how much of a run's output its status or attempt record keeps.
const tailSize = 4 << 10

// tailBuffer keeps the last max bytes written to it. It is not safe for concurrent
// use.
type tailBuffer struct {
	max int
	buf []byte
	cut bool // bytes were dropped from the front
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max, buf: make([]byte, 0, max)} }

// Write keeps the last max bytes of everything written; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.cut = t.cut || len(t.buf) > 0 || len(p) > t.max
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.cut = true
		t.buf = t.buf[:copy(t.buf, t.buf[over:])]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the tail as valid UTF-8: a rune cut in two at the front is dropped,
// and bytes that are not UTF-8 (the program's own) become U+FFFD.
func (t *tailBuffer) String() string {
	b := t.buf
	if t.cut {
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// output collects a run's stdout and stderr, together, from a pipe the process writes
// to: all of it goes to a file, the end of it to a tailBuffer. copyLoop owns the tail
// until done is closed; wait hands it over.
type output struct {
	path string   // the file, "" if it could not be created
	w    *os.File // the pipe's write end, for the process; closed by started
	r    *os.File // the read end, drained by copyLoop
	tail *tailBuffer
	done chan struct{} // closed when copyLoop has seen the end of the output
}

// newOutput opens the pipe and creates the file at path (and its directory). A file
// that cannot be created is logged, not fatal: the run goes on with its tail only.
func newOutput(path string, logger *slog.Logger) (*output, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	o := &output{path: path, w: w, r: r, tail: newTailBuffer(tailSize), done: make(chan struct{})}
	file, err := createLog(path)
	if err != nil {
		logger.Error("cannot create output file; keeping the tail only", "path", path, "err", err)
		o.path = ""
	}
	go o.copyLoop(file, logger)
	return o, nil
}

func createLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
}

// started closes the parent's copy of the write end once the process has it (or has
// failed to start), so that the pipe ends when the process group's last copy does.
func (o *output) started() { o.w.Close() }

// copyLoop copies the pipe to the file and the tail until the pipe ends or is closed.
func (o *output) copyLoop(file *os.File, logger *slog.Logger) {
	defer close(o.done)
	var sink io.Writer = o.tail
	if file != nil {
		defer file.Close()
		sink = &fileTail{file: file, tail: o.tail, logger: logger}
	}
	_, err := io.Copy(sink, o.r)
	if err != nil && !errors.Is(err, os.ErrClosed) {
		logger.Warn("cannot read task output", "err", err)
	}
}

// wait waits for the output's end for at most limit, then stops reading: a process
// that left the group (setsid) may hold the pipe open forever. It returns the tail.
func (o *output) wait(limit time.Duration) string {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
		o.r.Close()
		<-o.done
	}
	o.r.Close()
	return o.tail.String()
}

// close releases the pipe of a process that did not start.
func (o *output) close() {
	o.w.Close()
	o.r.Close()
	<-o.done
}

// fileTail writes to the file and the tail; after the file fails (a full disk) it
// logs once and goes on with the tail alone.
type fileTail struct {
	file   *os.File
	tail   *tailBuffer
	logger *slog.Logger
	failed bool
}

func (f *fileTail) Write(p []byte) (int, error) {
	if !f.failed {
		if _, err := f.file.Write(p); err != nil {
			f.failed = true
			f.logger.Error("cannot write output file; keeping the tail only", "path", f.file.Name(), "err", err)
		}
	}
	return f.tail.Write(p)
}

// outputPath returns where run n of task id writes its output.
func outputPath(dir, id string, n int) string {
	return filepath.Join(dir, id, fmt.Sprintf("attempt-%d.log", n))
}
