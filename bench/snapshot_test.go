package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// BenchmarkSnapshotUnderLoad measures what a member's snapshot of a large tree costs the
// ensemble while clients write (`make bench-snapshot`; PADDOCK_BENCH_QUICK=1 for a
// short pass with 100,000 znodes). It starts a 3-member paddock ensemble of processes,
// loads snapPlan.znodes znodes of 100 B, waits until the leader's RSS settles (the
// tree's size), then runs a closed-loop setData load (16 sessions × 4 in flight) over
// the loaded znodes until every member has written snapPlan.snapshots of the snapshots
// snap_count brings, and some seconds more. Meanwhile it samples every member's VmRSS every 10 ms and
// keeps every request's completion time and latency; the members' "snapshot written"
// log lines say when each snapshot ran. It prints its section and, unless quick,
// writes it into results.md in place (BenchmarkSideBySide keeps it when it rewrites
// the file); a quick pass writes to the temporary directory.
//
// The goals of issue 19: the leader's RSS during its snapshot stays under the tree's
// size × 1.3, and the write p99 during the snapshots within 2× the p99 outside them.
func BenchmarkSnapshotUnderLoad(b *testing.B) {
	sb := newBench(b)
	sp := choose(sb.p.quick, quickSnapPlan, fullSnapPlan)
	start := time.Now()
	s := sb.snapshotUnderLoad(sp)
	s.elapsed = time.Since(start)
	section := s.report()
	samples := filepath.Join(os.TempDir(), "paddock-bench-snapshot-rss.csv")
	if err := os.WriteFile(samples, []byte(s.samplesCSV()), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Println("the RSS samples are in", samples)
	sb.writeSection(snapshotHeading, section, sp.quick, "paddock-bench-snapshot-quick.md")
}

// snapPlan says how much BenchmarkSnapshotUnderLoad runs.
type snapPlan struct {
	name   string
	quick  bool
	znodes int64 // loaded before the write load
	// perMulti is how many creates each multi of the loading holds: a member snapshots
	// every snap_count Raft entries, and a batch of creates becomes a number of entries
	// that depends on how requests queue up, so the loading is done in multis, at most
	// znodes/perMulti txns, far below snapCount, while the writes afterwards, a txn each,
	// reach it in seconds.
	perMulti  int64
	snapCount int           // the members' snapCount
	snapshots int           // snapshots each member writes under the write load
	warmup    time.Duration // unmeasured writes before the measurement
	after     time.Duration // writes measured after the last member's snapshot
	maxWait   time.Duration // for the snapshots, from the measurement's start
}

func fullSnapPlan() snapPlan {
	return snapPlan{name: "full run", znodes: 1_000_000, perMulti: 500, snapCount: 50_000, snapshots: 3, warmup: time.Second,
		after: 10 * time.Second, maxWait: 5 * time.Minute}
}

func quickSnapPlan() snapPlan {
	return snapPlan{name: "quick run", quick: true, znodes: 100_000, perMulti: 500, snapCount: 20_000, snapshots: 2,
		warmup: time.Second, after: 3 * time.Second, maxWait: 2 * time.Minute}
}

// snapshotHeading is the heading of the section in results.md.
const snapshotHeading = "## Snapshot of a large tree under a write load (3-member paddock ensemble)"

// snapEvent is one "snapshot written" line of a member's log.
type snapEvent struct {
	index      uint64
	start, end time.Time // end: the line's time; start: end - took
	took       time.Duration
}

// rssSample is the members' VmRSS (in member order) at one instant.
type rssSample struct {
	at  time.Time
	rss []int64
}

// cpuSample is the members', this process's and the machine's CPU time, and the data
// disk's counters, at one instant.
type cpuSample struct {
	at            time.Time
	members       []time.Duration
	self, machine time.Duration
	disk          diskCounters
}

// diskCounters are the counters of /proc/diskstats for one device that say how busy it
// was: sectors (512 B) written and milliseconds with I/O in flight.
type diskCounters struct {
	sectorsWritten, busyMs int64
}

// readDisk returns the counters of device name (as /proc/diskstats names it).
func readDisk(name string) diskCounters {
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil || name == "" {
		return diskCounters{}
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 13 || f[2] != name {
			continue
		}
		n := func(i int) int64 {
			if i >= len(f) {
				return 0
			}
			v, _ := strconv.ParseInt(f[i], 10, 64)
			return v
		}
		// After major, minor and name: field 7 sectors written, 10 ms doing I/O
		// (Documentation/admin-guide/iostats.rst).
		return diskCounters{sectorsWritten: n(9), busyMs: n(12)}
	}
	return diskCounters{}
}

// diskStatsName returns the /proc/diskstats name of the device holding path, or "".
func diskStatsName(path string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return ""
	}
	maj, minor := strconv.FormatUint(uint64(st.Dev>>8&0xfff), 10), strconv.FormatUint(uint64(st.Dev&0xff|st.Dev>>12&0xfff00), 10)
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == maj && f[1] == minor {
			return f[2]
		}
	}
	return ""
}

// snapshotSection is what BenchmarkSnapshotUnderLoad measured.
type snapshotSection struct {
	p       snapPlan
	elapsed time.Duration
	members []member
	leader  int // index in members

	loadRate   float64 // creates per second while loading
	treeRSS    []int64 // each member's VmRSS once loaded and settled
	settleTook time.Duration

	measureStart, measureEnd time.Time
	writes                   []latencySample // the measured writes, by completion
	errors                   int64
	rss                      []rssSample
	cpu                      []cpuSample
	snaps                    [][]snapEvent // by member: the snapshots written during the write load
	snapBytes                []int64       // by member: the size of its latest snapshot file
	disk                     string        // the data directories' device in /proc/diskstats
	// loadBefore and loadAfter are the 1-minute load averages when the benchmark
	// started and ended: other work on the machine shows in every figure.
	loadBefore, loadAfter string
	hwm                   []int64 // by member: VmHWM at the end
}

