package clients

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

var openACL = zk.WorldACL(zk.PermAll)

// TestGoZKLock has workers on several connections increment a counter znode under
// go-zookeeper/zk's Lock recipe with an unconditional read-modify-write (version -1), so a
// lock that let two holders in would lose updates. It also counts holders in-process: more
// than one at a time is a failure even if no update happened to be lost.
func TestGoZKLock(t *testing.T) {
	addr := startServer(t)
	const conns, perConn, increments = 3, 2, 8
	setup := connectZK(t, addr)
	mustCreate(t, setup, "/counter", "0")
	mustCreate(t, setup, "/locks", "")
	lockNameRE := regexp.MustCompile(`^_c_[0-9a-f]{32}-lock-\d{10}$`)

	var holders, maxHolders atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, conns*perConn)
	for i := 0; i < conns; i++ {
		c := connectZK(t, addr)
		for j := 0; j < perConn; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- lockedIncrements(c, increments, &holders, &maxHolders, lockNameRE)
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		t.Fatalf("workers still running after 45s: a lock waiter missed its predecessor's deletion? "+
			"holders now %d", holders.Load())
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if m := maxHolders.Load(); m != 1 {
		t.Errorf("at most %d workers held the lock at once, want 1", m)
	}
	data, stat, err := setup.Get("/counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := conns * perConn * increments; string(data) != strconv.Itoa(want) || int(stat.Version) != want {
		t.Errorf("counter = %q at version %d, want %d at version %d (lost updates)", data, stat.Version, want, want)
	}
	if children, _, err := setup.Children("/locks"); err != nil || len(children) != 0 {
		t.Errorf("lock nodes left after every unlock: %q %v", children, err)
	}
}

// lockedIncrements takes a fresh lock n times, and under it reads the counter, writes it
// back plus one, and tracks how many workers hold the lock.
func lockedIncrements(c *zk.Conn, n int, holders, maxHolders *atomic.Int32, nameRE *regexp.Regexp) error {
	l := zk.NewLock(c, "/locks", openACL)
	for i := 0; i < n; i++ {
		if err := l.Lock(); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		h := holders.Add(1)
		for m := maxHolders.Load(); h > m && !maxHolders.CompareAndSwap(m, h); m = maxHolders.Load() {
		}
		children, _, err := c.Children("/locks")
		if err != nil {
			return err
		}
		for _, name := range children {
			if !nameRE.MatchString(name) {
				return fmt.Errorf("lock node %q: not a protected ephemeral sequential name", name)
			}
		}
		data, _, err := c.Get("/counter")
		if err != nil {
			return err
		}
		v, err := strconv.Atoi(string(data))
		if err != nil {
			return fmt.Errorf("counter data %q: %w", data, err)
		}
		if _, err := c.Set("/counter", []byte(strconv.Itoa(v+1)), -1); err != nil {
			return err
		}
		holders.Add(-1)
		if err := l.Unlock(); err != nil {
			return fmt.Errorf("unlock: %w", err)
		}
	}
	return nil
}

// TestGoZKProtectedEphemeralSequential checks the names CreateProtectedEphemeralSequential
// gets (a _c_<guid>- prefix before the sequential name), their owner, and that they go
// with the session.
func TestGoZKProtectedEphemeralSequential(t *testing.T) {
	addr := startServer(t)
	owner, observer := connectZK(t, addr), connectZK(t, addr)
	mustCreate(t, owner, "/p", "")
	nameRE := regexp.MustCompile(`^/p/_c_([0-9a-f]{32})-node-(\d{10})$`)
	var paths, guids []string
	for i := 0; i < 2; i++ {
		p, err := owner.CreateProtectedEphemeralSequential("/p/node-", []byte("d"), openACL)
		if err != nil {
			t.Fatal(err)
		}
		m := nameRE.FindStringSubmatch(p)
		if m == nil || m[2] != fmt.Sprintf("%010d", i) {
			t.Fatalf("protected node %d is %q, want /p/_c_<32 hex>-node-%010d", i, p, i)
		}
		paths, guids = append(paths, p), append(guids, m[1])
	}
	if guids[0] == guids[1] {
		t.Errorf("both protected nodes got guid %s", guids[0])
	}
	children, _, err := observer.Children("/p")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(children)
	want := []string{strings.TrimPrefix(paths[0], "/p/"), strings.TrimPrefix(paths[1], "/p/")}
	slices.Sort(want)
	if !slices.Equal(children, want) {
		t.Errorf("children of /p = %q, want %q", children, want)
	}
	_, stat, ch, err := observer.ExistsW(paths[0])
	if err != nil || stat == nil {
		t.Fatalf("exists %s: %v %v", paths[0], stat, err)
	}
	if stat.EphemeralOwner != owner.SessionID() {
		t.Errorf("ephemeralOwner = %#x, want the owner's session %#x", stat.EphemeralOwner, owner.SessionID())
	}

	owner.Close()
	select {
	case e := <-ch:
		if e.Type != zk.EventNodeDeleted || e.Path != paths[0] {
			t.Errorf("watch event %+v, want NodeDeleted %s", e, paths[0])
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event for %s within 10s of its owner closing", paths[0])
	}
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		children, _, err := observer.Children("/p")
		return err == nil && len(children) == 0
	}, "protected ephemeral nodes still exist after their owner closed")
}

