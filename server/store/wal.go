package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// ErrCorrupt is wrapped by every error that reports damaged contents of a log
	// segment or a snapshot; the *CorruptError in the chain names the file and offset.
	ErrCorrupt = errors.New("store: corrupt data")
	// ErrZxidOrder is returned by Append for a zxid not above LastZxid (or not positive).
	ErrZxidOrder = errors.New("store: zxid not above the last one")
	// ErrTooLarge is returned by Append for a payload over MaxPayload.
	ErrTooLarge = errors.New("store: payload too large")
	// ErrReplayAfterAppend is returned by Replay once Append has been called.
	ErrReplayAfterAppend = errors.New("store: replay after append")
	// ErrGap is returned by Replay when the log starts after the requested zxid: the
	// records just after it were purged.
	ErrGap = errors.New("store: log does not reach back to the requested zxid")
	// ErrClosed is returned by every method of a closed WAL except Close and LastZxid.
	ErrClosed = errors.New("store: log closed")
	// ErrLocked is returned by Open when another WAL has the directory open.
	ErrLocked = errors.New("store: log directory in use")
)

const (
	// flushSize is how many encoded bytes Append buffers before it writes them out
	// without waiting for Sync.
	flushSize = 1 << 20
	// directWriteSize is the payload size from which Append writes the payload from
	// the caller's slice instead of copying it into the buffer.
	directWriteSize = 64 << 10
	// slowSync is the fdatasync duration that is logged as a warning, as ZooKeeper's
	// fsync.warningthresholdms default.
	slowSync = time.Second
)

// WAL is the write-ahead log: an ordered sequence of (zxid, payload) records in
// segment files, each fsynced batch of them durable once Sync returns.
//
// Call order: Open, then optionally Replay (any number of times), then any mix of
// Append and Sync, then Close. A WAL is not safe for concurrent use: one goroutine
// (the server's commit loop) owns it and makes every call, Close included. LastZxid
// may be called from any goroutine at any time, and PurgeBefore from any goroutine
// until Close (see PurgeBefore).
//
// After an Append or Sync fails with an I/O error the WAL is broken: every later
// Append and Sync returns the same error, because after a failed write or fdatasync
// no one can say which of the buffered bytes reached the disk. The server must stop,
// Close, and Open again, which recovers what is on disk.
type WAL struct {
	cfg    Config
	fs     FS
	logger *slog.Logger
	lock   io.Closer // the lock on cfg.Dir, released by Close

	// purgeMu is held by PurgeBefore throughout, and by Replay, so that no segment is
	// removed while it is read, and by Close to wait for a purge to end. It is taken
	// before mu.
	purgeMu     sync.Mutex
	purgeClosed bool // Close has begun: PurgeBefore refuses; guarded by purgeMu

	// mu guards segs, which the writer appends to as it rotates and PurgeBefore cuts
	// from the front. The writer takes it only to rotate, never per record.
	mu sync.Mutex
	// segs lists every segment in zxid order, the last the one appended to. last is
	// exact in all but that one; end and size are those Open found, which is all
	// Replay (only ever before the first Append) needs.
	segs []segment

	// All fields below are owned by the goroutine that calls Append and Sync.
	f        File   // the segment being appended to; nil until the first Append creates one
	name     string // f's file name, for logs and errors
	off      int64  // offset in f just past the last appended record, buffered ones included
	mark     int64  // offset in f up to which the data is synced; goes in each record's header
	buf      []byte // encoded records not yet written to f
	wpos     int64  // offset in f at which buf goes: off-len(buf) between calls
	limit    int64  // the log rotates rather than append a record past this offset of f
	appended bool   // Append has been called: Replay is no longer allowed
	err      error  // sticky: the first I/O error of an Append or Sync
	closed   bool

	last atomic.Int64 // zxid of the last record appended or recovered; 0 if none

	prep *preparer // zero-fills the next segment in the background
}

