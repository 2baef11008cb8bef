package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/server/store"
)

// The previous format of a member's directory, read once to convert it:
//
//	snap-<index>.snap    one record: a raftpb.Snapshot (metadata and the caller's data)
//	raft-<index>.log     records: the entries after that snapshot and hard states
//	raft.log             the log when no snapshot was ever taken (index 0)
//
// A record is crc32c | len | type | payload (uint32s little-endian, the CRC over type
// and payload); type 1 is a raftpb.Entry, 2 a raftpb.HardState, 3 a raftpb.Snapshot.
//
// Conversion, each step durable before the next, so that a crash anywhere is redone
// at the next start: the old files move into legacy/; the new log and snapshot
// directories are emptied and written from them; legacy/CONVERTED is created. The old
// files stay in legacy/ for the operator to remove.

const (
	legacySubdir   = "legacy"
	legacyDoneFile = "CONVERTED"
	legacyHeader   = 9
	legacyMaxRec   = 256 << 20
)

var legacyCRC = crc32.MakeTable(crc32.Castagnoli)

// isLegacyFile reports whether name is that of a file the previous format kept in a
// member's directory.
func isLegacyFile(name string) bool {
	return name == "raft.log" || strings.HasPrefix(name, "raft-") && strings.HasSuffix(name, ".log") ||
		strings.HasPrefix(name, "snap-") && strings.HasSuffix(name, ".snap")
}

// errLegacyFormat refuses a member directory written by the previous format that
// cannot be converted.
var errLegacyFormat = errors.New("quorum: the member directory holds a Raft log in the previous format")

// convertLegacy converts a directory the previous format wrote, if it is one. split
// splits the state machine's data of an old snapshot into its records; without it a
// directory holding an old snapshot is refused.
func (s *WALStorage) convertLegacy(split func(data []byte, fn func([]byte) error) error) error {
	legacy := filepath.Join(s.cfg.Dir, legacySubdir)
	moved, err := s.moveLegacy(legacy)
	if err != nil {
		return err
	}
	if !moved && !s.exists(legacy) || s.exists(filepath.Join(legacy, legacyDoneFile)) {
		return nil
	}
	snap, ms, err := loadLegacy(s.fs, legacy, s.logger)
	if err != nil {
		return fmt.Errorf("quorum: convert %s: %w", legacy, err)
	}
	if snap != nil && split == nil {
		return s.refuseLegacy(legacy)
	}
	for _, sub := range []string{logSubdir, snapSubdir, recvSubdir} {
		if err := s.emptyDir(filepath.Join(s.cfg.Dir, sub)); err != nil {
			return err
		}
	}
	if err := s.writeConverted(snap, ms, split); err != nil {
		return fmt.Errorf("quorum: convert %s: %w", legacy, err)
	}
	f, err := s.fs.OpenFile(filepath.Join(legacy, legacyDoneFile), os.O_WRONLY|os.O_CREATE, 0o640)
	if err == nil {
		err = errors.Join(f.Sync(), f.Close(), s.fs.SyncDir(legacy))
	}
	if err != nil {
		return fmt.Errorf("quorum: convert %s: %w", legacy, err)
	}
	last, _ := ms.LastIndex()
	s.logger.Warn("raft log converted from the previous format; the old files are kept", "dir", legacy,
		"snapshot_index", snap.GetMetadata().GetIndex(), "last_index", last)
	return nil
}

// exists reports whether the directory or file at path exists.
func (s *WALStorage) exists(path string) bool {
	if _, err := s.fs.ReadDir(path); err == nil {
		return true
	}
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// moveLegacy moves the old files at the top of the directory into legacy/, and says
// whether there were any.
func (s *WALStorage) moveLegacy(legacy string) (bool, error) {
	des, err := s.fs.ReadDir(s.cfg.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("quorum: list %s: %w", s.cfg.Dir, err)
	}
	var old []string
	for _, de := range des {
		if isLegacyFile(de.Name()) {
			old = append(old, de.Name())
		}
	}
	if len(old) == 0 {
		return false, nil
	}
	if err := s.fs.MkdirAll(legacy, 0o750); err != nil {
		return false, fmt.Errorf("quorum: %w", err)
	}
	for _, name := range old {
		if err := s.fs.Rename(filepath.Join(s.cfg.Dir, name), filepath.Join(legacy, name)); err != nil {
			return false, fmt.Errorf("quorum: move %s into %s: %w", name, legacy, err)
		}
	}
	if err := errors.Join(s.fs.SyncDir(legacy), s.fs.SyncDir(s.cfg.Dir)); err != nil {
		return false, fmt.Errorf("quorum: %w", err)
	}
	return true, nil
}

// emptyDir removes every file in dir: what an interrupted conversion wrote.
func (s *WALStorage) emptyDir(dir string) error {
	des, err := s.fs.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("quorum: list %s: %w", dir, err)
	}
	for _, de := range des {
		if err := s.fs.Remove(filepath.Join(dir, de.Name())); err != nil {
			return fmt.Errorf("quorum: %w", err)
		}
	}
	return s.fs.SyncDir(dir)
}

