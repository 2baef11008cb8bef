package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/server/store"
)

// Storage is a member's stable Raft state: raft.Storage for what the Raft library
// reads, plus what a Ready asks to keep and what snapshots need. The Node calls
// Save and Checkpoint from its append loop only, and Close once the loops ended, never
// concurrently with each other; the raft.Storage methods may be called from the Ready
// loop at any time, and WriteSnapshot, Receive and ReadSnapshot from any goroutine.
type Storage interface {
	raft.Storage
	// Save keeps snap (if not empty: one Receive has written), then ents, then hs (if
	// not empty). When sync is true they are durable when Save returns; otherwise they
	// may be lost in a crash of the machine (raft.MustSync says when a write may be
	// lazy).
	Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot, sync bool) error
	// WriteSnapshot writes the snapshot file of md: md, then the state machine's
	// records as view yields them. It stops with errSnapshotStopped once stop is
	// closed. The file is durable when it returns nil; Checkpoint then records it.
	WriteSnapshot(md *raftpb.SnapshotMetadata, view StateSnapshot, stop <-chan struct{}) (store.SnapshotStats, error)
	// Checkpoint records the snapshot WriteSnapshot made durable for md and drops the
	// log before it: all but the keep entries before its index from memory (kept for
	// slow followers) and every entry up to it from disk. A snapshot not newer than the
	// current one is removed instead.
	Checkpoint(md *raftpb.SnapshotMetadata, keep uint64) error
	// Receive keeps the snapshot md a leader streams (records: its file's records,
	// md first) until Save is given it, after check has seen every state machine
	// record.
	Receive(md *raftpb.SnapshotMetadata, records ReadFunc, check func(read ReadFunc) error) error
	// SnapshotRecords reads every record of the snapshot file at index, its metadata
	// first, to send it.
	SnapshotRecords(index uint64) ReadFunc
	// ReadSnapshot reads the state machine's records of the snapshot at index, which
	// Save or Checkpoint kept.
	ReadSnapshot(index uint64) ReadFunc
	// SnapshotMetadata returns the metadata of the snapshot the log follows (empty
	// when none), without its data.
	SnapshotMetadata() *raftpb.SnapshotMetadata
	// Close releases the storage. Save must not be called after it.
	Close() error
}

// ReadFunc reads a snapshot's state machine records in order, calling fn for each
// (the record is valid during the call only). The checks of the whole file end only
// after the last record: when it returns an error, what fn built must be dropped.
type ReadFunc func(fn func(record []byte) error) error

// Record types of the member's log: the first byte of each WAL record's payload.
const (
	recEntry     byte = 1 // a raftpb.Entry
	recHardState byte = 2 // a raftpb.HardState
	recSnapshot  byte = 3 // from (uint64 big-endian) + a raftpb.SnapshotMetadata: its snapshot file is durable
)

// Directories in a member's directory.
const (
	logSubdir  = "log"  // the WAL's segments
	snapSubdir = "snap" // snapshot files, named by their Raft index
	recvSubdir = "recv" // snapshots received from a leader, until Save takes them
)

// StorageConfig says where a member's storage lives.
type StorageConfig struct {
	// Dir is the member's directory: Dir/log holds the WAL, Dir/snap the snapshots,
	// Dir/recv a snapshot being received, Dir/legacy the files of the previous format
	// once converted.
	Dir string
	// FS is the file system; nil means the operating system's.
	FS store.FS
	// SegmentSize is the WAL's segment size; 0 means store.DefaultSegmentSize.
	SegmentSize int64
	// SplitLegacySnapshot splits the state machine's data of a snapshot of the
	// previous format (one []byte) into the records Snapshotter.Restore reads, so
	// that OpenStorage can convert a directory that format wrote (legacy.go). Nil: a
	// directory holding such a snapshot is refused.
	SplitLegacySnapshot func(data []byte, fn func(record []byte) error) error
	// NoPrepare turns off the WAL's background zero-filling of its next segment
	// (tests that count file operations, and small test logs).
	NoPrepare bool
}

