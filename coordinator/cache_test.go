package coordinator

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// treeEntry is what the tests compare of a node: the creation zxid tells a re-created
// node from the one before.
type treeEntry struct {
	Data     string
	Czxid    int64
	Mzxid    int64
	Children []string
}

// serverTree reads the subtree at root directly from the server.
func serverTree(t *testing.T, s *Session, root string) map[string]treeEntry {
	t.Helper()
	tree := make(map[string]treeEntry)
	var walk func(p string) bool
	walk = func(p string) bool {
		data, stat, err := s.Conn().Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return false
		}
		if err != nil {
			t.Fatalf("get %s: %v", p, err)
		}
		names, _, err := s.Conn().Children(p)
		if err != nil {
			t.Fatalf("children of %s: %v", p, err)
		}
		slices.Sort(names)
		var kept []string
		for _, name := range names {
			if walk(childPath(p, name)) {
				kept = append(kept, name)
			}
		}
		tree[p] = treeEntry{Data: string(data), Czxid: stat.Czxid, Mzxid: stat.Mzxid, Children: kept}
		return true
	}
	walk(root)
	return tree
}

// cacheTree is the same view of a TreeCache.
func cacheTree(tc *TreeCache) map[string]treeEntry {
	tree := make(map[string]treeEntry)
	for _, p := range tc.Paths() {
		data, stat, ok := tc.Get(p)
		if !ok {
			continue
		}
		var children []string
		if c := tc.Children(p); len(c) > 0 {
			children = c
		}
		tree[p] = treeEntry{Data: string(data), Czxid: stat.Czxid, Mzxid: stat.Mzxid, Children: children}
	}
	return tree
}

// treeDiff describes how the cache differs from the server, or "" if it does not.
func treeDiff(server, cache map[string]treeEntry) string {
	if reflect.DeepEqual(server, cache) {
		return ""
	}
	for _, p := range slices.Sorted(maps.Keys(server)) {
		if c, ok := cache[p]; !ok {
			return fmt.Sprintf("cache lacks %s", p)
		} else if !reflect.DeepEqual(c, server[p]) {
			return fmt.Sprintf("%s: cache %+v, server %+v", p, c, server[p])
		}
	}
	for p := range cache {
		if _, ok := server[p]; !ok {
			return fmt.Sprintf("cache has %s, the server does not", p)
		}
	}
	return "differs"
}

// waitConverged waits until the cache equals the server's state.
func waitConverged(t *testing.T, s *Session, root string, tc *TreeCache, when string) {
	t.Helper()
	var diff string
	testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() bool {
		diff = treeDiff(serverTree(t, s, root), cacheTree(tc))
		return diff == ""
	}, "%s: cache does not match the server: %s", when, lateString(func() string { return diff }))
}

// lateString is formatted when printed, after Eventually has given up.
type lateString func() string

func (f lateString) String() string { return f() }

// randomOps makes n random creates, sets and deletes in the subtree at root, up to
// three levels deep, over a few names so that they collide.
func randomOps(t *testing.T, s *Session, root string, rng *rand.Rand, n int) {
	t.Helper()
	conn := s.Conn()
	names := []string{"a", "b", "c"}
	for i := range n {
		p := root
		for range 1 + rng.IntN(3) {
			p = childPath(p, names[rng.IntN(len(names))])
		}
		data := []byte(fmt.Sprintf("d%d", rng.IntN(1000)))
		ok, stat, err := conn.Exists(p)
		switch {
		case err != nil:
			t.Fatalf("op %d: exists %s: %v", i, p, err)
		case !ok:
			if err := s.MakeDirs(ctxT(t), parentPath(p)); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
			_, err = conn.Create(p, data, 0, s.ACL())
		case stat.NumChildren == 0 && rng.IntN(3) == 0:
			err = conn.Delete(p, -1)
		default:
			_, err = conn.Set(p, data, -1)
		}
		if err != nil {
			t.Fatalf("op %d on %s: %v", i, p, err)
		}
	}
}

// recreateLeaves deletes up to n leaves and creates them again with the same data: only
// their creation zxids tell.
func recreateLeaves(t *testing.T, s *Session, root string, n int) {
	t.Helper()
	tree := serverTree(t, s, root)
	for _, p := range slices.Sorted(maps.Keys(tree)) {
		if n == 0 {
			return
		}
		if p == root || len(tree[p].Children) > 0 {
			continue
		}
		if err := s.Conn().Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Conn().Create(p, []byte(tree[p].Data), 0, s.ACL()); err != nil {
			t.Fatal(err)
		}
		n--
	}
}

