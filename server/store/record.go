package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// The layouts below are drawn in doc.go; keep the two in step.
const (
	segmentHeaderSize = 32
	segmentMagic      = "PWAL"
	segmentVersion    = 1

	recordHeaderSize = 20
	recordAlign      = 8
)

// MaxPayload is the largest payload Append accepts, in bytes.
const MaxPayload = 1 << 30

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// zeros is the source of record padding and the reference for zero checks.
var zeros [4096]byte

// recordSize is the on-disk size of a record with an n-byte payload, padding included.
func recordSize(n int) int64 {
	return alignUp(recordHeaderSize + int64(n))
}

func alignUp(n int64) int64 {
	return (n + recordAlign - 1) &^ (recordAlign - 1)
}

// putRecordHeader fills hdr (recordHeaderSize bytes) for a record; the checksum covers
// hdr[4:] and then the payload.
func putRecordHeader(hdr []byte, zxid int64, mark uint32, payload []byte) {
	le := binary.LittleEndian
	le.PutUint32(hdr[4:], uint32(len(payload)))
	le.PutUint64(hdr[8:], uint64(zxid))
	le.PutUint32(hdr[16:], mark)
	crc := crc32.Update(0, crcTable, hdr[4:recordHeaderSize])
	le.PutUint32(hdr[0:], crc32.Update(crc, crcTable, payload))
}

// appendRecord appends the whole encoded record, padding included, to dst.
func appendRecord(dst []byte, zxid int64, mark uint32, payload []byte) []byte {
	n := len(dst)
	dst = append(dst, zeros[:recordHeaderSize]...)
	putRecordHeader(dst[n:], zxid, mark, payload)
	dst = append(dst, payload...)
	return append(dst, zeros[:recordSize(len(payload))-recordHeaderSize-int64(len(payload))]...)
}

// segmentHeader is the decoded header of a segment file.
type segmentHeader struct {
	base int64 // every record's zxid is >= base; the file is named after it
	prev int64 // the log's last zxid when the segment was created: every record's zxid is above it
}

// putSegmentHeader fills hdr (segmentHeaderSize bytes).
func putSegmentHeader(hdr []byte, h segmentHeader) {
	le := binary.LittleEndian
	copy(hdr[0:4], segmentMagic)
	le.PutUint32(hdr[4:], segmentVersion)
	le.PutUint64(hdr[8:], uint64(h.base))
	le.PutUint64(hdr[16:], uint64(h.prev))
	le.PutUint32(hdr[24:], crc32.Checksum(hdr[:24], crcTable))
	le.PutUint32(hdr[28:], 0)
}

// parseSegmentHeader decodes hdr, or says why it is not a segment header.
func parseSegmentHeader(hdr []byte) (segmentHeader, string) {
	le := binary.LittleEndian
	switch {
	case len(hdr) < segmentHeaderSize:
		return segmentHeader{}, "segment header truncated"
	case string(hdr[0:4]) != segmentMagic:
		return segmentHeader{}, fmt.Sprintf("bad segment magic %q", hdr[0:4])
	case le.Uint32(hdr[24:]) != crc32.Checksum(hdr[:24], crcTable):
		return segmentHeader{}, "segment header checksum mismatch"
	case le.Uint32(hdr[4:]) != segmentVersion:
		return segmentHeader{}, fmt.Sprintf("unsupported segment version %d", le.Uint32(hdr[4:]))
	}
	h := segmentHeader{base: int64(le.Uint64(hdr[8:])), prev: int64(le.Uint64(hdr[16:]))}
	if h.prev < 0 || h.prev >= h.base {
		return segmentHeader{}, fmt.Sprintf("segment header zxids out of order: previous %s, base %s", fmtZxid(h.prev), fmtZxid(h.base))
	}
	return h, ""
}

// windowSize is how much of a segment a window reads at a time.
const windowSize = 1 << 20

// window serves byte ranges of a segment from a buffer refilled by ReadAt, so that
// reading many small records costs few system calls.
type window struct {
	r     io.ReaderAt
	size  int64 // bytes of the segment that may be read
	buf   []byte
	start int64 // segment offset of buf[0]
}