// snapshotUnderLoad runs the benchmark of plan sp.
func (sb *sideBySide) snapshotUnderLoad(sp snapPlan) *snapshotSection {
	settings := slices.Concat(withSnapCount(sideBySideZooCfg, sp.snapCount), ensembleZooCfg)
	c := sb.startPaddockEnsembleWith(filepath.Join(sb.dir, "paddock-snapshot"), settings)
	defer c.kill()
	s := &snapshotSection{p: sp, members: c.members, leader: c.leader, disk: diskStatsName(c.dir), loadBefore: loadAverage()}
	sb.logf("snapshot: ensemble serving, member %d leads; snapCount=%d", c.members[c.leader].id, sp.snapCount)

	root := sb.loadForSnapshot(c, s)
	if ev := s.snapshotEvents(time.Time{}); slices.ContainsFunc(ev, func(e []snapEvent) bool { return len(e) > 0 }) {
		sb.b.Fatalf("snapshot: a member wrote a snapshot while loading (%v): the loading made more than "+
			"snapCount=%d Raft entries; raise it", ev, sp.snapCount)
	}
	settleStart := time.Now()
	s.treeRSS = waitRSSSettled(c.members)
	s.settleTook = time.Since(settleStart)
	sb.logf("snapshot: RSS settled after %v: %s", s.settleTook.Round(100*time.Millisecond), mibList(s.treeRSS))

	sb.writeThroughSnapshot(c, s, root)
	sb.checkLeader(c)
	if c.members[c.leader].pid != s.members[s.leader].pid {
		sb.b.Fatalf("snapshot: the leader changed during the write load")
	}
	for _, m := range c.members {
		s.hwm = append(s.hwm, procStatus(m.pid, "VmHWM"))
		s.snapBytes = append(s.snapBytes, snapshotFileSize(m))
	}
	s.loadAfter = loadAverage()
	return s
}

// withSnapCount returns settings with its snapCount line replaced.
func withSnapCount(settings []string, n int) []string {
	out := make([]string, 0, len(settings))
	for _, l := range settings {
		if !strings.HasPrefix(l, "snapCount=") {
			out = append(out, l)
		}
	}
	return append(out, "snapCount="+strconv.Itoa(n))
}

// loadForSnapshot creates sp.znodes znodes of 100 B under a root of their own, in
// pipelined multis, and returns the root.
func (sb *sideBySide) loadForSnapshot(c *contestant, s *snapshotSection) string {
	sp := s.p
	cfg := sb.config(c, WorkloadCreate)
	cfg.Progress, cfg.ProgressEvery = os.Stderr, 10*time.Second
	const window = 4
	workers, err := connectWorkers(context.Background(), &cfg, benchSessions, window)
	if err != nil {
		sb.b.Fatal(err)
	}
	defer closeWorkers(workers)
	root := newRunRoot(&cfg)
	if err := createRoot(workers[0].s, cfg.Root, root); err != nil {
		sb.b.Fatal(err)
	}
	g := &multiCreateGen{prefix: []byte(root + "/"), value: cfg.value(), per: sp.perMulti, total: sp.znodes}
	var next atomic.Int64
	pr := runPhase(&cfg, workers, &phase{name: "load", gen: g, next: &next,
		end: (sp.znodes + sp.perMulti - 1) / sp.perMulti, window: window})
	if err := pr.err(); err != nil {
		sb.b.Fatalf("snapshot: load: %v", err)
	}
	s.loadRate = float64(sp.znodes) / pr.elapsed.Seconds()
	sb.logf("snapshot: loaded %s znodes in %v (%.0f/s); RSS %s", thousands(sp.znodes),
		pr.elapsed.Round(100*time.Millisecond), s.loadRate, mibList(membersRSS(c.members)))
	return root
}

// multiCreateGen creates znodes prefix+j, per of them in each multi: multi i creates
// [i*per, min((i+1)*per, total)).
type multiCreateGen struct {
	prefix     []byte
	value      []byte
	per, total int64
}

func (g *multiCreateGen) issue(s *session, i int64) {
	e := s.begin(wire.OpMulti, i)
	for j := i * g.per; j < min((i+1)*g.per, g.total); j++ {
		h := wire.MultiHeader{Type: wire.OpCreate, Err: -1}
		h.Encode(e)
		putPath(e, g.prefix, j)
		e.Buffer(g.value)
		e.Raw(openACL)
		e.Int(wire.FlagPersistent)
	}
	end := wire.MultiHeader{Type: wire.OpError, Done: true, Err: -1}
	end.Encode(e)
	s.end()
}

// check: a successful multi's first result is a create's.
func (g *multiCreateGen) check(_ inflight, body []byte) bool {
	return bodyInt(body) == int32(wire.OpCreate)
}
func (g *multiCreateGen) tolerate(wire.Code) bool { return false }

// membersRSS returns each member's VmRSS.
func membersRSS(members []member) []int64 {
	rss := make([]int64, len(members))
	for i, m := range members {
		rss[i] = procStatus(m.pid, "VmRSS")
	}
	return rss
}