// WALStorage is the Storage of a member: a raft.MemoryStorage in front of
// server/store's write-ahead log and snapshot files (doc.go draws the layout). What
// the Raft library reads back is never ahead of what the WAL made durable. Save,
// Checkpoint and Close are for the append loop only; the raft.Storage methods are
// safe for concurrent use (MemoryStorage locks).
type WALStorage struct {
	*raft.MemoryStorage
	cfg    StorageConfig
	fs     store.FS
	logger *slog.Logger
	wal    *store.WAL

	// Owned by the append loop.
	snapIndex uint64  // index of the snapshot the log follows (0: none)
	lsns      []int64 // lsns[i]: the WAL record of entry snapIndex+1+i
	buf       []byte  // reused encoding buffer

	recvMu sync.Mutex // one Receive at a time
}

// OpenStorage opens the storage in cfg.Dir, creating it if needed: it loads the
// metadata of the newest snapshot file, then replays the WAL, keeping the entries
// after that snapshot and the last hard state. The WAL repairs a torn tail and fails
// on damage before it (store.ErrCorrupt, naming file and offset).
func OpenStorage(cfg StorageConfig, logger *slog.Logger) (*WALStorage, error) {
	if cfg.Dir == "" {
		return nil, errors.New("quorum: storage: no directory")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fsys := cfg.FS
	if fsys == nil {
		fsys = store.OS
	}
	s := &WALStorage{MemoryStorage: raft.NewMemoryStorage(), cfg: cfg, fs: fsys, logger: logger}
	if err := s.convertLegacy(cfg.SplitLegacySnapshot); err != nil {
		return nil, err
	}
	for _, sub := range []string{snapSubdir, recvSubdir} {
		tmps, err := store.RemoveSnapshotTemps(filepath.Join(cfg.Dir, sub), fsys)
		if err != nil {
			return nil, err
		}
		if len(tmps) > 0 {
			logger.Warn("removed unfinished snapshots", "files", tmps)
		}
	}
	md, err := s.newestSnapshot()
	if err != nil {
		return nil, err
	}
	wcfg := store.DefaultConfig()
	wcfg.Dir, wcfg.FS, wcfg.PrepareSegments = filepath.Join(cfg.Dir, logSubdir), fsys, !cfg.NoPrepare
	if cfg.SegmentSize > 0 {
		wcfg.SegmentSize = cfg.SegmentSize
	}
	if s.wal, err = store.Open(wcfg, logger); err != nil {
		return nil, fmt.Errorf("quorum: open raft log: %w", err)
	}
	if err := s.load(md); err != nil {
		s.wal.Close()
		return nil, err
	}
	return s, nil
}

// refuseLegacy fails on a directory holding a snapshot of the previous format when
// no StorageConfig.SplitLegacySnapshot can convert it.
func (s *WALStorage) refuseLegacy(dir string) error {
	return fmt.Errorf("%w: %s holds a snapshot of the previous format, and this member has no state machine "+
		"that can convert it (StorageConfig.SplitLegacySnapshot)", errLegacyFormat, dir)
}

// newestSnapshot returns the metadata of the newest snapshot file (nil if none), from
// its first record. The rest of the file is checked when it is restored.
func (s *WALStorage) newestSnapshot() (*raftpb.SnapshotMetadata, error) {
	snaps, err := store.ListSnapshots(filepath.Join(s.cfg.Dir, snapSubdir), s.fs)
	if err != nil || len(snaps) == 0 {
		return nil, err
	}
	return readMetadata(snaps[0].Path, uint64(snaps[0].Zxid), s.fs)
}

// errFirstRecord stops a snapshot read after its first record.
var errFirstRecord = errors.New("first record read")

// readMetadata reads the first record of the snapshot file at path, named for index:
// its Raft metadata.
func readMetadata(path string, index uint64, fsys store.FS) (*raftpb.SnapshotMetadata, error) {
	md := new(raftpb.SnapshotMetadata)
	_, err := store.ReadSnapshot(path, fsys, func(p []byte) error {
		if err := proto.Unmarshal(p, md); err != nil {
			return fmt.Errorf("raft metadata: %w", err)
		}
		return errFirstRecord
	})
	switch {
	case errors.Is(err, errFirstRecord):
	case err == nil:
		return nil, fmt.Errorf("quorum: snapshot %s: no raft metadata record", path)
	default:
		return nil, fmt.Errorf("quorum: snapshot %s: %w", path, err)
	}
	if md.GetIndex() == 0 {
		// A snapshot of no records ends before the callback; one named 0 is not ours.
		return nil, fmt.Errorf("quorum: snapshot %s: raft index 0", path)
	}
	if index != md.GetIndex() {
		return nil, fmt.Errorf("quorum: snapshot %s: named for index %d, its metadata says %d", path, index, md.GetIndex())
	}
	return md, nil
}

// load puts the snapshot md (nil: none) and the WAL's records into memory.
func (s *WALStorage) load(md *raftpb.SnapshotMetadata) error {
	if md != nil {
		if err := s.ApplySnapshot(&raftpb.Snapshot{Metadata: md}); err != nil {
			return fmt.Errorf("quorum: apply snapshot: %w", err)
		}
		s.snapIndex = md.GetIndex()
	}
	var hs *raftpb.HardState
	var ents []lsnEntry
	var from int64 // the last snapshot record's: entries before it are not needed
	err := s.wal.Replay(s.wal.Start(), func(lsn int64, p []byte) error {
		if len(p) == 0 {
			return errors.New("empty record")
		}
		switch p[0] {
		case recEntry:
			e := new(raftpb.Entry)
			if err := proto.Unmarshal(p[1:], e); err != nil {
				return fmt.Errorf("raft entry: %w", err)
			}
			ents = append(ents, lsnEntry{lsn, e})
		case recHardState:
			hs = new(raftpb.HardState)
			if err := proto.Unmarshal(p[1:], hs); err != nil {
				return fmt.Errorf("raft hard state: %w", err)
			}
		case recSnapshot:
			if len(p) < 9 {
				return errors.New("raft snapshot record too short")
			}
			m := new(raftpb.SnapshotMetadata)
			if err := proto.Unmarshal(p[9:], m); err != nil {
				return fmt.Errorf("raft snapshot record: %w", err)
			}
			from = int64(binary.BigEndian.Uint64(p[1:]))
			if m.GetIndex() > s.snapIndex {
				return fmt.Errorf("the log records a snapshot at index %d, but %s holds none at or after it",
					m.GetIndex(), filepath.Join(s.cfg.Dir, snapSubdir))
			}
		default:
			return fmt.Errorf("unknown record type %d", p[0])
		}
		return nil
	})
	for _, le := range ents {
		if err == nil && le.lsn >= from {
			err = s.loadEntry(le.lsn, le.e)
		}
	}
	if err != nil {
		return fmt.Errorf("quorum: replay raft log in %s: %w", filepath.Join(s.cfg.Dir, logSubdir), err)
	}
	if hs != nil {
		if err := s.SetHardState(hs); err != nil {
			return err
		}
	}
	return s.coverSnapshot(md)
}

// lsnEntry is a replayed entry and its record's lsn.
type lsnEntry struct {
	lsn int64
	e   *raftpb.Entry
}

// loadEntry puts a replayed entry into memory: one at an index already held replaces
// it and every later one (a new leader's conflicting tail), one at or before the
// snapshot is skipped, and one past the end is a hole in the log.
func (s *WALStorage) loadEntry(lsn int64, e *raftpb.Entry) error {
	i := e.GetIndex()
	if i <= s.snapIndex {
		return nil
	}
	last, _ := s.LastIndex()
	if i > last+1 {
		return fmt.Errorf("raft entry at index %d (record %d) follows index %d: the entries between are missing", i, lsn, last)
	}
	if err := s.MemoryStorage.Append([]*raftpb.Entry{e}); err != nil {
		return err
	}
	s.lsns = append(s.lsns[:i-s.snapIndex-1], lsn)
	return nil
}

// coverSnapshot raises a replayed hard state that is behind snapshot md: after a
// crash between a received snapshot's file and the records that follow it, the last
// hard state on disk predates the snapshot, but what the snapshot holds is committed.
func (s *WALStorage) coverSnapshot(md *raftpb.SnapshotMetadata) error {
	if md == nil {
		return nil
	}
	hs, _, err := s.InitialState()
	if err != nil {
		return err
	}
	if hs.GetCommit() >= md.GetIndex() && hs.GetTerm() >= md.GetTerm() {
		return nil
	}
	fixed := &raftpb.HardState{Term: new(hs.GetTerm()), Vote: new(hs.GetVote()), Commit: new(max(hs.GetCommit(), md.GetIndex()))}
	if hs.GetTerm() < md.GetTerm() {
		fixed.Term, fixed.Vote = new(md.GetTerm()), new(uint64(0))
	}
	return s.SetHardState(fixed)
}

// appendRecord appends one record of typ holding m to the WAL, under the next lsn,
// and returns that lsn.
func (s *WALStorage) appendRecord(typ byte, m proto.Message) (int64, error) {
	return s.appendRecordAfter(typ, nil, m)
}

// appendRecordAfter is appendRecord with head between the type and m.
func (s *WALStorage) appendRecordAfter(typ byte, head []byte, m proto.Message) (int64, error) {
	var err error
	s.buf, err = proto.MarshalOptions{}.MarshalAppend(append(append(s.buf[:0], typ), head...), m)
	if err != nil {
		return 0, fmt.Errorf("quorum: encode raft record: %w", err)
	}
	lsn := s.wal.LastZxid() + 1
	if err := s.wal.Append(lsn, s.buf); err != nil {
		return 0, fmt.Errorf("quorum: append to raft log: %w", err)
	}
	return lsn, nil
}

// Save implements Storage: the WAL first (and its fdatasync when sync), then memory,
// so that what the Raft library reads back is never ahead of what is durable.
func (s *WALStorage) Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot, sync bool) error {
	if snap != nil && !raft.IsEmptySnap(snap) {
		if err := s.install(snap); err != nil {
			return err
		}
		sync = true
	}
	for _, e := range ents {
		i := e.GetIndex()
		if i <= s.snapIndex {
			continue
		}
		lsn, err := s.appendRecord(recEntry, e)
		if err != nil {
			return err
		}
		s.lsns = append(s.lsns[:min(i-s.snapIndex-1, uint64(len(s.lsns)))], lsn)
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if _, err := s.appendRecord(recHardState, hs); err != nil {
			return err
		}
	}
	if sync {
		if err := s.wal.Sync(); err != nil {
			return fmt.Errorf("quorum: sync raft log: %w", err)
		}
	}
	if len(ents) > 0 {
		if err := s.MemoryStorage.Append(ents); err != nil {
			return fmt.Errorf("quorum: append entries: %w", err)
		}
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if err := s.SetHardState(hs); err != nil {
			return fmt.Errorf("quorum: set hard state: %w", err)
		}
	}
	return nil
}