// bytes returns the n bytes at off, valid until the next call. off+n must not exceed size.
func (w *window) bytes(off int64, n int64) ([]byte, error) {
	if off >= w.start && off+n <= w.start+int64(len(w.buf)) {
		return w.buf[off-w.start : off-w.start+n], nil
	}
	want := min(max(n, windowSize), w.size-off)
	if int64(cap(w.buf)) < want {
		w.buf = make([]byte, want)
	}
	w.buf = w.buf[:want]
	w.start = off
	if m, err := w.r.ReadAt(w.buf, off); int64(m) < want {
		w.buf = w.buf[:0]
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return w.buf[:n], nil
}

// firstNonZero returns the offset of the first non-zero byte in [off, size), or -1.
func (w *window) firstNonZero(off int64) (int64, error) {
	for off < w.size {
		n := min(windowSize, w.size-off)
		if end := w.start + int64(len(w.buf)); off >= w.start && off < end {
			n = min(n, end-off) // what the window holds first, rather than a refill from off
		}
		b, err := w.bytes(off, n)
		if err != nil {
			return 0, err
		}
		for len(b) > 0 {
			n := min(len(b), len(zeros))
			if !bytes.Equal(b[:n], zeros[:n]) {
				for i, c := range b[:n] {
					if c != 0 {
						return off + int64(i), nil
					}
				}
			}
			b, off = b[n:], off+int64(n)
		}
	}
	return -1, nil
}

// recordStatus is what a scanner found at an offset.
type recordStatus int

const (
	recordOK  recordStatus = iota // a record whose checksum matches
	recordEnd                     // the end of the segment, or a zero header
	recordBad                     // anything else; the scanner says why
)

// scanner reads the records of one segment in order. It trusts nothing it reads:
// every length is checked against the segment's size before it is used.
type scanner struct {
	win window
	off int64 // offset of the record next reads

	// The record last read with status recordOK; payload is valid until the next call.
	zxid    int64
	mark    uint32
	payload []byte

	// Why the last read was recordBad: a format and its integer arguments, formatted
	// by why only when wanted, for proveSynced meets bad positions by the thousand.
	badFormat string
	badArgs   [2]int64
	badN      int
}

func newScanner(r io.ReaderAt, size int64) *scanner {
	return &scanner{win: window{r: r, size: size}, off: segmentHeaderSize}
}

// next reads the record at s.off; on recordOK it advances s.off past it. An error is
// an I/O error, never a judgement of the data.
func (s *scanner) next() (recordStatus, error) {
	return s.readAt(s.off, true)
}

// readAt reads the record at off, advancing s.off past it if it is good and advance is set.
func (s *scanner) readAt(off int64, advance bool) (recordStatus, error) {
	rest := s.win.size - off
	if rest <= 0 {
		return recordEnd, nil
	}
	if rest < recordHeaderSize {
		// Records may fill a segment to within less than a header of its end; the
		// zeros left there end the records like a zero header would.
		b, err := s.win.bytes(off, rest)
		if err != nil {
			return 0, err
		}
		if string(b) == string(zeros[:rest]) {
			return recordEnd, nil
		}
		return s.bad("record header truncated at end of segment")
	}
	hdr, err := s.win.bytes(off, recordHeaderSize)
	if err != nil {
		return 0, err
	}
	if string(hdr) == string(zeros[:recordHeaderSize]) {
		return recordEnd, nil
	}
	le := binary.LittleEndian
	n := int64(le.Uint32(hdr[4:]))
	if n > MaxPayload || recordSize(int(n)) > rest {
		return s.bad("record length %d overruns segment (%d bytes left)", n, rest)
	}
	rec, err := s.win.bytes(off, recordSize(int(n)))
	if err != nil {
		return 0, err
	}
	rec, pad := rec[:recordHeaderSize+n], rec[recordHeaderSize+n:]
	if le.Uint32(rec[0:]) != crc32.Checksum(rec[4:], crcTable) {
		return s.bad("record checksum mismatch")
	}
	if string(pad) != string(zeros[:len(pad)]) {
		return s.bad("record padding not zero")
	}
	zxid := int64(le.Uint64(rec[8:]))
	if zxid <= 0 {
		return s.bad("record zxid %d not positive", zxid)
	}
	s.zxid, s.mark, s.payload = zxid, le.Uint32(rec[16:]), rec[recordHeaderSize:]
	if advance {
		s.off = off + recordSize(int(n))
	}
	return recordOK, nil
}

func (s *scanner) bad(format string, args ...int64) (recordStatus, error) {
	s.badFormat, s.badN = format, copy(s.badArgs[:], args)
	return recordBad, nil
}

// why says why the last read was recordBad.
func (s *scanner) why() string {
	switch s.badN {
	case 0:
		return s.badFormat
	case 1:
		return fmt.Sprintf(s.badFormat, s.badArgs[0])
	}
	return fmt.Sprintf(s.badFormat, s.badArgs[0], s.badArgs[1])
}

func fmtZxid(z int64) string { return fmt.Sprintf("0x%x", z) }
