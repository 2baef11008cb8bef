package bench

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// memorySection is what BenchmarkMemory measured, for its section of results.md.
type memorySection struct {
	p        memoryPlan
	cases    []*memoryCaseResult
	elapsed  time.Duration
	commit   string
	warnings []string
	// loadBefore and loadAfter are the machine's 1-minute load average at the start and
	// the end: what else ran.
	loadBefore, loadAfter string
}

// report renders the section.
func (m *memorySection) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", memoryHeading)
	fmt.Fprintf(&b, "Written by `make bench-memory` (bench/memory_test.go, BenchmarkMemory) on %s, %s, in %s; `make bench` "+
		"runs it last, and the comparison keeps this section when it rewrites the file. paddock: %s. The machine is the "+
		"one above (%d cores), one server running at a time; the 1-minute load average was %s when it started and %s "+
		"when it ended.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), m.p.name, m.elapsed.Round(time.Second),
		m.commit, runtime.NumCPU(), m.loadBefore, m.loadAfter)
	m.goals(&b)
	m.conditions(&b)
	b.WriteString("\n### ZooKeeper's heap\n\n")
	for _, r := range m.cases {
		fmt.Fprintf(&b, "- %s: %s\n", r.short(), r.heapLine())
	}
	for _, r := range m.cases {
		fmt.Fprintf(&b, "\n### %s\n\n", r.memoryCase)
		if r.zk != nil {
			fmt.Fprintf(&b, "ZooKeeper at -Xmx%s.\n\n", r.zk.heap)
		} else {
			b.WriteString("ZooKeeper could not hold them at any heap tried (above).\n\n")
		}
		b.WriteString(MarkdownTable(r.rows()))
	}
	for _, r := range m.cases {
		if r.gc != nil {
			r.gc.report(&b)
		}
	}
	if len(m.warnings) > 0 {
		b.WriteString("\nWhat looked off:\n\n")
		for _, w := range m.warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	b.WriteString(memoryReading)
	return b.String()
}

// goals lists issue 23's goals with what was measured.
func (m *memorySection) goals(b *strings.Builder) {
	b.WriteString("Issue 23's goals:\n\n| goal | measured | | |\n|---|---|---|---|\n")
	for _, r := range m.cases {
		for _, row := range r.rows() {
			if row.Goal == GoalNone {
				continue
			}
			met, _ := row.Met()
			measured := FormatValue(row.Paddock, row.Unit)
			if row.Goal == GoalQuarterOrLess {
				measured = fmt.Sprintf("%s against ZooKeeper's %s: %s", measured, FormatValue(row.ZooKeeper, row.Unit),
					formatRatio(row.Ratio()))
			}
			fmt.Fprintf(b, "| %s, %s | %s | %s | %s |\n", row.Metric, r.short(), measured, row.Goal, mark(met))
		}
		if r.gc != nil {
			q, how := r.gc.ratio()
			fmt.Fprintf(b, "| write p99.9 during a collection cycle / outside them, %s | %s: %s | ≤ %.1f× | %s |\n",
				r.short(), formatRatio(q), how, gcTailGoal, mark(q <= gcTailGoal))
		}
	}
}

// conditions says how the section was measured.
func (m *memorySection) conditions(b *strings.Builder) {
	fmt.Fprintf(b, "\n- Each case: a fresh ZooKeeper, loaded, measured, restarted, stopped; then a fresh paddock the same "+
		"way. Each on a data directory of its own on the disk above, removed afterwards; zoo.cfg as in the comparison "+
		"but for snapCount, given with each case. Loading: 2 s of creates as a warm-up (removed), then %d sessions × %d "+
		"pipelined creates, the parents first; every "+
		"znode, parents too, holds the case's value size.\n", benchSessions, benchOutstanding)
	fmt.Fprintf(b, "- ZooKeeper: `java -Xmx<heap> -XX:+ExitOnOutOfMemoryError`, the default collector (G1). The heap steps "+
		"are %s (zkServer.sh's -Xmx1000m first): the first at which it loads the tree and restarts with it is the one "+
		"measured. A step fails on an OutOfMemoryError (the JVM then exits), a failed request or session, or a stall: a "+
		"minute at under a tenth of the load's rate until then (the server is then killed). A failed load starts the next "+
		"step afresh; a failed restart restarts on the same data with the next step.\n", strings.Join(zooKeeperHeaps, ", "))
	b.WriteString("- paddock: as in the comparison (GOGC and GOMEMLIMIT not set: it tunes its collector to the live heap), " +
		"plus its admin port with `admin.pprof=true` and `GODEBUG=gctrace=1` (a line in its log per collection).\n")
	b.WriteString("- RSS: VmRSS of /proc/PID/status just after the load; peak: VmHWM. Live heap: for ZooKeeper `jcmd GC.run` " +
		"(a full collection), then GC.heap_info's heap used; for paddock runtime.GC (`/debug/pprof/heap?gc=1` on the admin " +
		"port; it sweeps the whole heap before it returns), then from /metrics `go_memstats_heap_alloc_bytes` (the live " +
		"objects) and `go_memstats_heap_inuse_bytes` (the heap's spans in use). Not the comparison's estimate, the heap " +
		"goal over 1 + GOGC/100: just after a load paddock's soft memory limit, set from the live heap up to a second " +
		"before, caps the goal and the estimate comes out short. Read after the RSS, which they disturb, and again after " +
		"the last restart. Per znode: over every znode made, parents included.\n")
	b.WriteString("- Snapshot files: those in the data directory once the restarts are done and no snapshot is being " +
		"written. Both servers snapshot the tree they recovered when they start, so the newest holds the whole tree; " +
		"neither purged old ones meanwhile (ZooKeeper's autopurge is off, paddock's runs hourly). Raw data: the znodes' " +
		"paths and values.\n")
	b.WriteString("- Restart: kill -9, start on the same data, time from the process start until a getData of the first " +
		"znode succeeds on a new session (median of the restarts).\n")
}