// waitRSSSettled waits until no member's VmRSS has moved by more than 1 % over 3 s
// (at most a minute) and returns their RSS then.
func waitRSSSettled(members []member) []int64 {
	const every, span = 250 * time.Millisecond, 3 * time.Second
	var hist [][]int64
	deadline := time.Now().Add(time.Minute)
	for {
		hist = append(hist, membersRSS(members))
		if n := int(span / every); len(hist) > n {
			hist = hist[len(hist)-n-1:]
			settled := true
			for i := range members {
				lo, hi := hist[0][i], hist[0][i]
				for _, h := range hist {
					lo, hi = min(lo, h[i]), max(hi, h[i])
				}
				settled = settled && float64(hi-lo) <= 0.01*float64(hi)
			}
			if settled || time.Now().After(deadline) {
				return hist[len(hist)-1]
			}
		}
		time.Sleep(every)
	}
}

// writeThroughSnapshot runs the write load over the loaded znodes until every member has
// written a snapshot and sp.after more, sampling the members meanwhile.
func (sb *sideBySide) writeThroughSnapshot(c *contestant, s *snapshotSection, root string) {
	sp := s.p
	cfg := sb.config(c, WorkloadSet)
	cfg.Progress, cfg.ProgressEvery = os.Stderr, 5*time.Second
	workers, err := connectWorkers(context.Background(), &cfg, benchSessions, benchOutstanding)
	if err != nil {
		sb.b.Fatal(err)
	}
	defer closeWorkers(workers)
	value := cfg.value()
	g := &readGen{prefix: []byte(root + "/"), nodes: sp.znodes, op: wire.OpSetData, value: value,
		valueSize: int32(len(value))}
	var next atomic.Int64
	if sp.warmup > 0 {
		pr := runPhase(&cfg, workers, &phase{name: "warm-up", gen: g, next: &next, end: 1 << 62,
			until: nanotime() + int64(sp.warmup), window: benchOutstanding})
		if err := pr.err(); err != nil {
			sb.b.Fatalf("snapshot: warm-up: %v", err)
		}
	}

	var stop atomic.Bool
	done := make(chan struct{})
	var wg sync.WaitGroup
	s.measureStart = time.Now()
	var timedOut atomic.Bool
	wg.Go(func() { s.sample(done) })
	wg.Go(func() {
		// Stop sp.after once every member has logged a snapshot written, or at maxWait.
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		deadline := s.measureStart.Add(sp.maxWait)
		var allAt time.Time
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if allAt.IsZero() && !slices.ContainsFunc(s.snapshotEvents(time.Time{}), func(e []snapEvent) bool { return len(e) < sp.snapshots }) {
					allAt = now
					sb.logf("snapshot: every member has written %d snapshots; %v more of writes", sp.snapshots, sp.after)
				}
				if !allAt.IsZero() && now.Sub(allAt) >= sp.after {
					stop.Store(true)
					return
				}
				if now.After(deadline) {
					timedOut.Store(true)
					stop.Store(true)
					return
				}
			}
		}
	})
	pr := runPhase(&cfg, workers, &phase{name: "measure", gen: g, next: &next, end: 1 << 62,
		window: benchOutstanding, record: true, timeline: true, stop: &stop})
	s.measureEnd = time.Now()
	stop.Store(true)
	close(done)
	wg.Wait()
	if timedOut.Load() {
		sb.b.Fatalf("snapshot: not every member wrote %d snapshots within %v of writes (snapCount=%d): %v",
			sp.snapshots, sp.maxWait, sp.snapCount, s.snapshotEvents(time.Time{}))
	}
	s.errors = pr.errors + int64(len(pr.failures))
	if err := pr.err(); err != nil {
		sb.warnf("snapshot: write load: %v", err)
	}
	s.writes = timelineOf(workers)
	s.snaps = s.snapshotEvents(time.Time{})
	sb.logf("snapshot: %d writes measured in %v; snapshots %v", len(s.writes),
		s.measureEnd.Sub(s.measureStart).Round(100*time.Millisecond), s.snaps)
}

