package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxBuffer is jute.maxbuffer's default: the largest frame the server accepts.
const DefaultMaxBuffer = 0xfffff

// ErrFrameTooLarge is returned for a frame whose length is negative or over the limit.
var ErrFrameTooLarge = errors.New("wire: frame length out of range")

// ReadLength reads a frame's 4-byte length prefix and checks it against max.
func ReadLength(r io.Reader, max int) (int, error) {
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

// ReadBody reads an n-byte frame body into buf, growing it if needed, and returns the body.
func ReadBody(r io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// ReadFrame reads one length-prefixed frame of at most max bytes, reusing buf.
func ReadFrame(r io.Reader, max int, buf []byte) ([]byte, error) {
	n, err := ReadLength(r, max)
	if err != nil {
		return nil, err
	}
	return ReadBody(r, n, buf)
}
