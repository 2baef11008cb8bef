package logcollector

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Sink receives the lines a collector reads. Write returns nil only once the sink has
// accepted the lines — for a DirSink, once they are on disk — and the collector records
// the offsets past them in its status only after that: a line is never recorded as
// shipped before the sink has it. A Write that fails is tried again later with the
// same lines first, so a sink that stored part of a failed batch sees that part again
// (at-least-once). Write is called from one goroutine per source, concurrently.
type Sink interface {
	Write(lines []Line) error
}

// DirSink appends the lines of each source to <dir>/<source>.jsonl, one JSON object
// (a Line) per line, and fsyncs the file before Write returns. It is safe for
// concurrent use; writes to different sources proceed in parallel.
type DirSink struct {
	dir string
	// sync makes a file's content durable; tests count and fail it.
	sync func(*os.File) error

	mu     sync.Mutex
	files  map[string]*sinkFile // by source id; guarded by mu
	closed bool                 // guarded by mu
}

// sinkFile is one source's file; mu serializes the writes to it.
type sinkFile struct {
	mu sync.Mutex
	f  *os.File
}

// ErrSinkClosed is returned by a DirSink's Write after Close.
var ErrSinkClosed = errors.New("logcollector: sink closed")

// NewDirSink returns a sink writing in dir, which it creates if missing.
func NewDirSink(dir string) (*DirSink, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("logcollector: sink directory: %w", err)
	}
	return &DirSink{dir: dir, sync: (*os.File).Sync, files: make(map[string]*sinkFile)}, nil
}

// Path returns the file the lines of source go to.
func (s *DirSink) Path(source string) string { return filepath.Join(s.dir, source+".jsonl") }

// Write appends lines to their sources' files, in order, and fsyncs each file written.
// A batch that fails is cut off the file again where possible, so that the file holds
// whole lines only.
func (s *DirSink) Write(lines []Line) error {
	order, bySource := groupBySource(lines)
	for _, source := range order {
		if err := s.writeSource(source, bySource[source]); err != nil {
			return err
		}
	}
	return nil
}

// writeSource appends one source's lines to its file and fsyncs it.
func (s *DirSink) writeSource(source string, lines []Line) error {
	if err := CheckID("source", source); err != nil {
		return err
	}
	buf, err := encodeLines(lines)
	if err != nil {
		return err
	}
	sf, err := s.file(source)
	if err != nil {
		return err
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	info, err := sf.f.Stat()
	if err != nil {
		return fmt.Errorf("logcollector: sink %s: %w", sf.f.Name(), err)
	}
	_, err = sf.f.Write(buf)
	if err == nil {
		err = s.sync(sf.f)
	}
	if err != nil {
		if terr := sf.f.Truncate(info.Size()); terr != nil {
			err = fmt.Errorf("%w (and cutting the partial batch off failed: %v)", err, terr)
		}
		return fmt.Errorf("logcollector: sink %s: %w", sf.f.Name(), err)
	}
	return nil
}

// file returns source's open file, opening it (append, create) on first use.
func (s *DirSink) file(source string) (*sinkFile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSinkClosed
	}
	if sf, ok := s.files[source]; ok {
		return sf, nil
	}
	f, err := os.OpenFile(s.Path(source), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logcollector: sink: %w", err)
	}
	sf := &sinkFile{f: f}
	s.files[source] = sf
	return sf, nil
}

// Close closes the files; later Writes fail with ErrSinkClosed. It is idempotent, and
// waits for Writes in progress.
func (s *DirSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, sf := range s.files {
		sf.mu.Lock()
		errs = append(errs, sf.f.Close())
		sf.mu.Unlock()
	}
	s.files = nil
	return errors.Join(errs...)
}

// WriterSink writes the lines of every source as JSON lines to one stream, such as
// standard output. A line is accepted once the stream's Write returned: what the
// stream does with it after that (a pipe's reader dying, say) is beyond the collector.
// It is safe for concurrent use; each Write's lines stay together.
type WriterSink struct {
	mu sync.Mutex
	w  io.Writer // guarded by mu
}

// NewWriterSink returns a sink writing to w.
func NewWriterSink(w io.Writer) *WriterSink { return &WriterSink{w: w} }

// Write writes lines to the stream in one Write.
func (s *WriterSink) Write(lines []Line) error {
	buf, err := encodeLines(lines)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(buf); err != nil {
		return fmt.Errorf("logcollector: sink: %w", err)
	}
	return nil
}

// openSink returns the sink spec names ("-" for standard output, else a directory)
// and how to close it.
func openSink(spec string) (Sink, func() error, error) {
	if spec == "-" {
		return NewWriterSink(os.Stdout), func() error { return nil }, nil
	}
	s, err := NewDirSink(spec)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// encodeLines renders lines as JSON lines. Text that is not valid UTF-8 has its bad
// bytes replaced by U+FFFD, as encoding/json does.
func encodeLines(lines []Line) ([]byte, error) {
	var buf []byte
	for i := range lines {
		b, err := json.Marshal(&lines[i])
		if err != nil {
			return nil, fmt.Errorf("logcollector: encode line: %w", err)
		}
		buf = append(append(buf, b...), '\n')
	}
	return buf, nil
}

// groupBySource splits lines by source, keeping their order within each, and lists
// the sources in order of first appearance.
func groupBySource(lines []Line) ([]string, map[string][]Line) {
	var order []string
	by := make(map[string][]Line)
	for _, l := range lines {
		if _, ok := by[l.Source]; !ok {
			order = append(order, l.Source)
		}
		by[l.Source] = append(by[l.Source], l)
	}
	return order, by
}
