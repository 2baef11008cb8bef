package logcollector

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Reading a source's files. A sourceTail's goroutine globs the source's path every
// poll interval and follows each matching file by its identity (os.SameFile: device
// and inode on Unix), not by its name:
//
//   - a line is complete with its '\n'; a last line without one waits for it.
//   - rotation by rename: when the path names another file, or the open file left the
//     glob (renamed away, or removed), the open file is read on to its end, and closed
//     once it has shown no new data for rotatedIdlePolls polls — a writer may append
//     to it until it reopens its log — its last line shipped even without '\n'. The
//     new file at the path is read from 0. A renamed file that still matches the glob
//     (app.log.1 for app.log*) is simply followed under its new path.
//   - rotation by truncation (copytruncate): a file smaller than its offset is read
//     again from 0. Lines appended after the last poll and before the truncation are
//     lost, as with any tailer: rotation by rename is the safe mode.
//   - resuming (a new owner, a restart) matches a recorded offset to a file by inode
//     (by path where there are no inode numbers): a file of another inode, or smaller
//     than the offset, is read from 0. A recorded inode reused by a new file already
//     larger than the offset would have its start skipped: the same limit as
//     Filebeat's registry.
//
// Offsets advance only after the sink accepted the lines before them (Sink.Write
// returned nil), and only those offsets are published for the status.

const (
	// tailChunk is how much of a file is read at once.
	tailChunk = 64 << 10
	// maxLineBytes bounds a line: a longer one is shipped in pieces of this size.
	maxLineBytes = 1 << 20
	// rotatedIdlePolls is how many polls in a row a file that left the glob must show
	// no new data before it is closed.
	rotatedIdlePolls = 5
)

// tailedFile is one open file of a source.
type tailedFile struct {
	path   string      // its last path matched by the glob
	f      *os.File    // nil once closed
	info   os.FileInfo // from the open descriptor: the file's identity
	inode  uint64      // 0 where unknown
	seq    int         // order of opening: older files are read first
	offset int64       // the lines before it were accepted by the sink
	size   int64       // at the last look
	gone   bool        // the glob no longer matches it: rotated away or removed
	seen   bool        // matched by the current poll's glob
	idle   int         // polls in a row a gone file showed no new data
}

// sourceTail reads one source's files and ships their complete lines to the sink.
// Its goroutine (run) owns every field above mu; mu guards progress, which the
// collector reads for its status (snapshot).
type sourceTail struct {
	id     string
	src    Source
	sink   Sink
	poll   time.Duration
	logger *slog.Logger

	resume   map[string]FileOffset // recorded offsets not yet matched to a file, by path
	files    []*tailedFile
	seq      int
	buf      []byte
	failing  bool            // the sink refused the last batch (logged once per streak)
	searched bool            // findRotated has run
	problem  string          // why no file is read (a glob matching nothing), for the status
	warned   map[string]bool // problems logged once: a bad glob, unreadable paths
	// rotatedIdle is how many polls a gone file must stay idle to be closed
	// (rotatedIdlePolls; tests raise it).
	rotatedIdle int

	mu       sync.Mutex
	progress SourceStatus // Files and LagBytes; Epoch is the collector's to set

	polls atomic.Int64 // polls done, for tests to wait on

	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned and closed the files
}

// startTail starts reading source id, defined as src, resuming from the offsets in
// resume (a zero SourceStatus: from the start of every file), and returns at once.
// Stop it with stop, then wait.
func startTail(id string, src Source, resume SourceStatus, sink Sink, poll time.Duration, logger *slog.Logger) *sourceTail {
	t := newTail(id, src, resume, sink, poll, logger)
	t.start()
	return t
}

// newTail returns a tail as startTail does, not started yet.
func newTail(id string, src Source, resume SourceStatus, sink Sink, poll time.Duration, logger *slog.Logger) *sourceTail {
	t := &sourceTail{
		id: id, src: src, sink: sink, poll: poll,
		logger:      logger.With("source", id),
		resume:      maps.Clone(resume.Files),
		buf:         make([]byte, tailChunk),
		warned:      make(map[string]bool),
		rotatedIdle: rotatedIdlePolls,
		done:        make(chan struct{}),
	}
	if t.resume == nil {
		t.resume = make(map[string]FileOffset)
	}
	t.progress = SourceStatus{Files: maps.Clone(t.resume), LagBytes: resume.LagBytes}
	return t
}

// start starts the tail's goroutine; call it once.
func (t *sourceTail) start() {
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	go t.run(ctx)
}

// stop tells the tail to stop: it ships what is left of the files rotated away (no
// one could find them after), but nothing more of the others. It returns at once.
func (t *sourceTail) stop() { t.cancel() }

// wait waits until the tail has stopped and returns its final progress.
func (t *sourceTail) wait() SourceStatus {
	<-t.done
	return t.snapshot()
}

// snapshot returns the progress: per file still matched, the offset up to which its
// lines were accepted by the sink; the lag over all open files. Safe at any time.
func (t *sourceTail) snapshot() SourceStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.progress
	p.Files = maps.Clone(p.Files)
	return p
}

