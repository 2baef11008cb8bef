package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
)

// tricklingReader hands out its data a few bytes per Read and records, for each call,
// how much buffer the reader offered beyond what had already arrived.
type tricklingReader struct {
	data      []byte
	step      int
	delivered int
	// worst is told, at each Read, the bytes delivered so far and len(p): together,
	// the buffer the reader's caller holds for the frame.
	worst func(delivered, offered int)
}

func (r *tricklingReader) Read(p []byte) (int, error) {
	if r.delivered == len(r.data) {
		return 0, io.EOF
	}
	if r.worst != nil {
		r.worst(r.delivered, len(p))
	}
	n := copy(p, r.data[r.delivered:min(len(r.data), r.delivered+r.step)])
	r.delivered += n
	return n, nil
}

// TestReadBodyGrowsWithArrivedBytes: a frame announced at a megabyte is read into a
// buffer never more than twice the bytes that have arrived (or the first chunk), and a
// frame cut short costs only what was sent.
func TestReadBodyGrowsWithArrivedBytes(t *testing.T) {
	const n = 1 << 20
	data := bytes.Repeat([]byte("paddock!"), n/8)
	for _, sent := range []int{n, n / 2, 100, readChunk + 1} {
		var worst string
		r := &tricklingReader{data: data[:sent], step: 1000, worst: func(delivered, offered int) {
			if delivered+offered > max(2*delivered, readChunk) && worst == "" {
				worst = fmt.Sprintf("with %d bytes in, a buffer of %d was held", delivered, delivered+offered)
			}
		}}
		body, err := ReadBody(r, n, nil)
		switch {
		case worst != "":
			t.Fatalf("a frame of %d announced, %d sent: %s", n, sent, worst)
		case sent == n && (err != nil || !bytes.Equal(body, data)):
			t.Fatalf("whole frame: %d bytes, %v", len(body), err)
		case sent < n && !errors.Is(err, io.ErrUnexpectedEOF):
			t.Fatalf("frame cut at %d: err = %v, want unexpected EOF", sent, err)
		}
	}
}

// TestReadBodyReusesBuffer: a body that fits the buffer given is read into it.
func TestReadBodyReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	body, err := ReadBody(bytes.NewReader([]byte("abcdef")), 6, buf)
	if err != nil || string(body) != "abcdef" || &body[0] != &buf[:1][0] {
		t.Fatalf("body %q, err %v: not read into the buffer given", body, err)
	}
}

// TestReadLengthShortPrefix: from a bufio.Reader as from any reader, a prefix cut short
// is an unexpected EOF and none at all is EOF.
func TestReadLengthShortPrefix(t *testing.T) {
	for _, wrap := range []func([]byte) io.Reader{
		func(b []byte) io.Reader { return bytes.NewReader(b) },
		func(b []byte) io.Reader { return bufio.NewReader(bytes.NewReader(b)) },
	} {
		if _, err := ReadLength(wrap(nil), 10); err != io.EOF {
			t.Errorf("no prefix: err = %v, want EOF", err)
		}
		if _, err := ReadLength(wrap([]byte{0, 0}), 10); err != io.ErrUnexpectedEOF {
			t.Errorf("half a prefix: err = %v, want unexpected EOF", err)
		}
		if n, err := ReadLength(wrap([]byte{0, 0, 0, 7}), 10); n != 7 || err != nil {
			t.Errorf("prefix 7: %d, %v", n, err)
		}
	}
}

// BenchmarkReadFrameLarge reads 256 KiB frames, each into a fresh buffer, as the server's
// read loop does for a frame past the buffer it keeps.
func BenchmarkReadFrameLarge(b *testing.B) {
	const size = 256 << 10
	frame := binary.BigEndian.AppendUint32(nil, size)
	frame = append(frame, make([]byte, size)...)
	src := bytes.NewReader(frame)
	br := bufio.NewReaderSize(src, 64<<10)
	b.ReportAllocs()
	b.SetBytes(size)
	for b.Loop() {
		src.Reset(frame)
		br.Reset(src)
		if _, err := ReadFrame(br, DefaultMaxBuffer, nil); err != nil {
			b.Fatal(err)
		}
	}
}
