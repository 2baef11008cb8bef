package durability

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

const (
	// numWriters is the number of concurrent writer sessions in each round.
	numWriters = 24
	// writerSessionTimeout is the writers' session timeout. A restart gives every session
	// in the log a fresh timeout, so the sessions of killed rounds' writers, and their
	// ephemeral nodes, live on as long as no round lasts this long; at the end they expire.
	writerSessionTimeout = 20 * time.Second
	// roundBudget bounds a round from the start of its server process to the kill. The
	// sessions in the log get their fresh timeout at recovery, after the process started,
	// so none expires within a round: the model knows every ephemeral node is there. A
	// start or a check slowed down by a loaded machine leaves less time to write.
	roundBudget = writerSessionTimeout - 4*time.Second
)

// commonEnv configures every server of the crash test.
var commonEnv = []string{
	"PADDOCK_SERVER_MAX_CLIENT_CNXNS=0", // writers, the checker and srvr polls all come from 127.0.0.1
}

// roundSetting is one server configuration a round runs with. The snapshot and purge
// settings do nothing until the server takes snapshots; then recovery starts from one.
type roundSetting struct {
	name string
	env  []string
}

var roundSettings = []roundSetting{
	{"defaults", nil},
	{"snap_count=64", []string{"PADDOCK_SERVER_SNAP_COUNT=64"}},
	{"snap_count=500, 64 KiB log segments, purge every 200ms keeping 3 snapshots", []string{
		"PADDOCK_SERVER_SNAP_COUNT=500", "PADDOCK_SERVER_PREALLOC_SIZE=65536",
		"PADDOCK_SERVER_PURGE_INTERVAL=200ms", "PADDOCK_SERVER_SNAP_RETAIN_COUNT=3"}},
	{"snap_count=2, 64 KiB log segments, purge every 200ms keeping 3 snapshots", []string{
		"PADDOCK_SERVER_SNAP_COUNT=2", "PADDOCK_SERVER_PREALLOC_SIZE=65536",
		"PADDOCK_SERVER_PURGE_INTERVAL=200ms", "PADDOCK_SERVER_SNAP_RETAIN_COUNT=3"}},
}

// TestCrashRecovery runs rounds against one data directory: start the server, check
// everything acknowledged so far, write from many sessions at once, kill -9 at a random
// moment. At the end the orphaned sessions must expire and take their ephemeral nodes
// with them, and a last crash must not bring them back.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	c := newCrashTest(t)
	rounds := envInt(t, "PADDOCK_DURABILITY_ROUNDS", 20)
	for r := range rounds {
		c.round(r)
	}
	c.finish()
}

type crashTest struct {
	t       *testing.T
	rng     *rand.Rand
	seed    uint64
	dir     string // data/ and the server logs
	port    int
	writers []*writerModel
	seq     *seqDir
	maxZxid int64 // the largest zxid any server showed: in srvr, or in an acknowledged write
	closers sync.WaitGroup

	// For the summary.
	starts                       []time.Duration
	acked                        int64
	inFlight, durable, processes int
}

