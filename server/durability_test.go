package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/faultfs"
	"github.com/paddock/paddock/server/store"
)

// These tests are internal: they compare tree digests and look at how much of the log
// a restart replayed. The crash tests of the real binary are in test/durability.

func testConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.ClientAddr = "127.0.0.1:0"
	cfg.AdminAddr = ""
	cfg.DataDir = t.TempDir()
	cfg.PreAllocSize = 64 << 10
	cfg.TickTime = 200 * time.Millisecond
	return cfg
}

func testLogger() *slog.Logger {
	if os.Getenv("PADDOCK_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func startTest(t *testing.T, cfg Config, opts ...Option) *Server {
	t.Helper()
	s, err := New(cfg, testLogger(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *Server) digest() [32]byte {
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	return s.tree.Digest()
}

// acked models what clients were told: for each path, the values written to it in
// order, and how many of them (a prefix) were acknowledged. After a crash a path must
// hold its last acknowledged value or one written after it: a write that reached the
// disk but whose reply was lost may be there too.
type acked struct {
	mu   sync.Mutex
	data map[string]*history
}

type history struct {
	sent  []string
	acked int // sent[:acked] were acknowledged; the last of them is the value to find
}

func (a *acked) send(p, v string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.data[p]
	if h == nil {
		h = &history{}
		a.data[p] = h
	}
	h.sent = append(h.sent, v)
}

func (a *acked) ack(p string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.data[p]
	h.acked = len(h.sent)
}

// writeLoad runs clients that create nodes, set data, delete some and run multis until
// each has done ops operations. Failures after the server stops are not recorded.
func writeLoad(t *testing.T, addr string, clients, ops int) *acked {
	t.Helper()
	a := &acked{data: map[string]*history{}}
	conn0, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn0.Close()
	if _, err := conn0.Create("/load", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for i := 0; i < ops; i++ {
				if !writeOne(c, a, w, i) {
					return
				}
			}
		}()
	}
	wg.Wait()
	return a
}

func writeOne(c *zk.Conn, a *acked, w, i int) bool {
	p := fmt.Sprintf("/load/w%d-%d", w, i%20)
	v := fmt.Sprintf("v%d", i)
	var err error
	switch i % 4 {
	case 0:
		a.send(p, v)
		_, err = c.Create(p, []byte(v), 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = c.Set(p, []byte(v), -1)
		}
	case 1, 2:
		a.send(p, v)
		_, err = c.Set(p, []byte(v), -1)
		if errors.Is(err, zk.ErrNoNode) {
			return true
		}
	case 3:
		q := fmt.Sprintf("/load/m%d-%d", w, i)
		a.send(q, v)
		a.send(q+"-pair", v)
		_, err = c.Multi(&zk.CreateRequest{Path: q, Data: []byte(v), Acl: zk.WorldACL(zk.PermAll)},
			&zk.CreateRequest{Path: q + "-pair", Data: []byte(v), Acl: zk.WorldACL(zk.PermAll)})
		if err == nil {
			a.ack(q)
			a.ack(q + "-pair")
		}
		return err == nil
	}
	if err != nil {
		return false
	}
	a.ack(p)
	return true
}

// check verifies every acknowledged write on a restarted server's tree, and that the
// two nodes of each multi are both there or both not.
func (a *acked) check(t *testing.T, s *Server) {
	t.Helper()
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	for p, h := range a.data {
		n := s.tree.Get(p)
		if h.acked == 0 {
			continue
		}
		if !n.Exists() || !slices.Contains(h.sent[h.acked-1:], string(n.Data())) {
			t.Errorf("%s: acknowledged %q (later sent %q), after restart %v", p, h.sent[h.acked-1], h.sent[h.acked:], n)
		}
		if pair := s.tree.Get(p + "-pair"); strings.HasPrefix(p, "/load/m") && !strings.HasSuffix(p, "-pair") && (!n.Exists()) != (!pair.Exists()) {
			t.Errorf("half a multi after restart: %s present %v, its pair present %v", p, n.Exists(), pair.Exists())
		}
	}
}

// acknowledged returns the number of paths with an acknowledged write.
func (a *acked) acknowledged() int {
	n := 0
	for _, h := range a.data {
		if h.acked > 0 {
			n++
		}
	}
	return n
}

func snapshotCount(t *testing.T, s *Server) int {
	t.Helper()
	snaps, err := store.ListSnapshots(s.snapDir(), s.fs)
	if err != nil {
		t.Fatal(err)
	}
	return len(snaps)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSnapshotsUnderLoad: snapshots are taken in the background while many clients
// write; a restart loads the newest and replays only the log after it, and the tree is
// identical; the purge keeps snap_retain_count snapshots and drops the log before them.
func TestSnapshotsUnderLoad(t *testing.T) {
	cfg := testConfig(t)
	cfg.SnapCount = 300
	cfg.PurgeInterval = 20 * time.Millisecond
	s := startTest(t, cfg)
	a := writeLoad(t, s.Addr().String(), 8, 250)
	waitFor(t, "snapshots", func() bool { return snapshotCount(t, s) >= 3 && !s.log.(*solo).snapshotting.Load() })
	waitFor(t, "the purge", func() bool { return snapshotCount(t, s) <= cfg.SnapRetainCount })
	want, zxid := s.digest(), s.lastApplied.Load()
	s.Close()

	r := startTest(t, cfg)
	if got := r.digest(); got != want {
		t.Fatal("the tree after restart differs from the tree before")
	}
	if r.lastApplied.Load() != zxid {
		t.Fatalf("zxid after restart %x, before %x", r.lastApplied.Load(), zxid)
	}
	if total := 8*250 + 10; r.log.(*solo).replayed >= total/2 {
		t.Fatalf("the restart replayed %d txns of about %d: it did not start from a snapshot", r.log.(*solo).replayed, total)
	}
	a.check(t, r)
	segments, _ := os.ReadDir(r.logDir())
	if n := len(segments); n > 12 {
		t.Errorf("%d log segments left after purging", n)
	}
}

// TestRecoverPastDamagedSnapshot: a damaged newest snapshot is skipped for the one
// before it, and the log replayed from there gives the same tree.
func TestRecoverPastDamagedSnapshot(t *testing.T) {
	cfg := testConfig(t)
	cfg.SnapCount = 200
	cfg.PurgeInterval = 0
	s := startTest(t, cfg)
	writeLoad(t, s.Addr().String(), 4, 200)
	waitFor(t, "two snapshots", func() bool { return snapshotCount(t, s) >= 2 && !s.log.(*solo).snapshotting.Load() })
	want := s.digest()
	s.Close()

	snaps, err := store.ListSnapshots(s.snapDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(snaps[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(snaps[0].Path, b, 0o640); err != nil {
		t.Fatal(err)
	}
	r := startTest(t, cfg)
	if r.digest() != want {
		t.Fatal("recovery past a damaged snapshot gave another tree")
	}
}

// TestFailStop: when an fsync of the log fails the server stops: nothing it could not
// make durable is acknowledged, and a restart on what the disk kept has every
// acknowledged write.
func TestFailStop(t *testing.T) {
	for _, mode := range faultfs.CrashModes {
		t.Run(mode.String(), func(t *testing.T) {
			fsys := faultfs.New(uint64(mode) + 1)
			cfg := testConfig(t)
			cfg.DataDir = "/data"
			s := startTest(t, cfg, WithFS(fsys))
			fault := fsys.Inject(faultfs.Rule{Ops: faultfs.OpSync, Path: "*.wal", After: 150})
			a := writeLoad(t, s.Addr().String(), 8, 100)
			select {
			case <-s.Done():
			case <-time.After(20 * time.Second):
				t.Fatal("the server kept running after its log failed")
			}
			if fault.Fired() == 0 || !errors.Is(s.Err(), faultfs.ErrInjected) {
				t.Fatalf("fault fired %d times; server error %v", fault.Fired(), s.Err())
			}
			s.Close()
			fsys.Crash(mode)
			r := startTest(t, cfg, WithFS(fsys))
			a.check(t, r)
			if a.acknowledged() == 0 {
				t.Fatal("nothing was acknowledged before the fault: the test proves nothing")
			}
		})
	}
}

// TestSnapshotFailureIsNotFatal: a snapshot that cannot be written is logged and the
// server goes on; the next one succeeds once the disk recovers.
func TestSnapshotFailureIsNotFatal(t *testing.T) {
	fsys := faultfs.New(7)
	cfg := testConfig(t)
	cfg.DataDir = "/data"
	cfg.SnapCount = 100
	fault := fsys.Inject(faultfs.Rule{Ops: faultfs.OpWrite | faultfs.OpSync, Path: "snapshot.*", Count: 3})
	s := startTest(t, cfg, WithFS(fsys))
	writeLoad(t, s.Addr().String(), 4, 150)
	waitFor(t, "a snapshot after the failures", func() bool {
		return fault.Fired() == 3 && snapshotCount(t, s) >= 1 && !s.log.(*solo).snapshotting.Load()
	})
	select {
	case <-s.Done():
		t.Fatalf("a failed snapshot stopped the server: %v", s.Err())
	default:
	}
	names, _ := fsys.ReadDir(s.snapDir())
	for _, e := range names {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Errorf("unfinished snapshot left behind: %s", e.Name())
		}
	}
}

// TestPurgeAtStart: like ZooKeeper's autopurge, the first purge runs at start, so a
// server restarted more often than purge_interval still purges.
func TestPurgeAtStart(t *testing.T) {
	cfg := testConfig(t)
	cfg.SnapCount = 100
	cfg.PurgeInterval = 0
	s := startTest(t, cfg)
	writeLoad(t, s.Addr().String(), 4, 200)
	waitFor(t, "snapshots", func() bool { return snapshotCount(t, s) > cfg.SnapRetainCount && !s.log.(*solo).snapshotting.Load() })
	s.Close()
	cfg.PurgeInterval = time.Hour
	r := startTest(t, cfg)
	waitFor(t, "the purge at start", func() bool { return snapshotCount(t, r) <= cfg.SnapRetainCount+1 })
}
