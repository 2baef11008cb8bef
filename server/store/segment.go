package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	segmentExt = ".wal"
	tmpExt     = ".tmp"
	// segmentNameLen is the width of the hex zxid in a segment's name, so that names
	// sort in zxid order.
	segmentNameLen = 16
)

// segmentName is the file name of the segment whose records start at zxid base.
func segmentName(base int64) string {
	return fmt.Sprintf("%016x%s", base, segmentExt)
}

// parseSegmentName returns the base zxid a segment file name stands for.
func parseSegmentName(name string) (int64, bool) {
	hex, ok := strings.CutSuffix(name, segmentExt)
	if !ok || len(hex) != segmentNameLen || strings.ToLower(hex) != hex {
		return 0, false
	}
	base, err := strconv.ParseInt(hex, 16, 64)
	if err != nil || base <= 0 {
		return 0, false
	}
	return base, true
}

// segment is what Open learned about one segment file.
type segment struct {
	path string
	base int64 // zxid in the file name: every record's zxid is >= base
	prev int64 // the log's last zxid before this segment, from its header
	last int64 // zxid of the last record, 0 if none
	end  int64 // offset just past the last good record
	size int64 // file size when checked
}

// listSegments returns the segments in dir in zxid order, and the leftover temporary
// files of segments whose creation did not finish.
func listSegments(fsys FS, dir string) (segs []segment, tmps []string, err error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("store: list %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if tmp, ok := strings.CutSuffix(name, tmpExt); ok {
			if _, ok := parseSegmentName(tmp); ok {
				tmps = append(tmps, filepath.Join(dir, name))
			}
			continue
		}
		if base, ok := parseSegmentName(name); ok && e.Type().IsRegular() {
			segs = append(segs, segment{path: filepath.Join(dir, name), base: base})
		}
	}
	slices.SortFunc(segs, func(a, b segment) int { return int(sign(a.base - b.base)) })
	return segs, tmps, nil
}

func sign(x int64) int64 { return min(max(x, -1), 1) }

// tornTail says where the valid part of the last segment ends and why.
type tornTail struct {
	offset int64
	reason string
}

// checkSegment reads a whole segment, checking its header against its name, every
// record, and that zxids rise from the header's prev. It fills seg's prev, last and
// end. Where good records stop, judgeBad decides between a torn tail and corruption.
func checkSegment(r io.ReaderAt, seg *segment, last bool) (*tornTail, error) {
	name := filepath.Base(seg.path)
	win := window{r: r, size: seg.size}
	if seg.size < segmentHeaderSize {
		return nil, corrupt(name, 0, "segment header truncated")
	}
	hdr, err := win.bytes(0, segmentHeaderSize)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", name, err)
	}
	h, reason := parseSegmentHeader(hdr)
	if reason == "" && h.base != seg.base {
		reason = fmt.Sprintf("segment header names zxid %s", fmtZxid(h.base))
	}
	if reason != "" {
		return nil, corrupt(name, 0, reason)
	}
	seg.prev = h.prev
	prev := h.prev
	s := &scanner{win: win, off: segmentHeaderSize}
	var mark uint32
	for {
		at := s.off
		st, err := s.next()
		if err != nil {
			return nil, fmt.Errorf("store: read %s at offset %d: %w", name, at, err)
		}
		switch st {
		case recordOK:
			if reason := checkOrder(s, at, seg.base, prev, mark); reason != "" {
				return nil, corrupt(name, at, reason)
			}
			prev, mark = s.zxid, s.mark
			seg.last = s.zxid
			continue
		case recordEnd:
			nz, err := s.win.firstNonZero(at)
			if err != nil {
				return nil, fmt.Errorf("store: read %s: %w", name, err)
			}
			if nz < 0 {
				seg.end = at
				return nil, nil
			}
			s.bad("zero record header followed by non-zero byte at offset %d", nz)
		}
		seg.end = at
		return judgeBad(r, seg, s.why(), last)
	}
}

// judgeBad decides what the bad bytes at seg.end are. In a segment that is not the
// last they are corruption. In the last segment they are a torn write, unless the rest
// of the segment proves they had been synced before (see proveSynced).
func judgeBad(r io.ReaderAt, seg *segment, reason string, last bool) (*tornTail, error) {
	name, at := filepath.Base(seg.path), seg.end
	if !last {
		return nil, corrupt(name, at, reason+" in a segment that is not the last")
	}
	y, ok, err := proveSynced(r, seg.size, at)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", name, err)
	}
	if ok {
		return nil, corrupt(name, at, fmt.Sprintf(
			"%s, but the record at offset %d was written after offset %d had been synced", reason, y, at))
	}
	return &tornTail{offset: at, reason: reason}, nil
}

