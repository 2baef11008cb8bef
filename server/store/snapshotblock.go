package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A version 2 snapshot holds its records as one stream — each record its length as a
// uint32 and its payload — cut into blocks of snapshotBlockSize bytes (the last one
// shorter), each compressed as one zstd frame and stored behind a block header; doc.go
// draws the layout and says why.
const (
	// snapshotBlockSize is zstd's own largest block: a frame is one zstd block.
	// Blocks of 128 KiB read back faster than blocks of 256 KiB to 1 MiB (the block
	// is still in the core's cache as its records are handed out) and compressed
	// znode records no worse.
	snapshotBlockSize       = 128 << 10
	snapshotBlockHeaderSize = 12 // crc32c, stored length, decoded length
	snapshotLenSize         = 4  // a record's length in the stream

	// snapshotBlockMaxStored bounds a block's stored length. zstd keeps what it
	// cannot compress in a raw block behind 3 bytes of header, in a frame of at most
	// 18 bytes of header and checksum; the rest is slack.
	snapshotBlockMaxStored = snapshotBlockSize + 1<<10
)

// newSnapshotEncoder returns an encoder for one snapshot's blocks. Its EncodeAll is
// deterministic: the same records make the same bytes. The fastest level compressed
// znode records as well as the default one or better, and wrote them up to 1.6 times
// as fast; each frame carries zstd's checksum (XXH64) of the bytes it decodes to. Each
// writer makes its own and drops it when done: an encoder's state, about 10 MiB, is
// then held only while a snapshot is written, not for the life of the process.
func newSnapshotEncoder() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(snapshotBlockSize), // a block is a frame: no more history to keep
		zstd.WithEncoderCRC(true))
	if err != nil {
		panic(fmt.Sprintf("store: snapshot encoder: %v", err)) // constant options
	}
	return enc
}

// snapshotDecoder decodes blocks. Its DecodeAll is safe for concurrent use; it refuses
// a frame that would decode to more than a block, whatever its header claims, before
// allocating for it.
var snapshotDecoder = sync.OnceValue(func() *zstd.Decoder {
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderMaxMemory(snapshotBlockSize),
		zstd.WithDecoderMaxWindow(snapshotBlockSize),
		zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(fmt.Sprintf("store: snapshot decoder: %v", err)) // constant options
	}
	return dec
})

// appendBlock appends raw, at most snapshotBlockSize bytes of the record stream, to
// dst as one block: its header, then raw compressed by enc as one zstd frame.
func appendBlock(enc *zstd.Encoder, dst, raw []byte) []byte {
	at := len(dst)
	dst = append(dst, make([]byte, snapshotBlockHeaderSize)...)
	dst = enc.EncodeAll(raw, dst)
	le := binary.LittleEndian
	le.PutUint32(dst[at+4:], uint32(len(dst)-at-snapshotBlockHeaderSize))
	le.PutUint32(dst[at+8:], uint32(len(raw)))
	le.PutUint32(dst[at:], crc32.Checksum(dst[at+4:], crcTable))
	return dst
}

// recordStream hands out the records of a version 2 snapshot, decoding one block at
// a time into a buffer it reuses. (Decoding ahead on a goroutine of its own was
// slower: the records were then parsed from memory another core had written.)
type recordStream struct {
	r    *snapshotReader
	buf  []byte  // the block being handed out, decoded; cap is snapshotBlockSize
	cur  []byte  // the rest of it
	at   int64   // its offset in the file, or the trailer's once reached
	mark string  // the trailer's first four bytes, once reached
	big  []byte  // a record that spans blocks
	lens [8]byte // a block's stored and decoded lengths, as checksummed
}

// fetch reads, checks and decodes the next block. At the trailer it returns io.EOF,
// the trailer's first eight bytes read.
func (s *recordStream) fetch() error {
	r := s.r
	s.at, s.cur = r.off, nil
	if s.at+8 > r.size {
		return r.corrupt(s.at, "block header truncated at end of file")
	}
	h, err := r.next(8)
	if err != nil {
		return err
	}
	sum, stored := binary.LittleEndian.Uint32(h), binary.LittleEndian.Uint32(h[4:])
	if stored == snapshotTrailerLen {
		s.mark = string(h[:4])
		return io.EOF
	}
	binary.LittleEndian.PutUint32(s.lens[:], stored)
	if err := s.block(sum, stored); err != nil {
		return err
	}
	s.cur = s.buf
	return nil
}