// sample records every member's VmRSS every 10 ms, and the CPU times every 50 ms,
// until done is closed.
func (s *snapshotSection) sample(done <-chan struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		now := time.Now()
		s.rss = append(s.rss, rssSample{at: now, rss: membersRSS(s.members)})
		if n%5 == 0 {
			cs := cpuSample{at: now, self: selfCPU(), machine: machineCPU(), disk: readDisk(s.disk)}
			for _, m := range s.members {
				cs.members = append(cs.members, processCPU(m.pid))
			}
			s.cpu = append(s.cpu, cs)
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// snapshotEvents returns, by member, the "snapshot written" lines of its log that ended
// after since.
func (s *snapshotSection) snapshotEvents(since time.Time) [][]snapEvent {
	out := make([][]snapEvent, len(s.members))
	for i, m := range s.members {
		f, err := os.Open(m.logPath)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if e, ok := parseSnapshotWritten(sc.Text()); ok && e.end.After(since) {
				out[i] = append(out[i], e)
			}
		}
		f.Close()
	}
	return out
}

// parseSnapshotWritten parses quorum's log line `time=... level=INFO msg="snapshot
// written" index=N took=D` (slog's text format).
func parseSnapshotWritten(line string) (snapEvent, bool) {
	if !strings.Contains(line, `msg="snapshot written"`) {
		return snapEvent{}, false
	}
	var e snapEvent
	var haveTime, haveTook bool
	for f := range strings.FieldsSeq(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "time":
			t, err := time.Parse(time.RFC3339Nano, v)
			e.end, haveTime = t, err == nil
		case "took":
			d, err := time.ParseDuration(v)
			e.took, haveTook = d, err == nil
		case "index":
			e.index, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	e.start = e.end.Add(-e.took)
	return e, haveTime && haveTook
}

func (e snapEvent) String() string {
	return fmt.Sprintf("index %d took %v", e.index, e.took)
}

// snapshotFileSize returns the size of the member's latest snapshot file
// (data/raft/snap/snapshot.<Raft index, 16 hex digits>), or 0 if it has none.
func snapshotFileSize(m member) int64 {
	return snapshotsIn(filepath.Join(filepath.Dir(m.logPath), "data")).newest
}

// samplesCSV renders the RSS samples, one line each: seconds into the measurement, each
// member's VmRSS in MiB, and how many members were writing a snapshot.
func (s *snapshotSection) samplesCSV() string {
	var b strings.Builder
	b.WriteString("seconds")
	for _, m := range s.members {
		fmt.Fprintf(&b, ",member %d MiB", m.id)
	}
	b.WriteString(",members snapshotting\n")
	for _, r := range s.rss {
		fmt.Fprintf(&b, "%.3f", r.at.Sub(s.measureStart).Seconds())
		for _, v := range r.rss {
			fmt.Fprintf(&b, ",%.1f", float64(v)/(1<<20))
		}
		n := 0
		for _, ev := range s.snaps {
			if slices.ContainsFunc(ev, func(e snapEvent) bool { return (interval{e.start, e.end}).has(r.at) }) {
				n++
			}
		}
		fmt.Fprintf(&b, ",%d\n", n)
	}
	return b.String()
}

// interval is a span of wall-clock time.
type interval struct{ start, end time.Time }

func (iv interval) dur() time.Duration { return max(iv.end.Sub(iv.start), 0) }

func (iv interval) has(t time.Time) bool { return !t.Before(iv.start) && !t.After(iv.end) }

// during returns the spans in which some member was writing a snapshot, merged, in order.
func (s *snapshotSection) during() []interval {
	var ivs []interval
	for _, ev := range s.snaps {
		for _, e := range ev {
			ivs = append(ivs, interval{e.start, e.end})
		}
	}
	return mergeIntervals(ivs)
}

// outside returns the spans of the measurement outside ivs.
func (s *snapshotSection) outside(ivs []interval) []interval {
	var out []interval
	from := s.measureStart
	for _, iv := range ivs {
		if iv.start.After(from) {
			out = append(out, interval{from, iv.start})
		}
		if iv.end.After(from) {
			from = iv.end
		}
	}
	if s.measureEnd.After(from) {
		out = append(out, interval{from, s.measureEnd})
	}
	return out
}

func total(ivs []interval) time.Duration {
	var d time.Duration
	for _, iv := range ivs {
		d += iv.dur()
	}
	return d
}

// wall converts a nanotime to wall-clock time.
func wall(ns int64) time.Time { return epoch.Add(time.Duration(ns)) }

// latencies splits the measured writes into those completed within ivs and the others.
func (s *snapshotSection) latencies(ivs []interval) (during, outside *Histogram) {
	during, outside = NewHistogram(), NewHistogram()
	for _, w := range s.writes {
		at := wall(w.at)
		if slices.ContainsFunc(ivs, func(iv interval) bool { return iv.has(at) }) {
			during.Record(w.latency)
		} else {
			outside.Record(w.latency)
		}
	}
	return during, outside
}

// memberRSS returns member i's last RSS sample before its first snapshot and its peak
// within any of its snapshots.
func (s *snapshotSection) memberRSS(i int) (before, peak int64) {
	ev := s.snaps[i]
	for _, r := range s.rss {
		if r.at.Before(ev[0].start) {
			before = r.rss[i]
		}
		for _, e := range ev {
			if (interval{e.start, e.end}).has(r.at) {
				peak = max(peak, r.rss[i])
			}
		}
	}
	return before, peak
}

// rounds returns the spans of the snapshots the members wrote together: the k-th of each
// member's, merged, for every k all members reached.
func (s *snapshotSection) rounds() []interval {
	n := len(s.snaps[0])
	for _, ev := range s.snaps {
		n = min(n, len(ev))
	}
	out := make([]interval, n)
	for k := range out {
		for i, ev := range s.snaps {
			if i == 0 || ev[k].start.Before(out[k].start) {
				out[k].start = ev[k].start
			}
			if ev[k].end.After(out[k].end) {
				out[k].end = ev[k].end
			}
		}
	}
	return out
}

// rssBefore returns member i's last RSS sample before t.
func (s *snapshotSection) rssBefore(i int, t time.Time) int64 {
	var v int64
	for _, r := range s.rss {
		if !r.at.Before(t) {
			break
		}
		v = r.rss[i]
	}
	return v
}

// lowestAfter returns member i's lowest RSS sample after t, or 0 if none.
func (s *snapshotSection) lowestAfter(i int, t time.Time) int64 {
	var low int64
	for _, r := range s.rss {
		if r.at.After(t) && (low == 0 || r.rss[i] < low) {
			low = r.rss[i]
		}
	}
	return low
}

// peakIn returns member i's highest RSS sample within iv.
func (s *snapshotSection) peakIn(i int, iv interval) int64 {
	var peak int64
	for _, r := range s.rss {
		if iv.has(r.at) {
			peak = max(peak, r.rss[i])
		}
	}
	return peak
}

// peakRSS returns member i's highest RSS sample of the write load.
func (s *snapshotSection) peakRSS(i int) int64 {
	var peak int64
	for _, r := range s.rss {
		peak = max(peak, r.rss[i])
	}
	return peak
}

// cpuUse is the cores kept busy on average: by each member, this process, the machine;
// and the disk's use.
type cpuUse struct {
	members       []float64
	self, machine float64
	// writeMBps is the disk's write rate (MB/s), busy the share of the time it had I/O
	// in flight.
	writeMBps, busy float64
}

// cpuIn returns the CPU use within iv, from the first and last CPU samples inside it;
// ok is false if it holds fewer than two.
func (s *snapshotSection) cpuIn(iv interval) (u cpuUse, secs float64, ok bool) {
	var a, b *cpuSample
	for i := range s.cpu {
		if c := &s.cpu[i]; iv.has(c.at) {
			if a == nil {
				a = c
			}
			b = c
		}
	}
	if a == nil || a == b {
		return u, 0, false
	}
	secs = b.at.Sub(a.at).Seconds()
	for i := range s.members {
		u.members = append(u.members, (b.members[i]-a.members[i]).Seconds()/secs)
	}
	u.self, u.machine = (b.self-a.self).Seconds()/secs, (b.machine-a.machine).Seconds()/secs
	d := diskCounters{b.disk.sectorsWritten - a.disk.sectorsWritten, b.disk.busyMs - a.disk.busyMs}
	u.writeMBps = float64(d.sectorsWritten) * 512 / 1e6 / secs
	u.busy = float64(d.busyMs) / 1e3 / secs
	return u, secs, true
}

// cpuOver returns the CPU use over ivs, each weighted by the time it covers.
func (s *snapshotSection) cpuOver(ivs []interval) cpuUse {
	sum := cpuUse{members: make([]float64, len(s.members))}
	var secs float64
	for _, iv := range ivs {
		u, w, ok := s.cpuIn(iv)
		if !ok {
			continue
		}
		for i := range u.members {
			sum.members[i] += u.members[i] * w
		}
		sum.self += u.self * w
		sum.machine += u.machine * w
		sum.writeMBps += u.writeMBps * w
		sum.busy += u.busy * w
		secs += w
	}
	if secs == 0 {
		return sum
	}
	for i := range sum.members {
		sum.members[i] /= secs
	}
	sum.self /= secs
	sum.machine /= secs
	sum.writeMBps /= secs
	sum.busy /= secs
	return sum
}

func mibList(vs []int64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = mib(v)
	}
	return strings.Join(parts, ", ")
}

func mib(v int64) string { return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)) }