// TestGoZKMulti checks Multi's per-op results for a committing transaction and for failing
// ones (the failing op's error, zk's error for "rolled back" before it and for
// RuntimeInconsistency after it), and that a failed multi applies nothing.
func TestGoZKMulti(t *testing.T) {
	addr := startServer(t)
	c := connectZK(t, addr)
	mustCreate(t, c, "/m", "m0")
	mustCreate(t, c, "/m/old", "")

	res, err := c.Multi(
		&zk.CreateRequest{Path: "/m/a", Data: []byte("a"), Acl: openACL},
		&zk.SetDataRequest{Path: "/m", Data: []byte("m1"), Version: 0},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.DeleteRequest{Path: "/m/old", Version: -1},
		&zk.CreateRequest{Path: "/m/seq-", Acl: openACL, Flags: zk.FlagSequence},
	)
	if err != nil {
		t.Fatalf("multi: %v (results %+v)", err, res)
	}
	if len(res) != 5 {
		t.Fatalf("%d results, want 5: %+v", len(res), res)
	}
	for i, r := range res {
		if r.Error != nil {
			t.Errorf("op %d: %v", i, r.Error)
		}
	}
	if res[0].String != "/m/a" || res[4].String != "/m/seq-0000000002" {
		t.Errorf("created paths %q and %q, want /m/a and /m/seq-0000000002", res[0].String, res[4].String)
	}
	if res[1].Stat == nil || res[1].Stat.Version != 1 || res[1].Stat.DataLength != 2 {
		t.Errorf("setData result stat %+v, want version 1, dataLength 2", res[1].Stat)
	}
	_, aStat, _ := c.Exists("/m/a")
	_, mStat, _ := c.Exists("/m")
	if aStat == nil || mStat == nil || aStat.Czxid != mStat.Mzxid || mStat.Pzxid != mStat.Mzxid {
		t.Errorf("one multi, one zxid: /m/a czxid %+v, /m mzxid and pzxid %+v", aStat, mStat)
	}
	if ok, _, _ := c.Exists("/m/old"); ok {
		t.Error("/m/old survived the committed multi")
	}

	failing := []struct {
		name string
		ops  []any
		want []error // per op; nil means the op would have succeeded (rolled back)
	}{
		{"third op fails", []any{
			&zk.CreateRequest{Path: "/m/b", Acl: openACL},
			&zk.SetDataRequest{Path: "/m", Data: []byte("never"), Version: 1},
			&zk.DeleteRequest{Path: "/m/missing", Version: -1},
			&zk.CreateRequest{Path: "/m/c", Acl: openACL},
		}, []error{nil, nil, zk.ErrNoNode, errRuntimeInconsistency}},
		{"first op fails", []any{
			&zk.CreateRequest{Path: "/m/a", Acl: openACL},
			&zk.CreateRequest{Path: "/m/d", Acl: openACL},
		}, []error{zk.ErrNodeExists, errRuntimeInconsistency}},
		{"check fails", []any{
			&zk.DeleteRequest{Path: "/m/a", Version: 0},
			&zk.CheckVersionRequest{Path: "/m", Version: 0},
		}, []error{nil, zk.ErrBadVersion}},
	}
	for _, tc := range failing {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, c, "/m")
			res, err := c.Multi(tc.ops...)
			var firstErr error
			for _, e := range tc.want {
				if e != nil {
					firstErr = e
					break
				}
			}
			if !sameError(err, firstErr) {
				t.Errorf("multi error %v, want %v", err, firstErr)
			}
			if len(res) != len(tc.want) {
				t.Fatalf("%d results, want %d: %+v", len(res), len(tc.want), res)
			}
			for i, r := range res {
				if !sameError(r.Error, tc.want[i]) {
					t.Errorf("op %d: error %v, want %v", i, r.Error, tc.want[i])
				}
			}
			if after := snapshot(t, c, "/m"); after != before {
				t.Errorf("failed multi changed the tree:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// errRuntimeInconsistency is how go-zookeeper/zk reports code -2, which it has no
// name for: the result of the ops after the failing one in a failed multi.
var errRuntimeInconsistency = errors.New("unknown error: -2")

func sameError(got, want error) bool {
	if got == nil || want == nil {
		return got == want
	}
	return got == want || got.Error() == want.Error()
}

// snapshot renders a node and its children with data and versions, for before/after checks.
func snapshot(t *testing.T, c *zk.Conn, path string) string {
	t.Helper()
	data, stat, err := c.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	children, _, err := c.Children(path)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(children)
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%q v%d cv%d", path, data, stat.Version, stat.Cversion)
	for _, ch := range children {
		d, s, err := c.Get(path + "/" + ch)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, " %s=%q v%d", ch, d, s.Version)
	}
	return b.String()
}

// TestGoZKFourLetterWords checks that go-zookeeper/zk's parsers accept paddock's srvr,
// ruok and cons (FLWSrvr needs the pre-3.7 "MM/dd/yyyy HH:mm zone" build date) and that
// the numbers they parse describe the server.
func TestGoZKFourLetterWords(t *testing.T) {
	addr := startServer(t)
	c := connectZK(t, addr)
	mustCreate(t, c, "/x", "")
	last, err := c.Create("/y", nil, 0, openACL)
	if err != nil {
		t.Fatal(err)
	}
	_, stat, err := c.Exists(last)
	if err != nil {
		t.Fatal(err)
	}

	if ok := zk.FLWRuok([]string{addr}, 5*time.Second); !slices.Equal(ok, []bool{true}) {
		t.Errorf("FLWRuok = %v, want [true]", ok)
	}

	stats, ok := zk.FLWSrvr([]string{addr}, 5*time.Second)
	if !ok || len(stats) != 1 || stats[0].Error != nil {
		t.Errorf("FLWSrvr failed: ok=%v %+v", ok, stats)
	} else {
		checkSrvr(t, stats[0], stat.Czxid)
	}

	// FLWCons's ok is false against ZooKeeper itself: cons lists the asking connection,
	// which has no session and so does not match go-zk's line pattern. What matters is
	// that our session's line parses.
	cons, _ := zk.FLWCons([]string{addr}, 5*time.Second)
	if len(cons) != 1 || cons[0].Error != nil {
		t.Fatalf("FLWCons failed: %+v", cons)
	}
	var found bool
	for _, cl := range cons[0].Clients {
		if cl.SessionID == c.SessionID() {
			found = true
			if !strings.HasPrefix(cl.Addr, "127.0.0.1:") || cl.Timeout <= 0 || cl.Received < 3 {
				t.Errorf("cons line for our session: %+v", cl)
			}
		}
	}
	if !found {
		t.Errorf("cons lists no connection with our session %#x: %+v", c.SessionID(), cons[0].Clients)
	}
}

// checkSrvr checks what FLWSrvr parsed against a server whose last write had zxid
// lastZxid, and which has one client that created /x and /y.
func checkSrvr(t *testing.T, s *zk.ServerStats, lastZxid int64) {
	t.Helper()
	if !strings.HasPrefix(s.Version, "3.8.") {
		t.Errorf("srvr version %q, want 3.8.x", s.Version)
	}
	if s.Mode != zk.ModeStandalone {
		t.Errorf("srvr mode %v, want standalone", s.Mode)
	}
	if s.BuildTime.IsZero() {
		t.Error("srvr build time did not parse")
	}
	if got := int64(s.Epoch)<<32 | int64(uint32(s.Counter)); got != lastZxid {
		t.Errorf("srvr zxid %#x, want the last write's %#x", got, lastZxid)
	}
	// ZooKeeper counts the root twice: /, /zookeeper, /zookeeper/quota, /zookeeper/config,
	// /x, /y is 7.
	if s.NodeCount != 7 {
		t.Errorf("srvr node count %d, want 7", s.NodeCount)
	}
	if s.Connections < 1 || s.Outstanding != 0 || s.Received < 3 || s.Sent < 3 {
		t.Errorf("srvr counters implausible for one busy client: %+v", s)
	}
}