// install makes a snapshot Receive kept the member's: its file moves to the snapshot
// directory, the WAL records it, and memory starts from it. The log before it goes.
func (s *WALStorage) install(snap *raftpb.Snapshot) error {
	s.recvMu.Lock()
	defer s.recvMu.Unlock()
	md := snap.GetMetadata()
	name := filepath.Base(snapshotPath(s.cfg.Dir, recvSubdir, md.GetIndex()))
	from, to := filepath.Join(s.cfg.Dir, recvSubdir, name), snapshotPath(s.cfg.Dir, snapSubdir, md.GetIndex())
	if err := s.fs.MkdirAll(filepath.Dir(to), 0o750); err != nil {
		return fmt.Errorf("quorum: install snapshot: %w", err)
	}
	if err := s.fs.Rename(from, to); err != nil {
		return fmt.Errorf("quorum: install snapshot at index %d: %w", md.GetIndex(), err)
	}
	if err := s.fs.SyncDir(filepath.Dir(to)); err != nil {
		return fmt.Errorf("quorum: install snapshot: sync directory: %w", err)
	}
	// Raft drops the whole log for a snapshot it is sent: nothing before it is needed.
	marker, err := s.recordSnapshot(md, s.wal.LastZxid()+1)
	if err != nil {
		return err
	}
	if err := s.ApplySnapshot(&raftpb.Snapshot{Metadata: md}); err != nil {
		return fmt.Errorf("quorum: apply snapshot: %w", err)
	}
	s.snapIndex, s.lsns = md.GetIndex(), nil
	s.logger.Info("snapshot received", "index", md.GetIndex(), "term", md.GetTerm())
	// Snapshots received before it that Raft did not take are of no use now.
	if _, _, err := store.PurgeSnapshots(filepath.Join(s.cfg.Dir, recvSubdir), s.fs, 1); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	return s.purge(marker - 1)
}

