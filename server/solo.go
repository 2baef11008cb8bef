package server

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/store"
	"github.com/paddock/paddock/server/txn"
)

// snapDir and logDir are where snapshots and the write-ahead log live.
func (s *Server) snapDir() string { return snapDirOf(s.cfg.DataDir) }
func (s *Server) logDir() string  { return logDirOf(s.cfg.DataDir, s.cfg.DataLogDir) }

// snapDirOf and logDirOf say where a data directory keeps snapshots and the log (in
// dataLogDir when set), for the server and for DumpStore.
func snapDirOf(dataDir string) string { return filepath.Join(dataDir, "snap") }

func logDirOf(dataDir, dataLogDir string) string {
	if dataLogDir == "" {
		dataLogDir = dataDir
	}
	return filepath.Join(dataLogDir, "log")
}

// readTree loads the tree a snapshot file holds, checking it whole.
func readTree(path string, fsys store.FS) (*datatree.Tree, error) {
	l := datatree.NewLoader()
	if _, err := store.ReadSnapshot(path, fsys, l.Add); err != nil {
		l.Abort()
		return nil, err
	}
	return l.Tree()
}

// nextSnapCount draws how many txns to apply before the next snapshot, from
// [SnapCount/2+1, SnapCount] as ZooKeeper does, so servers sharing a disk spread out.
func (s *Server) nextSnapCount() int {
	half := s.cfg.SnapCount / 2
	return half + 1 + rand.IntN(s.cfg.SnapCount-half)
}

// loadSnapshot loads the newest snapshot that reads back whole, falling back to older
// ones (and saying so) when one is damaged. With none, it returns a fresh tree.
func (s *Server) loadSnapshot() (*datatree.Tree, error) {
	tmps, err := store.RemoveSnapshotTemps(s.snapDir(), s.fs)
	if err != nil {
		return nil, err
	}
	if len(tmps) > 0 {
		s.logger.Warn("removed unfinished snapshots", "files", tmps)
	}
	snaps, err := store.ListSnapshots(s.snapDir(), s.fs)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	for _, info := range snaps {
		start := time.Now()
		t, err := readTree(info.Path, s.fs)
		if err != nil {
			s.logger.Error("snapshot unusable, trying an older one", "file", info.Path, "err", err)
			continue
		}
		s.logger.Info("snapshot loaded", "file", info.Path, "zxid", hexID(t.LastZxid()),
			"nodes", t.NodeCount()-1, "sessions", len(t.Sessions()), "took", time.Since(start).Round(time.Millisecond))
		return t, nil
	}
	return datatree.New(), nil
}

// replayLog applies the log records after the tree's zxid and returns how many it applied.
func (s *Server) replayLog(t *datatree.Tree) (int, error) {
	n := 0
	err := s.wal.Replay(t.LastZxid(), func(zxid int64, payload []byte) error {
		x, err := txn.Decode(payload)
		if err != nil {
			return fmt.Errorf("txn %s: %w", hexID(zxid), err)
		}
		x.Zxid = zxid
		txn.Apply(t, x, s.txnOpts)
		n++
		return nil
	})
	if errors.Is(err, store.ErrGap) {
		return n, fmt.Errorf("the log does not reach back to the snapshot at %s (were log segments deleted by hand?): %w",
			hexID(t.LastZxid()), err)
	}
	return n, err
}

// maybeSnapshotLocked starts a background snapshot once enough txns have been applied
// since the last one. If the previous snapshot is still being written, this one is
// skipped and the count starts again, as ZooKeeper's "too busy to snap, skipping" does:
// retrying at every txn would have a loaded server snapshot back to back. The caller
// holds the tree write lock: taking the snapshot is an O(1) clone, and writing it
// happens on another goroutine while the tree keeps changing.
func (s *Server) maybeSnapshotLocked() {
	s.sinceSnap++
	if s.sinceSnap < s.snapAt {
		return
	}
	s.sinceSnap, s.snapAt = 0, s.nextSnapCount()
	if !s.snapshotLocked() {
		s.logger.Warn("too busy to snapshot, skipping: the previous snapshot is still being written")
	}
}

// snapshotLocked starts writing a snapshot of the tree as it is now, unless one is
// already being written; it reports whether it started one.
func (s *Server) snapshotLocked() bool {
	if !s.snapshotting.CompareAndSwap(false, true) {
		return false
	}
	snap := s.tree.Snapshot()
	s.goroutine(func() {
		defer s.snapshotting.Store(false)
		if err := s.writeSnapshot(snap); err != nil {
			// The log still holds everything: a failed snapshot costs recovery time only.
			s.logger.Error("snapshot failed", "zxid", hexID(snap.Zxid), "err", err)
		}
	})
	return true
}

// writeSnapshot writes snap to a temp file, then renames it into place.
func (s *Server) writeSnapshot(snap *datatree.Snapshot) error {
	start := time.Now()
	w, err := store.CreateSnapshot(s.snapDir(), snap.Zxid, s.fs)
	if err != nil {
		return err
	}
	records := 0
	err = snap.Records(func(p []byte) error {
		records++
		select {
		case <-s.stopping:
			return errShuttingDown
		default:
		}
		return w.Append(p)
	})
	if err == nil {
		err = w.Commit()
	}
	if err != nil {
		w.Abort()
		return err
	}
	s.logger.Info("snapshot written", "zxid", hexID(snap.Zxid), "records", records, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// purgeLoop keeps SnapRetainCount snapshots and deletes older snapshots and the log
// segments only they needed, at start and then every PurgeInterval (ZooKeeper's
// autopurge, which also runs first at start: a server restarted more often than the
// interval still purges).
func (s *Server) purgeLoop() {
	if s.cfg.PurgeInterval <= 0 {
		return
	}
	ticker := time.NewTicker(s.cfg.PurgeInterval)
	defer ticker.Stop()
	for {
		if err := s.purge(); err != nil {
			s.logger.Error("purge failed", "err", err)
		}
		select {
		case <-s.stopping:
			return
		case <-ticker.C:
		}
	}
}

func (s *Server) purge() error {
	removed, oldest, err := store.PurgeSnapshots(s.snapDir(), s.fs, s.cfg.SnapRetainCount)
	if err != nil {
		return fmt.Errorf("purge snapshots: %w", err)
	}
	if oldest <= 0 {
		return nil // fewer snapshots than retained: the log is all still needed
	}
	segments, err := s.wal.PurgeBefore(oldest)
	if err != nil {
		return fmt.Errorf("purge log: %w", err)
	}
	if len(removed)+len(segments) > 0 {
		s.logger.Info("purged", "snapshots", len(removed), "log_segments", len(segments), "oldest_snapshot", hexID(oldest))
	}
	return nil
}