// writeConverted writes the state the old files held in the new format: the
// snapshot's file, then the entries after it and the hard state in a new WAL.
func (s *WALStorage) writeConverted(snap *raftpb.Snapshot, ms *raft.MemoryStorage, split func([]byte, func([]byte) error) error) error {
	if snap != nil {
		md := snap.GetMetadata()
		first, err := proto.Marshal(md)
		if err != nil {
			return err
		}
		w, err := store.CreateSnapshot(filepath.Join(s.cfg.Dir, snapSubdir), int64(md.GetIndex()), s.fs)
		if err != nil {
			return err
		}
		err = w.Append(first)
		if err == nil {
			err = split(snap.GetData(), w.Append)
		}
		if err == nil {
			err = w.Commit()
		}
		if err != nil {
			w.Abort()
			return fmt.Errorf("snapshot at index %d: %w", md.GetIndex(), err)
		}
	}
	wcfg := store.DefaultConfig()
	wcfg.Dir, wcfg.FS, wcfg.PrepareSegments = filepath.Join(s.cfg.Dir, logSubdir), s.fs, false
	if s.cfg.SegmentSize > 0 {
		wcfg.SegmentSize = s.cfg.SegmentSize
	}
	wal, err := store.Open(wcfg, s.logger)
	if err != nil {
		return err
	}
	tmp := &WALStorage{wal: wal}
	first, _ := ms.FirstIndex()
	last, _ := ms.LastIndex()
	if last >= first {
		ents, err := ms.Entries(first, last+1, 1<<62)
		if err != nil {
			wal.Close()
			return err
		}
		for _, e := range ents {
			if _, err := tmp.appendRecord(recEntry, e); err != nil {
				wal.Close()
				return err
			}
		}
	}
	if hs, _, _ := ms.InitialState(); !raft.IsEmptyHardState(hs) {
		if _, err := tmp.appendRecord(recHardState, hs); err != nil {
			wal.Close()
			return err
		}
	}
	return errors.Join(wal.Sync(), wal.Close())
}

// loadLegacy reads the old files in dir as the previous version did: the newest
// snapshot that reads back whole, then the log that follows it, whose torn tail is
// dropped.
func loadLegacy(fsys store.FS, dir string, logger *slog.Logger) (*raftpb.Snapshot, *raft.MemoryStorage, error) {
	ms := raft.NewMemoryStorage()
	des, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var snaps, logs []uint64
	for _, de := range des {
		name := de.Name()
		if v, ok := legacyIndex(name, "snap-", ".snap"); ok {
			snaps = append(snaps, v)
		} else if v, ok := legacyIndex(name, "raft-", ".log"); ok {
			logs = append(logs, v)
		} else if name == "raft.log" {
			logs = append(logs, 0)
		}
	}
	slices.Sort(snaps)
	slices.Sort(logs)
	var snap *raftpb.Snapshot
	for _, i := range slices.Backward(snaps) {
		path := filepath.Join(dir, fmt.Sprintf("snap-%016x.snap", i))
		snap, err = readLegacySnapshot(fsys, path)
		if err == nil && snap.GetMetadata().GetIndex() == i {
			break
		}
		logger.Warn("skipping damaged snapshot file of the previous format", "path", path, "err", err)
		snap = nil
	}
	snapIndex := snap.GetMetadata().GetIndex()
	if snap != nil {
		if err := ms.ApplySnapshot(&raftpb.Snapshot{Metadata: snap.GetMetadata()}); err != nil {
			return nil, nil, err
		}
	}
	base, found := uint64(0), false
	for _, b := range slices.Backward(logs) {
		if b <= snapIndex {
			base, found = b, true
			break
		}
	}
	if !found {
		return snap, ms, coverLegacy(ms, snap)
	}
	name := "raft.log"
	if base > 0 {
		name = fmt.Sprintf("raft-%016x.log", base)
	}
	data, err := readAll(fsys, filepath.Join(dir, name))
	if err != nil {
		return nil, nil, err
	}
	for off := 0; len(data)-off >= legacyHeader; {
		n := int(binary.LittleEndian.Uint32(data[off+4:]))
		if n > legacyMaxRec || len(data)-off-legacyHeader < n {
			break
		}
		body := data[off+8 : off+legacyHeader+n]
		if crc32.Checksum(body, legacyCRC) != binary.LittleEndian.Uint32(data[off:]) {
			break
		}
		if snap, err = loadLegacyRecord(ms, snap, body[0], body[1:]); err != nil {
			return nil, nil, fmt.Errorf("%s at offset %d: %w", name, off, err)
		}
		off += legacyHeader + n
	}
	return snap, ms, coverLegacy(ms, snap)
}