// Goals of issue 19 for a snapshot under a write load.
const (
	snapshotRSSGoal     = 1.3 // peak RSS during the snapshot / the loaded tree's RSS
	snapshotLatencyGoal = 2.0 // write p99 during the snapshots / outside them
)

// report renders the section of results.md.
func (s *snapshotSection) report() string {
	var b strings.Builder
	p := s.p
	in := s.during()
	out := s.outside(in)
	during, outside := s.latencies(in)
	ds, outs := during.Summary(), outside.Summary()
	li := s.leader
	lBefore, lPeak := s.memberRSS(li)
	rssRatio := float64(lPeak) / float64(s.treeRSS[li])
	p99Ratio := float64(ds.P99) / float64(outs.P99)
	first := in[0]
	measured := s.measureEnd.Sub(s.measureStart)

	fmt.Fprintf(&b, "%s\n\n", snapshotHeading)
	fmt.Fprintf(&b, "Written by `make bench-snapshot` (bench/snapshot_test.go, BenchmarkSnapshotUnderLoad) on %s, %s, "+
		"in %s; `make bench` runs it after the comparison, and the comparison keeps this section when it rewrites the "+
		"file. The machine is the one above (%d cores), shared by the three members and the load generator; the "+
		"1-minute load average was %s when it started and %s when it ended.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), p.name, s.elapsed.Round(time.Second), runtime.NumCPU(),
		s.loadBefore, s.loadAfter)
	fmt.Fprintf(&b, "- A 3-member paddock ensemble of processes (as in the ensemble section: `paddock server --zoo-cfg`, "+
		"fsync on, the same zoo.cfg) but with `snapCount=%d`: each member takes its tree's copy-on-write snapshot "+
		"every %s applied Raft entries and writes it to a snapshot file on a goroutine of its own.\n",
		p.snapCount, thousands(int64(p.snapCount)))
	fmt.Fprintf(&b, "- Loaded: %s znodes of 100 B under one parent, as multis of %d creates (16 sessions × 4 in flight, "+
		"%.0f creates/s). Multis, not single creates: a batch of creates becomes however many Raft entries the queueing "+
		"makes, so no snapCount could be both above what the loading writes and within seconds of writes after it; "+
		"%s multis are at most that many entries. No member wrote a snapshot while loading.\n",
		thousands(p.znodes), p.perMulti, s.loadRate, thousands((p.znodes+p.perMulti-1)/p.perMulti))
	fmt.Fprintf(&b, "- Tree size: each member's VmRSS once loaded and settled (no member moving by more than 1 %% over "+
		"3 s; %v after the load): %s (the leader, member %d, first).\n", s.settleTook.Round(100*time.Millisecond),
		mibList(s.ordered(s.treeRSS)), s.members[li].id)
	fmt.Fprintf(&b, "- Write load: setData of 100 B, round-robin over the loaded znodes (every write a different znode, "+
		"so each one during a snapshot copies a node the snapshot still holds), %d sessions × %d in flight spread over "+
		"the members, closed loop; %v unmeasured, then measured until every member had written %d snapshots and %v "+
		"more (%v in all, %s writes, %d errors).\n", benchSessions, benchOutstanding, p.warmup, p.snapshots, p.after,
		measured.Round(100*time.Millisecond), thousands(int64(len(s.writes))), s.errors)
	fmt.Fprintf(&b, "- The snapshots: each member's `snapshot written` log line (its time, `index`, and `took`, from the "+
		"view taken to the file committed) gives its span; VmRSS of every member sampled every 10 ms (%d samples). "+
		"The members snapshot at the same Raft index, so together; each wrote %d snapshots. \"During\" is any time "+
		"some member was writing one (%v in all; the first span began %v into the measurement), \"outside\" the "+
		"rest of the measurement.\n\n", len(s.rss), p.snapshots, total(in).Round(time.Millisecond),
		first.start.Sub(s.measureStart).Round(100*time.Millisecond))

	b.WriteString("| | measured | goal | |\n|---|---:|---|---|\n")
	fmt.Fprintf(&b, "| leader's peak RSS during its snapshots / tree size | %s / %s = %.2f× | ≤ %.1f× | %s |\n",
		mib(lPeak), mib(s.treeRSS[li]), rssRatio, snapshotRSSGoal, mark(rssRatio <= snapshotRSSGoal))
	fmt.Fprintf(&b, "| write p99 during the snapshots / outside them | %s / %s = %.2f× | ≤ %.0f× | %s |\n\n",
		ms(ds.P99), ms(outs.P99), p99Ratio, snapshotLatencyGoal, mark(p99Ratio <= snapshotLatencyGoal))

	b.WriteString("| member | snapshots (Raft index, took) | file | tree size | RSS just before the first | peak during them | " +
		"peak / tree | peak of the write load | VmHWM (since its start) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, i := range s.order() {
		var evs []string
		for _, e := range s.snaps[i] {
			evs = append(evs, fmt.Sprintf("%d, %v", e.index, e.took.Round(time.Millisecond)))
		}
		before, peak := s.memberRSS(i)
		role := "follower"
		if i == li {
			role = "leader"
		}
		fmt.Fprintf(&b, "| %d (%s) | %s | %s | %s | %s | %s | %.2f× | %s | %s |\n", s.members[i].id, role,
			strings.Join(evs, "; "), mib(s.snapBytes[i]), mib(s.treeRSS[i]), mib(before), mib(peak),
			float64(peak)/float64(s.treeRSS[i]), mib(s.peakRSS(i)), mib(s.hwm[i]))
	}

	b.WriteString("\nEach round of snapshots (the members' k-th, together), against the writes outside every snapshot:\n\n" +
		"| round | began into the measurement | lasted | writes completed | write p99 | p99 / outside | " +
		"leader's RSS just before | its peak during | peak / just before | peak / tree size |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for k, iv := range s.rounds() {
		h, _ := s.latencies([]interval{iv})
		sm := h.Summary()
		before, peak := s.rssBefore(li, iv.start), s.peakIn(li, iv)
		fmt.Fprintf(&b, "| %d | %v | %v | %s | %s | %.2f× | %s | %s | %.2f× | %.2f× |\n", k+1,
			iv.start.Sub(s.measureStart).Round(100*time.Millisecond), iv.dur().Round(time.Millisecond),
			thousands(sm.Count), ms(sm.P99), float64(sm.P99)/float64(outs.P99), mib(before), mib(peak),
			float64(peak)/float64(before), float64(peak)/float64(s.treeRSS[li]))
	}

	b.WriteString("\n| writes | completed | ops/s | p50 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, sm Summary, secs float64) {
		fmt.Fprintf(&b, "| %s | %s | %.0f/s | %s | %s | %s | %s |\n", name, thousands(sm.Count),
			float64(sm.Count)/secs, ms(sm.P50), ms(sm.P99), ms(sm.P999), ms(sm.Max))
	}
	row("during the snapshots", ds, total(in).Seconds())
	row("outside them", outs, total(out).Seconds())

	dc, oc := s.cpuOver(in), s.cpuOver(out)
	b.WriteString("\nCPU, in cores kept busy on average (user + system):\n\n| | " + s.memberHeads() +
		" | load generator | whole machine |\n|---|" + strings.Repeat("---:|", len(s.members)+2) + "\n")
	cpuRow := func(name string, u cpuUse) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, i := range s.order() {
			fmt.Fprintf(&b, " %.2f |", u.members[i])
		}
		fmt.Fprintf(&b, " %.2f | %.2f of %d |\n", u.self, u.machine, runtime.NumCPU())
	}
	cpuRow("during the snapshots", dc)
	cpuRow("outside them", oc)
	fmt.Fprintf(&b, "\nThe data directories' disk (%s, /proc/diskstats):\n\n| | written | busy (I/O in flight) |\n"+
		"|---|---:|---:|\n", s.disk)
	for _, r := range []struct {
		name string
		u    cpuUse
	}{{"during the snapshots", dc}, {"outside them", oc}} {
		fmt.Fprintf(&b, "| %s | %.1f MB/s | %.0f %% |\n", r.name, r.u.writeMBps, 100*r.u.busy)
	}

	b.WriteString("\n" + s.reading(rssRatio, p99Ratio, lBefore, lPeak, dc, oc))
	return b.String()
}

