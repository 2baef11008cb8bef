package quorum

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/server/store"
)

// Snapshotter is the caller's state machine as a whole, for log compaction. The
// Node calls Snapshot and Restore from its apply loop only, never concurrently with
// ApplyFunc.
type Snapshotter interface {
	// Snapshot returns a consistent view of the state machine as of the last index
	// ApplyFunc was given (or Restore restored). It must be cheap (copy-on-write):
	// the view's records are then written out by another goroutine while ApplyFunc
	// goes on changing the state machine.
	Snapshot() (StateSnapshot, error)
	// Restore replaces the state machine's state with the records read yields, a
	// snapshot taken at index in term (by this member or by the leader). ApplyFunc
	// then continues from index+1. When read fails, the state must stay as it was.
	Restore(read ReadFunc, index, term uint64) error
}

// StateSnapshot is a view of the state machine at one index. Records may be called
// once, from any goroutine, and hands out the state machine's records in order; it
// stops with fn's first error.
type StateSnapshot interface {
	Records(fn func(record []byte) error) error
}

// SnapshotChecker is a Snapshotter that proves a snapshot restorable before Raft may
// take it. A member whose Snapshotter is one has every snapshot a peer streams pass
// CheckSnapshot as its records arrive (read yields them; md is its metadata): Raft
// never sees one that fails, so nothing of it is committed, and Restore is never
// handed a snapshot it cannot restore — one it could not would stop the member at
// every start. A checker may keep what it built for the Restore of the same index
// and term that may follow, so that the state is built once. CheckSnapshot runs on a
// connection's read goroutine, concurrently with the Ready and apply loops.
type SnapshotChecker interface {
	CheckSnapshot(read ReadFunc, md *raftpb.SnapshotMetadata) error
}

// errSnapshotStopped ends a snapshot write when the member stops.
var errSnapshotStopped = errors.New("quorum: snapshot abandoned: member stopping")

var errNotExist = fs.ErrNotExist

// snapshotPath is the path of the snapshot at index in sub of the member's dir: a
// server/store snapshot file, its zxid field the Raft index.
func snapshotPath(dir, sub string, index uint64) string {
	return filepath.Join(dir, sub, "snapshot."+fmt.Sprintf("%016x", index))
}

// WriteSnapshot implements Storage: the snapshot file of md is written through
// store.CreateSnapshot — md as the first record, then the view's records — and
// committed. It runs on its own goroutine while the Ready loop goes on.
func (s *WALStorage) WriteSnapshot(md *raftpb.SnapshotMetadata, view StateSnapshot, stop <-chan struct{}) (store.SnapshotStats, error) {
	first, err := proto.Marshal(md)
	if err != nil {
		return store.SnapshotStats{}, fmt.Errorf("quorum: encode snapshot metadata: %w", err)
	}
	st, err := store.WriteSnapshot(filepath.Join(s.cfg.Dir, snapSubdir), int64(md.GetIndex()), s.fs, stop, errSnapshotStopped,
		func(fn func([]byte) error) error {
			if err := fn(first); err != nil {
				return err
			}
			return view.Records(fn)
		})
	if err != nil {
		return st, fmt.Errorf("quorum: write snapshot at index %d: %w", md.GetIndex(), err)
	}
	return st, nil
}

// ReadSnapshot implements Storage: the records after the metadata of the snapshot
// file at index.
func (s *WALStorage) ReadSnapshot(index uint64) ReadFunc {
	path := snapshotPath(s.cfg.Dir, snapSubdir, index)
	return func(fn func([]byte) error) error {
		first := true
		_, err := store.ReadSnapshot(path, s.fs, func(p []byte) error {
			if first {
				first = false
				return checkMetadata(p, index)
			}
			return fn(p)
		})
		return err
	}
}

// checkMetadata checks that p, a snapshot's first record, is Raft metadata at index.
func checkMetadata(p []byte, index uint64) error {
	md := new(raftpb.SnapshotMetadata)
	if err := proto.Unmarshal(p, md); err != nil {
		return fmt.Errorf("raft metadata: %w", err)
	}
	if md.GetIndex() != index {
		return fmt.Errorf("raft metadata says index %d, want %d", md.GetIndex(), index)
	}
	return nil
}

// SnapshotMetadata returns the metadata of the snapshot the log follows (empty: none).
func (s *WALStorage) SnapshotMetadata() *raftpb.SnapshotMetadata {
	snap, _ := s.MemoryStorage.Snapshot()
	return snap.GetMetadata()
}

// Snapshot implements raft.Storage for the Raft library, which asks for it to send
// it to a follower its log no longer covers: the metadata alone, which names the
// file the transport then streams (SnapshotRecords).
func (s *WALStorage) Snapshot() (*raftpb.Snapshot, error) {
	return s.MemoryStorage.Snapshot()
}

// SnapshotRecords implements Storage: every record of the snapshot file at index, its
// metadata first, for the transport to send.
func (s *WALStorage) SnapshotRecords(index uint64) ReadFunc {
	path := snapshotPath(s.cfg.Dir, snapSubdir, index)
	return func(fn func([]byte) error) error {
		_, err := store.ReadSnapshot(path, s.fs, fn)
		return err
	}
}

// Receive implements Storage: records must be those of a snapshot file whose first
// is md. They are written to the member's receive directory as they arrive, and the
// state machine's are handed to check on their way (check calls the ReadFunc it is
// given); the file is committed only if all of it passed. It runs on a connection's
// goroutine; the Ready loop goes on meanwhile.
func (s *WALStorage) Receive(md *raftpb.SnapshotMetadata, records ReadFunc, check func(read ReadFunc) error) error {
	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	index := md.GetIndex()
	w, err := store.CreateSnapshot(filepath.Join(s.cfg.Dir, recvSubdir), int64(index), s.fs)
	if err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	first := true
	read := func(fn func([]byte) error) error {
		return records(func(p []byte) error {
			if first {
				first = false
				if err := checkSent(p, md); err != nil {
					return err
				}
				return w.Append(p)
			}
			if err := w.Append(p); err != nil {
				return err
			}
			return fn(p)
		})
	}
	if check == nil {
		err = read(func([]byte) error { return nil })
	} else {
		err = check(read)
	}
	if err == nil && first {
		err = errors.New("no records: the snapshot checker did not read it, or it was empty")
	}
	if err == nil {
		err = w.Commit()
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("snapshot at index %d: %w", index, err)
	}
	return nil
}

// checkSent checks that p, a received snapshot's first record, is the metadata md of
// the message that announced it.
func checkSent(p []byte, md *raftpb.SnapshotMetadata) error {
	got := new(raftpb.SnapshotMetadata)
	if err := proto.Unmarshal(p, got); err != nil {
		return fmt.Errorf("raft metadata: %w", err)
	}
	if got.GetIndex() != md.GetIndex() || got.GetTerm() != md.GetTerm() ||
		got.GetConfState().Equivalent(md.GetConfState()) != nil {
		return fmt.Errorf("the snapshot's metadata (index %d, term %d) is not its message's (index %d, term %d)",
			got.GetIndex(), got.GetTerm(), md.GetIndex(), md.GetTerm())
	}
	return nil
}
