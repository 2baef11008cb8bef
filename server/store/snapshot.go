package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// The snapshot layout is drawn in doc.go; keep the two in step.
const (
	snapshotPrefix     = "snapshot."
	snapshotHeaderSize = 32
	snapshotMagic      = "PSNP"
	// snapshotVersion is the format CreateSnapshot writes: the records compressed in
	// blocks (snapshotblock.go). ReadSnapshot also reads snapshotVersion1, which
	// builds before it wrote: the records as they are, each with its checksum.
	snapshotVersion  = 2
	snapshotVersion1 = 1

	snapshotFrameSize   = 8 // version 1: a record's crc32c, length
	snapshotTrailerSize = 20
	snapshotTrailerMark = "PEND"
	snapshotTrailerLen  = 0xffffffff // in a frame's or block's length field: the trailer follows

	// snapshotMinSize is the size of a snapshot of no records.
	snapshotMinSize = snapshotHeaderSize + snapshotTrailerSize

	// snapshotReadSize is how much ReadSnapshot reads at a time.
	snapshotReadSize = 1 << 20
	// snapshotWriteSize is how much SnapshotWriter writes at a time. Written around
	// the page cache, each write holds the disk for its length: small enough that
	// the log's fsyncs do not wait long behind one (docs/storage.md).
	snapshotWriteSize = 256 << 10
)

// ErrSnapshotDone is returned by a SnapshotWriter's Append and Commit after Commit
// or Abort.
var ErrSnapshotDone = errors.New("store: snapshot already committed or aborted")

// snapshotName is the file name of the snapshot taken at zxid.
func snapshotName(zxid int64) string { return fmt.Sprintf("%s%016x", snapshotPrefix, zxid) }

// parseSnapshotName returns the zxid a snapshot file name stands for.
func parseSnapshotName(name string) (int64, bool) {
	hex, ok := strings.CutPrefix(name, snapshotPrefix)
	if !ok || len(hex) != segmentNameLen || strings.ToLower(hex) != hex {
		return 0, false
	}
	zxid, err := strconv.ParseInt(hex, 16, 64)
	return zxid, err == nil && zxid >= 0
}

// SnapshotWriter writes one snapshot file: a sequence of opaque records taken at one
// zxid, compressed in blocks of 128 KiB. It writes to a temporary file that only Commit
// puts under the snapshot's name, so a snapshot file is always whole. It buffers what
// it writes and allocates nothing per record. A SnapshotWriter is used by one
// goroutine; Stats says how well the records compressed.
//
// On the operating system's file system it writes around the page cache (O_DIRECT)
// where the file system allows, in whole blocks: docs/storage.md says why.
type SnapshotWriter struct {
	fs      FS
	dir     string
	tmp     string // the file being written
	final   string // its name once committed
	f       File
	raw     []byte        // records not yet compressed; cap is snapshotBlockSize (version 2)
	block   []byte        // the last block compressed, reused
	enc     *zstd.Encoder // the writer's own (newSnapshotEncoder), made at the first block
	buf     []byte        // file bytes not yet written, which go at off; cap is snapshotWriteSize
	off     int64
	align   int    // writes start and end on multiples of align (O_DIRECT), or 0
	crc     uint32 // CRC-32C of every byte given to put
	stats   SnapshotStats
	version uint32 // the format written: snapshotVersion, or snapshotVersion1 (tests)
	err     error  // sticky: the first error of an Append or Commit
	done    bool   // Commit or Abort was called
}

// SnapshotStats counts what a SnapshotWriter was given and what it wrote.
type SnapshotStats struct {
	Records   int64 // records appended
	Bytes     int64 // payload bytes appended
	FileBytes int64 // bytes of the file so far; after Commit, its size
}

// Ratio is the compression ratio: payload bytes per byte of the file, 0 for a file of
// no payload.
func (s SnapshotStats) Ratio() float64 {
	if s.Bytes == 0 || s.FileBytes == 0 {
		return 0
	}
	return float64(s.Bytes) / float64(s.FileBytes)
}