// Checkpoint implements Storage. In this order, each step durable before the next:
// the snapshot file (WriteSnapshot made it); a record of it and the hard state again
// in the WAL; then the older snapshot files and the WAL segments holding only records
// before both are removed. A crash between any two steps leaves a directory that
// OpenStorage recovers.
func (s *WALStorage) Checkpoint(md *raftpb.SnapshotMetadata, keep uint64) error {
	index := md.GetIndex()
	if index <= s.snapIndex {
		s.logger.Info("snapshot superseded by a newer one, removed", "index", index)
		return s.removeSnapshot(index)
	}
	if _, err := s.MemoryStorage.CreateSnapshot(index, md.GetConfState(), nil); err != nil {
		return fmt.Errorf("quorum: create snapshot: %w", err)
	}
	// Every record before the snapshot's record and before the first entry after
	// index is covered: entries up to index by the snapshot, hard states by the one
	// written again after it, and entries after index by the live one, which replaced
	// any earlier record of them.
	from := s.wal.LastZxid() + 1
	n := index - s.snapIndex
	if n < uint64(len(s.lsns)) {
		from = min(from, s.lsns[n])
	}
	if _, err := s.recordSnapshot(md, from); err != nil {
		return err
	}
	if n < uint64(len(s.lsns)) {
		s.lsns = slices.Clone(s.lsns[n:])
	} else {
		s.lsns = nil
	}
	purge := from - 1
	s.snapIndex = index
	if index > keep {
		if err := s.MemoryStorage.Compact(index - keep); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("quorum: compact log: %w", err)
		}
	}
	return s.purge(purge)
}

