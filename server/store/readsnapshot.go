package store

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// ReadSnapshot reads the snapshot file at path, of either format (doc.go), calling fn
// for each record in order, and returns the zxid it was taken at. payload is valid
// only during the call. The checksums of the block holding a record (of the record,
// in version 1) are verified before fn sees it, but the trailer — the record count
// and the checksum of the whole file — only after the last record: when ReadSnapshot
// returns an error, whatever fn built from the records must be thrown away. Damage
// gives a *CorruptError (errors.Is ErrCorrupt) naming the file and the offset (of the
// block, in version 2); fn's error is returned wrapped. It holds a 1 MiB read buffer,
// a decoded block, and a record that spans blocks. A nil fs means OS.
func ReadSnapshot(path string, fsys FS, fn func(payload []byte) error) (zxid int64, err error) {
	f, err := fsOrOS(fsys).OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("store: open snapshot: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, fmt.Errorf("store: open snapshot: %w", err)
	}
	return readSnapshot(filepath.Base(path), f, size, fn)
}

// readSnapshot reads the size bytes of the snapshot file name from ra.
func readSnapshot(name string, ra io.ReaderAt, size int64, fn func([]byte) error) (int64, error) {
	r := &snapshotReader{
		name: name,
		size: size,
		br:   bufio.NewReaderSize(io.NewSectionReader(ra, 0, size), snapshotReadSize),
	}
	zxid, version, err := r.header()
	if err != nil {
		return 0, err
	}
	if version == snapshotVersion1 {
		err = r.records(fn)
	} else {
		err = r.blocks(fn)
	}
	if err != nil {
		return 0, err
	}
	return zxid, nil
}

// snapshotReader reads a snapshot file front to back, keeping the checksum of what
// it has read.
type snapshotReader struct {
	name string
	size int64
	br   *bufio.Reader
	off  int64  // offset of the next byte br returns
	crc  uint32 // CRC-32C of the bytes before off
	big  []byte // payloads larger than br's buffer
}

// next returns the next n bytes, valid until the following call. The caller has
// checked that the file holds them.
func (r *snapshotReader) next(n int) ([]byte, error) {
	var b []byte
	var err error
	if n <= r.br.Size() {
		if b, err = r.br.Peek(n); err == nil {
			_, err = r.br.Discard(n)
		}
	} else {
		if cap(r.big) < n {
			r.big = make([]byte, n)
		}
		b = r.big[:n]
		_, err = io.ReadFull(r.br, b)
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the file shrank while read
		}
		return nil, fmt.Errorf("store: read snapshot %s at offset %d: %w", r.name, r.off, err)
	}
	r.crc = crc32.Update(r.crc, crcTable, b)
	r.off += int64(n)
	return b, nil
}

func (r *snapshotReader) corrupt(off int64, format string, args ...any) error {
	return corrupt(r.name, off, fmt.Sprintf(format, args...))
}

// header reads and checks the header, and the zxid in it against the file's name,
// and returns the zxid and the format's version.
func (r *snapshotReader) header() (zxid int64, version uint32, err error) {
	if r.size < snapshotMinSize {
		return 0, 0, r.corrupt(0, "snapshot truncated to %d bytes", r.size)
	}
	hdr, err := r.next(snapshotHeaderSize)
	if err != nil {
		return 0, 0, err
	}
	le := binary.LittleEndian
	zxid, version = int64(le.Uint64(hdr[8:])), le.Uint32(hdr[4:])
	switch {
	case string(hdr[0:4]) != snapshotMagic:
		return 0, 0, r.corrupt(0, "bad snapshot magic %q", hdr[0:4])
	case le.Uint32(hdr[24:]) != crc32.Checksum(hdr[:24], crcTable):
		return 0, 0, r.corrupt(0, "snapshot header checksum mismatch")
	case version != snapshotVersion && version != snapshotVersion1:
		return 0, 0, r.corrupt(0, "unsupported snapshot version %d", version)
	case le.Uint64(hdr[16:]) != 0 || le.Uint32(hdr[28:]) != 0:
		return 0, 0, r.corrupt(0, "snapshot header reserved bytes not zero")
	case zxid < 0:
		return 0, 0, r.corrupt(0, "snapshot zxid %d negative", zxid)
	}
	if named, ok := parseSnapshotName(r.name); ok && named != zxid {
		return 0, 0, r.corrupt(0, "snapshot header says zxid %s", fmtZxid(zxid))
	}
	return zxid, version, nil
}

// records reads every record of a version 1 snapshot up to the trailer, then checks
// the trailer.
func (r *snapshotReader) records(fn func([]byte) error) error {
	le := binary.LittleEndian
	var count uint64
	for {
		at := r.off
		if at+snapshotFrameSize > r.size {
			return r.corrupt(at, "record header truncated at end of file")
		}
		frame, err := r.next(snapshotFrameSize)
		if err != nil {
			return err
		}
		sum, n := le.Uint32(frame[0:]), le.Uint32(frame[4:])
		if n == snapshotTrailerLen {
			return r.trailer(at, string(frame[0:4]), count)
		}
		crc := crc32.Update(0, crcTable, frame[4:8])
		if n > MaxPayload || at+snapshotFrameSize+int64(n)+snapshotTrailerSize > r.size {
			return r.corrupt(at, "record length %d overruns the file (%d bytes)", n, r.size)
		}
		payload, err := r.next(int(n))
		if err != nil {
			return err
		}
		if crc32.Update(crc, crcTable, payload) != sum {
			return r.corrupt(at, "record checksum mismatch")
		}
		if err := fn(payload); err != nil {
			return fmt.Errorf("store: snapshot %s: record %d: %w", r.name, count, err)
		}
		count++
	}
}

// trailer checks the trailer at offset at, whose frame has been read.
func (r *snapshotReader) trailer(at int64, mark string, count uint64) error {
	if mark != snapshotTrailerMark {
		return r.corrupt(at, "bad trailer mark %q", mark)
	}
	if at+snapshotTrailerSize != r.size {
		return r.corrupt(at, "trailer at offset %d, but the file is %d bytes", at, r.size)
	}
	b, err := r.next(8)
	if err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint64(b); got != count {
		return r.corrupt(at, "trailer counts %d records, the file holds %d", got, count)
	}
	want := r.crc
	b, err = r.next(4)
	if err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint32(b); got != want {
		return r.corrupt(at, "file checksum mismatch")
	}
	return nil
}