// run polls the files every poll interval until ctx ends.
func (t *sourceTail) run(ctx context.Context) {
	defer close(t.done)
	defer t.closeFiles()
	tick := time.NewTicker(t.poll)
	defer tick.Stop()
	for {
		t.pollOnce(ctx)
		select {
		case <-ctx.Done():
			t.drainGone()
			return
		case <-tick.C:
		}
	}
}

// pollOnce picks up new files and ships the new lines of every file, older files
// first, until ctx ends.
func (t *sourceTail) pollOnce(ctx context.Context) {
	t.discover()
	if !t.searched {
		t.searched = true
		t.findRotated()
	}
	slices.SortFunc(t.files, func(a, b *tailedFile) int {
		if a.gone != b.gone {
			if a.gone {
				return -1
			}
			return 1
		}
		return a.seq - b.seq
	})
	for _, ft := range t.files {
		if ctx.Err() != nil {
			break
		}
		t.follow(ctx, ft, false)
	}
	t.files = slices.DeleteFunc(t.files, func(ft *tailedFile) bool { return ft.f == nil })
	if len(t.buf) > tailChunk {
		t.buf = make([]byte, tailChunk)
	}
	t.publish()
	t.polls.Add(1)
}

// discover globs the source's path: it opens the files not followed yet, renames
// those followed under a new path, and marks gone those no longer matched.
func (t *sourceTail) discover() {
	paths, err := filepath.Glob(t.src.Path)
	if err != nil {
		t.warnOnce("glob", "bad path glob: no new files are picked up", "path", t.src.Path, "err", err)
	}
	for _, ft := range t.files {
		ft.seen = false
	}
	matched := 0
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		matched++
		if ft := t.tracked(fi); ft != nil {
			if !ft.seen {
				ft.seen, ft.path = true, p
			}
			continue
		}
		t.open(p)
	}
	t.problem = ""
	switch {
	case err != nil:
		t.problem = "bad glob: " + err.Error()
	case matched == 0:
		t.problem = "no file matches " + t.src.Path
	case !slices.ContainsFunc(t.files, func(ft *tailedFile) bool { return ft.seen }):
		t.problem = "the matching files cannot be opened (the collector's log says why)"
	}
	for _, ft := range t.files {
		if !ft.seen && !ft.gone {
			t.logger.Info("file rotated away or removed: reading it to its end", "path", ft.path)
		}
		ft.gone = !ft.seen
	}
}

// findRotated finishes the files a previous owner was reading that were rotated away
// before it recorded their end: a recorded file the glob no longer matches (its path
// now names another file) is looked for by inode in its directory — app.log renamed to
// app.log.1 — and read from its recorded offset to its end, as a file rotated away.
// Without it, the lines written to it after the last recorded offset and before the
// rename would be lost when the previous owner died.
func (t *sourceTail) findRotated() {
	for rp, fo := range t.resume {
		if fo.Inode == 0 {
			continue
		}
		entries, err := os.ReadDir(filepath.Dir(rp))
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(filepath.Dir(rp), e.Name())
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() || inodeOf(fi) != fo.Inode || fi.Size() <= fo.Offset {
				continue
			}
			t.logger.Info("finishing a file rotated away before its end was recorded", "path", p, "offset", fo.Offset)
			t.open(p)
			if n := len(t.files); n > 0 && t.files[n-1].path == p {
				t.files[n-1].gone = true
			}
			break
		}
	}
}

// tracked returns the open file fi describes, or nil.
func (t *sourceTail) tracked(fi os.FileInfo) *tailedFile {
	for _, ft := range t.files {
		if ft.f != nil && os.SameFile(ft.info, fi) {
			return ft
		}
	}
	return nil
}

// open starts following the file at p, from its recorded offset if it has one.
func (t *sourceTail) open(p string) {
	f, err := os.Open(p)
	if err != nil {
		t.warnOnce("open "+p, "cannot open file: skipping it", "path", p, "err", err)
		return
	}
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || t.tracked(info) != nil {
		f.Close() // replaced since the glob, by one followed already or no file
		return
	}
	delete(t.warned, "open "+p)
	offset := t.resumeOffset(p, info)
	t.seq++
	t.files = append(t.files, &tailedFile{
		path: p, f: f, info: info, inode: inodeOf(info), seq: t.seq,
		offset: offset, size: info.Size(), seen: true,
	})
	t.logger.Debug("following file", "path", p, "offset", offset, "size", info.Size())
}

// resumeOffset returns where to start reading the file at path: its recorded offset,
// matched by inode (by path where inodes are unknown), or 0 when it has none or is
// smaller than it (truncated since). A matched record is used up.
func (t *sourceTail) resumeOffset(path string, info os.FileInfo) int64 {
	ino := inodeOf(info)
	for rp, fo := range t.resume {
		match := rp == path
		if fo.Inode != 0 && ino != 0 {
			match = fo.Inode == ino
		}
		if !match {
			continue
		}
		delete(t.resume, rp)
		if info.Size() < fo.Offset {
			t.logger.Info("file shorter than its recorded offset: reading it from the start",
				"path", path, "offset", fo.Offset, "size", info.Size())
			return 0
		}
		return fo.Offset
	}
	return 0
}

