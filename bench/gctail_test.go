package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The write tail during garbage collection (issue 23: "write p99.9 during a full GC
// cycle at 1M znodes within 1.5× of the p99.9 without"). paddock runs with
// GODEBUG=gctrace=1, so its log has a line for every collection cycle: when it began,
// counted from the Go runtime's start, and how long its three phases took on the wall
// clock. With the process's start time that places each cycle on this process's clock,
// and each measured write (its send and its reply, Config.timeline) either overlaps a
// cycle's span, from the stop-the-world sweep termination through the concurrent mark to
// the stop-the-world mark termination, or does not. The set workload runs twice: once as
// it is (the collections the server's own allocation brings), once with a full
// collection forced every gcTailPlan.every through the admin port
// (/debug/pprof/heap?gc=1 runs runtime.GC). The forced cycles also check the placement:
// each began after its request was sent and before its answer came (calibrate).

// gcTailPlan says how long the write tail under collections is measured.
type gcTailPlan struct {
	duration time.Duration // each run's measurement
	every    time.Duration // between forced collections
}

// gcTailGoal is issue 23's: write p99.9 during a collection cycle / outside them.
const gcTailGoal = 1.5

// gcTail is paddock's write tail with and without forced collections, on one server
// holding a case's tree.
type gcTail struct {
	p             gcTailPlan
	mc            memoryCase
	plain, forced gcRun
	traced        int           // cycles in the server's gctrace
	missing       int           // cycles whose line could not be read (broken up by other output)
	offset        time.Duration // from the process start recorded to the runtime's start (calibrate)
	matched       int           // forced collections whose cycle was found in the trace
	placeErr      error         // why the cycles could not be placed, if they could not
}

// gcRun is one run of the set workload under gcTail.
type gcRun struct {
	res      *Result
	window   interval   // the measurement
	requests []interval // the forced collections, each from its request sent to its answer
	// Of the cycles that overlap the window: how many, how many forced, their spans
	// merged, the longest, the longest stop-the-world phase.
	cycles, nForced       int
	spans                 []interval
	longest, longestPause time.Duration
	during, outside       *Histogram // writes that overlapped a cycle's span, and the others
}

// gcTail measures the write tail of c, which holds mc's tree, without and then with
// forced collections.
func (sb *sideBySide) gcTail(c *contestant, p gcTailPlan, mc memoryCase) *gcTail {
	t := &gcTail{p: p, mc: mc}
	t.plain = sb.gcRun(c, p, false)
	t.forced = sb.gcRun(c, p, true)
	cycles, missing, err := readGCTrace(c.logPath)
	if err != nil {
		sb.b.Fatal(err)
	}
	t.traced, t.missing = len(cycles), missing
	t.offset, t.matched, t.placeErr = calibrate(c.started, cycles, t.forced.requests)
	if t.placeErr != nil {
		sb.warnf("memory: the collection cycles could not be placed on the clock: %v", t.placeErr)
	}
	for _, r := range []*gcRun{&t.plain, &t.forced} {
		r.classify(c.started.Add(t.offset), cycles)
	}
	d, o := t.forced.during.Summary(), t.forced.outside.Summary()
	sb.logf("memory: writes under forced collections: p99.9 %s during a cycle, %s outside (%.2f×); %d cycles, %d forced",
		ms(d.P999), ms(o.P999), float64(d.P999)/float64(o.P999), t.forced.cycles, t.forced.nForced)
	return t
}

// gcRun runs the set workload on c for p.duration, forcing a collection every p.every
// if force, and keeps every write's timing.
func (sb *sideBySide) gcRun(c *contestant, p gcTailPlan, force bool) gcRun {
	cfg := sb.config(c, WorkloadSet)
	cfg.Duration, cfg.timeline = p.duration, true
	var run gcRun
	var forceErr error
	done := make(chan struct{})
	var wg sync.WaitGroup
	cfg.measureHook = func(begin bool) {
		if !begin {
			close(done)
			wg.Wait()
			run.window.end = time.Now()
			return
		}
		run.window.start = time.Now()
		if force {
			wg.Go(func() { run.requests, forceErr = forceGCEvery(c.adminAddr, p.every, done) })
		}
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		sb.b.Fatalf("memory: set workload on %s: %v", c.name, err)
	}
	if forceErr != nil {
		sb.warnf("memory: forcing collections: %v", forceErr)
	}
	if !res.OK() {
		sb.warnf("memory: set workload under collections: %d errors (%s)%s", res.Errors, formatErrors(res.ErrorCodes),
			formatFailures(res.Failures))
	}
	run.res = res
	sb.logf("memory: set under collections, forced %v: %s", force, summaryLine(runRecord{res: res}))
	return run
}

// forceGCEvery forces a collection in the paddock serving adminAddr every period until
// done is closed, and returns when each request was sent and answered.
func forceGCEvery(adminAddr string, period time.Duration, done <-chan struct{}) ([]interval, error) {
	t := time.NewTicker(period)
	defer t.Stop()
	var reqs []interval
	for {
		select {
		case <-done:
			return reqs, nil
		case <-t.C:
		}
		start := time.Now()
		if err := forceGC(adminAddr); err != nil {
			return reqs, err
		}
		reqs = append(reqs, interval{start, time.Now()})
	}
}

// classify splits the run's writes by whether they overlapped a cycle, the cycles placed
// on the clock from origin, the runtime's start.
func (r *gcRun) classify(origin time.Time, cycles []gcCycle) {
	var spans []interval
	for _, g := range cycles {
		iv := g.span(origin)
		if iv.end.Before(r.window.start) || iv.start.After(r.window.end) {
			continue
		}
		spans = append(spans, iv)
		r.cycles++
		if g.forced {
			r.nForced++
		}
		r.longest = max(r.longest, iv.dur())
		r.longestPause = max(r.longestPause, g.sweepTerm, g.markTerm)
	}
	r.spans = mergeIntervals(spans)
	r.during, r.outside = splitByOverlap(r.res.samples, r.spans)
}

// inCycles returns the share of the measurement that some cycle covered.
func (r *gcRun) inCycles() float64 {
	var d time.Duration
	for _, iv := range r.spans {
		d += interval{maxTime(iv.start, r.window.start), minTime(iv.end, r.window.end)}.dur()
	}
	return d.Seconds() / r.window.dur().Seconds()
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// splitByOverlap records each sample's latency in during if the request, from its send
// to its reply, overlapped one of ivs (merged, in order), and in outside if not.
func splitByOverlap(samples []latencySample, ivs []interval) (during, outside *Histogram) {
	during, outside = NewHistogram(), NewHistogram()
	for _, s := range samples {
		sent, got := wall(s.at-s.latency), wall(s.at)
		i := sort.Search(len(ivs), func(i int) bool { return !ivs[i].end.Before(sent) })
		if i < len(ivs) && !ivs[i].start.After(got) {
			during.Record(s.latency)
		} else {
			outside.Record(s.latency)
		}
	}
	return during, outside
}

// mergeIntervals returns ivs in order of their starts, overlapping ones merged.
func mergeIntervals(ivs []interval) []interval {
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b interval) int { return a.start.Compare(b.start) })
	var out []interval
	for _, iv := range ivs {
		if n := len(out); n > 0 && !iv.start.After(out[n-1].end) {
			out[n-1].end = maxTime(out[n-1].end, iv.end)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// gcCycle is one line of the Go runtime's gctrace (GODEBUG=gctrace=1), for example
//
//	gc 12 @3.456s 4%: 0.11+85+0.09 ms clock, 0.2+1.5/40/60+0.1 ms cpu, 300->310->290 MB, ... 6 P (forced)
//
// its number, when it began, counted from the runtime's start (in whole milliseconds),
// and the wall time of its phases: the stop-the-world sweep termination, the concurrent
// mark and scan, and the stop-the-world mark termination.
type gcCycle struct {
	n                         int
	at                        time.Duration
	sweepTerm, mark, markTerm time.Duration
	forced                    bool // runtime.GC: "(forced)" ends the line
}

// span returns when the cycle ran, the runtime having started at origin.
func (g gcCycle) span(origin time.Time) interval {
	start := origin.Add(g.at)
	return interval{start, start.Add(g.sweepTerm + g.mark + g.markTerm)}
}

// gcTraceLine matches a gctrace line's beginning, wherever it stands in a line: other
// output may have been written before it.
var gcTraceLine = regexp.MustCompile(`\bgc (\d+) @(\d+\.\d+)s \d+%: ([\d.]+)\+([\d.]+)\+([\d.]+) ms clock`)

// parseGCTrace parses a gctrace line.
func parseGCTrace(line string) (gcCycle, bool) {
	m := gcTraceLine.FindStringSubmatch(line)
	if m == nil {
		return gcCycle{}, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return gcCycle{}, false
	}
	var d [4]time.Duration
	for i, s := range m[2:6] {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return gcCycle{}, false
		}
		unit := time.Millisecond
		if i == 0 {
			unit = time.Second
		}
		d[i] = time.Duration(f * float64(unit))
	}
	forced := strings.HasSuffix(strings.TrimSpace(line), "(forced)")
	return gcCycle{n: n, at: d[0], sweepTerm: d[1], mark: d[2], markTerm: d[3], forced: forced}, true
}

// readGCTrace returns the cycles of the gctrace in the log at path, in order, and how
// many cycles between the first and the last have no line that parses.
func readGCTrace(path string) (cycles []gcCycle, missing int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if g, ok := parseGCTrace(sc.Text()); ok {
			cycles = append(cycles, g)
		}
	}
	if len(cycles) > 0 {
		missing = cycles[len(cycles)-1].n - cycles[0].n + 1 - len(cycles)
	}
	return cycles, missing, sc.Err()
}

// calibrate returns the offset from start, taken just before the process was started, to
// the runtime's own start, from which gctrace counts: the smallest offset, at least 0,
// that places each forced cycle after its request was sent and before its answer came.
// A forced cycle is the one nearest its request with no offset (a request finds none
// when a cycle the server began meanwhile served it). It also returns how many requests
// found their cycle. An error says that the trace and the requests do not agree.
func calibrate(start time.Time, cycles []gcCycle, requests []interval) (time.Duration, int, error) {
	const near = 50 * time.Millisecond // the most a process start could be off
	lowest, highest := time.Duration(0), time.Duration(1<<62)
	matched := 0
	for _, req := range requests {
		for _, g := range cycles {
			at := start.Add(g.at)
			if !g.forced || at.Before(req.start.Add(-near)) || at.After(req.end.Add(near)) {
				continue
			}
			matched++
			// @ is printed in whole milliseconds, cut: the cycle began up to 1 ms later.
			lowest = max(lowest, req.start.Sub(at)-time.Millisecond)
			highest = min(highest, req.end.Sub(at))
			break
		}
	}
	switch {
	case len(requests) == 0:
		return 0, 0, errors.New("no collection was forced")
	case 2*matched < len(requests):
		return 0, matched, fmt.Errorf("only %d of %d forced collections have a forced cycle in the trace", matched, len(requests))
	case lowest > highest:
		return 0, matched, fmt.Errorf("no offset of the runtime's start places every forced cycle within its request "+
			"(it would take at least %v and at most %v)", lowest, highest)
	}
	return lowest, matched, nil
}

func TestParseGCTrace(t *testing.T) {
	line := "gc 12 @3.456s 4%: 0.11+85+0.090 ms clock, 0.2+1.5/40/60+0.1 ms cpu, 300->310->290 MB, 330 MB goal, " +
		"0 MB stacks, 0 MB globals, 6 P (forced)"
	g, ok := parseGCTrace(line)
	want := gcCycle{n: 12, at: 3456 * time.Millisecond, sweepTerm: 110 * time.Microsecond, mark: 85 * time.Millisecond,
		markTerm: 90 * time.Microsecond, forced: true}
	if !ok || g != want {
		t.Fatalf("parsed %+v, %v; want %+v", g, ok, want)
	}
	natural := strings.TrimSuffix(line, " (forced)")
	if g, ok := parseGCTrace(`time=2026-11-28T10:00:00Z level=INFO msg="x"` + natural); !ok || g.forced || g.n != 12 {
		t.Errorf("after other output, not forced: %+v, %v", g, ok)
	}
	for _, bad := range []string{"", "gc 12 @3.456s", `msg="gc 1 done"`, "scvg: 4 MB released"} {
		if _, ok := parseGCTrace(bad); ok {
			t.Errorf("parsed %q", bad)
		}
	}
	span := g.span(time.Unix(100, 0))
	if !span.start.Equal(time.Unix(100, 0).Add(3456*time.Millisecond)) || span.dur() != 85200*time.Microsecond {
		t.Errorf("span %v lasting %v", span, span.dur())
	}
}

func TestReadGCTrace(t *testing.T) {
	path := t.TempDir() + "/paddock-1.log"
	log := "gc 1 @0.009s 3%: 0.029+1.3+0.010 ms clock, x\n" +
		`time=2026-11-28T10:00:00Z level=INFO msg="serving"` + "\n" +
		"gc 2 @1.000s 0%: 0.1+2+0.1 ms clock, x\n" +
		"gc 3 @1.5" + `time=2026-11-28T10:00:01Z level=INFO msg="broke it up"` + "\n" +
		"gc 4 @2.021s 0%: 0.35+1.1+0.006 ms clock, x, 6 P (forced)\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	cycles, missing, err := readGCTrace(path)
	if err != nil || len(cycles) != 3 || missing != 1 || !cycles[2].forced || cycles[1].n != 2 {
		t.Fatalf("cycles %+v, missing %d, %v", cycles, missing, err)
	}
}

func TestSplitByOverlap(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	at := func(n int64) time.Time { return wall(ms(n)) }
	ivs := mergeIntervals([]interval{{at(200), at(300)}, {at(100), at(150)}, {at(140), at(160)}})
	if len(ivs) != 2 || !ivs[0].end.Equal(at(160)) || !ivs[1].start.Equal(at(200)) {
		t.Fatalf("merged %v", ivs)
	}
	samples := []latencySample{
		{at: ms(50), latency: ms(10)},   // before every cycle
		{at: ms(101), latency: ms(2)},   // sent before the first, answered in it
		{at: ms(155), latency: ms(1)},   // within the merged first
		{at: ms(170), latency: ms(5)},   // between them
		{at: ms(400), latency: ms(300)}, // spans the second whole
		{at: ms(305), latency: ms(4)},   // sent just after the second ended
	}
	during, outside := splitByOverlap(samples, ivs)
	if during.count != 3 || outside.count != 3 {
		t.Errorf("during %d, outside %d; want 3 and 3", during.count, outside.count)
	}
	if d := during.Summary(); d.Max < 300*time.Millisecond {
		t.Errorf("the request that spanned a cycle is not in during: %+v", d)
	}
}

func TestCalibrate(t *testing.T) {
	start := time.Unix(1000, 0)
	// The runtime started 3 ms after start; each forced cycle begins 1–4 ms after its request.
	const runtimeOffset = 3 * time.Millisecond
	var cycles []gcCycle
	var reqs []interval
	for i, sent := range []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second} {
		began := sent + time.Duration(1+i)*time.Millisecond
		cycles = append(cycles, gcCycle{n: 10 + 2*i, at: (began - runtimeOffset).Truncate(time.Millisecond), forced: true},
			gcCycle{n: 11 + 2*i, at: began + 500*time.Millisecond - runtimeOffset}) // a natural one
		reqs = append(reqs, interval{start.Add(sent), start.Add(sent + 40*time.Millisecond)})
	}
	off, matched, err := calibrate(start, cycles, reqs)
	if err != nil || matched != 3 || off < time.Millisecond || off > runtimeOffset+time.Millisecond {
		t.Errorf("offset %v, %d matched, %v; want about %v", off, matched, err, runtimeOffset)
	}
	// A request that a natural cycle served has no forced cycle: still placed by the others.
	if _, matched, err := calibrate(start, slices.Delete(slices.Clone(cycles), 2, 3), reqs); err != nil || matched != 2 {
		t.Errorf("one forced cycle missing: %d matched, %v", matched, err)
	}
	// A trace whose forced cycles contradict each other.
	bad := slices.Clone(cycles)
	bad[0].at += 60 * time.Millisecond // would begin after its answer
	if _, _, err := calibrate(start, bad, reqs); err == nil {
		t.Error("contradicting cycles placed")
	}
	if _, _, err := calibrate(start, cycles, nil); err == nil {
		t.Error("placed without requests")
	}
}
