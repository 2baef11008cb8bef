package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Snapshotter is the caller's state machine as a whole, for log compaction. The
// Node calls it from its Ready loop only, never concurrently with ApplyFunc.
type Snapshotter interface {
	// Snapshot returns the state machine's whole state as of the last index
	// ApplyFunc was given (or Restore restored). The Node keeps the bytes.
	Snapshot() ([]byte, error)
	// Restore replaces the state machine's state with data, a Snapshot taken at
	// index in term (by this member or by the leader). ApplyFunc then continues
	// from index+1.
	Restore(data []byte, index, term uint64) error
}

// SnapshotChecker is a Snapshotter that can tell whether a snapshot's data would
// restore, without restoring it. A member whose Snapshotter is one checks every
// snapshot a peer sends before Raft takes it: one it could not restore would stop it.
// CheckSnapshot runs on a connection's read goroutine, concurrently with the Ready loop.
type SnapshotChecker interface {
	CheckSnapshot(data []byte) error
}

// File names in a FileStorage directory: snapshots and the logs that follow them,
// named by the snapshot's index in 16 hex digits. logFile is the log that follows
// no snapshot.
const (
	snapPrefix = "snap-"
	snapSuffix = ".snap"
	logPrefix  = "raft-"
	logSuffix  = ".log"
	tmpSuffix  = ".tmp"
)

func snapName(index uint64) string { return fmt.Sprintf("%s%016x%s", snapPrefix, index, snapSuffix) }

func logName(base uint64) string {
	if base == 0 {
		return logFile
	}
	return fmt.Sprintf("%s%016x%s", logPrefix, base, logSuffix)
}

// parseName returns the index in a snapshot or log file name made by snapName or
// logName with prefix and suffix.
func parseName(name, prefix, suffix string) (uint64, bool) {
	if name == logFile && prefix == logPrefix {
		return 0, true
	}
	hex, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	if hex, ok = strings.CutSuffix(hex, suffix); !ok || len(hex) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	return v, err == nil
}

// listIndexes returns the indexes of dir's files named with prefix and suffix,
// newest first.
func listIndexes(dir, prefix, suffix string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("quorum: list storage dir: %w", err)
	}
	var idx []uint64
	for _, de := range des {
		if v, ok := parseName(de.Name(), prefix, suffix); ok {
			idx = append(idx, v)
		}
	}
	slices.Sort(idx)
	slices.Reverse(idx)
	return idx, nil
}

// loadNewestSnapshot returns the newest snapshot file of dir that reads back whole
// (nil if none). A damaged one is skipped with a warning.
func loadNewestSnapshot(dir string, logger *slog.Logger) (*raftpb.Snapshot, error) {
	idx, err := listIndexes(dir, snapPrefix, snapSuffix)
	if err != nil {
		return nil, err
	}
	for _, i := range idx {
		path := filepath.Join(dir, snapName(i))
		snap, err := readSnapshot(path)
		if err == nil && snap.GetMetadata().GetIndex() == i {
			return snap, nil
		}
		logger.Warn("skipping damaged snapshot file", "path", path, "err", err)
	}
	return nil, nil
}

// readSnapshot reads a snapshot file: exactly one recSnapshot record.
func readSnapshot(path string) (*raftpb.Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) < recHeader {
		return nil, errors.New("short file")
	}
	n := binary.LittleEndian.Uint32(data[4:])
	if uint64(n) != uint64(len(data)-recHeader) || data[8] != recSnapshot {
		return nil, errors.New("bad record header")
	}
	if crc32.Checksum(data[8:], castagnoli) != binary.LittleEndian.Uint32(data) {
		return nil, errors.New("checksum mismatch")
	}
	snap := new(raftpb.Snapshot)
	if err := proto.Unmarshal(data[recHeader:], snap); err != nil {
		return nil, err
	}
	return snap, nil
}

// logBase returns the base of the log to replay after the snapshot at snapIndex:
// the newest log that does not start after it. A newer one cannot be whole (it is
// only created once its snapshot is durable); with none, the log starts at
// snapIndex.
func logBase(dir string, snapIndex uint64) (uint64, error) {
	bases, err := listIndexes(dir, logPrefix, logSuffix)
	if err != nil {
		return 0, err
	}
	for _, b := range bases {
		if b <= snapIndex {
			return b, nil
		}
	}
	return snapIndex, nil
}

