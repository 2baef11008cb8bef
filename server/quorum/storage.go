package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Storage is a member's stable Raft state: raft.Storage for what the Raft library
// reads, plus Save for what a Ready asks to keep. The Node calls Save from its Ready
// loop only, before the Ready's messages are sent, and never concurrently with
// itself; the raft.Storage methods may be called from the Raft library's goroutine
// at any time. The next step backs this interface with server/store's WAL.
type Storage interface {
	raft.Storage
	// Save keeps snap (if not empty), then ents, then hs (if not empty). When sync is
	// true they are durable when Save returns; otherwise they may be lost in a crash
	// of the machine (raft.MustSync says when a write may be lazy).
	Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot, sync bool) error
	// Checkpoint makes a snapshot at index (an applied index) of the state machine
	// data with membership cs durable, then drops the log before it: all but the
	// keep entries before index from memory (kept for slow followers) and every
	// entry up to index from disk. A snapshot not newer than the current one is
	// ignored.
	Checkpoint(index uint64, cs *raftpb.ConfState, data []byte, keep uint64) error
	// Close releases the storage. Save must not be called after it.
	Close() error
}

// logFile is the name of FileStorage's append log in its directory.
const logFile = "raft.log"

// Record types of the append log.
const (
	recEntry     byte = 1 // payload: a raftpb.Entry
	recHardState byte = 2 // payload: a raftpb.HardState
	recSnapshot  byte = 3 // payload: a raftpb.Snapshot
)

// recHeader is the size of a record header: crc32c, payload length, type.
const recHeader = 9

// maxRecord bounds a record's payload when reading, so a corrupt length cannot
// make Open allocate without limit.
const maxRecord = 256 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileStorage is a Storage kept in a raft.MemoryStorage and, when it has a
// directory, also in snapshot files and an append-only log file there that Open
// loads and replays. It is the stand-in for the WAL-backed storage of the
// integration step. Save, Checkpoint and Close are for the Ready loop only; the
// raft.Storage methods are safe for concurrent use (MemoryStorage locks).
type FileStorage struct {
	*raft.MemoryStorage
	logger *slog.Logger

	dir string // "" when memory-only

	mu   sync.Mutex // guards f, base, off, size and buf (Save and Checkpoint vs Close)
	f    *os.File   // the current log file; nil when memory-only or closed
	base uint64     // index of the snapshot the current log follows (0: none)
	off  int64      // where the next record goes in f
	size int64      // f's size: beyond off it holds zeros, written ahead of need
	buf  []byte     // reused encoding buffer
}

// preallocChunk is how far ahead of need a log file is extended with zeros: an
// fdatasync of a record written into space already allocated and written need not
// commit a change of the file's size, and costs less than the fsync of an append.
const preallocChunk = 8 << 20

// OpenFileStorage opens the storage in dir, creating dir if needed: it loads the
// newest valid snapshot file, then replays the log file that follows it (see
// recoverFiles). An empty dir gives a memory-only storage. A torn or corrupt log
// tail (a crash in the middle of a write) is truncated at the last whole record and
// reported at Warn; there is nothing after it that was ever synced.
func OpenFileStorage(dir string, logger *slog.Logger) (*FileStorage, error) {
	s := &FileStorage{MemoryStorage: raft.NewMemoryStorage(), logger: logger, dir: dir}
	if dir == "" {
		return s, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("quorum: create storage dir: %w", err)
	}
	snap, err := loadNewestSnapshot(dir, logger)
	if err != nil {
		return nil, err
	}
	if snap != nil {
		if err := s.ApplySnapshot(snap); err != nil {
			return nil, fmt.Errorf("quorum: apply snapshot file: %w", err)
		}
	}
	s.base, err = logBase(dir, snap.GetMetadata().GetIndex())
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, logName(s.base))
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("quorum: read log: %w", err)
	}
	good, err := s.replay(data)
	if err != nil {
		return nil, err
	}
	if err := s.coverSnapshot(snap); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("quorum: open log: %w", err)
	}
	s.off, s.size = int64(good), int64(len(data))
	if good < len(data) && !allZero(data[good:]) {
		logger.Warn("truncating torn log tail", "path", path, "offset", good, "size", len(data))
		if err := f.Truncate(int64(good)); err != nil {
			f.Close()
			return nil, fmt.Errorf("quorum: truncate log: %w", err)
		}
		s.size = s.off
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	s.f = f
	return s, nil
}

// allZero reports whether b holds only zeros: the preallocated end of a log, not a
// torn record.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// coverSnapshot raises a replayed hard state that is behind snap: after a crash
// between a received snapshot's file and the log that follows it, the last hard
// state on disk predates the snapshot, but what the snapshot holds is committed.
func (s *FileStorage) coverSnapshot(snap *raftpb.Snapshot) error {
	if snap == nil {
		return nil
	}
	hs, _, err := s.InitialState()
	if err != nil {
		return err
	}
	md := snap.GetMetadata()
	if hs.GetCommit() >= md.GetIndex() && hs.GetTerm() >= md.GetTerm() {
		return nil
	}
	fixed := &raftpb.HardState{Term: new(hs.GetTerm()), Vote: new(hs.GetVote()), Commit: new(max(hs.GetCommit(), md.GetIndex()))}
	if hs.GetTerm() < md.GetTerm() {
		fixed.Term, fixed.Vote = new(md.GetTerm()), new(uint64(0))
	}
	return s.SetHardState(fixed)
}

