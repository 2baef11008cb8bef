package quorum

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/server/store"
)

// Snapshotter is the caller's state machine as a whole, for log compaction. The
// Node calls Snapshot and Restore from its Ready loop only, never concurrently with
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

// SnapshotChecker is a Snapshotter that can tell whether a snapshot would restore,
// without restoring it. A member whose Snapshotter is one checks every snapshot a
// peer sends before Raft takes it: one it could not restore would stop it.
// CheckSnapshot runs on a connection's read goroutine, concurrently with the Ready loop.
type SnapshotChecker interface {
	CheckSnapshot(read ReadFunc) error
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
func (s *WALStorage) WriteSnapshot(md *raftpb.SnapshotMetadata, view StateSnapshot, stop <-chan struct{}) error {
	first, err := proto.Marshal(md)
	if err != nil {
		return fmt.Errorf("quorum: encode snapshot metadata: %w", err)
	}
	w, err := store.CreateSnapshot(filepath.Join(s.cfg.Dir, snapSubdir), int64(md.GetIndex()), s.fs)
	if err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	err = w.Append(first)
	if err == nil {
		err = view.Records(func(p []byte) error {
			select {
			case <-stop:
				return errSnapshotStopped
			default:
			}
			return w.Append(p)
		})
	}
	if err == nil {
		err = w.Commit()
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("quorum: write snapshot at index %d: %w", md.GetIndex(), err)
	}
	return nil
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
// it to a follower its log no longer covers: the snapshot's metadata and, as Data,
// the bytes of its file, which the follower's Receive keeps. A file gone meanwhile (a
// newer snapshot replaced it) is ErrSnapshotTemporarilyUnavailable: Raft tries again.
func (s *WALStorage) Snapshot() (*raftpb.Snapshot, error) {
	snap, err := s.MemoryStorage.Snapshot()
	if err != nil || raft.IsEmptySnap(snap) {
		return snap, err
	}
	idx := snap.GetMetadata().GetIndex()
	data, err := readAll(s.fs, snapshotPath(s.cfg.Dir, snapSubdir, idx))
	if err != nil {
		s.logger.Warn("snapshot to send unreadable", "index", idx, "err", err)
		return nil, raft.ErrSnapshotTemporarilyUnavailable
	}
	snap.Data = data
	return snap, nil
}

// readAll reads the file at path whole.
func readAll(fsys store.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, 0, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil {
		return nil, err
	}
	return buf, nil
}

// Receive implements Storage: snap.Data must be a snapshot file whose first record is
// snap's metadata. Its records are checked (the file's checksums, and check, which
// sees the state machine's records) while they are written to the member's receive
// directory; the file is committed there only if all of it passed. It runs on a
// connection's goroutine; the Ready loop goes on meanwhile.
func (s *WALStorage) Receive(snap *raftpb.Snapshot, check func(read ReadFunc) error) error {
	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	md := snap.GetMetadata()
	index := md.GetIndex()
	data := snap.GetData()
	name := "snapshot." + strconv.FormatUint(index, 16)
	w, err := store.CreateSnapshot(filepath.Join(s.cfg.Dir, recvSubdir), int64(index), s.fs)
	if err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	first := true
	read := func(fn func([]byte) error) error {
		zxid, err := store.ReadSnapshotAt(name, bytes.NewReader(data), int64(len(data)), func(p []byte) error {
			if first {
				first = false
				if err := checkMetadata(p, index); err != nil {
					return err
				}
				return w.Append(p)
			}
			if err := w.Append(p); err != nil {
				return err
			}
			return fn(p)
		})
		if err == nil && uint64(zxid) != index {
			err = fmt.Errorf("snapshot file of index %d sent as index %d", zxid, index)
		}
		if err == nil && first {
			err = errors.New("snapshot file without raft metadata")
		}
		return err
	}
	if check == nil {
		err = read(func([]byte) error { return nil })
	} else {
		err = check(read)
	}
	if err == nil && first {
		err = errors.New("the snapshot checker did not read the snapshot")
	}
	if err == nil {
		err = w.Commit()
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("snapshot at index %d: %w", index, err)
	}
	snap.Data = nil
	return nil
}