// writeFileSync writes data to dir/name durably: a temporary file, fsynced, renamed
// over name, then the directory fsynced.
func writeFileSync(dir, name string, data []byte) error {
	tmp := filepath.Join(dir, name+tmpSuffix)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("quorum: create %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("quorum: write %s: %w", name, err)
	}
	return syncDir(dir)
}

// writeSnapshot makes snap durable in its snapshot file.
func (s *FileStorage) writeSnapshot(snap *raftpb.Snapshot) error {
	if s.dir == "" {
		return nil
	}
	rec, err := appendRecord(nil, recSnapshot, snap)
	if err != nil {
		return fmt.Errorf("quorum: encode snapshot: %w", err)
	}
	return writeFileSync(s.dir, snapName(snap.GetMetadata().GetIndex()), rec)
}

// Checkpoint implements Storage. On disk, in this order, each step durable before
// the next: the snapshot file; a new log holding the entries after index and the
// hard state; then the older logs and snapshots are removed. A crash between any
// two steps leaves a directory that Open recovers (see recoverFiles).
func (s *FileStorage) Checkpoint(index uint64, cs *raftpb.ConfState, data []byte, keep uint64) error {
	cur, err := s.MemoryStorage.Snapshot()
	if err != nil {
		return err
	}
	if index <= cur.GetMetadata().GetIndex() {
		return nil
	}
	term, err := s.Term(index)
	if err != nil {
		return fmt.Errorf("quorum: snapshot term at %d: %w", index, err)
	}
	snap := &raftpb.Snapshot{Data: data, Metadata: &raftpb.SnapshotMetadata{
		Index: new(index), Term: new(term), ConfState: proto.Clone(cs).(*raftpb.ConfState)}}
	if err := s.writeSnapshot(snap); err != nil {
		return err
	}
	if _, err := s.MemoryStorage.CreateSnapshot(index, cs, data); err != nil {
		return fmt.Errorf("quorum: create snapshot: %w", err)
	}
	if err := s.rotate(index); err != nil {
		return err
	}
	if index > keep {
		if err := s.MemoryStorage.Compact(index - keep); err != nil && !errors.Is(err, raft.ErrCompacted) {
			return fmt.Errorf("quorum: compact log: %w", err)
		}
	}
	return nil
}

// rotate starts the log that follows the durable snapshot at base: it writes the
// entries after base and the hard state now in memory (everything Save has made
// durable) to a new log file, switches to it and removes the older files.
func (s *FileStorage) rotate(base uint64) error {
	if s.dir == "" {
		return nil
	}
	hs, _, err := s.InitialState()
	if err != nil {
		return err
	}
	last, err := s.LastIndex()
	if err != nil {
		return err
	}
	var ents []*raftpb.Entry
	if last > base {
		if ents, err = s.Entries(base+1, last+1, math.MaxUint64); err != nil {
			return fmt.Errorf("quorum: read entries after %d: %w", base, err)
		}
	}
	buf, err := encodeRecords(nil, hs, ents)
	if err != nil {
		return fmt.Errorf("quorum: encode record: %w", err)
	}
	name := logName(base)
	if err := writeFileSync(s.dir, name, buf); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("quorum: open log: %w", err)
	}
	s.mu.Lock()
	old := s.f
	s.f, s.base = f, base
	s.off, s.size = int64(len(buf)), int64(len(buf))
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return s.removeBefore(base)
}

// removeBefore deletes the logs and snapshots older than the snapshot at base,
// which is durable with its log.
func (s *FileStorage) removeBefore(base uint64) error {
	for _, kind := range [][2]string{{logPrefix, logSuffix}, {snapPrefix, snapSuffix}} {
		idx, err := listIndexes(s.dir, kind[0], kind[1])
		if err != nil {
			return err
		}
		for _, i := range idx {
			if i >= base {
				continue
			}
			name := logName(i)
			if kind[0] == snapPrefix {
				name = snapName(i)
			}
			if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("quorum: remove %s: %w", name, err)
			}
		}
	}
	return syncDir(s.dir)
}