// replay loads the records of data into memory and returns the length of the whole
// records it read.
func (s *FileStorage) replay(data []byte) (int, error) {
	off := 0
	for len(data)-off >= recHeader {
		sum := binary.LittleEndian.Uint32(data[off:])
		n := int(binary.LittleEndian.Uint32(data[off+4:]))
		if n > maxRecord || len(data)-off-recHeader < n {
			break
		}
		body := data[off+8 : off+recHeader+n] // type + payload
		if crc32.Checksum(body, castagnoli) != sum {
			break
		}
		if err := s.load(body[0], body[1:]); err != nil {
			return 0, fmt.Errorf("quorum: replay record at %d: %w", off, err)
		}
		off += recHeader + n
	}
	return off, nil
}

// load applies one replayed record to the memory storage.
func (s *FileStorage) load(typ byte, payload []byte) error {
	switch typ {
	case recEntry:
		var e raftpb.Entry
		if err := proto.Unmarshal(payload, &e); err != nil {
			return err
		}
		return s.MemoryStorage.Append([]*raftpb.Entry{&e})
	case recHardState:
		var hs raftpb.HardState
		if err := proto.Unmarshal(payload, &hs); err != nil {
			return err
		}
		return s.SetHardState(&hs)
	case recSnapshot:
		var snap raftpb.Snapshot
		if err := proto.Unmarshal(payload, &snap); err != nil {
			return err
		}
		if err := s.ApplySnapshot(&snap); err != nil && !errors.Is(err, raft.ErrSnapOutOfDate) {
			return err
		}
		return nil
	default:
		return fmt.Errorf("unknown record type %d", typ)
	}
}

// Save implements Storage: the file first (and its fsync when sync), then memory,
// so that what the Raft library reads back is never ahead of what is durable.
// A snapshot (one received from the leader) is kept like Checkpoint's: its file,
// then a new log after it, which the entries and hard state then go to.
func (s *FileStorage) Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot, sync bool) error {
	if snap != nil && !raft.IsEmptySnap(snap) {
		if err := s.writeSnapshot(snap); err != nil {
			return err
		}
		if err := s.ApplySnapshot(snap); err != nil {
			return fmt.Errorf("quorum: apply snapshot: %w", err)
		}
		if err := s.rotate(snap.GetMetadata().GetIndex()); err != nil {
			return err
		}
	}
	if err := s.write(hs, ents, sync); err != nil {
		return err
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

// write appends the records of one Save to the file in one write call.
func (s *FileStorage) write(hs *raftpb.HardState, ents []*raftpb.Entry, sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	var err error
	s.buf, err = encodeRecords(s.buf[:0], hs, ents)
	if err != nil {
		return fmt.Errorf("quorum: encode record: %w", err)
	}
	if len(s.buf) == 0 {
		return nil
	}
	if end := s.off + int64(len(s.buf)); end > s.size {
		if err := s.extend(end); err != nil {
			return err
		}
	}
	if _, err := s.f.WriteAt(s.buf, s.off); err != nil {
		return fmt.Errorf("quorum: write log: %w", err)
	}
	s.off += int64(len(s.buf))
	if sync {
		if err := fdatasync(s.f); err != nil {
			return fmt.Errorf("quorum: sync log: %w", err)
		}
	}
	return nil
}

// extend writes zeros from the end of the log file to preallocChunk past need and
// makes the new size durable. The caller holds s.mu.
func (s *FileStorage) extend(need int64) error {
	zeros := make([]byte, 1<<20)
	size := need + preallocChunk
	for at := s.size; at < size; at += int64(len(zeros)) {
		if _, err := s.f.WriteAt(zeros[:min(int64(len(zeros)), size-at)], at); err != nil {
			return fmt.Errorf("quorum: extend log: %w", err)
		}
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("quorum: extend log: %w", err)
	}
	s.size = size
	return nil
}

// encodeRecords appends the records of ents, then of hs if not empty, to dst.
func encodeRecords(dst []byte, hs *raftpb.HardState, ents []*raftpb.Entry) ([]byte, error) {
	var err error
	for _, e := range ents {
		if dst, err = appendRecord(dst, recEntry, e); err != nil {
			return dst, err
		}
	}
	if hs != nil && !raft.IsEmptyHardState(hs) {
		dst, err = appendRecord(dst, recHardState, hs)
	}
	return dst, err
}

// appendRecord frames m as a record: crc32c | len | type | payload, where the
// checksum covers the type and the payload.
func appendRecord(dst []byte, typ byte, m proto.Message) ([]byte, error) {
	start := len(dst)
	dst = append(dst, make([]byte, recHeader)...)
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return dst[:start], err
	}
	dst[start+8] = typ
	binary.LittleEndian.PutUint32(dst[start+4:], uint32(len(dst)-start-recHeader))
	binary.LittleEndian.PutUint32(dst[start:], crc32.Checksum(dst[start+8:], castagnoli))
	return dst, nil
}

// Close implements Storage. It is idempotent.
func (s *FileStorage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	// A log closed cleanly ends at its last record; the zeros ahead are for a
	// running log only.
	err := s.f.Truncate(s.off)
	err = errors.Join(err, s.f.Close())
	s.f = nil
	return err
}

// syncDir makes the directory entry of a newly created log durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("quorum: open dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("quorum: sync dir: %w", err)
	}
	return nil
}
