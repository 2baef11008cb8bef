package store

import (
	"fmt"
	"os"
	"path/filepath"
)

// ReadLog reads the log in dir without opening it for writing: no lock, no repair,
// nothing changed on disk, so it may run beside a live server (for `paddock store
// dump`). It calls fn for every good record in zxid order and stops at the first
// record it cannot read, returning a *CorruptError (errors.Is ErrCorrupt) that names
// the file and offset. In the last segment that is usually a torn tail, which the
// server would truncate at its next start; elsewhere it is damage. fn's payload is
// only valid during the call. A nil fs means OS.
func ReadLog(dir string, fsys FS, fn func(zxid int64, payload []byte) error) error {
	fsys = fsOrOS(fsys)
	segs, _, err := listSegments(fsys, dir)
	if err != nil {
		return err
	}
	prev := int64(0)
	for _, seg := range segs {
		if prev, err = readSegment(fsys, seg, prev, fn); err != nil {
			return err
		}
	}
	return nil
}

// readSegment reads one segment's records to its first zero header.
func readSegment(fsys FS, seg segment, prev int64, fn func(int64, []byte) error) (int64, error) {
	name := filepath.Base(seg.path)
	f, err := fsys.OpenFile(seg.path, os.O_RDONLY, 0)
	if err != nil {
		return prev, fmt.Errorf("store: open %s: %w", name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return prev, fmt.Errorf("store: size of %s: %w", name, err)
	}
	hdr := make([]byte, segmentHeaderSize)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return prev, corrupt(name, 0, "segment header unreadable")
	}
	if _, why := parseSegmentHeader(hdr); why != "" {
		return prev, corrupt(name, 0, why)
	}
	return eachRecord(f, name, size, prev, false, fn)
}