func newCrashTest(t *testing.T) *crashTest {
	t.Helper()
	seed := testutil.Seed(t, "PADDOCK_DURABILITY_SEED")
	dir, err := os.MkdirTemp("", "paddock-durability-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("data directory and server logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	c := &crashTest{t: t, rng: newRand(seed, 0), seed: seed, dir: dir, seq: newSeqDir("/seq")}
	for i := range numWriters {
		c.writers = append(c.writers, &writerModel{ID: i, Path: fmt.Sprintf("/d/w%d", i)})
	}
	t.Cleanup(c.closers.Wait)
	return c
}

// start starts a server on the data directory and checks that its zxid has not gone back.
func (c *crashTest) start(name string, env []string) *testutil.PaddockProcess {
	c.t.Helper()
	c.processes++
	p := startPaddock(c.t, testutil.PaddockProcessOptions{
		DataDir: filepath.Join(c.dir, "data"),
		Port:    c.port,
		Env:     append(slices.Clone(commonEnv), env...),
		LogPath: filepath.Join(c.dir, fmt.Sprintf("server-%02d-%s.log", c.processes, name)),
	})
	c.port = p.Port()
	c.starts = append(c.starts, p.Ready)
	z, err := p.Zxid()
	if err != nil {
		c.t.Fatalf("%s: srvr: %v", name, err)
	}
	if z < c.maxZxid {
		c.t.Fatalf("%s: the server started at zxid 0x%x, but zxid 0x%x was acknowledged or shown before the crash (seed %d)",
			name, z, c.maxZxid, c.seed)
	}
	c.maxZxid = z
	return p
}

func (c *crashTest) round(r int) {
	t := c.t
	setting := roundSettings[r%len(roundSettings)]
	name := fmt.Sprintf("round-%02d", r)
	p := c.start(name, setting.env)
	base := c.maxZxid
	checked := "created the directories;"
	if r == 0 {
		c.setup(p)
	} else {
		checked = c.verify(p, name)
	}
	killAt := time.Now().Add(c.killDelay())
	if budget := p.Started.Add(roundBudget); killAt.After(budget) {
		killAt = budget
	}
	wrote, acked := c.write(p, r, base, killAt)
	checkLog(t, p, name)
	t.Logf("%s (%s): served after %v at zxid 0x%x; %s wrote for %v: %d acknowledged; kill -9",
		name, setting.name, p.Ready.Round(time.Millisecond), base, checked, wrote.Round(time.Millisecond), acked)
	if r%5 == 4 {
		c.crashDuringStart(fmt.Sprintf("round-%02d-start", r), setting.env)
	}
}

// killDelay draws how long writers write before the kill: now and then almost at once,
// while sessions are being created.
func (c *crashTest) killDelay() time.Duration {
	if c.rng.IntN(5) == 0 {
		return time.Duration(c.rng.Int64N(int64(100 * time.Millisecond)))
	}
	return 200*time.Millisecond + time.Duration(c.rng.Int64N(int64(1300*time.Millisecond)))
}

// setup creates the writers' directories and the shared sequential directory.
func (c *crashTest) setup(p *testutil.PaddockProcess) {
	c.t.Helper()
	conn, err := connect(p.Addr, 10*time.Second, nil, nil, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	defer conn.Close()
	for _, path := range []string{"/d", c.seq.Path} {
		if _, err := conn.Create(path, nil, 0, worldACL); err != nil {
			c.t.Fatalf("create %s: %v", path, err)
		}
	}
	for _, w := range c.writers {
		for _, path := range []string{w.Path, w.Path + "/v"} {
			if _, err := conn.Create(path, nil, 0, worldACL); err != nil {
				c.t.Fatalf("create %s: %v", path, err)
			}
		}
		w.Dir = dirState{Children: map[string]znode{"v": {}}, Creates: 1}
	}
}

// write runs the writers until killAt, then kills the server. It returns how long they
// wrote and how many writes were acknowledged.
func (c *crashTest) write(p *testutil.PaddockProcess, round int, base int64, killAt time.Time) (time.Duration, int64) {
	t := c.t
	g := &gate{}
	var killed atomic.Bool
	var maxZxid, acked atomic.Int64
	errc := make(chan error, len(c.writers)+1)
	conns := make([]*zk.Conn, len(c.writers))
	var wg sync.WaitGroup
	for i, m := range c.writers {
		wg.Go(func() {
			conn, err := connect(p.Addr, writerSessionTimeout, g, killed.Load, nil)
			if err != nil {
				if !killed.Load() {
					errc <- fmt.Errorf("writer %d, round %d: %w", m.ID, round, err)
				}
				return
			}
			conns[i] = conn
			w := &writer{m: m, seq: c.seq, rng: newRand(c.seed, uint64(1+round*numWriters+i)), conn: conn,
				session: conn.SessionID(), round: round, baseZxid: base, maxZxid: &maxZxid, acked: &acked}
			if err := w.run(killed.Load); err != nil {
				errc <- err
			}
		})
	}
	wg.Go(func() { // srvr's zxid too must never go back across the crash
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if killed.Load() {
				return
			}
			if z, err := p.Zxid(); err == nil {
				raise(&maxZxid, z)
			}
		}
	})
	start := time.Now()
	var failed error
	select {
	case <-time.After(time.Until(killAt)):
	case failed = <-errc:
	}
	killed.Store(true)
	g.close()
	p.Kill()
	wrote := time.Since(start)
	wg.Wait()
	for _, conn := range conns {
		if conn != nil {
			c.closers.Go(conn.Close) // up to a second each: it waits for a closeSession that cannot be sent
		}
	}
	close(errc)
	errs := []error{failed}
	for err := range errc {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("round %d (seed %d): %v\nserver log tail:\n%s", round, c.seed, err, p.LogTail(30))
	}
	c.maxZxid = max(c.maxZxid, maxZxid.Load())
	c.acked += acked.Load()
	return wrote, acked.Load()
}

// crashDuringStart starts a server and kills it at a random moment of its start-up,
// which may be in the middle of recovery.
func (c *crashTest) crashDuringStart(name string, env []string) {
	c.t.Helper()
	c.processes++
	p, err := launchPaddock(c.t, testutil.PaddockProcessOptions{
		DataDir: filepath.Join(c.dir, "data"),
		Env:     append(slices.Clone(commonEnv), env...),
		LogPath: filepath.Join(c.dir, fmt.Sprintf("server-%02d-%s.log", c.processes, name)),
	}, c.port)
	if err != nil {
		c.t.Fatal(err)
	}
	delay := time.Duration(c.rng.Int64N(int64(c.starts[len(c.starts)-1]) + 1))
	select {
	case <-time.After(delay):
	case <-p.Exited():
		if tail := p.LogTail(30); !strings.Contains(tail, "address already in use") {
			c.t.Fatalf("%s: paddock exited during start-up (%v); log tail:\n%s", name, p.ExitErr(), tail)
		}
		c.t.Logf("%s: port %d was taken; the next start picks another", name, c.port)
		return
	}
	p.Kill()
	checkLog(c.t, p, name)
	c.t.Logf("%s: kill -9 %v into start-up", name, delay.Round(time.Millisecond))
}

// verify reads every writer's directory and the shared sequential directory and checks
// them against the models: every acknowledged write there, each request in flight at the
// crash there in full or not at all. It updates the models to what it found.
func (c *crashTest) verify(p *testutil.PaddockProcess, name string) string {
	c.t.Helper()
	dirs, seq, err := c.read(p)
	if err != nil {
		c.t.Fatalf("%s: read the data: %v", name, err)
	}
	nodes, inFlight, durable := 0, 0, 0
	seqApplied, seqErr := c.seq.resolve(seq, c.writers)
	errs := []error{seqErr}
	for i, w := range c.writers {
		if w.Pending != nil {
			inFlight++
		}
		applied, err := w.resolve(dirs[i])
		errs = append(errs, err)
		if applied {
			durable++
		}
		nodes += len(dirs[i].Children)
	}
	if err := errors.Join(errs...); err != nil {
		if age := time.Since(p.Started); age > writerSessionTimeout {
			err = fmt.Errorf("%w\n(the check ended %v after the server started, past the writers' session timeout: orphaned sessions may have expired)",
				err, age.Round(time.Millisecond))
		}
		c.t.Fatalf("%s: after the crash (seed %d):\n%v", name, c.seed, err)
	}
	owned := c.seq.owned()
	for _, w := range c.writers {
		w.OwnSeq, w.Pending = owned[w.ID], nil
	}
	durable += seqApplied
	c.inFlight += inFlight
	c.durable += durable
	return fmt.Sprintf("checked %d nodes in %d directories and %d in %s (%d of %d writes in flight at the crash had happened);",
		nodes, len(dirs), len(seq), c.seq.Path, durable, inFlight)
}

// read reads every writer's directory and the shared sequential directory.
func (c *crashTest) read(p *testutil.PaddockProcess) ([]observedDir, map[int64]znode, error) {
	conn, err := connect(p.Addr, 10*time.Second, nil, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	dirs := make([]observedDir, len(c.writers))
	errs := make([]error, len(c.writers)+1)
	var seqDir observedDir
	var wg sync.WaitGroup
	for i, w := range c.writers {
		wg.Go(func() { dirs[i], errs[i] = readDir(conn, w.Path, 2) })
	}
	wg.Go(func() { seqDir, errs[len(c.writers)] = readDir(conn, c.seq.Path, 16) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	seq := map[int64]znode{}
	for name, n := range seqDir.Children {
		num, err := seqNumber(c.seq.Path + "/" + name)
		if err != nil {
			return nil, nil, err
		}
		seq[num] = n
	}
	return dirs, seq, nil
}

// finish checks the last crash, then that every orphaned session expires and takes its
// ephemeral nodes along, durably, and that the server stops cleanly on SIGTERM.
func (c *crashTest) finish() {
	t := c.t
	p := c.start("final", nil)
	checked := c.verify(p, "final")
	t.Logf("final: served after %v at zxid 0x%x; %s", p.Ready.Round(time.Millisecond), c.maxZxid, checked)

	c.dropEphemerals()
	var last error
	ok := testutil.WaitFor(writerSessionTimeout+10*time.Second, 250*time.Millisecond, func() bool {
		last = c.check(p)
		return last == nil
	})
	if !ok {
		t.Fatalf("final: %v after the sessions' timeout (%v) since the restart: %v", time.Since(p.Started).Round(time.Millisecond),
			writerSessionTimeout, last)
	}
	t.Logf("final: every orphaned session expired %v after the restart", time.Since(p.Started).Round(time.Millisecond))
	z, err := p.Zxid()
	if err != nil {
		t.Fatal(err)
	}
	c.maxZxid = max(c.maxZxid, z)
	p.Kill()
	checkLog(t, p, "final")

	p = c.start("after-expiry", nil)
	if err := c.check(p); err != nil {
		t.Fatalf("after-expiry: the expiries did not survive a crash: %v", err)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("after-expiry: SIGTERM: %v", err)
	}
	checkLog(t, p, "after-expiry")
	t.Logf("%d server processes on one data directory; %d writes acknowledged, %d of %d in flight at a crash happened; "+
		"start-up took at most %v (median %v)", c.processes, c.acked, c.durable, c.inFlight,
		slices.Max(c.starts).Round(time.Millisecond), median(c.starts).Round(time.Millisecond))
}

// dropEphemerals removes every ephemeral node from the models: no session of theirs has a
// client any more.
func (c *crashTest) dropEphemerals() {
	for _, w := range c.writers {
		for name, n := range w.Dir.Children {
			if n.Owner != 0 {
				delete(w.Dir.Children, name)
				w.Dir.Deletes++
			}
		}
	}
	c.seq.dropEphemerals()
	owned := c.seq.owned()
	for _, w := range c.writers {
		w.OwnSeq = owned[w.ID]
	}
}

// check compares everything with the models, which have nothing in flight.
func (c *crashTest) check(p *testutil.PaddockProcess) error {
	dirs, seq, err := c.read(p)
	if err != nil {
		return err
	}
	var problems []string
	for i, w := range c.writers {
		for _, d := range w.Dir.diff(dirs[i]) {
			problems = append(problems, w.Path+": "+d)
		}
	}
	if _, err := c.seq.resolve(seq, nil); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds))
	return s[len(s)/2]
}