// reading says what the figures mean, and where a missed goal's cost went.
func (s *snapshotSection) reading(rssRatio, p99Ratio float64, before, peak int64, dc, oc cpuUse) string {
	li := s.leader
	var b strings.Builder
	first := s.rounds()[0]
	fmt.Fprintf(&b, "Reading it: the leader's RSS went from %s at rest to %s under the write load just before its "+
		"first snapshot and peaked at %s during its snapshots. A snapshot holds on to the nodes the writes replace "+
		"while it is being written, and the collector's headroom over the live heap (paddock tunes GOGC to about "+
		"15 %% at this size) is part of every figure. The tree size at rest also holds the member's Raft log since "+
		"its start, the loading included, which the first snapshot lets it compact: after it the leader's RSS fell "+
		"as low as %s, so later rounds compare well against the tree size; the column \"peak / just before\" is "+
		"what each snapshot itself added. ", mib(s.treeRSS[li]), mib(before), mib(peak), mib(s.lowestAfter(li, first.end)))
	var extra []string
	for _, i := range s.order() {
		extra = append(extra, fmt.Sprintf("member %d %+.2f", s.members[i].id, dc.members[i]-oc.members[i]))
	}
	fmt.Fprintf(&b, "During the snapshots the members' CPU changed by %s cores against outside them, the load "+
		"generator's by %+.2f, and the machine was %.2f of %d cores busy (%.2f outside); the disk wrote %.0f MB/s "+
		"(%.0f outside) and had I/O in flight %.0f %% of the time (%.0f %% outside). Each member encodes and checksums its "+
		"whole tree while it goes on serving, and here the three members' writers share the cores with the write "+
		"path and the load generator, and the disk with the three Raft logs' fdatasyncs, which every write waits for. ",
		strings.Join(extra, ", "), dc.self-oc.self, dc.machine, runtime.NumCPU(), oc.machine, dc.writeMBps,
		oc.writeMBps, 100*dc.busy, 100*oc.busy)
	if p99Ratio > snapshotLatencyGoal {
		b.WriteString("The latency goal is missed here: the three snapshot writers compete with the writes for the " +
			"cores and for the one disk (a deployed member has cores and a disk of its own, where this machine runs " +
			"three members' writers at once). ")
	}
	if rssRatio > snapshotRSSGoal {
		b.WriteString("The memory goal is missed here: see the peak against the RSS just before the snapshot for " +
			"what the snapshot itself added. ")
	}
	b.WriteString("The client is closed-loop: a stall sends fewer requests, so the percentiles during the snapshots " +
		"understate what an open stream of requests would see.\n")
	return b.String()
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// order returns the member indices with the leader first.
func (s *snapshotSection) order() []int {
	out := []int{s.leader}
	for i := range s.members {
		if i != s.leader {
			out = append(out, i)
		}
	}
	return out
}

// ordered returns vs in order().
func (s *snapshotSection) ordered(vs []int64) []int64 {
	var out []int64
	for _, i := range s.order() {
		out = append(out, vs[i])
	}
	return out
}

func (s *snapshotSection) memberHeads() string {
	var heads []string
	for _, i := range s.order() {
		h := fmt.Sprintf("member %d", s.members[i].id)
		if i == s.leader {
			h += " (leader)"
		}
		heads = append(heads, h)
	}
	return strings.Join(heads, " | ")
}

// spliceSection puts section (which begins with heading) into doc: in place of the
// section there under the same heading, up to the next "## " heading; or else before
// "## Reading these numbers"; or at the end.
func spliceSection(doc, heading, section string) string {
	section = strings.TrimRight(section, "\n") + "\n\n"
	if i := headingAt(doc, heading); i >= 0 {
		rest := doc[i+len(heading):]
		if j := strings.Index(rest, "\n## "); j >= 0 {
			return doc[:i] + section + rest[j+1:]
		}
		return doc[:i] + strings.TrimRight(section, "\n") + "\n"
	}
	if i := headingAt(doc, "## Reading these numbers"); i >= 0 {
		return doc[:i] + section + doc[i:]
	}
	return strings.TrimRight(doc, "\n") + "\n\n" + strings.TrimRight(section, "\n") + "\n"
}

// sectionOf returns the section of doc under heading, up to the next "## " heading, or "".
func sectionOf(doc, heading string) string {
	i := headingAt(doc, heading)
	if i < 0 {
		return ""
	}
	rest := doc[i:]
	if j := strings.Index(rest[len(heading):], "\n## "); j >= 0 {
		return rest[:len(heading)+j+1]
	}
	return rest
}

// headingAt returns the offset of heading as a line of doc, or -1.
func headingAt(doc, heading string) int {
	for off := 0; ; {
		i := strings.Index(doc[off:], heading)
		if i < 0 {
			return -1
		}
		i += off
		atStart := i == 0 || doc[i-1] == '\n'
		atEnd := i+len(heading) == len(doc) || doc[i+len(heading)] == '\n'
		if atStart && atEnd {
			return i
		}
		off = i + len(heading)
	}
}

func TestSpliceSection(t *testing.T) {
	const h = "## Snap"
	sec := h + "\n\nnew figures\n"
	cases := []struct{ name, doc, want string }{
		{"replaced in place", "# T\n\n## A\n\na\n\n## Snap\n\nold\n\n## B\n\nb\n",
			"# T\n\n## A\n\na\n\n## Snap\n\nnew figures\n\n## B\n\nb\n"},
		{"replaced at the end", "# T\n\n## Snap\n\nold\n", "# T\n\n## Snap\n\nnew figures\n"},
		{"before the reading notes", "# T\n\n## A\n\na\n\n## Reading these numbers\n\nr\n",
			"# T\n\n## A\n\na\n\n## Snap\n\nnew figures\n\n## Reading these numbers\n\nr\n"},
		{"appended", "# T\n\n## A\n\na\n", "# T\n\n## A\n\na\n\n## Snap\n\nnew figures\n"},
		{"a longer heading is not it", "# T\n\n## Snapshots\n\nx\n", "# T\n\n## Snapshots\n\nx\n\n## Snap\n\nnew figures\n"},
	}
	for _, c := range cases {
		if got := spliceSection(c.doc, h, sec); got != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
	}
	doc := "# T\n\n## Snap\n\nold\n\n## B\n\nb\n"
	if got := sectionOf(doc, h); got != "## Snap\n\nold\n\n" {
		t.Errorf("sectionOf = %q", got)
	}
	if got := spliceSection("# T\n\n## Reading these numbers\n", h, sectionOf(doc, h)); got !=
		"# T\n\n## Snap\n\nold\n\n## Reading these numbers\n" {
		t.Errorf("keeping a section: %q", got)
	}
}

// TestKeepSections: the comparison's report, rewritten, keeps the snapshot and memory
// sections of the old results.md, in that order, before the reading notes.
func TestKeepSections(t *testing.T) {
	old := "# T\n\n## Results\n\nold\n\n" + snapshotHeading + "\n\nsnap\n\n" + memoryHeading + "\n\nmem\n\n" +
		"## Reading these numbers\n\nr\n"
	report := "# T\n\n## Results\n\nnew\n\n## Reading these numbers\n\nr\n"
	want := "# T\n\n## Results\n\nnew\n\n" + snapshotHeading + "\n\nsnap\n\n" + memoryHeading + "\n\nmem\n\n" +
		"## Reading these numbers\n\nr\n"
	if got := keepSections(report, old); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestParseSnapshotWritten(t *testing.T) {
	e, ok := parseSnapshotWritten(`time=2026-11-27T04:05:06.789Z level=INFO msg="snapshot written" index=10003 took=1.234s`)
	want := time.Date(2026, 11, 27, 4, 5, 6, 789e6, time.UTC)
	if !ok || e.index != 10003 || e.took != 1234*time.Millisecond || !e.end.Equal(want) ||
		!e.start.Equal(want.Add(-1234*time.Millisecond)) {
		t.Fatalf("parsed %+v, %v", e, ok)
	}
	for _, line := range []string{
		`time=2026-11-27T04:05:06.789Z level=INFO msg="snapshot sent" index=1 took=1s`,
		`time=bad level=INFO msg="snapshot written" index=1 took=1s`,
		`time=2026-11-27T04:05:06.789Z level=INFO msg="snapshot written" index=1`,
	} {
		if _, ok := parseSnapshotWritten(line); ok {
			t.Errorf("parsed %q", line)
		}
	}
}

func TestMultiCreateGen(t *testing.T) {
	g := &multiCreateGen{prefix: []byte("/r/"), value: []byte("v"), per: 3, total: 7}
	var s session
	s.ring = make([]inflight, 4)
	g.issue(&s, 2) // creates /r/6 only
	// The frame: its length, the xid, the op, then the multi.
	body := s.enc.Bytes()[4+8:]
	d := wire.NewDecoder(body)
	var req wire.MultiRequest
	req.Decode(d)
	if err := d.Err(); err != nil || len(req.Ops) != 1 || req.Ops[0].Op != wire.OpCreate ||
		req.Ops[0].Req.(*wire.CreateRequest).Path != "/r/6" {
		t.Fatalf("multi 2 of 3 per multi, 7 in all: %+v, %v", req.Ops, err)
	}
}

// TestSnapshotBenchPhases runs the benchmark's loading and write phases against an
// in-process server: the multis create exactly the znodes asked for, and a phase with
// stop and timeline ends when stop is set and keeps one sample per measured write.
func TestSnapshotBenchPhases(t *testing.T) {
	addr, _ := startPaddock(t)
	cfg := testConfig(addr, WorkloadSet)
	workers, err := connectWorkers(t.Context(), &cfg, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWorkers(workers)
	root := newRunRoot(&cfg)
	if err := createRoot(workers[0].s, cfg.Root, root); err != nil {
		t.Fatal(err)
	}
	const n, per = 1234, 100
	value := cfg.value()
	var next atomic.Int64
	pr := runPhase(&cfg, workers, &phase{name: "load", next: &next, end: (n + per - 1) / per, window: 4,
		gen: &multiCreateGen{prefix: []byte(root + "/"), value: value, per: per, total: n}})
	if err := pr.err(); err != nil || pr.ok != (n+per-1)/per {
		t.Fatalf("load: %d multis, %v", pr.ok, err)
	}
	for _, c := range []struct {
		path string
		want wire.Code
	}{{root + "/0", wire.OK}, {root + "/1233", wire.OK}, {root + "/1234", wire.ErrNoNode}} {
		code, err := call(workers[0].s, wire.OpExists, func(e *wire.Encoder) { e.String(c.path); e.Bool(false) })
		if err != nil || code != c.want {
			t.Errorf("exists %s: %v %v, want %v", c.path, code, err, c.want)
		}
	}

	var stop atomic.Bool
	time.AfterFunc(300*time.Millisecond, func() { stop.Store(true) })
	g := &readGen{prefix: []byte(root + "/"), nodes: n, op: wire.OpSetData, value: value, valueSize: int32(len(value))}
	start := nanotime()
	pr = runPhase(&cfg, workers, &phase{name: "measure", gen: g, next: &next, end: 1 << 62, window: 4,
		record: true, timeline: true, stop: &stop})
	if err := pr.err(); err != nil {
		t.Fatal(err)
	}
	if el := time.Duration(nanotime() - start); el < 300*time.Millisecond || el > 10*time.Second {
		t.Errorf("the phase took %v, want it to end soon after stop was set at 300ms", el)
	}
	var samples int64
	for _, w := range workers {
		samples += int64(len(w.samples))
		if int64(len(w.samples)) != w.hist.count {
			t.Errorf("a worker kept %d samples and recorded %d", len(w.samples), w.hist.count)
		}
		for i, sm := range w.samples {
			if sm.latency <= 0 || sm.at < start || i > 0 && sm.at < w.samples[i-1].at {
				t.Fatalf("sample %d %+v: want a positive latency, completions in order after the start", i, sm)
			}
		}
	}
	if samples != pr.ok || samples == 0 {
		t.Errorf("%d samples for %d writes", samples, pr.ok)
	}
}
