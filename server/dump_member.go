package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/store"
)

// dumpMember prints the Raft directory of an ensemble member, if dir is one: its
// snapshots (metadata, then the tree as dumpSnapshot prints it) and its log's
// records — entries by index with their batch sizes, hard states and snapshot
// records — in the log's order, overwritten entries included.
func dumpMember(w io.Writer, dir string) error {
	if !exists(dir) {
		return nil
	}
	var errs []error
	snaps, err := quorum.Snapshots(dir, nil)
	if err != nil {
		return err
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		if err := dumpMemberSnapshot(w, snaps[i]); err != nil {
			fmt.Fprintf(w, "  ! %v\n", err)
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(w, "raft log %s\n", dir)
	records := 0
	err = quorum.ReadLog(dir, nil, func(r quorum.LogRecord) error {
		records++
		fmt.Fprintf(w, "  %s\n", describeLogRecord(r))
		return nil
	})
	if err != nil {
		fmt.Fprintf(w, "  ! raft log ends: %v\n", err)
		errs = append(errs, err)
	}
	fmt.Fprintf(w, "  (%d records)\n", records)
	return errors.Join(errs...)
}

// isMember reports whether the data directory holds an ensemble member's Raft directory.
func isMember(dataDir, logDir string) bool { return exists(raftDirOf(dataDir, logDir)) }

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

func dumpMemberSnapshot(w io.Writer, info store.SnapshotInfo) error {
	l := datatree.NewLoader()
	md, err := quorum.ReadSnapshotFile(info.Path, nil, l.Add)
	fmt.Fprintf(w, "raft snapshot %s (index %d, term %d, %s, %d bytes)\n", info.Path, md.GetIndex(), md.GetTerm(),
		describeConfState(md.GetConfState()), info.Size)
	if err != nil {
		l.Abort()
		return err
	}
	t, err := l.Tree()
	if err != nil {
		return err
	}
	dumpTree(w, t)
	return nil
}

// describeLogRecord prints one record of a member's log on a line.
func describeLogRecord(r quorum.LogRecord) string {
	switch {
	case r.Entry != nil:
		e := r.Entry
		head := fmt.Sprintf("lsn %d entry index=%d term=%d", r.LSN, e.GetIndex(), e.GetTerm())
		if e.GetType() != raftpb.EntryNormal {
			return fmt.Sprintf("%s %s", head, e.GetType())
		}
		if len(e.GetData()) == 0 {
			return head + " empty (a new leader's)"
		}
		from, seq, data, ok := quorum.SplitProposal(e.GetData())
		if !ok {
			return fmt.Sprintf("%s ! %d bytes without a proposal header", head, len(e.GetData()))
		}
		batch, err := decodeBatch(data)
		if err != nil {
			return fmt.Sprintf("%s from=%d seq=%d ! undecodable batch: %v", head, from, seq, err)
		}
		return fmt.Sprintf("%s from=%d seq=%d txns=%d bytes=%d", head, from, seq, len(batch), len(data))
	case r.HardState != nil:
		hs := r.HardState
		return fmt.Sprintf("lsn %d hard state term=%d vote=%d commit=%d", r.LSN, hs.GetTerm(), hs.GetVote(), hs.GetCommit())
	default:
		md := r.Snapshot
		return fmt.Sprintf("lsn %d snapshot index=%d term=%d %s needed_from_lsn=%d", r.LSN, md.GetIndex(), md.GetTerm(),
			describeConfState(md.GetConfState()), r.From)
	}
}

func describeConfState(cs *raftpb.ConfState) string {
	return fmt.Sprintf("voters=%v learners=%v", cs.GetVoters(), cs.GetLearners())
}