// heapLine says what each of ZooKeeper's heap steps did with the case.
func (r *memoryCaseResult) heapLine() string {
	var parts []string
	for _, a := range r.attempts {
		var s string
		switch {
		case a.ok && a.stage == stageLoad:
			s = fmt.Sprintf("loaded them (%v)", a.took.Round(time.Second))
		case a.ok:
			s = "restarted with them"
		case a.stage == stageLoad:
			s = fmt.Sprintf("failed after %s znodes (%v): %s", thousands(a.made), a.took.Round(time.Second), a.what)
		default:
			s = fmt.Sprintf("failed to restart (%v): %s", a.took.Round(time.Second), a.what)
		}
		parts = append(parts, fmt.Sprintf("-Xmx%s %s", a.heap, s))
	}
	verdict := "no heap step held them"
	if r.zk != nil {
		verdict = fmt.Sprintf("**ZooKeeper needed -Xmx%s**", r.zk.heap)
	}
	return strings.Join(parts, "; ") + ". " + verdict + "."
}

// rows builds the case's table.
func (r *memoryCaseResult) rows() []Row {
	zk := func(f func(m *serverMemory) float64) []float64 {
		if r.zk == nil {
			return nil
		}
		return []float64{f(r.zk)}
	}
	row := func(name string, unit Unit, goal Goal, f func(m *serverMemory) float64) Row {
		return NewRow(name, unit, goal, zk(f), []float64{f(r.pd)})
	}
	bytes := func(name string, goal Goal, f func(m *serverMemory) int64) Row {
		return row(name, UnitBytes, goal, func(m *serverMemory) float64 { return float64(f(m)) })
	}
	perZnode := func(name string, f func(m *serverMemory) int64) Row {
		return row(name, UnitSmallBytes, GoalNone, func(m *serverMemory) float64 { return float64(f(m)) / float64(m.made) })
	}
	durs := func(m *serverMemory) []float64 {
		if m == nil {
			return nil
		}
		var vs []float64
		for _, d := range m.restarts {
			vs = append(vs, float64(d))
		}
		return vs
	}
	inuse := NewRow("heap in use after a collection (paddock: go_memstats_heap_inuse_bytes)", UnitBytes, GoalNone,
		nil, []float64{float64(r.pd.heapInuse)})
	return []Row{
		bytes("RSS, idle before loading", GoalNone, func(m *serverMemory) int64 { return m.idleRSS }),
		bytes("RSS", r.rssGoal, func(m *serverMemory) int64 { return m.rss }),
		bytes("peak RSS (VmHWM) loading them", GoalNone, func(m *serverMemory) int64 { return m.hwm }),
		bytes("live heap", GoalNone, func(m *serverMemory) int64 { return m.liveHeap }),
		inuse,
		perZnode("live heap per znode", func(m *serverMemory) int64 { return m.liveHeap }),
		perZnode("RSS per znode", func(m *serverMemory) int64 { return m.rss }),
		row("load rate", UnitRate, GoalNone, func(m *serverMemory) float64 { return m.loadRate() }),
		bytes("newest snapshot file (the whole tree)", GoalNone, func(m *serverMemory) int64 { return m.snaps.newest }),
		bytes("all snapshot files in the data directory", GoalNone, func(m *serverMemory) int64 { return m.snaps.total }),
		row("snapshot files in the data directory", UnitCount, GoalNone, func(m *serverMemory) float64 { return float64(m.snaps.count) }),
		bytes("raw data: the paths and values", GoalNone, func(m *serverMemory) int64 { return m.rawBytes }),
		NewRow("restart, to first read", UnitDuration, r.restartGoal, durs(r.zk), durs(r.pd)),
		bytes("RSS after restarting", GoalNone, func(m *serverMemory) int64 { return m.recoveredRSS }),
		bytes("live heap after restarting", GoalNone, func(m *serverMemory) int64 { return m.recoveredLiveHeap }),
	}
}