// Open opens the log in cfg.Dir, creating the directory if needed, and recovers it:
// it reads every segment, checks every record, and repairs a torn tail of the last
// segment (see doc.go for the rule), logging a warning naming the file and offset.
// Damage it may not repair makes it fail with an error wrapping ErrCorrupt. A nil
// logger discards logs.
func Open(cfg Config, logger *slog.Logger) (*WAL, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fsys := fsOrOS(cfg.FS)
	if err := fsys.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("store: create log directory: %w", err)
	}
	lock, err := fsys.Lock(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("store: lock log directory: %w", err)
	}
	w := &WAL{cfg: cfg, fs: fsys, logger: logger, lock: lock}
	if err := w.recover(); err != nil {
		if w.f != nil {
			w.f.Close()
		}
		lock.Close()
		return nil, err
	}
	if cfg.PrepareSegments {
		w.prep = startPreparer(fsys, cfg.Dir, cfg.SegmentSize)
	}
	logger.Info("log opened", "dir", cfg.Dir, "segments", len(w.segs), "last_zxid", fmtZxid(w.LastZxid()))
	return w, nil
}

// recover checks every segment, repairs the tail, and opens the last segment for
// appending.
func (w *WAL) recover() error {
	segs, tmps, err := listSegments(w.fs, w.cfg.Dir)
	if err != nil {
		return err
	}
	if len(tmps) > 0 {
		w.logger.Warn("removing unfinished segment files", "files", tmps)
		if err := removeFiles(w.fs, w.cfg.Dir, tmps...); err != nil {
			return fmt.Errorf("store: remove unfinished segments: %w", err)
		}
	}
	var prev int64
	var torn *tornTail // of the last segment
	for i := range segs {
		seg, last := &segs[i], i == len(segs)-1
		if torn, err = checkFile(w.fs, seg, last); err != nil {
			return err
		}
		name := filepath.Base(seg.path)
		if i > 0 && seg.prev != prev {
			// Zxids may jump (a new epoch), so only the header can tell that the
			// records between two segments are missing.
			return corrupt(name, 0, fmt.Sprintf("segment follows zxid %s, but the segment before ends at zxid %s",
				fmtZxid(seg.prev), fmtZxid(prev)))
		}
		if !last && seg.last == 0 {
			return corrupt(name, segmentHeaderSize, "no records in a segment that is not the last")
		}
		prev = max(seg.prev, seg.last)
	}
	// Everything is checked: only now is anything changed.
	if n := len(segs); n > 0 && torn != nil {
		w.logger.Warn("log tail torn, truncating", "file", filepath.Base(segs[n-1].path), "offset", torn.offset,
			"discarded_bytes", segs[n-1].size-torn.offset, "reason", torn.reason, "last_zxid", fmtZxid(prev))
	}
	if n := len(segs); n > 0 && segs[n-1].last == 0 {
		// The process stopped between creating a segment and syncing its first record.
		// Removing it lets the next Append name a new segment after its own zxid.
		w.logger.Warn("removing empty last segment", "file", filepath.Base(segs[n-1].path))
		if err := removeFiles(w.fs, w.cfg.Dir, segs[n-1].path); err != nil {
			return fmt.Errorf("store: remove empty segment: %w", err)
		}
		segs, torn = segs[:n-1], nil
	}
	w.segs = segs
	w.last.Store(prev)
	if len(segs) == 0 {
		return nil
	}
	return w.openTail(segs[len(segs)-1], torn)
}

// checkFile reads and checks one segment file, filling seg.
func checkFile(fsys FS, seg *segment, last bool) (*tornTail, error) {
	name := filepath.Base(seg.path)
	f, err := fsys.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", name, err)
	}
	defer f.Close()
	if seg.size, err = f.Size(); err != nil {
		return nil, fmt.Errorf("store: stat %s: %w", name, err)
	}
	return checkSegment(f, seg, last)
}

