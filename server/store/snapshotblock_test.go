package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// splitBlocks cuts a version 2 snapshot file into its header, its blocks (each whole
// with its header) and its trailer.
func splitBlocks(t *testing.T, file []byte) (header []byte, blocks [][]byte, trailer []byte) {
	t.Helper()
	header, rest := file[:snapshotHeaderSize], file[snapshotHeaderSize:]
	for binary.LittleEndian.Uint32(rest[4:]) != snapshotTrailerLen {
		n := snapshotBlockHeaderSize + int(binary.LittleEndian.Uint32(rest[4:]))
		blocks, rest = append(blocks, rest[:n]), rest[n:]
	}
	if len(rest) != snapshotTrailerSize {
		t.Fatalf("trailer of %d bytes", len(rest))
	}
	return header, blocks, rest
}

// blockOf returns a block holding stored, as its header says it decodes to size
// bytes, with a good checksum: what a writer that lies makes.
func blockOf(stored []byte, size int) []byte {
	le := binary.LittleEndian
	b := make([]byte, snapshotBlockHeaderSize, snapshotBlockHeaderSize+len(stored))
	le.PutUint32(b[4:], uint32(len(stored)))
	le.PutUint32(b[8:], uint32(size))
	b = append(b, stored...)
	le.PutUint32(b, crc32.Checksum(b[4:], crcTable))
	return b
}

// snapshotOf returns a version 2 snapshot file at zxid of blocks, with a good trailer
// that counts count records.
func snapshotOf(zxid int64, count uint64, blocks ...[]byte) []byte {
	b := make([]byte, snapshotHeaderSize)
	putSnapshotHeader(b, zxid, snapshotVersion)
	for _, blk := range blocks {
		b = append(b, blk...)
	}
	b = append(b, snapshotTrailerMark...)
	b = binary.LittleEndian.AppendUint32(b, snapshotTrailerLen)
	b = binary.LittleEndian.AppendUint64(b, count)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// recordsOf returns the record stream of payload: its length and itself.
func recordsOf(payload []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

// zstdFrame returns a zstd frame: the magic number, the frame header descriptor fhd
// followed by desc (window descriptor and content size, as fhd says), then RLE
// blocks of n bytes of 'x' each, the last one marked so.
func zstdFrame(fhd byte, desc []byte, n int, blocks int) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, fhd}
	b = append(b, desc...)
	for i := range blocks {
		h := uint32(1<<1 | n<<3) // RLE
		if i == blocks-1 {
			h |= 1 // last
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 'x')
	}
	return b
}

// TestSnapshotBlockDamage damages a snapshot of several blocks by the block: blocks
// swapped, dropped, repeated, a byte flipped inside one, the file cut inside one. Each
// block is good on its own; the trailer's count and checksum of the whole file tell.
func TestSnapshotBlockDamage(t *testing.T) {
	payloads := snapshotPayloads(1000, func(i int) int { return 100 + i%400 })
	path := writeSnapshot(t, t.TempDir(), 9, payloads)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header, blocks, trailer := splitBlocks(t, good)
	if len(blocks) < 3 {
		t.Fatalf("%d blocks, want at least 3", len(blocks))
	}
	join := func(blocks ...[]byte) []byte {
		return bytes.Join(append(append([][]byte{header}, blocks...), trailer), nil)
	}
	checkCorrupt(t, path, "blocks swapped", join(blocks[1], blocks[0], blocks[2]))
	checkCorrupt(t, path, "a block dropped", join(blocks[0], blocks[2]))
	checkCorrupt(t, path, "the last block dropped", join(blocks[:len(blocks)-1]...))
	checkCorrupt(t, path, "a block repeated", join(blocks[0], blocks[0], blocks[1], blocks[2]))
	second := snapshotHeaderSize + len(blocks[0])
	for _, off := range []int{second, second + 5, second + 11, second + 12, second + len(blocks[1])/2, second + len(blocks[1]) - 1} {
		b := bytes.Clone(good)
		b[off] ^= 0x10
		checkCorrupt(t, path, fmt.Sprintf("byte %d flipped", off), b)
		checkCorrupt(t, path, fmt.Sprintf("cut to %d bytes", off), good[:off])
	}
	if err := os.WriteFile(path, good, 0o640); err != nil {
		t.Fatal(err)
	}
	checkSnapshotFile(t, path, 9, payloads)
}

// hostileSnapshot is a snapshot file made to exhaust a reader, and what the error
// refusing it says.
type hostileSnapshot struct {
	name, want string
	file       []byte
}