// ratio returns the write p99.9 during collection cycles over outside them in the run
// with forced collections, or, when the cycles could not be placed on the clock, the
// p99.9 of that run over the run without; and which it is.
func (t *gcTail) ratio() (float64, string) {
	if t.placeErr == nil {
		d, o := t.forced.during.Summary(), t.forced.outside.Summary()
		return float64(d.P999) / float64(o.P999), fmt.Sprintf("%s / %s", ms(d.P999), ms(o.P999))
	}
	f, p := t.forced.res.Latency, t.plain.res.Latency
	return float64(f.P999) / float64(p.P999), fmt.Sprintf("with forced collections %s / without %s (the cycles "+
		"could not be placed)", ms(f.P999), ms(p.P999))
}

// report renders the write tail under collections.
func (t *gcTail) report(b *strings.Builder) {
	fmt.Fprintf(b, "\n### Writes during garbage collection: paddock holding %s\n\n", t.mc)
	fmt.Fprintf(b, "The set workload (%d sessions × %d in flight, %d-byte values, over its own %s znodes) for %v, "+
		"twice: as it is, then with a full collection forced every %v (runtime.GC through the admin port). paddock ran "+
		"restarted on the case's data with snapCount=2³⁰, so that no snapshot fell in the measurement. Its gctrace "+
		"gives each cycle's start and the wall time of its phases; a write counts as during a cycle when it was in "+
		"flight (sent to answered) at any time from the cycle's stop-the-world sweep termination to the end of its "+
		"mark termination, the concurrent mark included.\n\n", benchSessions, benchOutstanding, benchValueSize,
		thousands(int64(DefaultConfig().Nodes)), t.p.duration, t.p.every)
	if t.placeErr != nil {
		fmt.Fprintf(b, "**The cycles could not be placed on the clock** (%v): the split below is not to be trusted, and "+
			"the goal is judged by the run with forced collections against the run without.\n\n", t.placeErr)
	} else {
		fmt.Fprintf(b, "Placement: the trace counts from the Go runtime's start, %v after the process start this "+
			"benchmark recorded, by the %d of %d forced cycles found in the trace (each began between its request "+
			"and its answer). %d cycles traced", t.offset.Round(10*time.Microsecond), t.matched, len(t.forced.requests),
			t.traced)
		if t.missing > 0 {
			fmt.Fprintf(b, ", %d more whose lines other output broke up", t.missing)
		}
		b.WriteString(".\n\n")
	}
	q, how := t.ratio()
	fmt.Fprintf(b, "| | measured | goal | |\n|---|---:|---|---|\n| write p99.9 during a collection cycle / outside "+
		"them | %s = %s | ≤ %.1f× | %s |\n", how, formatRatio(q), gcTailGoal, mark(q <= gcTailGoal))
	f, p := t.forced.res.Latency, t.plain.res.Latency
	fmt.Fprintf(b, "| write p99.9 with forced collections / without | %s / %s = %s | | |\n\n", ms(f.P999), ms(p.P999),
		formatRatio(float64(f.P999)/float64(p.P999)))

	b.WriteString("| writes | completed | p50 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|\n")
	row := func(name string, s Summary) {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name, thousands(s.Count), ms(s.P50), ms(s.P99), ms(s.P999), ms(s.Max))
	}
	for _, r := range []struct {
		name string
		run  *gcRun
	}{{"forced collections", &t.forced}, {"no forced collection", &t.plain}} {
		row(r.name+": during a cycle", r.run.during.Summary())
		row(r.name+": outside every cycle", r.run.outside.Summary())
		row(r.name+": all", r.run.res.Latency)
	}
	b.WriteString("\n| run | ops/s | cycles (forced) | time in cycles | longest cycle | longest stop-the-world phase |\n" +
		"|---|---:|---:|---:|---:|---:|\n")
	for _, r := range []struct {
		name string
		run  *gcRun
	}{{"forced collections", &t.forced}, {"no forced collection", &t.plain}} {
		fmt.Fprintf(b, "| %s | %s | %d (%d) | %.0f %% | %s | %s |\n", r.name, FormatValue(r.run.res.OpsPerSec, UnitRate), r.run.cycles,
			r.run.nForced, 100*r.run.inCycles(), ms(r.run.longest), ms(r.run.longestPause))
	}
}

// memoryReading is what the memory figures cannot show.
const memoryReading = `
### Reading it

- ZooKeeper's RSS is mostly heap the JVM has taken up to -Xmx and keeps; its live heap is what it needs. A heap
  step that held the tree may still have spent much of the load in collections: see the load rate. paddock's
  RSS is its live heap plus the collector's headroom (about 15 % at these sizes) and what the runtime has not
  yet returned to the OS.
- The 10-million-znode case runs with snapCount=1,000,000 (the others with the comparison's 100,000): at
  100,000 each server would write some 130 snapshots of the growing tree, about 70 GB, while loading. A
  restart then replays up to that many transactions after the newest snapshot.
- The collections' write tail is measured on paddock only: forcing a full collection of ZooKeeper's JVM takes
  jcmd, a JVM of its own, on the same two cores, which would disturb more than it measures.
- The client is closed-loop: a stall sends fewer requests, so the percentiles during collection cycles
  understate what an open stream of requests would see.
`