// openTail opens the last segment for appending after its last record, cutting off
// its torn tail if it has one, and syncs it: what the recovery read may have come
// from the page cache of a process that died before its fdatasync, and new records'
// sync marks will vouch for all of it.
func (w *WAL) openTail(seg segment, torn *tornTail) error {
	f, err := w.fs.OpenFile(seg.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", filepath.Base(seg.path), err)
	}
	w.f, w.name = f, filepath.Base(seg.path)
	if torn != nil {
		if err := truncateSegment(f, torn.offset, w.cfg.SegmentSize); err != nil {
			return fmt.Errorf("store: truncate %s at offset %d: %w", w.name, torn.offset, err)
		}
	}
	if err := f.Datasync(); err != nil {
		return fmt.Errorf("store: fdatasync %s: %w", w.name, err)
	}
	// A short segment (written when no prepared file was ready) is left when full,
	// not grown: appends past a file's end would make every fdatasync commit its size.
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("store: size of %s: %w", w.name, err)
	}
	w.off, w.mark, w.wpos, w.limit = seg.end, seg.end, seg.end, min(w.cfg.SegmentSize, max(size, seg.end))
	return nil
}

// LastZxid returns the zxid of the last record appended, synced or not, or of the
// last record recovered by Open; 0 for an empty log. Safe for concurrent use.
func (w *WAL) LastZxid() int64 { return w.last.Load() }

// Start returns the zxid after which the log holds every record: the prev of its
// oldest segment (see PurgeBefore), 0 for a log never purged or empty. Replay(Start())
// replays the whole log. Safe for concurrent use.
func (w *WAL) Start() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.segs) == 0 {
		return 0
	}
	return w.segs[0].prev
}

// Append adds a record to the log. zxid must be above LastZxid. The record is
// buffered and is durable only once Sync returns; the log keeps no reference to
// payload after Append returns. Append rotates to a new segment, syncing the one it
// leaves, when the record would not fit in the current one.
func (w *WAL) Append(zxid int64, payload []byte) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	if last := w.last.Load(); zxid <= last {
		return fmt.Errorf("%w: zxid %s after %s", ErrZxidOrder, fmtZxid(zxid), fmtZxid(last))
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("%w: %d bytes (max %d)", ErrTooLarge, len(payload), MaxPayload)
	}
	size := recordSize(len(payload))
	if w.f == nil || (w.off > segmentHeaderSize && w.off+size > w.limit) {
		if err := w.rotate(zxid); err != nil {
			return w.fail(err)
		}
	}
	w.appended = true
	if len(payload) < directWriteSize {
		w.buf = appendRecord(w.buf, zxid, uint32(w.mark), payload)
	} else if err := w.writeLarge(zxid, payload); err != nil {
		return w.fail(err)
	}
	w.off += size
	w.last.Store(zxid)
	if len(w.buf) >= flushSize {
		if err := w.flush(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// writeLarge writes a record whose payload is too big to be worth copying.
func (w *WAL) writeLarge(zxid int64, payload []byte) error {
	n := len(w.buf)
	w.buf = append(w.buf, zeros[:recordHeaderSize]...)
	putRecordHeader(w.buf[n:], zxid, uint32(w.mark), payload)
	if err := w.flush(); err != nil {
		return err
	}
	if _, err := w.f.WriteAt(payload, w.wpos); err != nil {
		return fmt.Errorf("store: write %s: %w", w.name, err)
	}
	w.wpos += int64(len(payload))
	pad := recordSize(len(payload)) - recordHeaderSize - int64(len(payload))
	w.buf = append(w.buf, zeros[:pad]...)
	return nil
}

// Sync writes out the buffered records and, if Config.ForceSync, fdatasyncs the
// segment. Once it returns nil every record appended before the call is durable.
// A Sync with nothing appended since the last one costs nothing.
func (w *WAL) Sync() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	if err := w.sync(); err != nil {
		return w.fail(err)
	}
	return nil
}

func (w *WAL) sync() error {
	if err := w.flush(); err != nil {
		return err
	}
	if w.mark == w.off {
		return nil
	}
	if w.cfg.ForceSync {
		start := time.Now()
		if err := w.f.Datasync(); err != nil {
			return fmt.Errorf("store: fdatasync %s: %w", w.name, err)
		}
		if d := time.Since(start); d > slowSync {
			w.logger.Warn("slow fdatasync", "file", w.name, "duration", d, "bytes", w.off-w.mark)
		}
	}
	// Without ForceSync the mark advances on the write alone: the data is then safe
	// from a crash of the process, which is all that mode promises.
	w.mark = w.off
	return nil
}

// flush writes the buffered records to the segment file.
func (w *WAL) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.f.WriteAt(w.buf, w.wpos)
	w.wpos += int64(len(w.buf))
	w.buf = w.buf[:0]
	if err != nil {
		return fmt.Errorf("store: write %s: %w", w.name, err)
	}
	return nil
}

