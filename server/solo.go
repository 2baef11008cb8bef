package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/store"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// solo is the log of a standalone server (docs/threads.md): its own write-ahead log
// and snapshots in the data directory. commitLoop is the log's single writer: it takes
// the proposals in batches, gives each txn the next zxid, appends the batch and makes
// it durable with one fsync; applyLoop applies the durable batches in order
// (Server.apply) and starts a snapshot every snap_count txns or so; purgeLoop deletes
// the snapshots and log segments no longer needed. A standalone server is always the
// one that expires sessions, serves whenever it runs, answers a sync from its tree and
// refuses reconfig.
type solo struct {
	s   *Server
	wal *store.WAL // set by open

	lastZxid     int64            // the last zxid handed out; owned by commitLoop (by open before it starts)
	replayed     int              // txns replayed from the log at start; set once by open
	sinceSnap    int              // txns applied since the last snapshot; owned by applyLoop (by open and start before it)
	snapAt       int              // take a snapshot when sinceSnap reaches it; owned by applyLoop
	snapshotting atomic.Bool      // a snapshot is being written
	committed    chan []*proposal // commitLoop to applyLoop: durable batches in log order
}

var _ txnLog = (*solo)(nil)

func newSolo(s *Server) *solo { return &solo{s: s, committed: make(chan []*proposal, 2)} }

// open loads the newest good snapshot and replays the write-ahead log after it.
// Sessions alive in the recovered state get a fresh timeout from now, as ZooKeeper gives
// them on load: a client that does not come back within it has its session closed.
func (sl *solo) open() error {
	s := sl.s
	if err := s.fs.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("server: data_dir: %w", err)
	}
	wcfg := store.DefaultConfig()
	wcfg.Dir = s.logDir()
	wcfg.ForceSync = s.cfg.ForceSync
	wcfg.FS = s.fs
	if s.cfg.PreAllocSize > 0 {
		wcfg.SegmentSize = s.cfg.PreAllocSize
	}
	wal, err := store.Open(wcfg, s.logger)
	if err != nil {
		return fmt.Errorf("server: open log: %w", err)
	}
	sl.wal = wal
	tree, err := sl.loadSnapshot()
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	replayed, err := sl.replayLog(tree)
	if err != nil {
		return fmt.Errorf("server: replay log: %w", err)
	}
	s.tree = tree
	sl.lastZxid = max(wal.LastZxid(), tree.LastZxid())
	s.lastApplied.Store(sl.lastZxid)
	sl.replayed, sl.sinceSnap, sl.snapAt = replayed, replayed, sl.nextSnapCount()
	now := time.Now()
	next := initialSessionID(s.cfg.ServerID, now)
	for _, sess := range tree.Sessions() {
		s.sessions.Add(sess.ID, time.Duration(sess.Timeout)*time.Millisecond, now)
		next = max(next, sess.ID)
	}
	s.nextSessionID.Store(next)
	s.logger.Info("recovered", "zxid", hexID(sl.lastZxid), "replayed_txns", replayed, "sessions", s.sessions.Len())
	return nil
}

// start snapshots what open replayed, so that the next start replays less, and starts
// the log's loops.
func (sl *solo) start() {
	if sl.sinceSnap > 0 {
		sl.sinceSnap = 0
		sl.snapshotLocked() // nothing else runs yet: no lock to take
	}
	sl.s.goroutine(sl.commitLoop)
	sl.s.goroutine(sl.applyLoop)
	sl.s.goroutine(sl.purgeLoop)
}

// halt has nothing to do: the loops stop with Server.stopping.
func (sl *solo) halt() {}

func (sl *solo) close() error {
	if sl.wal == nil {
		return nil
	}
	return sl.wal.Close()
}

func (sl *solo) takesClients(*conn, bool) (ro, ok bool) { return false, true }

// reaches is false: the standalone log holds every write it acknowledged.
func (sl *solo) reaches(context.Context, int64) bool { return false }
func (sl *solo) leading() bool                       { return true }
func (sl *solo) keptAlive(int64)                     {}

// sync is answered from the tree, in the connection's order: every write acknowledged
// before it is applied already.
func (sl *solo) sync(c *conn, r *request) bool { return c.answerInOrder(r) }

// reconfig is refused, through the log as an error txn (it consumes a zxid), as a
// standalone ZooKeeper does.
func (sl *solo) reconfig(c *conn, r *request) bool {
	r.err = wire.ErrReconfigDisabled
	return c.proposeWrite(r)
}

func (sl *solo) fillStats(st *admin.Stats) { st.Mode = admin.ModeStandalone }