// block reads the rest of the block at s.at, whose checksum and stored length have
// been read, checks it and decodes it into s.buf.
func (s *recordStream) block(sum, stored uint32) error {
	r, at := s.r, s.at
	if stored > snapshotBlockMaxStored {
		return r.corrupt(at, "block length %d over the limit (%d)", stored, snapshotBlockMaxStored)
	}
	if at+snapshotBlockHeaderSize+int64(stored)+snapshotTrailerSize > r.size {
		return r.corrupt(at, "block length %d overruns the file (%d bytes)", stored, r.size)
	}
	h, err := r.next(4)
	if err != nil {
		return err
	}
	size := binary.LittleEndian.Uint32(h)
	copy(s.lens[4:], h)
	crc := crc32.Checksum(s.lens[:], crcTable)
	if size == 0 || size > snapshotBlockSize {
		return r.corrupt(at, "block decodes to %d bytes (max %d)", size, snapshotBlockSize)
	}
	data, err := r.next(int(stored))
	if err != nil {
		return err
	}
	if crc32.Update(crc, crcTable, data) != sum {
		return r.corrupt(at, "block checksum mismatch")
	}
	if s.buf == nil {
		s.buf = make([]byte, 0, snapshotBlockSize)
	}
	if s.buf, err = snapshotDecoder().DecodeAll(data, s.buf[:0]); err != nil {
		return r.corrupt(at, "block does not decode: %v", err)
	}
	if len(s.buf) != int(size) {
		return r.corrupt(at, "block decodes to %d bytes, its header says %d", len(s.buf), size)
	}
	return nil
}

// more reports whether another record follows, decoding the next block if the last
// one is used up.
func (s *recordStream) more() (bool, error) {
	if len(s.cur) > 0 {
		return true, nil
	}
	switch err := s.fetch(); err {
	case nil:
		return true, nil
	case io.EOF:
		return false, nil
	default:
		return false, err
	}
}

// take returns the next n bytes of the stream, valid until the following call,
// copying them together when they span blocks. The copy grows as blocks come, at
// most doubling, so a length that damage made huge costs no more memory than twice
// what the file decodes to.
func (s *recordStream) take(n int) ([]byte, error) {
	if n <= len(s.cur) {
		b := s.cur[:n]
		s.cur = s.cur[n:]
		return b, nil
	}
	s.big = s.big[:0]
	for {
		k := min(n-len(s.big), len(s.cur))
		if len(s.big)+k > cap(s.big) {
			s.big = slices.Grow(s.big, min(n, 2*cap(s.big)+snapshotBlockSize)-len(s.big))
		}
		s.big = append(s.big, s.cur[:k]...)
		s.cur = s.cur[k:]
		if len(s.big) == n {
			return s.big, nil
		}
		if err := s.fetch(); err != nil {
			if err == io.EOF {
				err = s.r.corrupt(s.at, "record truncated by the end of the records")
			}
			return nil, err
		}
	}
}

// blocks hands every record of a version 2 snapshot to fn, then checks the trailer.
func (r *snapshotReader) blocks(fn func([]byte) error) error {
	s := &recordStream{r: r}
	var count uint64
	for {
		more, err := s.more()
		if err != nil {
			return err
		}
		if !more {
			return r.trailer(s.at, s.mark, count)
		}
		b, err := s.take(snapshotLenSize)
		if err != nil {
			return err
		}
		n := binary.LittleEndian.Uint32(b)
		if n > MaxPayload {
			return r.corrupt(s.at, "record %d: length %d over the limit (%d)", count, n, MaxPayload)
		}
		payload, err := s.take(int(n))
		if err != nil {
			return err
		}
		if err := fn(payload); err != nil {
			return fmt.Errorf("store: snapshot %s: record %d: %w", r.name, count, err)
		}
		count++
	}
}