// checkOrder returns why the good record the scanner just read at offset at breaks the
// log's order, or "". Zxids rise strictly and start at the segment's base; sync marks
// never fall and never point past the record's own start.
func checkOrder(s *scanner, at, base, prev int64, mark uint32) string {
	switch {
	case s.zxid <= prev:
		return fmt.Sprintf("zxid %s does not follow zxid %s", fmtZxid(s.zxid), fmtZxid(prev))
	case s.zxid < base:
		return fmt.Sprintf("zxid %s is below the segment's base %s", fmtZxid(s.zxid), fmtZxid(base))
	case s.mark < mark || int64(s.mark) > at || s.mark < segmentHeaderSize:
		return fmt.Sprintf("sync mark %d out of order (previous %d, record at %d)", s.mark, mark, at)
	}
	return ""
}

// proveSynced looks past a bad position bad in the last segment for a good record
// whose sync mark lies beyond bad: the writer had fdatasynced the bytes at bad before
// it wrote that record, so they were durable, and are now damaged. Good records with
// lower marks belong to the same unsynced batch as the damage — a crash may persist
// a batch's pages in any order — and prove nothing. Records start 8-byte aligned,
// which is all this search has to go on.
func proveSynced(r io.ReaderAt, size, bad int64) (int64, bool, error) {
	s := newScanner(r, size)
	for off := bad + recordAlign; off < size; {
		st, err := s.readAt(off, false)
		if err != nil {
			return 0, false, err
		}
		switch {
		case st == recordOK && int64(s.mark) > bad && int64(s.mark) <= off:
			return off, true, nil
		case st == recordOK:
			off += recordSize(len(s.payload))
		case st == recordEnd:
			// Skip a zero run in one step rather than one header at a time.
			nz, err := s.win.firstNonZero(off)
			if err != nil || nz < 0 {
				return 0, false, err
			}
			off = max(alignDown(nz), off+recordAlign)
		default:
			off += recordAlign
		}
	}
	return 0, false, nil
}

func alignDown(n int64) int64 { return n &^ (recordAlign - 1) }

// CorruptError reports damage the store cannot repair by itself: in the log, a record
// in the middle of the log, or in a segment that is not the last, that fails its
// checksum, its length or the order of zxids; in a snapshot, anything that does not
// check. Open and ReadSnapshot return it wrapped so that errors.Is(err, ErrCorrupt)
// holds; errors.As gives the file and offset.
type CorruptError struct {
	File   string // segment or snapshot file name, without the directory
	Offset int64  // byte offset of the first bad record (or header, or trailer) in File
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: %s at offset %d: %s", ErrCorrupt, e.File, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

func corrupt(file string, off int64, reason string) error {
	return &CorruptError{File: file, Offset: off, Reason: reason}
}

// createSegment creates the segment for h.base in dir and returns it open for writing
// just past its header. The file is built under a temporary name — preallocated,
// header written and synced — and renamed into place, then dir is synced, so a
// segment file always has a whole header.
func createSegment(fsys FS, dir string, h segmentHeader, size int64) (File, error) {
	tmp := filepath.Join(dir, segmentName(h.base)) + tmpExt
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fmt.Errorf("store: create segment: %w", err)
	}
	return installSegment(fsys, dir, f, tmp, h, func() error { return writeZeros(f, size) })
}

// writeZeros fills f with zeros up to size, at once (prepare.go paces the same work
// in the background).
func writeZeros(f File, size int64) error {
	for off := int64(0); off < size; off += prepareChunk {
		if _, err := f.WriteAt(zeroChunk[:min(prepareChunk, size-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// installSegment makes f, open at the temporary path tmp, the segment with header h:
// prepare (if set) runs first, then the header is written and synced (fdatasync also
// makes a new size durable), the file renamed into place and the directory synced. On
// an error it closes f and removes tmp.
func installSegment(fsys FS, dir string, f File, tmp string, h segmentHeader, prepare func() error) (File, error) {
	final := filepath.Join(dir, segmentName(h.base))
	var hdr [segmentHeaderSize]byte
	putSegmentHeader(hdr[:], h)
	var err error
	if prepare != nil {
		err = prepare()
	}
	if err == nil {
		_, err = f.WriteAt(hdr[:], 0)
	}
	if err == nil {
		err = f.Datasync()
	}
	if err == nil {
		err = fsys.Rename(tmp, final)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		fsys.Remove(tmp)
		return nil, fmt.Errorf("store: create segment %s: %w", filepath.Base(final), err)
	}
	return f, nil
}

// truncateSegment cuts f back to off and restores the preallocation with zeros, so
// nothing of the discarded tail can be mistaken for records later, then syncs f.
func truncateSegment(f File, off, size int64) error {
	if err := f.Truncate(off); err != nil {
		return err
	}
	if err := f.Allocate(max(size, off)); err != nil {
		return err
	}
	return f.Sync()
}

// removeFiles removes paths and then syncs dir.
func removeFiles(fsys FS, dir string, paths ...string) error {
	var errs []error
	for _, p := range paths {
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := fsys.SyncDir(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