// TestTreeCacheConverges: another session makes random changes in a subtree; once it
// stops, the cache equals what the server holds. Also after changes made while the
// cache's session was disconnected, and while it was cut off until it expired, with
// nodes deleted and re-created meanwhile; and when the root itself goes and comes back.
func TestTreeCacheConverges(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		cut := testutil.NewCutter()
		s := connect(t, addr, cuttable(cut))
		w := connect(t, addr)
		root := testRoot(t, w) + "/tree"
		if _, err := w.Conn().Create(root, []byte("root"), 0, w.ACL()); err != nil {
			t.Fatal(err)
		}
		randomOps(t, w, root, rng, 40)

		tc, err := NewTreeCache(ctxT(t), s, root)
		if err != nil {
			t.Fatal(err)
		}
		defer tc.Close()
		// The first full read is done when NewTreeCache returns.
		if diff := treeDiff(serverTree(t, w, root), cacheTree(tc)); diff != "" {
			t.Fatalf("right after NewTreeCache: %s", diff)
		}

		randomOps(t, w, root, rng, 300)
		waitConverged(t, w, root, tc, "after random changes")

		// Disconnected (the session survives): changes and re-creations meanwhile.
		cut.Cut()
		randomOps(t, w, root, rng, 20)
		recreateLeaves(t, w, root, 3)
		cut.Restore()
		waitConverged(t, w, root, tc, "after a disconnection")

		// Cut off until the session expires.
		cut.Cut()
		randomOps(t, w, root, rng, 30)
		recreateLeaves(t, w, root, 3)
		expire(t, s, cut)
		waitConverged(t, w, root, tc, "after a session expiry")
		randomOps(t, w, root, rng, 100)
		waitConverged(t, w, root, tc, "after changes under the new session")

		// The root goes, then comes back.
		deleteTree(t, w, root)
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool { return len(tc.Paths()) == 0 },
			"cache not empty after its root was deleted: %v", tc.Paths())
		if _, err := w.Conn().Create(root, []byte("again"), 0, w.ACL()); err != nil {
			t.Fatal(err)
		}
		randomOps(t, w, root, rng, 30)
		waitConverged(t, w, root, tc, "after the root was re-created")

		tc.Close()
		tc.Close() // idempotent
	})
}

func deleteTree(t *testing.T, s *Session, p string) {
	t.Helper()
	names, _, err := s.Conn().Children(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		deleteTree(t, s, childPath(p, name))
	}
	if err := s.Conn().Delete(p, -1); err != nil {
		t.Fatal(err)
	}
}

// TestTreeCacheStopsWithSession: the cache stops when its Session closes.
func TestTreeCacheStopsWithSession(t *testing.T) {
	s := connect(t, paddockBackend.addr(t))
	root := testRoot(t, s)
	tc, err := NewTreeCache(ctxT(t), s, root)
	if err != nil {
		t.Fatal(err)
	}
	if got := tc.Paths(); !slices.Equal(got, []string{root}) {
		t.Errorf("Paths = %v, want just the root", got)
	}
	s.Close()
	select {
	case <-tc.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cache still running after the Session closed")
	}
	tc.Close()
	if _, err := NewTreeCache(ctxT(t), s, root); !errors.Is(err, ErrClosed) {
		t.Errorf("NewTreeCache on a closed Session = %v, want ErrClosed", err)
	}
}

// waitChange waits for cond, re-checking after each signal on changes.
func waitChange(t *testing.T, changes <-chan struct{}, cond func() bool, what string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-changes:
		case <-deadline:
			t.Fatalf("no %s within 10s", what)
		}
	}
}

// TestNodeCache: the cache follows a node through creation, sets and deletion,
// signalling each change, and through a forced expiry with a change made meanwhile.
func TestNodeCache(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		cut := testutil.NewCutter()
		s := connect(t, addr, cuttable(cut))
		w := connect(t, addr)
		p := testRoot(t, w) + "/node"
		nc, err := NewNodeCache(ctxT(t), s, p)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, _, ok := nc.Get(); ok {
			t.Fatal("cache holds a node that does not exist")
		}
		has := func(want string, version int32) func() bool {
			return func() bool {
				data, stat, ok := nc.Get()
				return ok && string(data) == want && stat.Version == version
			}
		}
		if _, err := w.Conn().Create(p, []byte("x"), 0, w.ACL()); err != nil {
			t.Fatal(err)
		}
		waitChange(t, nc.Changes(), has("x", 0), "created node")
		if _, err := w.Conn().Set(p, []byte("y"), -1); err != nil {
			t.Fatal(err)
		}
		waitChange(t, nc.Changes(), has("y", 1), "new value")

		cut.Cut()
		if _, err := w.Conn().Set(p, []byte("z"), -1); err != nil {
			t.Fatal(err)
		}
		expire(t, s, cut)
		waitChange(t, nc.Changes(), has("z", 2), "value set while cut off")

		if err := w.Conn().Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		waitChange(t, nc.Changes(), func() bool { _, _, ok := nc.Get(); return !ok }, "deletion")
	})
}