// rotate syncs and closes the current segment, if any, and starts the segment for base.
// Syncing first keeps the rule that only the last segment may hold unsynced data.
func (w *WAL) rotate(base int64) error {
	if w.f != nil {
		if err := w.sync(); err != nil {
			return err
		}
		err := w.f.Close()
		w.f = nil
		if err != nil {
			return fmt.Errorf("store: close %s: %w", w.name, err)
		}
	}
	prev := w.last.Load()
	h := segmentHeader{base: base, prev: prev}
	var f File
	var err error
	if path := w.prep.take(); path != "" {
		if f, err = usePrepared(w.fs, w.cfg.Dir, path, h); err != nil {
			w.logger.Warn("prepared log segment unusable, allocating one", "err", err)
		}
		w.prep.next()
	}
	limit := w.cfg.SegmentSize
	if f == nil {
		// No prepared file: a short segment, its zeros written now, which the log
		// leaves for a prepared one soon (see prepare.go for why not fallocate).
		limit = min(limit, shortSegmentSize)
		if f, err = createSegment(w.fs, w.cfg.Dir, h, limit); err != nil {
			return err
		}
	}
	w.mu.Lock()
	if n := len(w.segs); n > 0 {
		w.segs[n-1].last = prev // the segment just left, whose last record that is
	}
	w.segs = append(w.segs, segment{path: filepath.Join(w.cfg.Dir, segmentName(base)), base: base, prev: prev})
	w.mu.Unlock()
	w.f, w.name, w.limit = f, segmentName(base), limit
	w.off, w.mark, w.wpos = segmentHeaderSize, segmentHeaderSize, segmentHeaderSize
	w.logger.Debug("log segment created", "file", w.name)
	return nil
}

// fail makes err sticky.
func (w *WAL) fail(err error) error {
	w.err = err
	w.logger.Error("log write failed", "file", w.name, "err", err)
	return err
}

// Replay calls fn for every record with zxid > after, in zxid order, and returns
// fn's first error (wrapped) or an error if a record can no longer be read.
// payload is valid only during the call: fn copies what it keeps.
// Replay may be called only between Open and the first Append (ErrReplayAfterAppend).
// Segments whose records are all at or below after are not read. If the oldest
// segment left starts past after+1 — the records in between were purged — Replay
// returns ErrGap and calls fn for nothing. A PurgeBefore waits for Replay to end, so
// fn must not call it.
func (w *WAL) Replay(after int64, fn func(zxid int64, payload []byte) error) error {
	if w.closed {
		return ErrClosed
	}
	if w.appended {
		return ErrReplayAfterAppend
	}
	w.purgeMu.Lock()
	defer w.purgeMu.Unlock()
	w.mu.Lock()
	segs := slices.Clone(w.segs)
	w.mu.Unlock()
	if len(segs) > 0 && after < segs[0].prev {
		return fmt.Errorf("%w: asked for records after %s, the log holds only those after %s",
			ErrGap, fmtZxid(after), fmtZxid(segs[0].prev))
	}
	var prev int64
	for _, seg := range segs {
		if seg.last <= after {
			prev = seg.last
			continue
		}
		var err error
		if prev, err = replaySegment(w.fs, seg, prev, after, fn); err != nil {
			return err
		}
	}
	return nil
}

// replaySegment replays one segment up to the end Open found, checking it again.
func replaySegment(fsys FS, seg segment, prev, after int64, fn func(int64, []byte) error) (int64, error) {
	name := filepath.Base(seg.path)
	f, err := fsys.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		return prev, fmt.Errorf("store: open %s: %w", name, err)
	}
	defer f.Close()
	return eachRecord(f, name, seg.end, prev, true, func(zxid int64, payload []byte) error {
		if zxid <= after {
			return nil
		}
		if err := fn(zxid, payload); err != nil {
			return fmt.Errorf("store: replay zxid %s: %w", fmtZxid(zxid), err)
		}
		return nil
	})
}

