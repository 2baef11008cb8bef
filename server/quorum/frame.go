package quorum

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/paddock/paddock/server/wire"
)

// Frame kinds. A frame on a peer connection is a uint32 big-endian length (of what
// follows it), a kind byte and the body:
//
//	frameHello      the first frame of every connection, from the dialling member:
//	                version (1 byte), sender id, receiver id (uint64s big-endian)
//	frameRaft       a marshalled raftpb.Message, any type but MsgSnap
//	frameSnap       a marshalled raftpb.Message of type MsgSnap, its Data empty;
//	                the snapshot's records follow it (snapstream.go)
//	frameSnapChunk  records of the snapshot being sent
//	frameSnapEnd    the end of the snapshot being sent
//	frameNote       a note's bytes; its sender is the connection's member
//	frameKeepalive  nothing: sent by an idle connection so that its reader's idle
//	                timeout tells a dead connection from a quiet one
const (
	frameRaft      byte = 0
	frameNote      byte = 1
	frameHello     byte = 2
	frameSnap      byte = 3
	frameKeepalive byte = 4
	frameSnapChunk byte = 5
	frameSnapEnd   byte = 6
)

// helloVersion is the version of the peer protocol a hello announces. A member
// refuses a connection whose hello names another.
const helloVersion = 2 // 2: snapshots streamed in chunks (1 sent them in one frame)

// maxFrame is the largest frame a length prefix can announce.
const maxFrame = 1<<32 - 1

// helloSize is the length of a hello frame's body, kind byte included.
const helloSize = 1 + 1 + 8 + 8

// frameLimits bounds each kind of frame, kind byte included. A frame over its bound
// is refused before its body is read.
type frameLimits struct {
	raft, snap, note, chunk int
}

// limit returns the largest frame of kind allowed, or 0 for an unknown kind.
func (l frameLimits) limit(kind byte) int {
	switch kind {
	case frameRaft:
		return l.raft
	case frameSnap:
		return l.snap
	case frameNote:
		return l.note
	case frameHello:
		return helloSize
	case frameKeepalive:
		return 1
	case frameSnapChunk:
		return l.chunk
	case frameSnapEnd:
		return 9
	}
	return 0
}

// Errors of the frame reader.
var (
	errFrameKind  = errors.New("unknown frame kind")
	errFrameSize  = errors.New("frame larger than its kind allows")
	errFrameEmpty = errors.New("empty frame")
	errHello      = errors.New("malformed hello")
)

// readFrame reads one frame: its kind and its body (without the kind byte). A frame
// of an unknown kind, or larger than limits allow for its kind, is an error before
// its body is read.
func readFrame(r *bufio.Reader, limits frameLimits) (kind byte, body []byte, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return 0, nil, errFrameEmpty
	}
	if kind, err = r.ReadByte(); err != nil {
		return 0, nil, noEOF(err)
	}
	max := limits.limit(kind)
	if max == 0 {
		return kind, nil, fmt.Errorf("%w %d", errFrameKind, kind)
	}
	if uint64(n) > uint64(max) {
		return kind, nil, fmt.Errorf("%w: kind %d, %d bytes (at most %d)", errFrameSize, kind, n, max)
	}
	// Read as the bytes arrive (wire.ReadBody into no buffer): a peer that announces a
	// large frame and stops sending holds little.
	body, err = wire.ReadBody(r, int(n)-1, nil)
	return kind, body, err
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendFrame appends a frame of kind holding body to dst.
func appendFrame(dst []byte, kind byte, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)+1))
	dst = append(dst, kind)
	return append(dst, body...)
}

// hello is the first frame of a connection: who dials whom.
type hello struct {
	from, to uint64
}

func (h hello) appendTo(dst []byte) []byte {
	var b [helloSize - 1]byte
	b[0] = helloVersion
	binary.BigEndian.PutUint64(b[1:], h.from)
	binary.BigEndian.PutUint64(b[9:], h.to)
	return appendFrame(dst, frameHello, b[:])
}

// decodeHello decodes a hello frame's body.
func decodeHello(body []byte) (hello, error) {
	switch {
	case len(body) != helloSize-1:
		return hello{}, fmt.Errorf("%w: %d bytes", errHello, len(body))
	case body[0] != helloVersion:
		return hello{}, fmt.Errorf("%w: version %d, this member speaks %d", errHello, body[0], helloVersion)
	}
	h := hello{from: binary.BigEndian.Uint64(body[1:]), to: binary.BigEndian.Uint64(body[9:])}
	if h.from == 0 || h.to == 0 {
		return hello{}, fmt.Errorf("%w: member id 0", errHello)
	}
	return h, nil
}
