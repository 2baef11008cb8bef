package quorum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/server/store"
)

// LogRecord is one record of a member's log as ReadLog decodes it: exactly one of
// Entry, HardState and Snapshot is set.
type LogRecord struct {
	LSN       int64 // the record's key in the WAL: its log sequence number
	Entry     *raftpb.Entry
	HardState *raftpb.HardState
	Snapshot  *raftpb.SnapshotMetadata // a snapshot durable in the snapshot directory
	// From, for a snapshot record: no record before this lsn is needed any more.
	From int64
}

// ReadLog reads the log of the member directory dir without opening it for writing
// (store.ReadLog: no lock, no repair), for `paddock store dump`: fn gets every record
// in order, those a later entry overwrote or a snapshot covers included. A record that
// does not decode stops it with an error naming its lsn; damage gives the
// *store.CorruptError. A nil fsys means the operating system's.
func ReadLog(dir string, fsys store.FS, fn func(LogRecord) error) error {
	return store.ReadLog(filepath.Join(dir, logSubdir), fsys, func(lsn int64, p []byte) error {
		r, err := decodeRecord(lsn, p)
		if err != nil {
			return fmt.Errorf("quorum: raft log record %d: %w", lsn, err)
		}
		return fn(r)
	})
}

// decodeRecord decodes one WAL record of a member's log.
func decodeRecord(lsn int64, p []byte) (LogRecord, error) {
	r := LogRecord{LSN: lsn}
	if len(p) == 0 {
		return r, errors.New("empty record")
	}
	var m proto.Message
	switch p[0] {
	case recEntry:
		r.Entry = new(raftpb.Entry)
		m = r.Entry
	case recHardState:
		r.HardState = new(raftpb.HardState)
		m = r.HardState
	case recSnapshot:
		if len(p) < 9 {
			return r, errors.New("snapshot record too short")
		}
		r.Snapshot, r.From = new(raftpb.SnapshotMetadata), int64(binary.BigEndian.Uint64(p[1:]))
		return r, proto.Unmarshal(p[9:], r.Snapshot)
	default:
		return r, fmt.Errorf("unknown record type %d", p[0])
	}
	return r, proto.Unmarshal(p[1:], m)
}

// Snapshots lists the snapshot files of the member directory dir, newest first.
func Snapshots(dir string, fsys store.FS) ([]store.SnapshotInfo, error) {
	return store.ListSnapshots(filepath.Join(dir, snapSubdir), fsys)
}

// ReadSnapshotFile reads a member's snapshot file whole: it returns its Raft
// metadata and hands fn the state machine's records. As with store.ReadSnapshot, what
// fn built is good only if it returns nil.
func ReadSnapshotFile(path string, fsys store.FS, fn func(record []byte) error) (*raftpb.SnapshotMetadata, error) {
	var md *raftpb.SnapshotMetadata
	_, err := store.ReadSnapshot(path, fsys, func(p []byte) error {
		if md == nil {
			md = new(raftpb.SnapshotMetadata)
			return proto.Unmarshal(p, md)
		}
		return fn(p)
	})
	if err == nil && md == nil {
		err = fmt.Errorf("quorum: snapshot %s: no raft metadata record", path)
	}
	return md, err
}

// SplitProposal splits a normal entry's data into the proposal header (the
// proposing member and its sequence number) and the caller's data; ok is false for
// data shorter than the header.
func SplitProposal(data []byte) (from, seq uint64, rest []byte, ok bool) {
	if len(data) < proposalHeader {
		return 0, 0, data, false
	}
	return binary.BigEndian.Uint64(data), binary.BigEndian.Uint64(data[8:]), data[proposalHeader:], true
}