// follow ships the new complete lines of ft; final (or a gone file idle long enough)
// also ships its last line without '\n' and closes it.
func (t *sourceTail) follow(ctx context.Context, ft *tailedFile, final bool) {
	info, err := ft.f.Stat()
	if err != nil {
		t.logger.Warn("cannot stat open file", "path", ft.path, "err", err)
		return
	}
	size := info.Size()
	if size < ft.offset {
		t.logger.Warn("file truncated: reading it again from the start", "path", ft.path,
			"offset", ft.offset, "size", size)
		ft.offset = 0
	}
	if ft.gone && size == ft.size {
		ft.idle++
	} else {
		ft.idle = 0
	}
	ft.size = size
	retire := final || ft.gone && ft.idle >= t.rotatedIdle
	if t.ship(ctx, ft, size, retire) && retire {
		t.logger.Debug("file done", "path", ft.path, "offset", ft.offset)
		ft.f.Close()
		ft.f = nil
	}
}

// ship sends ft's lines up to size to the sink, batch by batch, advancing the offset
// after each accepted batch. With flush, a last line without '\n' goes too. It
// reports whether it got to the end (false: ctx ended, a read failed, the sink
// refused).
func (t *sourceTail) ship(ctx context.Context, ft *tailedFile, size int64, flush bool) bool {
	for ft.offset < size {
		if ctx.Err() != nil {
			return false
		}
		lines, used, err := t.readLines(ft, size, flush)
		if err != nil {
			t.logger.Warn("cannot read file", "path", ft.path, "offset", ft.offset, "err", err)
			return false
		}
		if used == 0 {
			return true // a partial last line: it waits for its '\n'
		}
		if err := t.sink.Write(lines); err != nil {
			if !t.failing {
				t.logger.Warn("sink refused lines: trying again at the next poll", "err", err)
			}
			t.failing = true
			return false
		}
		if t.failing {
			t.logger.Info("sink accepts lines again")
			t.failing = false
		}
		ft.offset += used
		t.publish()
	}
	return true
}

// readLines reads from ft's offset up to size and cuts the data into lines; it
// returns them and how many bytes they take. A line longer than the buffer makes it
// grow, up to maxLineBytes, past which the line goes in pieces.
func (t *sourceTail) readLines(ft *tailedFile, size int64, flush bool) ([]Line, int64, error) {
	for {
		want := min(size-ft.offset, int64(len(t.buf)))
		n, err := ft.f.ReadAt(t.buf[:want], ft.offset)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		atEnd := int64(n) < int64(len(t.buf)) // all there is (up to size), or shrunk under us
		lines, used := t.cut(ft, t.buf[:n], flush && atEnd)
		if used > 0 || atEnd {
			return lines, used, nil
		}
		if len(t.buf) < maxLineBytes {
			t.buf = make([]byte, 2*len(t.buf))
			continue
		}
		lines, used = t.cut(ft, t.buf[:n], true)
		return lines, used, nil
	}
}

// cut splits data, read at ft's offset, into its complete lines (and, with final, the
// unterminated rest as a last line), and returns them and the bytes they take.
func (t *sourceTail) cut(ft *tailedFile, data []byte, final bool) ([]Line, int64) {
	now := time.Now().UTC()
	var lines []Line
	pos := 0
	for pos < len(data) {
		end := bytes.IndexByte(data[pos:], '\n')
		next := pos + end + 1
		if end < 0 {
			if !final {
				break
			}
			end, next = len(data)-pos, len(data)
		}
		lines = append(lines, Line{
			Source: t.id, File: ft.path, Inode: ft.inode, Offset: ft.offset + int64(pos), Host: t.src.Host,
			Time: now, Text: string(data[pos : pos+end]),
		})
		pos = next
	}
	return lines, int64(pos)
}

// drainGone ships what is left of the files rotated away, on stopping: they no longer
// match the glob, so no later owner would find them.
func (t *sourceTail) drainGone() {
	for _, ft := range t.files {
		if ft.f != nil && ft.gone {
			t.follow(context.Background(), ft, true)
		}
	}
	t.publish()
}

// publish makes the files' offsets the progress the collector reports.
func (t *sourceTail) publish() {
	files := make(map[string]FileOffset, len(t.files))
	var lag int64
	for _, ft := range t.files {
		if ft.f == nil {
			continue
		}
		lag += max(ft.size-ft.offset, 0)
		if !ft.gone {
			files[ft.path] = FileOffset{Inode: ft.inode, Offset: ft.offset, Size: ft.size}
		}
	}
	t.mu.Lock()
	t.progress = SourceStatus{Files: files, LagBytes: lag, Problem: t.problem}
	t.mu.Unlock()
}

func (t *sourceTail) closeFiles() {
	for _, ft := range t.files {
		if ft.f != nil {
			ft.f.Close()
			ft.f = nil
		}
	}
}

// warnOnce logs msg the first time key comes up.
func (t *sourceTail) warnOnce(key, msg string, args ...any) {
	if !t.warned[key] {
		t.warned[key] = true
		t.logger.Warn(msg, args...)
	}
}