// Close syncs what was appended (as Sync does) and closes the files. It is
// idempotent: later calls return nil.
func (w *WAL) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.prep != nil {
		w.prep.close()
	}
	w.purgeMu.Lock() // waits for a purge under way
	w.purgeClosed = true
	w.purgeMu.Unlock()
	var errs []error
	if w.err == nil {
		errs = append(errs, w.sync())
	}
	if w.f != nil {
		errs = append(errs, w.f.Close())
	}
	errs = append(errs, w.lock.Close())
	return errors.Join(errs...)
}

// PurgeBefore deletes the oldest segments whose records all have zxids at or below
// zxid — those a snapshot at zxid, or at a later zxid, has made unnecessary — and
// returns the paths it removed, oldest first. It never removes the segment being
// appended to, so the segment holding zxid+1, and every later one, stays. Segments
// go oldest first, each removal made durable by a directory sync before the next, so
// that a crash in between leaves a log that is whole from its oldest remaining
// segment on; that segment's header says where that is, and Replay with an earlier
// zxid returns ErrGap. On an error it returns what it removed before it.
//
// Concurrency: PurgeBefore may be called from any goroutine, at the same time as
// Append, Sync and LastZxid on the writer's goroutine; it touches only segments the
// writer has synced and left, and shares only the segment list with it, under a mutex
// the writer takes when it rotates, never per record. Calls of PurgeBefore run one
// at a time; one waits for a Replay under way, and Close waits for one under way.
// After Close it returns ErrClosed.
func (w *WAL) PurgeBefore(zxid int64) (removed []string, err error) {
	w.purgeMu.Lock()
	defer w.purgeMu.Unlock()
	if w.purgeClosed {
		return nil, ErrClosed
	}
	w.mu.Lock()
	var doomed []string
	for _, seg := range w.segs[:max(len(w.segs)-1, 0)] {
		if seg.last > zxid {
			break
		}
		doomed = append(doomed, seg.path)
	}
	w.mu.Unlock()
	// Only this function removes from the front of segs, and the writer only changes
	// the back, so the doomed are still the first len(doomed) entries.
	for _, path := range doomed {
		if err = w.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("store: purge %s: %w", filepath.Base(path), err)
			break
		}
		removed = append(removed, path)
		if err = w.fs.SyncDir(w.cfg.Dir); err != nil {
			err = fmt.Errorf("store: purge %s: sync directory: %w", filepath.Base(path), err)
			break
		}
	}
	w.mu.Lock()
	w.segs = slices.Delete(w.segs, 0, len(removed))
	w.mu.Unlock()
	if len(removed) > 0 {
		w.logger.Debug("log segments purged", "files", len(removed), "before_zxid", fmtZxid(zxid))
	}
	return removed, err
}

// eachRecord reads the records of segment file f (name, for errors) up to end, checks
// that their zxids rise from prev, calls fn for each, and returns the last zxid. The log
// (strict) knows where its valid records end, having checked them at Open, so anything
// else there means the file changed under it; ReadLog, reading a live log from outside,
// stops at the first record not yet written.
func eachRecord(f File, name string, end, prev int64, strict bool, fn func(int64, []byte) error) (int64, error) {
	s := newScanner(f, end)
	for {
		at := s.off
		st, err := s.next()
		switch {
		case err != nil:
			return prev, fmt.Errorf("store: read %s at offset %d: %w", name, at, err)
		case st == recordEnd && (!strict || at == end):
			return prev, nil
		case st != recordOK && strict:
			return prev, corrupt(name, at, "record changed since the log was opened")
		case st != recordOK:
			return prev, corrupt(name, at, s.why())
		case s.zxid <= prev:
			return prev, corrupt(name, at, fmt.Sprintf("zxid %s does not follow zxid %s", fmtZxid(s.zxid), fmtZxid(prev)))
		}
		prev = s.zxid
		if err := fn(s.zxid, s.payload); err != nil {
			return prev, err
		}
	}
}
