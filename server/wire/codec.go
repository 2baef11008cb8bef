package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShortBuffer is returned when a record needs more bytes than remain.
var ErrShortBuffer = errors.New("wire: record truncated")

// ErrBadLength is returned for a negative (other than -1) or oversized length prefix.
var ErrBadLength = errors.New("wire: bad length prefix")

// Encoder appends jute-encoded values to a byte slice. The zero value is ready to use.
// It never fails: every value can be encoded.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an Encoder that appends to buf[:0], reusing its capacity.
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf[:0]} }

// Bytes returns the encoded bytes. They alias the encoder's buffer.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset discards the encoded bytes and keeps the capacity.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Grow makes room for n more bytes, so that encoding them allocates nothing. Where
// the room is lacking it allocates exactly what is encoded so far plus n, where
// append's growth would leave up to a quarter of a large buffer unused: a caller
// that knows a large record's size gets a buffer that holds it and no more.
func (e *Encoder) Grow(n int) {
	if n <= cap(e.buf)-len(e.buf) {
		return
	}
	buf := make([]byte, len(e.buf), len(e.buf)+n)
	copy(buf, e.buf)
	e.buf = buf
}

// Int appends a big-endian int32.
func (e *Encoder) Int(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Long appends a big-endian int64.
func (e *Encoder) Long(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Bool appends one byte, 0 or 1.
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Buffer appends a length-prefixed byte buffer; nil is encoded as length -1 (null).
func (e *Encoder) Buffer(b []byte) {
	if b == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(b)))
	e.buf = append(e.buf, b...)
}

// String appends a length-prefixed UTF-8 string. It never writes null (-1):
// go-zookeeper/zk cannot decode a null string, so an empty string is written as length 0.
func (e *Encoder) String(s string) {
	e.Int(int32(len(s)))
	e.buf = append(e.buf, s...)
}

// Strings appends a vector of strings; nil is written as an empty vector (never null).
func (e *Encoder) Strings(v []string) {
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// BeginFrame reserves the 4-byte length prefix of a frame and returns its offset.
func (e *Encoder) BeginFrame() int {
	off := len(e.buf)
	e.buf = append(e.buf, 0, 0, 0, 0)
	return off
}

// EndFrame writes the length of the frame begun at off into its prefix.
func (e *Encoder) EndFrame(off int) {
	binary.BigEndian.PutUint32(e.buf[off:], uint32(len(e.buf)-off-4))
}

// Decoder reads jute-encoded values from a byte slice. The first error sticks:
// after it every read returns a zero value and Err reports it. Decoded buffers
// and strings never alias the input.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a Decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Reset makes d read b from its start, clearing any error.
func (d *Decoder) Reset(b []byte) { *d = Decoder{buf: b} }

// Err returns the first decoding error, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of bytes not yet read.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset returns the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// fail records err (if it is the first) and returns false.
func (d *Decoder) fail(err error) bool {
	if d.err == nil {
		d.err = err
	}
	return false
}

// need reports whether n more bytes can be read, recording ErrShortBuffer if not.
func (d *Decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n > len(d.buf)-d.off {
		return d.fail(ErrShortBuffer)
	}
	return true
}

// Int reads a big-endian int32.
func (d *Decoder) Int() int32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.buf[d.off:])
	d.off += 4
	return int32(v)
}

// Long reads a big-endian int64.
func (d *Decoder) Long() int64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.buf[d.off:])
	d.off += 8
	return int64(v)
}

// Bool reads one byte; any non-zero value is true, as in Java's reader.
func (d *Decoder) Bool() bool {
	if !d.need(1) {
		return false
	}
	v := d.buf[d.off]
	d.off++
	return v != 0
}

// length reads a length prefix and checks that that many bytes remain.
// It returns -1 for null.
func (d *Decoder) length() int {
	n := d.Int()
	if d.err != nil {
		return 0
	}
	if n == -1 {
		return -1
	}
	if n < 0 {
		d.fail(fmt.Errorf("%w: %d", ErrBadLength, n))
		return 0
	}
	if !d.need(int(n)) {
		return 0
	}
	return int(n)
}

// Buffer reads a length-prefixed buffer; null (-1) is returned as nil, empty as a non-nil empty slice.
func (d *Decoder) Buffer() []byte {
	n := d.length()
	if n < 0 || d.err != nil {
		return nil
	}
	b := make([]byte, n)
	copy(b, d.buf[d.off:])
	d.off += n
	return b
}

// BufferView is Buffer without the copy: the bytes are the decoder's input, valid only
// while it is. Null (-1) reads as nil.
func (d *Decoder) BufferView() []byte {
	n := d.length()
	if n < 0 || d.err != nil {
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

// String reads a length-prefixed string; null (-1), which kazoo sends for empty strings, reads as "".
func (d *Decoder) String() string {
	n := d.length()
	if n <= 0 || d.err != nil {
		return ""
	}
	s := string(d.buf[d.off : d.off+n])
	d.off += n
	return s
}

// Count reads a vector length and checks it against the bytes left, given that
// each element takes at least minSize bytes. Null (-1) reads as 0.
func (d *Decoder) Count(minSize int) int {
	n := d.Int()
	if d.err != nil || n == -1 {
		return 0
	}
	if n < 0 || int64(n)*int64(minSize) > int64(d.Remaining()) {
		d.fail(fmt.Errorf("%w: vector of %d", ErrBadLength, n))
		return 0
	}
	return int(n)
}

// Strings reads a vector of strings; null reads as nil.
func (d *Decoder) Strings() []string {
	n := d.Count(4)
	if n == 0 {
		return nil
	}
	v := make([]string, n)
	for i := range v {
		v[i] = d.String()
	}
	return v
}

// Swap returns the encoded bytes and continues encoding into spare[:0]. The returned
// slice is the caller's; the encoder no longer refers to it.
func (e *Encoder) Swap(spare []byte) []byte {
	b := e.buf
	e.buf = spare[:0]
	return b
}

// Raw appends bytes as they are, with no length prefix.
func (e *Encoder) Raw(b []byte) { e.buf = append(e.buf, b...) }

// RawString appends a string's bytes as they are, with no length prefix.
func (e *Encoder) RawString(s string) { e.buf = append(e.buf, s...) }
