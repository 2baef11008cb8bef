package quorum

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A snapshot travels to a lagging member as a stream on the leader's connection to
// it, never whole in memory: the MsgSnap (its Data empty: the metadata says which
// snapshot) in a frameSnap, then the records of the snapshot file — its Raft
// metadata first, then the state machine's — packed into frameSnapChunk frames of
// about snapChunkSize, then a frameSnapEnd:
//
//	frameSnapChunk  records, each a uvarint length and its bytes
//	frameSnapEnd    the number of records sent (uint64 big-endian), or
//	                snapAborted when the sender could not read its file
//
// The receiver writes the records to a snapshot file of its own as they arrive
// (Storage.Receive), with one snapshot slot per member as before, and hands Raft the
// message only once the file is whole and checked.

const (
	// snapChunkSize is the size a sender fills a chunk frame to.
	snapChunkSize = 1 << 20
	// snapAborted in an end frame says the sender gave up: the receiver drops what it
	// received.
	snapAborted = math.MaxUint64
)

// errSnapshotAborted is what the receiver's records return for an aborted stream.
var errSnapshotAborted = errors.New("quorum: the sender abandoned the snapshot")

// chunkLimit is the largest chunk frame, kind byte included: a full chunk, or one
// record over it that the chunk holds alone (a state machine record holds what
// entries put in it, so at most about an entry).
func chunkLimit(maxEntry int) int { return 2*snapChunkSize + maxEntry + 64 }

// streamSnapshot sends the records of the snapshot a MsgSnap (body, marshalled) names
// after it, on w, flushing each chunk. A snapshot that cannot be read is ended as
// aborted and logged; only a failed write is returned (the connection is broken).
func (t *Transport) streamSnapshot(w *bufio.Writer, conn net.Conn, body []byte) error {
	m := new(raftpb.Message)
	if err := proto.Unmarshal(body, m); err != nil || t.cfg.snapshot == nil {
		return t.endSnapshot(w, conn, snapAborted)
	}
	index := m.GetSnapshot().GetMetadata().GetIndex()
	max := t.cfg.limits.limit(frameSnapChunk) - 1
	chunk := make([]byte, 0, snapChunkSize+binary.MaxVarintLen64)
	var count uint64
	var writeErr error
	flush := func() error {
		if writeErr = writeFrame(w, conn, frameSnapChunk, chunk); writeErr == nil {
			writeErr = w.Flush()
		}
		chunk = chunk[:0]
		return writeErr
	}
	start := time.Now()
	err := t.cfg.snapshot(index)(func(rec []byte) error {
		if len(rec)+binary.MaxVarintLen64 > max {
			return fmt.Errorf("record of %d bytes: a chunk holds %d", len(rec), max)
		}
		if len(chunk) > 0 && len(chunk)+len(rec)+binary.MaxVarintLen64 > max {
			if err := flush(); err != nil {
				return err
			}
		}
		chunk = binary.AppendUvarint(chunk, uint64(len(rec)))
		chunk = append(chunk, rec...)
		count++
		if len(chunk) >= snapChunkSize {
			return flush()
		}
		return nil
	})
	if writeErr != nil {
		return writeErr
	}
	if err == nil && len(chunk) > 0 {
		err = flush()
		if writeErr != nil {
			return writeErr
		}
	}
	if err != nil {
		t.cfg.logger.Warn("snapshot not sent: unreadable", "to", m.GetTo(), "index", index, "err", err)
		count = snapAborted
	} else {
		t.cfg.logger.Info("snapshot sent", "to", m.GetTo(), "index", index, "records", count,
			"took", time.Since(start).Round(time.Millisecond))
	}
	return t.endSnapshot(w, conn, count)
}

func (t *Transport) endSnapshot(w *bufio.Writer, conn net.Conn, count uint64) error {
	return writeFrame(w, conn, frameSnapEnd, binary.BigEndian.AppendUint64(nil, count))
}

// writeFrame writes one frame of kind holding body to w, with a fresh write deadline.
func writeFrame(w *bufio.Writer, conn net.Conn, kind byte, body []byte) error {
	conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	var hdr [5]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)+1))
	hdr[4] = kind
	w.Write(hdr[:])
	_, err := w.Write(body)
	return err
}

// snapStream is the receiving end of a snapshot stream on a connection's reader.
type snapStream struct {
	r      *bufio.Reader
	limits frameLimits
	max    int64 // the most bytes of records taken; 0: no bound
	bytes  int64 // bytes of records read so far
	read   bool  // records was called
	done   bool  // the end frame was read
	err    error // a broken stream: the connection must close
	count  uint64
}

// readSnapshot reads a snapshot stream that a frameSnap's body starts and hands it on
// to recvSnap; what recvSnap did not read is read and dropped. Only a broken stream
// is an error.
func (t *Transport) readSnapshot(r *bufio.Reader, from uint64, body []byte) error {
	m := new(raftpb.Message)
	if err := proto.Unmarshal(body, m); err != nil {
		return fmt.Errorf("%w: raft message: %v", errBadFrame, err)
	}
	if m.GetType() != raftpb.MsgSnap {
		return fmt.Errorf("%w: %s in a frame of kind %d", errBadFrame, m.GetType(), frameSnap)
	}
	s := &snapStream{r: r, limits: t.cfg.limits}
	if t.cfg.maxSnapshot != nil {
		s.max = t.cfg.maxSnapshot()
	}
	if t.cfg.recvSnap != nil {
		t.cfg.recvSnap(from, m, s.records)
	}
	return s.drain()
}

// records is the ReadFunc of the stream: it reads its frames as they arrive and hands
// fn each record. It stops at fn's first error, the rest then left for drain.
func (s *snapStream) records(fn func([]byte) error) error {
	if s.read {
		return errors.New("quorum: snapshot stream read twice")
	}
	s.read = true
	for !s.done {
		if err := s.next(fn); err != nil {
			return err
		}
	}
	return nil
}

// next reads one frame of the stream, handing its records to fn (nil: dropped).
func (s *snapStream) next(fn func([]byte) error) error {
	kind, body, err := readFrame(s.r, s.limits)
	if err != nil {
		s.err = err
		return err
	}
	switch kind {
	case frameSnapChunk:
		if s.bytes += int64(len(body)); s.max > 0 && s.bytes > s.max {
			s.err = fmt.Errorf("%w: snapshot larger than %d bytes", errFrameSize, s.max)
			return s.err
		}
		for len(body) > 0 {
			n, k := binary.Uvarint(body)
			if k <= 0 || n > uint64(len(body)-k) {
				s.err = fmt.Errorf("%w: snapshot record length past its chunk", errBadFrame)
				return s.err
			}
			s.count++
			if fn != nil {
				if err := fn(body[k : k+int(n)]); err != nil {
					return err
				}
			}
			body = body[k+int(n):]
		}
		return nil
	case frameSnapEnd:
		s.done = true
		if len(body) != 8 {
			s.err = fmt.Errorf("%w: snapshot end of %d bytes", errBadFrame, len(body))
			return s.err
		}
		switch n := binary.BigEndian.Uint64(body); n {
		case snapAborted:
			return errSnapshotAborted
		case s.count:
			return nil
		default:
			return fmt.Errorf("quorum: snapshot stream of %d records, its end says %d", s.count, n)
		}
	default:
		s.err = fmt.Errorf("%w: kind %d inside a snapshot stream", errBadFrame, kind)
		return s.err
	}
}

// drain reads what is left of the stream.
func (s *snapStream) drain() error {
	for s.err == nil && !s.done {
		s.next(nil)
	}
	return s.err
}