// recordSnapshot appends the record of the durable snapshot md, which says that no
// record before lsn from is needed, and the hard state again, so that none before it
// is needed for that either; and syncs the WAL. It returns the lsn of the snapshot's
// record. Replay ignores the entries before the last snapshot record's from: once
// older segments are purged, ones left there may follow a hole.
func (s *WALStorage) recordSnapshot(md *raftpb.SnapshotMetadata, from int64) (int64, error) {
	marker, err := s.appendRecordAfter(recSnapshot, binary.BigEndian.AppendUint64(nil, uint64(from)), md)
	if err != nil {
		return 0, err
	}
	hs, _, err := s.InitialState()
	if err != nil {
		return 0, err
	}
	if !raft.IsEmptyHardState(hs) {
		if _, err := s.appendRecord(recHardState, hs); err != nil {
			return 0, err
		}
	}
	if err := s.wal.Sync(); err != nil {
		return 0, fmt.Errorf("quorum: sync raft log: %w", err)
	}
	return marker, nil
}

// purge removes the snapshot files older than the newest and the WAL segments whose
// records are all at or below lsn.
func (s *WALStorage) purge(lsn int64) error {
	if _, _, err := store.PurgeSnapshots(filepath.Join(s.cfg.Dir, snapSubdir), s.fs, 1); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	if _, err := s.wal.PurgeBefore(lsn); err != nil {
		return fmt.Errorf("quorum: %w", err)
	}
	return nil
}

// removeSnapshot removes the snapshot file at index, one a newer snapshot made
// useless before it was recorded.
func (s *WALStorage) removeSnapshot(index uint64) error {
	if index == s.snapIndex {
		return nil
	}
	path := snapshotPath(s.cfg.Dir, snapSubdir, index)
	if err := s.fs.Remove(path); err != nil && !errors.Is(err, errNotExist) {
		return fmt.Errorf("quorum: remove %s: %w", path, err)
	}
	return nil
}

// Close implements Storage. It is idempotent.
func (s *WALStorage) Close() error {
	return s.wal.Close()
}