// loadLegacyRecord applies one old log record to ms; a snapshot record newer than
// snap (logs written before snapshot files existed held them) becomes the snapshot.
func loadLegacyRecord(ms *raft.MemoryStorage, snap *raftpb.Snapshot, typ byte, p []byte) (*raftpb.Snapshot, error) {
	switch typ {
	case 1:
		e := new(raftpb.Entry)
		if err := proto.Unmarshal(p, e); err != nil {
			return snap, err
		}
		first, _ := ms.FirstIndex()
		last, _ := ms.LastIndex()
		switch {
		case e.GetIndex() < first:
			return snap, nil
		case e.GetIndex() > last+1:
			return snap, fmt.Errorf("entry at index %d follows index %d", e.GetIndex(), last)
		}
		return snap, ms.Append([]*raftpb.Entry{e})
	case 2:
		hs := new(raftpb.HardState)
		if err := proto.Unmarshal(p, hs); err != nil {
			return snap, err
		}
		return snap, ms.SetHardState(hs)
	case 3:
		s := new(raftpb.Snapshot)
		if err := proto.Unmarshal(p, s); err != nil {
			return snap, err
		}
		if s.GetMetadata().GetIndex() <= snap.GetMetadata().GetIndex() {
			return snap, nil
		}
		return s, ms.ApplySnapshot(&raftpb.Snapshot{Metadata: s.GetMetadata()})
	}
	return snap, fmt.Errorf("unknown record type %d", typ)
}

// coverLegacy raises a hard state behind the snapshot, as the previous version did.
func coverLegacy(ms *raft.MemoryStorage, snap *raftpb.Snapshot) error {
	if snap == nil {
		return nil
	}
	hs, _, _ := ms.InitialState()
	md := snap.GetMetadata()
	if hs.GetCommit() >= md.GetIndex() && hs.GetTerm() >= md.GetTerm() {
		return nil
	}
	fixed := &raftpb.HardState{Term: new(hs.GetTerm()), Vote: new(hs.GetVote()), Commit: new(max(hs.GetCommit(), md.GetIndex()))}
	if hs.GetTerm() < md.GetTerm() {
		fixed.Term, fixed.Vote = new(md.GetTerm()), new(uint64(0))
	}
	return ms.SetHardState(fixed)
}

// readLegacySnapshot reads an old snapshot file: exactly one type 3 record.
func readLegacySnapshot(fsys store.FS, path string) (*raftpb.Snapshot, error) {
	data, err := readAll(fsys, path)
	if err != nil {
		return nil, err
	}
	if len(data) < legacyHeader {
		return nil, errors.New("short file")
	}
	if n := binary.LittleEndian.Uint32(data[4:]); uint64(n) != uint64(len(data)-legacyHeader) || data[8] != 3 {
		return nil, errors.New("bad record header")
	}
	if crc32.Checksum(data[8:], legacyCRC) != binary.LittleEndian.Uint32(data) {
		return nil, errors.New("checksum mismatch")
	}
	snap := new(raftpb.Snapshot)
	return snap, proto.Unmarshal(data[legacyHeader:], snap)
}

func legacyIndex(name, prefix, suffix string) (uint64, bool) {
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

// readAll reads the file at path whole (the previous format's files were read so).
func readAll(fsys store.FS, path string) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
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