// CreateSnapshot starts a snapshot taken at zxid in dir, creating dir if needed. The
// file is written under a temporary name (NAME.tmp) until Commit. A nil fs means OS.
func CreateSnapshot(dir string, zxid int64, fsys FS) (*SnapshotWriter, error) {
	return createSnapshot(dir, zxid, fsys, snapshotVersion)
}

// createSnapshot is CreateSnapshot writing the given version of the format; tests and
// benchmarks still write version 1.
func createSnapshot(dir string, zxid int64, fsys FS, version uint32) (*SnapshotWriter, error) {
	if zxid < 0 {
		return nil, fmt.Errorf("store: create snapshot: zxid %d is negative", zxid)
	}
	fsys = fsOrOS(fsys)
	if err := fsys.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("store: create snapshot directory: %w", err)
	}
	final := filepath.Join(dir, snapshotName(zxid))
	flag := os.O_RDWR | os.O_CREATE | os.O_TRUNC
	f, align, err := openUncached(fsys, final+tmpExt, flag, 0o640)
	if err != nil {
		return nil, fmt.Errorf("store: create snapshot: %w", err)
	}
	w := &SnapshotWriter{fs: fsys, dir: dir, tmp: final + tmpExt, final: final, f: f,
		buf: alignedBuffer(snapshotWriteSize, align), align: align, version: version}
	if version != snapshotVersion1 {
		w.raw = make([]byte, 0, snapshotBlockSize)
	}
	var hdr [snapshotHeaderSize]byte
	putSnapshotHeader(hdr[:], zxid, version)
	w.put(hdr[:]) // the buffer is empty and larger: nothing is written yet
	return w, nil
}

func putSnapshotHeader(hdr []byte, zxid int64, version uint32) {
	le := binary.LittleEndian
	copy(hdr[0:4], snapshotMagic)
	le.PutUint32(hdr[4:], version)
	le.PutUint64(hdr[8:], uint64(zxid))
	le.PutUint64(hdr[16:], 0)
	le.PutUint32(hdr[24:], crc32.Checksum(hdr[:24], crcTable))
	le.PutUint32(hdr[28:], 0)
}

// Append adds a record. The writer keeps no reference to payload after it returns.
// After an error every later Append and Commit returns it; the caller then Aborts.
func (w *SnapshotWriter) Append(payload []byte) error {
	if err := w.check(); err != nil {
		return err
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("%w: %d bytes (max %d)", ErrTooLarge, len(payload), MaxPayload)
	}
	w.stats.Records++
	w.stats.Bytes += int64(len(payload))
	if w.version == snapshotVersion1 {
		return w.fail(w.appendFrame(payload))
	}
	var l [snapshotLenSize]byte
	binary.LittleEndian.PutUint32(l[:], uint32(len(payload)))
	if err := w.putRecords(l[:]); err != nil {
		return w.fail(err)
	}
	return w.fail(w.putRecords(payload))
}

// appendFrame puts payload into a version 1 file, behind its checksum and length.
func (w *SnapshotWriter) appendFrame(payload []byte) error {
	var frame [snapshotFrameSize]byte
	le := binary.LittleEndian
	le.PutUint32(frame[4:], uint32(len(payload)))
	crc := crc32.Update(0, crcTable, frame[4:8])
	le.PutUint32(frame[:], crc32.Update(crc, crcTable, payload))
	if err := w.put(frame[:]); err != nil {
		return err
	}
	return w.put(payload)
}

// Stats returns what the writer was given and has written so far.
func (w *SnapshotWriter) Stats() SnapshotStats {
	s := w.stats
	s.FileBytes = w.off + int64(len(w.buf))
	return s
}

func (w *SnapshotWriter) check() error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return ErrSnapshotDone
	}
	return nil
}

// fail makes a non-nil err sticky.
func (w *SnapshotWriter) fail(err error) error {
	if err != nil {
		w.err = err
	}
	return err
}

// putRecords adds p to the records, compressing a block each time they fill one.
func (w *SnapshotWriter) putRecords(p []byte) error {
	return fill(&w.raw, p, w.compress)
}

