package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMemory measures what a large tree costs each server (`make bench-memory`,
// issue 23): for each memoryCase, a fresh Apache ZooKeeper and a fresh paddock, one after
// the other, are loaded with the case's znodes; then their RSS, peak RSS, live heap,
// bytes per znode, load rate, snapshot files and restart time after kill -9. ZooKeeper
// starts at -Xmx1000m (zkServer.sh's heap) and, when that cannot hold the tree, goes up
// the case's heap steps (nextHeap). On paddock holding the 1M-znode tree it also measures
// the write tail while collections are forced (gctail_test.go). It prints its section and,
// unless quick (PADDOCK_BENCH_QUICK=1), writes it into results.md in place of the last.
func BenchmarkMemory(b *testing.B) {
	sb := newBench(b)
	mp := choose(sb.p.quick, quickMemoryPlan, fullMemoryPlan)
	m := &memorySection{p: mp, commit: sb.commit, loadBefore: loadAverage()}
	start := time.Now()
	for _, mc := range mp.cases {
		m.cases = append(m.cases, sb.memoryCase(mc, mp.gcTail))
	}
	m.elapsed = time.Since(start)
	m.warnings, m.loadAfter = sb.warnings, loadAverage()
	sb.writeSection(memoryHeading, m.report(), mp.quick, "paddock-bench-memory-quick.md")
}

// memoryHeading is the heading of BenchmarkMemory's section in results.md.
const memoryHeading = "## Memory: large trees, restarts and collections"

// memoryPlan says what BenchmarkMemory runs.
type memoryPlan struct {
	name   string
	quick  bool
	cases  []memoryCase
	gcTail gcTailPlan
}

// memoryCase is one tree that both servers are loaded with.
type memoryCase struct {
	znodes    int64 // the leaves; with perParent, as many parents more as it takes
	valueSize int   // the data of every znode, parents too
	perParent int64 // children per parent; 0: every znode under the run's root
	snapCount int   // both servers' snapCount
	restarts  int   // kill -9 and start again, each server
	// heaps are ZooKeeper's -Xmx steps, smallest first; it runs with the first that
	// holds the tree through loading and restarting.
	heaps       []string
	rssGoal     Goal // paddock's RSS once loaded
	restartGoal Goal
	gcTail      bool // measure paddock's write tail under forced collections holding this tree
}

// zooKeeperHeaps are the steps of ZooKeeper's heap: zkServer.sh's -Xmx1000m, then doubling.
var zooKeeperHeaps = []string{"1000m", "2g", "4g", "8g"}

func fullMemoryPlan() memoryPlan {
	return memoryPlan{name: "full run", cases: []memoryCase{
		{znodes: 1_000_000, valueSize: 100, snapCount: 100_000, restarts: 2, heaps: zooKeeperHeaps,
			rssGoal: GoalQuarterOrLess},
		{znodes: 1_000_000, valueSize: 100, perParent: 1000, snapCount: 100_000, restarts: 2, heaps: zooKeeperHeaps,
			rssGoal: GoalQuarterOrLess, gcTail: true},
		// snapCount 1,000,000: at 100,000 each server would write some 130 snapshots of
		// a growing tree, 70 GB, while loading.
		{znodes: 10_000_000, valueSize: 50, perParent: 1000, snapCount: 1_000_000, restarts: 1, heaps: zooKeeperHeaps,
			rssGoal: GoalUnder2GB, restartGoal: GoalUnder15s},
	}, gcTail: gcTailPlan{duration: 20 * time.Second, every: 2 * time.Second}}
}

// quickMemoryPlan is a tenth of the full plan. Its large case starts ZooKeeper at a heap
// too small for it, so that a quick pass goes through a failing step.
func quickMemoryPlan() memoryPlan {
	return memoryPlan{name: "quick run", quick: true, cases: []memoryCase{
		{znodes: 100_000, valueSize: 100, snapCount: 100_000, restarts: 1, heaps: zooKeeperHeaps,
			rssGoal: GoalQuarterOrLess},
		{znodes: 100_000, valueSize: 100, perParent: 1000, snapCount: 100_000, restarts: 1, heaps: zooKeeperHeaps,
			rssGoal: GoalQuarterOrLess, gcTail: true},
		{znodes: 1_000_000, valueSize: 50, perParent: 1000, snapCount: 100_000, restarts: 1,
			heaps: []string{"200m", "1000m", "2g"}, rssGoal: GoalUnder2GB, restartGoal: GoalUnder15s},
	}, gcTail: gcTailPlan{duration: 5 * time.Second, every: time.Second}}
}

// parents returns how many parents the case's znodes have besides the run's root.
func (mc memoryCase) parents() int64 {
	if mc.perParent == 0 {
		return 0
	}
	return (mc.znodes + mc.perParent - 1) / mc.perParent
}

// total returns how many znodes the case loads, parents included.
func (mc memoryCase) total() int64 { return mc.znodes + mc.parents() }

func (mc memoryCase) String() string {
	s := fmt.Sprintf("%s znodes of %d B", thousands(mc.znodes), mc.valueSize)
	if mc.perParent == 0 {
		return s + " under one parent"
	}
	return fmt.Sprintf("%s, %s to a parent (%s parents more)", s, thousands(mc.perParent), thousands(mc.parents()))
}

// short names the case in progress lines and row labels.
func (mc memoryCase) short() string {
	layout := "one parent"
	if mc.perParent > 0 {
		layout = thousands(mc.perParent) + " per parent"
	}
	return fmt.Sprintf("%s × %d B, %s", thousands(mc.znodes), mc.valueSize, layout)
}

// loadStep is one phase of loading a case: n creates by gen.
type loadStep struct {
	what string
	gen  generator
	n    int64
}

// loadSteps returns how the case's znodes are created under root: the parents first.
func (mc memoryCase) loadSteps(root string, value []byte) []loadStep {
	prefix := []byte(root + "/")
	if mc.perParent == 0 {
		return []loadStep{{"znodes", &createGen{prefix: prefix, value: value}, mc.znodes}}
	}
	return []loadStep{{"parents", &createGen{prefix: prefix, value: value}, mc.parents()},
		{"children", &childGen{prefix: prefix, value: value, per: mc.perParent}, mc.znodes}}
}

// firstPath returns the path of the case's first znode under root.
func (mc memoryCase) firstPath(root string) string {
	if mc.perParent == 0 {
		return root + "/0"
	}
	return root + "/0/0"
}

// rawBytes returns what the case's znodes under root hold: their paths and their data.
func (mc memoryCase) rawBytes(root string) int64 {
	prefix := []byte(root + "/")
	n := mc.total() * int64(mc.valueSize)
	for p := range mc.parents() {
		n += int64(pathLen(prefix, p))
	}
	for i := range mc.znodes {
		if mc.perParent == 0 {
			n += int64(pathLen(prefix, i))
		} else {
			n += int64(pathLen(prefix, i/mc.perParent) + 1 + pathLen(nil, i%mc.perParent))
		}
	}
	return n
}

// serverMemory is what one server measured holding one case's tree.
type serverMemory struct {
	heap                        string // ZooKeeper: the -Xmx it ran with
	idleRSS, rss, hwm           int64  // before loading; just after, and the peak until then
	recoveredRSS                int64  // after the last restart
	liveHeap, recoveredLiveHeap int64  // loaded; after the last restart
	heapInuse                   int64  // paddock: go_memstats_heap_inuse_bytes after runtime.GC
	made                        int64  // znodes created, parents included
	load                        time.Duration
	restarts                    []time.Duration
	snaps                       snapshotFiles // after the restarts
	rawBytes                    int64         // paths and data of the znodes made
}

// loadRate returns the znodes created per second.
func (m *serverMemory) loadRate() float64 { return float64(m.made) / m.load.Seconds() }

// memoryCaseResult is a case's figures on both servers.
type memoryCaseResult struct {
	memoryCase
	zk, pd   *serverMemory // zk is nil if no heap step held the tree
	attempts []heapAttempt // ZooKeeper's, in order
	gc       *gcTail       // with gcTail
}

// memoryCase loads mc into ZooKeeper, then into paddock, and measures both.
func (sb *sideBySide) memoryCase(mc memoryCase, gp gcTailPlan) *memoryCaseResult {
	r := &memoryCaseResult{memoryCase: mc}
	sb.logf("memory: %s", mc)
	r.zk, r.attempts = sb.zooKeeperMemory(mc)
	r.pd, r.gc = sb.paddockMemory(mc, gp)
	return r
}

// zooKeeperJVM returns ZooKeeper's JVM flags with heap as -Xmx. It exits on the first
// OutOfMemoryError instead of going on with a thread lost: the step has failed.
func zooKeeperJVM(heap string) []string {
	return []string{"-Xmx" + heap, "-XX:+ExitOnOutOfMemoryError"}
}

// zooKeeperMemory walks mc.heaps (nextHeap) until one holds the tree through loading and
// restarting, and returns that step's figures, or nil, and what each step did.
func (sb *sideBySide) zooKeeperMemory(mc memoryCase) (*serverMemory, []heapAttempt) {
	var attempts []heapAttempt
	var c *contestant
	var m *serverMemory
	var dir, root string
	defer func() {
		if c != nil {
			c.kill()
		}
		os.RemoveAll(dir) // a large tree's snapshots take GBs
	}()
	for n := 1; ; n++ {
		heap, load, done := nextHeap(mc.heaps, attempts)
		if done {
			break
		}
		o := zooKeeperStart{jvmFlags: zooKeeperJVM(heap), settings: withSnapCount(sideBySideZooCfg, mc.snapCount)}
		a := heapAttempt{heap: heap, stage: stageRestart}
		began := time.Now()
		var logFrom int64
		var err error
		if load {
			a.stage = stageLoad
			if c != nil {
				c.kill()
				c = nil
			}
			os.RemoveAll(dir)
			dir = filepath.Join(sb.dir, fmt.Sprintf("zookeeper-memory-%d", n))
			sb.logf("memory: ZooKeeper at -Xmx%s: load %s", heap, mc.short())
			m = &serverMemory{heap: heap}
			if c, err = sb.startZooKeeperWith(dir, o); err == nil {
				root, err = sb.loadAndMeasure(c, mc, m)
			}
		} else {
			sb.logf("memory: ZooKeeper at -Xmx%s: %d restarts with %s", heap, mc.restarts, mc.short())
			logFrom = fileSize(c.logPath)
			m.heap, m.restarts = heap, nil
			start := func() (*contestant, error) { return sb.startZooKeeperWith(dir, o) }
			c, err = sb.restarts(c, start, mc, root, m)
		}
		a.ok, a.took = err == nil, time.Since(began)
		if err != nil {
			a.what = failureOf(logSince(filepath.Join(dir, "zookeeper.log"), logFrom), err)
			a.made = m.made
			sb.logf("memory: ZooKeeper at -Xmx%s failed to %s: %s", heap, a.stage, a.what)
		}
		attempts = append(attempts, a)
	}
	if last := attempts[len(attempts)-1]; !last.ok {
		sb.warnf("memory: no heap of %s held %s in ZooKeeper", strings.Join(mc.heaps, ", "), mc)
		return nil, attempts
	}
	sb.measureRecovered(c, m)
	m.snaps = waitSnapshots(filepath.Join(dir, "data"))
	return m, attempts
}

// paddockMemory loads mc into a fresh paddock, measures it, restarts it and, with
// mc.gcTail, measures the write tail under forced collections.
func (sb *sideBySide) paddockMemory(mc memoryCase, gp gcTailPlan) (*serverMemory, *gcTail) {
	dir := filepath.Join(sb.dir, "paddock-memory")
	defer os.RemoveAll(dir)
	o := paddockStart{pprof: true, settings: withSnapCount(sideBySideZooCfg, mc.snapCount),
		env: []string{"GODEBUG=gctrace=1"}}
	start := func() (*contestant, error) { return sb.startPaddockWith(dir, o), nil }
	c, _ := start()
	m := &serverMemory{}
	sb.logf("memory: paddock: load %s", mc.short())
	root, err := sb.loadAndMeasure(c, mc, m)
	if err == nil {
		c, err = sb.restarts(c, start, mc, root, m)
	}
	if err != nil {
		sb.b.Fatalf("memory: paddock: %v\nlog (%s) tail:\n%s", err, c.logPath, tail(c.logPath, 40))
	}
	sb.measureRecovered(c, m)
	m.snaps = waitSnapshots(filepath.Join(dir, "data"))
	c.kill()
	if !mc.gcTail {
		return m, nil
	}
	// A server of its own for the collections: the same data, but no snapshot during the
	// write load, which would be a disturbance of another kind (BenchmarkSnapshotUnderLoad's).
	o.settings = withSnapCount(sideBySideZooCfg, 1<<30)
	c = sb.startPaddockWith(dir, o)
	defer c.kill()
	if _, err := firstRead(c, mc.firstPath(root), mc.valueSize); err != nil {
		sb.b.Fatal(err)
	}
	return m, sb.gcTail(c, gp, mc)
}

// loadAndMeasure loads mc into c and reads its memory: RSS, peak RSS, then the live heap
// (which collects garbage first, so it comes after the RSS readings).
func (sb *sideBySide) loadAndMeasure(c *contestant, mc memoryCase, m *serverMemory) (root string, err error) {
	m.idleRSS = procStatus(c.pid, "VmRSS")
	sb.warmUp(c)
	root, err = sb.loadTree(c, mc, m)
	if err != nil {
		return root, err
	}
	m.rss, m.hwm = procStatus(c.pid, "VmRSS"), procStatus(c.pid, "VmHWM")
	m.rawBytes = mc.rawBytes(root)
	live, inuse, err := liveHeap(c)
	if err != nil {
		return root, err
	}
	m.liveHeap, m.heapInuse = live, inuse
	sb.logf("memory: %s holds %s znodes: RSS %d MiB, peak %d MiB, live heap %d MiB (%.0f B a znode); loaded at %.0f/s",
		c.name, thousands(m.made), m.rss>>20, m.hwm>>20, live>>20, float64(live)/float64(m.made), m.loadRate())
	return root, nil
}

// measureRecovered reads the RSS and the live heap of c, restarted with a case's tree.
func (sb *sideBySide) measureRecovered(c *contestant, m *serverMemory) {
	m.recoveredRSS = procStatus(c.pid, "VmRSS")
	live, _, err := liveHeap(c)
	if err != nil {
		sb.warnf("memory: %s live heap after restart: %v", c.name, err)
	}
	m.recoveredLiveHeap = live
}

// liveHeap collects c's garbage and returns its live heap then, and for paddock the heap
// in use (go_memstats_heap_inuse_bytes: the spans holding objects).
//
// paddock's live heap is go_memstats_heap_alloc_bytes just after runtime.GC, which
// sweeps the whole heap before it returns: the live objects, and what was allocated
// since (nothing much, with no load). Not the heap goal over 1 + GOGC/100: just after a
// load, the soft memory limit that paddock set from the live heap of up to a second
// before caps the goal, and that estimate came out short (24.7 MB against 34.7 MB after
// 100,000 creates, in a test by hand; the same two seconds later).
func liveHeap(c *contestant) (live, inuse int64, err error) {
	if c.name == zkName {
		live, err = jvmLiveHeap(c.pid)
		return live, 0, err
	}
	if err := forceGC(c.adminAddr); err != nil {
		return 0, 0, err
	}
	page, err := goMetrics(c.adminAddr)
	if err != nil {
		return 0, 0, err
	}
	alloc, err := page.value("go_memstats_heap_alloc_bytes")
	if err != nil {
		return 0, 0, err
	}
	v, err := page.value("go_memstats_heap_inuse_bytes")
	return int64(alloc), int64(v), err
}

// forceGC has the paddock serving adminAddr run runtime.GC, through the heap profile's
// gc=1 (admin.pprof must be on).
func forceGC(adminAddr string) error {
	_, err := httpGet("http://" + adminAddr + "/debug/pprof/heap?gc=1")
	return err
}

// restarts kills c and starts it again with start, mc.restarts times, timing each from the
// process start to a read of the tree's first znode, and returns the server last started.
func (sb *sideBySide) restarts(c *contestant, start func() (*contestant, error), mc memoryCase, root string,
	m *serverMemory) (*contestant, error) {
	for i := range mc.restarts {
		c.kill()
		next, err := start()
		if err != nil {
			return c, err
		}
		c = next
		took, err := firstRead(c, mc.firstPath(root), mc.valueSize)
		if err != nil {
			return c, err
		}
		m.restarts = append(m.restarts, took)
		sb.logf("memory: restart %d of %s with %s znodes: read after %v (srvr after %v); RSS %d MiB", i+1, c.name,
			thousands(m.made), took.Round(time.Millisecond), c.ready.Round(time.Millisecond), procStatus(c.pid, "VmRSS")>>20)
	}
	return c, nil
}

// loadTree creates mc's znodes in c under a root of their own, as 16 sessions × 4
// pipelined creates, the parents first, counting them in m.made and the time in m.load.
// It gives up with an error when a request or a session fails, or when the server stalls
// (stalled): it is then killed.
func (sb *sideBySide) loadTree(c *contestant, mc memoryCase, m *serverMemory) (string, error) {
	cfg := sb.config(c, WorkloadCreate)
	cfg.ValueSize = mc.valueSize
	cfg.Progress, cfg.ProgressEvery = os.Stderr, 10*time.Second
	cfg.RequestTimeout = 2 * time.Minute // a JVM's full collection of a large heap stops it for a while
	workers, err := connectWorkers(context.Background(), &cfg, benchSessions, benchOutstanding)
	if err != nil {
		return "", err
	}
	defer closeWorkers(workers)
	root := newRunRoot(&cfg)
	if err := createRoot(workers[0].s, cfg.Root, root); err != nil {
		return root, err
	}
	for _, st := range mc.loadSteps(root, cfg.value()) {
		var next atomic.Int64
		var stop atomic.Bool
		var why string
		watching := watchLoad(workers, func(reason string) {
			why = reason
			stop.Store(true)
			c.kill() // its sessions then fail at once, not at the request timeout
		})
		pr := runPhase(&cfg, workers, &phase{name: "load " + st.what, gen: st.gen, next: &next, end: st.n,
			window: benchOutstanding, stop: &stop})
		watching()
		m.made += pr.ok
		m.load += pr.elapsed
		if why != "" {
			return root, fmt.Errorf("%w: %s", errLoadStalled, why)
		}
		if err := pr.err(); err != nil {
			return root, fmt.Errorf("load %s: %w", st.what, err)
		}
	}
	return root, nil
}

// errLoadStalled says that a load gave up on a server that had all but stopped answering.
var errLoadStalled = errors.New("stalled")

const (
	loadWatchEvery  = 5 * time.Second
	loadStallWindow = time.Minute
)

// watchLoad samples the workers' progress every loadWatchEvery until the returned func
// is called, and calls onStall once if the load stalls.
func watchLoad(workers []*worker, onStall func(why string)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(loadWatchEvery)
		defer t.Stop()
		start := time.Now()
		var points []progressPoint
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				var ok int64
				for _, w := range workers {
					ok += w.done.Load()
				}
				points = append(points, progressPoint{at: now.Sub(start), ok: ok})
				if why := stalled(points, loadStallWindow); why != "" {
					onStall(why)
					return
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// progressPoint is how many requests of a phase had succeeded at a time into it.
type progressPoint struct {
	at time.Duration
	ok int64
}

// stalled says why a load whose progress is points (in order) has stalled, or "": over the
// last window, it did less than a tenth of its rate over the whole load. A JVM whose heap
// is all but full spends its time in back-to-back full collections and may take many
// minutes to give up with an OutOfMemoryError.
func stalled(points []progressPoint, window time.Duration) string {
	if len(points) < 2 {
		return ""
	}
	last := points[len(points)-1]
	if last.at < window {
		return ""
	}
	from := points[0]
	for _, p := range points {
		if last.at-p.at >= window {
			from = p
		}
	}
	recent := float64(last.ok-from.ok) / (last.at - from.at).Seconds()
	overall := float64(last.ok) / last.at.Seconds()
	if recent >= overall/10 {
		return ""
	}
	return fmt.Sprintf("%.0f creates/s over the last %v against %.0f/s before", recent,
		(last.at - from.at).Round(time.Second), overall)
}

// The stages of a heap step.
const (
	stageLoad    = "load"
	stageRestart = "restart"
)

// heapAttempt is what one of ZooKeeper's heap steps did.
type heapAttempt struct {
	heap  string
	stage string // stageLoad: a fresh server loading the tree; stageRestart: restarts on it
	ok    bool
	what  string // why it failed
	made  int64  // znodes created before the load failed
	took  time.Duration
}

// nextHeap says which heap step to try after attempts (in order): the -Xmx, and whether
// to load the tree afresh (a new data directory) or to restart on the data loaded before.
// A step whose load fails moves to the next step and a fresh load; once a load holds,
// the restarts run at its step, and if they fail the next step restarts on the same data.
// done is true once a step's restarts held, or when no step is left.
func nextHeap(steps []string, attempts []heapAttempt) (heap string, load, done bool) {
	if len(attempts) == 0 {
		return steps[0], true, false
	}
	last := attempts[len(attempts)-1]
	switch {
	case last.ok && last.stage == stageRestart:
		return last.heap, false, true
	case last.ok:
		return last.heap, false, false
	}
	loaded := false
	for _, a := range attempts {
		loaded = loaded || a.ok && a.stage == stageLoad
	}
	for i, s := range steps[:len(steps)-1] {
		if s == last.heap {
			return steps[i+1], !loaded, false
		}
	}
	return "", false, true
}

// failureOf says what became of a ZooKeeper that failed with err, from its log since
// the attempt began: the OutOfMemoryError that ended it, if any, or else err.
func failureOf(log string, err error) string {
	for line := range strings.SplitSeq(log, "\n") {
		if _, oom, ok := strings.Cut(line, "java.lang.OutOfMemoryError"); ok {
			return "OutOfMemoryError" + strings.TrimSpace(oom)
		}
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// fileSize returns the size of the file at path, 0 if it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns the file at path from offset on.
func logSince(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	return string(b[offset:])
}

// snapshotFiles are the snapshot files under a data directory: paddock's
// snap/snapshot.<zxid> (raft/snap in an ensemble) and ZooKeeper's version-2/snapshot.<zxid>,
// both hexadecimal.
type snapshotFiles struct {
	count  int
	total  int64 // bytes, all of them
	newest int64 // bytes, the one of the highest zxid
	temps  int   // snapshots being written (NAME.tmp)
}

// snapshotsIn returns the snapshot files under dir.
func snapshotsIn(dir string) snapshotFiles {
	var s snapshotFiles
	var newest int64 = -1
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		hex, ok := strings.CutPrefix(d.Name(), "snapshot.")
		if err != nil || d.IsDir() || !ok {
			return nil
		}
		if strings.HasSuffix(hex, ".tmp") {
			s.temps++
			return nil
		}
		zxid, err := strconv.ParseInt(hex, 16, 64)
		fi, ierr := d.Info()
		if err != nil || ierr != nil {
			return nil
		}
		s.count++
		s.total += fi.Size()
		if zxid > newest {
			newest, s.newest = zxid, fi.Size()
		}
		return nil
	})
	return s
}

// waitSnapshots waits until no snapshot under dir is being written and the files have not
// changed for 2 s (at most 3 minutes: a server snapshots the tree it recovered when it
// starts, in the background), and returns them.
func waitSnapshots(dir string) snapshotFiles {
	deadline := time.Now().Add(3 * time.Minute)
	last, since := snapshotsIn(dir), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		s := snapshotsIn(dir)
		if s != last {
			last, since = s, time.Now()
		} else if s.temps == 0 && time.Since(since) >= 2*time.Second {
			break
		}
	}
	return last
}

func TestNextHeap(t *testing.T) {
	steps := []string{"1000m", "2g", "4g"}
	att := func(heap, stage string, ok bool) heapAttempt { return heapAttempt{heap: heap, stage: stage, ok: ok} }
	for _, c := range []struct {
		name       string
		attempts   []heapAttempt
		heap       string
		load, done bool
	}{
		{"the default heap first", nil, "1000m", true, false},
		{"a load that held restarts on its data", []heapAttempt{att("1000m", stageLoad, true)}, "1000m", false, false},
		{"held through the restarts", []heapAttempt{att("1000m", stageLoad, true), att("1000m", stageRestart, true)},
			"1000m", false, true},
		{"a failed load loads afresh with more", []heapAttempt{att("1000m", stageLoad, false)}, "2g", true, false},
		{"a failed restart restarts with more on the same data", []heapAttempt{att("1000m", stageLoad, false),
			att("2g", stageLoad, true), att("2g", stageRestart, false)}, "4g", false, false},
		{"then holds", []heapAttempt{att("1000m", stageLoad, false), att("2g", stageLoad, true),
			att("2g", stageRestart, false), att("4g", stageRestart, true)}, "4g", false, true},
		{"no step left", []heapAttempt{att("1000m", stageLoad, false), att("2g", stageLoad, false),
			att("4g", stageLoad, false)}, "", false, true},
	} {
		heap, load, done := nextHeap(steps, c.attempts)
		if heap != c.heap || load != c.load || done != c.done {
			t.Errorf("%s: got %q load %v done %v, want %q load %v done %v", c.name, heap, load, done, c.heap, c.load, c.done)
		}
	}
}

func TestStalled(t *testing.T) {
	every := func(rates ...int64) []progressPoint { // creates/s in each 5 s
		var ps []progressPoint
		var ok int64
		for i, r := range rates {
			ok += 5 * r
			ps = append(ps, progressPoint{at: time.Duration(i+1) * 5 * time.Second, ok: ok})
		}
		return ps
	}
	steady := []int64{30000, 30000, 30000, 30000, 30000, 30000, 30000, 30000, 30000, 30000, 30000, 30000}
	for _, c := range []struct {
		name   string
		points []progressPoint
		want   bool
	}{
		{"steady", every(steady...), false},
		{"too soon to say", every(30000, 30000, 0, 0, 0), false},
		{"slower, not stalled", every(append(steady, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000)...), false},
		{"a minute of almost nothing", every(append(steady, 100, 0, 0, 200, 0, 0, 0, 0, 50, 0, 0, 0)...), true},
		{"a pause shorter than the window", every(append(steady, 0, 0, 0, 0, 0, 30000, 30000)...), false},
	} {
		if got := stalled(c.points, time.Minute); (got != "") != c.want {
			t.Errorf("%s: stalled = %q, want stalled %v", c.name, got, c.want)
		}
	}
}

func TestFailureOf(t *testing.T) {
	log := "2026-11-28 INFO snapshotting\nTerminating due to java.lang.OutOfMemoryError: Java heap space\n"
	if got := failureOf(log, errors.New("load children: 5 failed requests")); got != "OutOfMemoryError: Java heap space" {
		t.Errorf("with an OutOfMemoryError in the log: %q", got)
	}
	err := fmt.Errorf("%w: 12 creates/s over the last 1m0s against 30000/s before", errLoadStalled)
	if got := failureOf("INFO nothing to see\n", err); got != err.Error() {
		t.Errorf("stalled: %q", got)
	}
}

func TestMemoryCaseRawBytes(t *testing.T) {
	for _, mc := range []memoryCase{{znodes: 25, valueSize: 7}, {znodes: 25, valueSize: 7, perParent: 10}} {
		root := "/paddock-bench/create-x-1"
		var paths []string
		for p := range mc.parents() {
			paths = append(paths, fmt.Sprintf("%s/%d", root, p))
		}
		for i := range mc.znodes {
			if mc.perParent == 0 {
				paths = append(paths, fmt.Sprintf("%s/%d", root, i))
			} else {
				paths = append(paths, fmt.Sprintf("%s/%d/%d", root, i/mc.perParent, i%mc.perParent))
			}
		}
		want := int64(len(strings.Join(paths, "")) + len(paths)*mc.valueSize)
		if got := mc.rawBytes(root); got != want || int64(len(paths)) != mc.total() {
			t.Errorf("%s: rawBytes %d, want %d; total %d, want %d", mc, got, want, mc.total(), len(paths))
		}
	}
}

func TestSnapshotsIn(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{
		"version-2/snapshot.1e8483": 300, "version-2/snapshot.fa0": 100, "version-2/log.1": 999,
		"snap/snapshot.00000000000f4240": 200, "snap/snapshot.00000000001e8490.tmp": 50,
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 0x1e8483 is the highest zxid: the newest, whatever the width of its name.
	if got, want := snapshotsIn(dir), (snapshotFiles{count: 3, total: 600, newest: 300, temps: 1}); got != want {
		t.Errorf("snapshotsIn = %+v, want %+v", got, want)
	}
}