// hostileSnapshots are blocks and records that claim to be huge, and frames that
// decode to more than their block, each with good checksums, so that only the bounds
// can refuse them.
func hostileSnapshots() []hostileSnapshot {
	big := make([]byte, snapshotBlockSize)
	le := binary.LittleEndian
	return []hostileSnapshot{
		{"block decoding to 4 GiB", "block decodes to", snapshotOf(1, 1, blockOf([]byte("small"), 1<<32-2))},
		{"block stored over its bound", "over the limit", snapshotOf(1, 1, blockOf(make([]byte, snapshotBlockMaxStored+1), 10))},
		{"block past the end of the file", "overruns the file", snapshotOf(1, 1, blockOf([]byte("short"), 10)[:14])},
		{"frame claiming 1 TiB", "does not decode",
			snapshotOf(1, 1, blockOf(zstdFrame(0xe0, le.AppendUint64(nil, 1<<40), 1000, 1), 1000))},
		{"frame claiming a 1 GiB window", "does not decode", snapshotOf(1, 1, blockOf(zstdFrame(0x00, []byte{20 << 3}, 1000, 1), 1000))},
		{"frame decoding to 2 MiB, no size given", "does not decode",
			snapshotOf(1, 1, blockOf(zstdFrame(0x00, []byte{7 << 3}, 128<<10, 16), snapshotBlockSize))},
		{"frame decoding to more than its block says", "block decodes to",
			snapshotOf(1, 1, blockOf(testEncoder().EncodeAll(big, nil), 1000))},
		{"record of MaxPayload in a small file", "record truncated", snapshotOf(1, 1,
			appendBlock(testEncoder(), nil, le.AppendUint32(make([]byte, 0, 104), MaxPayload)[:104]), appendBlock(testEncoder(), nil, make([]byte, 1000)))},
		{"record over MaxPayload", "over the limit", snapshotOf(1, 1, appendBlock(testEncoder(), nil, le.AppendUint32(nil, MaxPayload+1)))},
		{"record cut by the end of the records", "record truncated", snapshotOf(1, 1, appendBlock(testEncoder(), nil, recordsOf([]byte("whole"))[:7]))},
		{"length cut by the end of the records", "record truncated", snapshotOf(1, 1, appendBlock(testEncoder(), nil, []byte{1, 0}))},
		{"empty block", "block decodes to 0 bytes", snapshotOf(1, 0, blockOf(nil, 0))},
	}
}

// TestSnapshotHostile reads the hostile snapshots: each must be refused as corrupt
// without allocating what it claims.
func TestSnapshotHostile(t *testing.T) {
	tests := hostileSnapshots()
	// Warm the decoder and the allocator up: what they keep is not what is measured.
	dir := t.TempDir()
	big := [][]byte{make([]byte, snapshotBlockSize)}
	checkSnapshotFile(t, writeSnapshot(t, dir, 1, big), 1, big)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, snapshotName(1))
			if err := os.WriteFile(path, tt.file, 0o640); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ReadSnapshot(path, nil, func([]byte) error { return nil })
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want corruption: %s", err, tt.want)
			}
			// The reader's own buffers: 1 MiB to read, a block to decode into.
			if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
				t.Fatalf("allocated %d bytes to refuse it", n)
			}
		})
	}
}

// TestSnapshotBlockBound checks snapshotBlockMaxStored against the encoder's own bound.
func TestSnapshotBlockBound(t *testing.T) {
	if n := testEncoder().MaxEncodedSize(snapshotBlockSize); n > snapshotBlockMaxStored {
		t.Fatalf("a block may store in %d bytes, over snapshotBlockMaxStored (%d)", n, snapshotBlockMaxStored)
	}
}

// TestSnapshotStats checks the figures a writer reports: the records and their bytes
// as given, the file's size, and the ratio of the two.
func TestSnapshotStats(t *testing.T) {
	payloads := snapshotPayloads(5000, func(i int) int { return 100 })
	for _, tt := range []struct {
		version  uint32
		min, max float64 // the ratio
	}{{snapshotVersion1, 0.9, 1}, {snapshotVersion, 10, 1000}} {
		t.Run(fmt.Sprintf("v%d", tt.version), func(t *testing.T) {
			dir := t.TempDir()
			w, err := createSnapshot(dir, 1, nil, tt.version)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range payloads {
				if err := w.Append(p); err != nil {
					t.Fatal(err)
				}
			}
			if s := w.Stats(); s.Records != 5000 || s.Bytes != 500_000 {
				t.Fatalf("before Commit: %+v", s)
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			s := w.Stats()
			fi, err := os.Stat(filepath.Join(dir, snapshotName(1)))
			if err != nil {
				t.Fatal(err)
			}
			if s.Records != 5000 || s.Bytes != 500_000 || s.FileBytes != fi.Size() ||
				s.Ratio() != 500_000/float64(fi.Size()) || s.Ratio() < tt.min || s.Ratio() > tt.max {
				t.Fatalf("stats %+v, ratio %.2f, for a file of %d bytes", s, s.Ratio(), fi.Size())
			}
		})
	}
	if r := (SnapshotStats{}).Ratio(); r != 0 {
		t.Fatalf("ratio of nothing: %v", r)
	}
}

// TestSnapshotLargeRecord writes and reads back a record of 64 MiB, which spans 512
// blocks, between two small ones, and has Append refuse a record over MaxPayload.
// (The reader's side of MaxPayload is in TestSnapshotHostile: a record of MaxPayload
// bytes costs a minute under the race detector.)
func TestSnapshotLargeRecord(t *testing.T) {
	large := make([]byte, 64<<20)
	for off := 0; off < len(large); off += snapshotBlockSize - 1 {
		large[off] = byte(off / snapshotBlockSize) // marks that show a block out of place
	}
	large[len(large)-1] = 'z'
	payloads := [][]byte{[]byte("before"), large, []byte("after")}
	dir := t.TempDir()
	checkSnapshotFile(t, writeSnapshot(t, dir, 3, payloads), 3, payloads)
	w, err := CreateSnapshot(dir, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Append(make([]byte, MaxPayload+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Append of MaxPayload+1 bytes: %v, want ErrTooLarge", err)
	}
}

// testEncoder is the tests' one encoder.
var testEncoder = sync.OnceValue(newSnapshotEncoder)
