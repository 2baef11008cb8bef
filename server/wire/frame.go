package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxBuffer is jute.maxbuffer's default: the largest frame the server accepts.
const DefaultMaxBuffer = 0xfffff

// MaxConnectFrame bounds the first frame of a connection, the ConnectRequest: 28 bytes of
// fields and the password's length, the password (16 bytes from every client) and the
// optional readOnly byte, 45 bytes in all. 4 KiB leaves ample room for a longer password
// while refusing, before a byte of its body is read, the megabyte "connect" with which a
// client that has no session yet could make the server hold memory.
const MaxConnectFrame = 4 << 10

// readChunk is the first step by which ReadBody grows a buffer too small for a frame:
// a frame announced larger than it costs memory only as its bytes arrive (doubling from
// here), so a client that announces a megabyte and sends little holds little. Frames
// this small are read in one allocation, as before.
const readChunk = 32 << 10

// ErrFrameTooLarge is returned for a frame whose length is negative or over the limit.
var ErrFrameTooLarge = errors.New("wire: frame length out of range")

// ReadLength reads a frame's 4-byte length prefix and checks it against max. From a
// bufio.Reader (the server's read loop) it reads in place, without allocating.
func ReadLength(r io.Reader, max int) (int, error) {
	if br, ok := r.(*bufio.Reader); ok {
		if b, err := br.Peek(4); err == nil {
			n := int32(binary.BigEndian.Uint32(b))
			br.Discard(4)
			return CheckLength(n, max)
		}
	}
	return readLength(r, max) // and the errors of a short prefix, as io.ReadFull reports them
}

func readLength(r io.Reader, max int) (int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	return CheckLength(int32(binary.BigEndian.Uint32(hdr[:])), max)
}

// CheckLength validates a frame length already read.
func CheckLength(n int32, max int) (int, error) {
	if n < 0 || int(n) > max {
		return 0, fmt.Errorf("%w: %d (max %d)", ErrFrameTooLarge, n, max)
	}
	return int(n), nil
}

// ReadBody reads an n-byte frame body into buf and returns the body. If buf is too
// small, the body is read into a new buffer that grows as the bytes arrive rather than
// at once to n, so memory follows what the peer has actually sent, not what it announced.
// The result aliases buf only when buf was large enough.
func ReadBody(r io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) < n {
		return readGrowing(r, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, unexpectedEOF(err)
	}
	return buf, nil
}

// readGrowing reads an n-byte body into a buffer that starts at readChunk (or n, if
// smaller) and doubles, never past n, each time it fills: the buffer is at most twice
// the bytes received.
func readGrowing(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, readChunk))
	for {
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if len(buf) == n {
			return buf, nil
		}
		grown := make([]byte, len(buf), min(2*cap(buf), n))
		copy(grown, buf)
		buf = grown
	}
}

// unexpectedEOF reports a body cut short as such: the length prefix promised more.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ReadFrame reads one length-prefixed frame of at most max bytes, reusing buf.
func ReadFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	n, err := ReadLength(r, max)
	if err != nil {
		return nil, err
	}
	return ReadBody(r, n, buf)
}