// compress puts the records held as one block into the file.
func (w *SnapshotWriter) compress() error {
	if w.enc == nil {
		w.enc = newSnapshotEncoder()
	}
	w.block = appendBlock(w.enc, w.block[:0], w.raw)
	w.raw = w.raw[:0]
	return w.put(w.block)
}

// put adds p to the file's bytes, writing the buffer out each time it fills.
func (w *SnapshotWriter) put(p []byte) error {
	w.crc = crc32.Update(w.crc, crcTable, p)
	return fill(&w.buf, p, func() error { return w.flush(false) })
}

// fill copies p into *buf, up to its capacity, calling full each time it is full;
// full must take bytes out of it.
func fill(buf *[]byte, p []byte, full func() error) error {
	for len(p) > 0 {
		b := *buf
		n := copy(b[len(b):cap(b)], p)
		*buf = b[:len(b)+n]
		p = p[n:]
		if len(*buf) == cap(*buf) {
			if err := full(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the buffer out. Writes around the page cache go in whole blocks: the
// last partial block stays in the buffer, unless last, when it is padded with zeros
// (Commit then truncates the file to its true size).
func (w *SnapshotWriter) flush(last bool) error {
	n := len(w.buf)
	out := w.buf
	if w.align > 0 {
		if last {
			padded := (n + w.align - 1) / w.align * w.align
			out = w.buf[:padded]
			clear(out[n:])
		} else {
			n -= n % w.align
			out = w.buf[:n]
		}
	}
	if len(out) > 0 {
		if _, err := w.f.WriteAt(out, w.off); err != nil {
			return fmt.Errorf("store: write %s: %w", filepath.Base(w.tmp), err)
		}
	}
	w.off += int64(n)
	w.buf = w.buf[:copy(w.buf, w.buf[n:])]
	return nil
}

// truncatePadding cuts the zeros the last block write added.
func (w *SnapshotWriter) truncatePadding() error {
	if w.align == 0 {
		return nil
	}
	return w.f.Truncate(w.off)
}

// Commit compresses the last records, writes the trailer, syncs the file, and renames
// it to its final name (replacing a snapshot of the same zxid), syncing the directory:
// once it returns nil the snapshot is durable and whole. On an error the temporary
// file is left for Abort.
func (w *SnapshotWriter) Commit() error {
	if err := w.check(); err != nil {
		return err
	}
	if len(w.raw) > 0 {
		if err := w.compress(); err != nil {
			return w.fail(err)
		}
	}
	var t [snapshotTrailerSize]byte
	copy(t[0:4], snapshotTrailerMark)
	binary.LittleEndian.PutUint32(t[4:], snapshotTrailerLen)
	binary.LittleEndian.PutUint64(t[8:], uint64(w.stats.Records))
	if err := w.put(t[:16]); err != nil {
		return w.fail(err)
	}
	binary.LittleEndian.PutUint32(t[16:], w.crc)
	name := filepath.Base(w.final)
	steps := []struct {
		what string
		do   func() error
	}{
		{"write", func() error { return w.put(t[16:]) }},
		{"write", func() error { return w.flush(true) }},
		{"truncate", func() error { return w.truncatePadding() }},
		{"sync", w.f.Sync},
		{"close", func() error { f := w.f; w.f = nil; return f.Close() }},
		{"rename", func() error { return w.fs.Rename(w.tmp, w.final) }},
		{"sync directory", func() error { return w.fs.SyncDir(w.dir) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return w.fail(fmt.Errorf("store: commit snapshot %s: %s: %w", name, s.what, err))
		}
	}
	w.done = true
	return nil
}

// Abort abandons the snapshot and removes its temporary file. It may be called after
// an error, and does nothing after Commit returned nil or a first Abort.
func (w *SnapshotWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	var errs []error
	if w.f != nil {
		errs = append(errs, w.f.Close())
	}
	if err := w.fs.Remove(w.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// SnapshotInfo describes a snapshot file found by ListSnapshots.
type SnapshotInfo struct {
	Zxid int64  // the zxid the snapshot was taken at, from its name
	Path string // dir joined with the file name
	Size int64  // in bytes
}

// ListSnapshots returns the snapshot files in dir, newest (highest zxid) first,
// judged by their names alone: nothing is read. Temporary files of unfinished
// snapshots are not listed. A missing dir holds no snapshots. A nil fs means OS.
func ListSnapshots(dir string, fsys FS) ([]SnapshotInfo, error) {
	entries, err := fsOrOS(fsys).ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list snapshots: %w", err)
	}
	var snaps []SnapshotInfo
	for _, e := range entries {
		zxid, ok := parseSnapshotName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("store: list snapshots: %w", err)
		}
		snaps = append(snaps, SnapshotInfo{Zxid: zxid, Path: filepath.Join(dir, e.Name()), Size: fi.Size()})
	}
	slices.SortFunc(snaps, func(a, b SnapshotInfo) int { return int(sign(b.Zxid - a.Zxid)) })
	return snaps, nil
}

// RemoveSnapshotTemps removes the temporary files of snapshots that were never
// committed (a crash or a failure while one was written) from dir, and returns their
// paths. It must not run while a snapshot is being written in dir: the server calls it
// at start. A nil fs means OS.
func RemoveSnapshotTemps(dir string, fsys FS) ([]string, error) {
	fsys = fsOrOS(fsys)
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list snapshots: %w", err)
	}
	var tmps []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), tmpExt); ok {
			if _, ok := parseSnapshotName(name); ok {
				tmps = append(tmps, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(tmps) == 0 {
		return nil, nil
	}
	if err := removeFiles(fsys, dir, tmps...); err != nil {
		return nil, fmt.Errorf("store: remove unfinished snapshots: %w", err)
	}
	return tmps, nil
}

// PurgeSnapshots keeps the newest keep snapshots in dir that look valid — by name and
// by being at least as large as an empty snapshot; none is read — and removes every
// older snapshot file, then syncs dir. It returns the removed paths, oldest first, and
// the zxid of the oldest snapshot kept, before which the log may be purged
// (WAL.PurgeBefore). With fewer than keep valid-looking snapshots it removes nothing
// and returns 0: the log is then still needed from its start, should every snapshot
// prove damaged. Files newer than the oldest kept are never removed, nor are
// temporary files, so it may run while a snapshot is being written. A nil fs means OS.
func PurgeSnapshots(dir string, fsys FS, keep int) (removed []string, oldestKept int64, err error) {
	if keep < 1 {
		return nil, 0, fmt.Errorf("store: purge snapshots: keep %d: must keep at least one", keep)
	}
	fsys = fsOrOS(fsys)
	snaps, err := ListSnapshots(dir, fsys)
	if err != nil {
		return nil, 0, err
	}
	kept := 0
	for i, s := range snaps {
		if s.Size < snapshotMinSize {
			continue
		}
		if kept++; kept == keep {
			oldestKept = s.Zxid
			snaps = snaps[i+1:]
			break
		}
	}
	if oldestKept == 0 {
		return nil, 0, nil
	}
	for _, s := range slices.Backward(snaps) {
		if err := fsys.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, oldestKept, fmt.Errorf("store: purge snapshot %s: %w", filepath.Base(s.Path), err)
		}
		removed = append(removed, s.Path)
	}
	if len(removed) > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			return removed, oldestKept, fmt.Errorf("store: purge snapshots: sync directory: %w", err)
		}
	}
	return removed, oldestKept, nil
}

// WriteSnapshot writes the snapshot file for zxid in dir whole: every record records
// yields, committed, or nothing (Abort) on any error. Between records it gives up with
// stopped once stop is closed. It returns the writer's Stats — the records, their bytes,
// the file's size and so the compression ratio — for the caller to log; zero on an error.
func WriteSnapshot(dir string, zxid int64, fsys FS, stop <-chan struct{}, stopped error,
	records func(fn func(payload []byte) error) error) (SnapshotStats, error) {
	w, err := CreateSnapshot(dir, zxid, fsys)
	if err != nil {
		return SnapshotStats{}, err
	}
	err = records(func(p []byte) error {
		select {
		case <-stop:
			return stopped
		default:
		}
		return w.Append(p)
	})
	if err == nil {
		err = w.Commit()
	}
	if err != nil {
		w.Abort()
		return SnapshotStats{}, err
	}
	return w.Stats(), nil
}