// commitLoop is the log's single writer. It takes every proposal waiting, gives each the
// next zxid and the current time, appends them all to the write-ahead log and makes them
// durable with one fsync (group commit), then hands the batch to applyLoop. While a batch
// is being applied the next one is already being written.
func (sl *solo) commitLoop() {
	s := sl.s
	defer close(sl.committed)
	var enc wire.Encoder
	for {
		batch := s.nextBatch()
		if batch == nil {
			return
		}
		s.proposing(batch)
		start := time.Now()
		now := start.UnixMilli()
		for _, p := range batch {
			sl.lastZxid++
			p.txn.Zxid, p.txn.Time = sl.lastZxid, now
			enc.Reset()
			p.txn.Encode(&enc)
			if err := sl.wal.Append(p.txn.Zxid, enc.Bytes()); err != nil {
				s.fatal(fmt.Errorf("append to log: %w", err))
				return
			}
		}
		synced := time.Now()
		if err := sl.wal.Sync(); err != nil {
			s.fatal(fmt.Errorf("sync log: %w", err))
			return
		}
		s.admin.ObserveFsync(time.Since(synced))
		s.admin.ObserveStage(admin.StageLogAppend, time.Since(start))
		select {
		case sl.committed <- batch:
		case <-s.stopping:
			return
		}
	}
}

// applyLoop applies committed batches in log order (Server.apply), and after each txn
// counts towards the next snapshot. It is the tree's only writer, so a snapshot taken
// right after a txn's apply holds the tree as that txn left it.
func (sl *solo) applyLoop() {
	for batch := range sl.committed {
		for _, p := range batch {
			sl.s.apply(p)
			if sl.sinceSnap++; sl.sinceSnap >= sl.snapAt {
				sl.snapshot()
			}
		}
	}
}

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
func (sl *solo) nextSnapCount() int {
	s := sl.s
	half := s.cfg.SnapCount / 2
	return half + 1 + rand.IntN(s.cfg.SnapCount-half)
}

// loadSnapshot loads the newest snapshot that reads back whole, falling back to older
// ones (and saying so) when one is damaged. With none, it returns a fresh tree.
func (sl *solo) loadSnapshot() (*datatree.Tree, error) {
	s := sl.s
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
func (sl *solo) replayLog(t *datatree.Tree) (int, error) {
	s := sl.s
	n := 0
	err := sl.wal.Replay(t.LastZxid(), func(zxid int64, payload []byte) error {
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

// snapshot starts a background snapshot, as applyLoop counted enough txns since the
// last one. If the previous snapshot is still being written, this one is skipped and
// the count starts again, as ZooKeeper's "too busy to snap, skipping" does: retrying at
// every txn would have a loaded server snapshot back to back. Taking the snapshot is an
// O(1) clone under the tree write lock, and writing it happens on another goroutine
// while the tree keeps changing.
func (sl *solo) snapshot() {
	sl.sinceSnap, sl.snapAt = 0, sl.nextSnapCount()
	sl.s.treeMu.Lock()
	started := sl.snapshotLocked()
	sl.s.treeMu.Unlock()
	if !started {
		sl.s.logger.Warn("too busy to snapshot, skipping: the previous snapshot is still being written")
	}
}

// snapshotLocked starts writing a snapshot of the tree as it is now, unless one is
// already being written; it reports whether it started one.
func (sl *solo) snapshotLocked() bool {
	s := sl.s
	if !sl.snapshotting.CompareAndSwap(false, true) {
		return false
	}
	snap := s.tree.Snapshot()
	s.goroutine(func() {
		defer sl.snapshotting.Store(false)
		if err := sl.writeSnapshot(snap); err != nil {
			// The log still holds everything: a failed snapshot costs recovery time only.
			s.logger.Error("snapshot failed", "zxid", hexID(snap.Zxid), "err", err)
		}
	})
	return true
}

// writeSnapshot writes snap to a temp file, then renames it into place.
func (sl *solo) writeSnapshot(snap *datatree.Snapshot) error {
	s := sl.s
	start := time.Now()
	st, err := store.WriteSnapshot(s.snapDir(), snap.Zxid, s.fs, s.stopping, errShuttingDown, snap.Records)
	if err != nil {
		return err
	}
	s.logger.Info("snapshot written", "zxid", hexID(snap.Zxid), "records", st.Records, "bytes", st.FileBytes,
		"compression", fmt.Sprintf("%.1fx", st.Ratio()), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// purgeLoop keeps SnapRetainCount snapshots and deletes older snapshots and the log
// segments only they needed, at start and then every PurgeInterval (ZooKeeper's
// autopurge, which also runs first at start: a server restarted more often than the
// interval still purges).
func (sl *solo) purgeLoop() {
	s := sl.s
	if s.cfg.PurgeInterval <= 0 {
		return
	}
	ticker := time.NewTicker(s.cfg.PurgeInterval)
	defer ticker.Stop()
	for {
		if err := sl.purge(); err != nil {
			s.logger.Error("purge failed", "err", err)
		}
		select {
		case <-s.stopping:
			return
		case <-ticker.C:
		}
	}
}

func (sl *solo) purge() error {
	s := sl.s
	removed, oldest, err := store.PurgeSnapshots(s.snapDir(), s.fs, s.cfg.SnapRetainCount)
	if err != nil {
		return fmt.Errorf("purge snapshots: %w", err)
	}
	if oldest <= 0 {
		return nil // fewer snapshots than retained: the log is all still needed
	}
	segments, err := sl.wal.PurgeBefore(oldest)
	if err != nil {
		return fmt.Errorf("purge log: %w", err)
	}
	if len(removed)+len(segments) > 0 {
		s.logger.Info("purged", "snapshots", len(removed), "log_segments", len(segments), "oldest_snapshot", hexID(oldest))
	}
	return nil
}
