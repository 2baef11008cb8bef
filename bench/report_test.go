package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/paddock/paddock/server"
)

// report renders results.md: the machine, the conditions, the table, every run's values
// and what looked off.
func (sb *sideBySide) report(table string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# paddock vs Apache ZooKeeper 3.8, side by side\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (bench/sidebyside_test.go) on %s, in %s. Re-run it to refresh this file.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), sb.elapsed.Round(time.Second))
	b.WriteString("## Machine\n\n")
	for _, kv := range sb.machine() {
		fmt.Fprintf(&b, "- %s: %s\n", kv[0], kv[1])
	}
	sb.conditions(&b)
	b.WriteString("## Results\n\n")
	b.WriteString(table)
	b.WriteString("\nRatios are paddock / ZooKeeper, of the medians. ✓/✗: the issue's goals (≥ 2× the throughput and ≤ ½ " +
		"the p99 on create, set, get and mixed; ≤ ½ the memory; faster fan-out; paddock restarts in under 3 s). The " +
		"table below also gives the ratio of each pair of runs (ZooKeeper's run i and paddock's run i ran one after the " +
		"other), which cancels what slowed the machine for both.\n\n")
	b.WriteString("## Every run\n\n")
	b.WriteString(MarkdownRuns(sb.rows()))
	sb.cpuTable(&b)
	sb.liveData(&b)
	rows := sb.rows()
	if sb.ens != nil {
		sb.ens.report(&b)
		rows = append(rows, sb.labelledEnsembleRows()...)
	}
	sb.lookedOff(&b, rows)
	sb.unmetGoals(&b, rows)
	b.WriteString(readingTheseNumbers)
	return b.String()
}

// keptSections are the sections of results.md that benchmarks of their own write
// (BenchmarkSnapshotUnderLoad, BenchmarkMemory), and the one written by hand from runs on a
// 16-core machine: BenchmarkSideBySide keeps them as they were.
var keptSections = []string{snapshotHeading, memoryHeading, devbenchHeading}

// devbenchHeading is the section of results.md that holds what ../shared/DEVBENCH.md's
// side-by-side printed on a 16-core machine, copied by hand: no benchmark here writes it.
const devbenchHeading = "## On a 16-core machine (../shared/DEVBENCH.md, copied by hand)"

// keepSections returns report with the kept sections of old in it.
func keepSections(report, old string) string {
	for _, h := range keptSections {
		if sec := sectionOf(old, h); sec != "" {
			report = spliceSection(report, h, sec)
		}
	}
	return report
}

// writeSection prints section, which begins with heading, and writes it into results.md
// in place of the one there (spliceSection); a quick pass writes it to quickName in the
// temporary directory instead: it must not pass for the real thing.
func (sb *sideBySide) writeSection(heading, section string, quick bool, quickName string) {
	fmt.Printf("\n%s\n", section)
	if quick {
		out := filepath.Join(os.TempDir(), quickName)
		if err := os.WriteFile(out, []byte(section), 0o644); err != nil {
			sb.b.Fatal(err)
		}
		fmt.Println("the section is in", out)
		return
	}
	old, err := os.ReadFile("results.md")
	if err != nil {
		sb.b.Fatal(err)
	}
	if err := os.WriteFile("results.md", []byte(spliceSection(string(old), heading, section)), 0o644); err != nil {
		sb.b.Fatal(err)
	}
	fmt.Println("the section is in results.md")
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

// readingTheseNumbers is what the comparison cannot show, for whoever reads results.md.
const readingTheseNumbers = `
## Reading these numbers

- One machine, 2 cores, shared by the load generator and the server under test (the other
  server idles meanwhile). The client's own CPU share (table above) grows with the server's
  speed, so the faster server's throughput is capped earlier by the machine and its tail
  latency includes more of the client's scheduling delays.
- The client is closed-loop: 64 requests in flight, a new one sent only when one returns. When
  a server stalls, fewer requests are sent, so the percentiles understate what an open stream
  of requests would see during the stall (coordinated omission). At a fixed window the median
  latency is about 64 / throughput (Little's law): the p50 rows restate the throughput rows.
- Fan-out times include the load generator reading 10,000 sockets on the same cores.
- fsync here is a virtio flush: it may not reach stable media the way a real disk's would,
  and both servers' write rates depend on it through group commit.
- ZooKeeper's RSS is mostly heap the JVM keeps up to -Xmx, and one reading after the load
  depends on where G1 was in its cycle; paddock's includes the Go collector's headroom. Live
  data is shown separately above.
- Tails: on this 2-core VM a thread preempted by the other busy process can wait a whole
  scheduler tick (4 ms), which sets a floor under both servers' p99.9. paddock runs spare
  Ps so one preempted thread does not hold up the requests queued behind it (before it did,
  its read p99 was 1.4–4.3 ms; docs/performance.md); what remains is not resolvable here.
- Medians of a few runs on a shared VM: see the per-run values, the paired ratios and the spreads
  listed above.
`

// conditions describes how the comparison ran.
func (sb *sideBySide) conditions(b *strings.Builder) {
	p := sb.p
	b.WriteString("\n## Conditions\n\n")
	fmt.Fprintf(b, "- Both servers are separate processes on 127.0.0.1 with data directories on the same device; the load\n"+
		"  generator (this package's client, `paddock bench`) is a third, on the same %d cores.\n", runtime.NumCPU())
	fmt.Fprintf(b, "- Same zoo.cfg settings for both (paddock reads it with `--zoo-cfg`): `tickTime=2000`, `%s`, "+
		"`4lw.commands.whitelist=*`. fsync is on in both.\n", strings.Join(sideBySideZooCfg, "`, `"))
	fmt.Fprintf(b, "- ZooKeeper: `java %s` (zkServer.sh's heap), default collector, `ZooKeeperServerMain`, log level INFO.\n",
		strings.Join(zooKeeperJVMFlags, " "))
	fmt.Fprintf(b, "- paddock: `go build ./cmd/paddock` of the commit above, GOMAXPROCS and GOGC not set: paddock then runs "+
		"%d Ps (the cores + 4; docs/performance.md says why) and tunes GOGC to its live heap; log level info.\n",
		server.ProcsFor(0))
	fmt.Fprintf(b, "- Client: %d sessions × %d requests in flight (64 concurrent requests), %d-byte values; each "+
		"workload under its own root, prepared before the clock starts.\n", benchSessions, benchOutstanding, benchValueSize)
	fmt.Fprintf(b, "- Every workload ran once on each server as a throwaway (%v; JIT warm-up), then %d measured runs on each, "+
		"alternating ZooKeeper and paddock (Z P Z P …, workload by workload, the whole suite %d times). Each run: %v "+
		"unmeasured, then %v measured (delete: %s znodes; churn: %d-ephemeral session lifecycles). The table shows medians.\n",
		p.throwaway, p.runs, p.runs, p.warmup, p.duration, thousands(p.deleteOps), DefaultConfig().Ephemerals)
	fmt.Fprintf(b, "- Fan-out: %s sessions each set a data watch on one znode, a separate session sets it, the round ends "+
		"when every watcher has read its notification; %d rounds per run.\n", thousands(int64(p.watchers)), p.rounds)
	fmt.Fprintf(b, "- Memory and restart: fresh servers, 2 s of creates as a warm-up, then %s znodes of 100 B created "+
		"under one parent (16 × 4 pipelined creates); RSS and peak RSS (VmRSS, VmHWM of /proc/PID/status) right "+
		"after. Restart: kill -9, start on the same data, time from the process start until a getData of a loaded "+
		"znode succeeds on a new session; %d restarts each, alternating.\n", thousands(p.znodes), p.restarts)
	b.WriteString("- Latency is per request, from just before the write that carried it to the read that returned its reply.\n\n")
}

// cpuTable shows each server's CPU time per operation and the load generator's CPU share.
func (sb *sideBySide) cpuTable(b *strings.Builder) {
	b.WriteString("\n## CPU during the measurements (medians)\n\n")
	b.WriteString("Server: the process's user+system time per operation. Client: this load generator's share of one core.\n\n")
	b.WriteString("| workload | ZooKeeper CPU/op | paddock CPU/op | client CPU vs ZooKeeper | client CPU vs paddock |\n|---|---:|---:|---:|---:|\n")
	for _, w := range Workloads {
		perOp := func(server string) string {
			var vs []float64
			for _, r := range sb.runs[server+"/"+w] {
				if r.res.Ops > 0 {
					vs = append(vs, float64(r.serverCPU)/float64(r.res.Ops))
				}
			}
			if w == WorkloadFanout {
				return "—"
			}
			return fmt.Sprintf("%.1f µs", Median(vs)/1e3)
		}
		client := func(server string) string {
			var vs []float64
			for _, r := range sb.runs[server+"/"+w] {
				vs = append(vs, 100*r.clientCPU.Seconds()/r.res.Elapsed.Seconds())
			}
			return fmt.Sprintf("%.0f %%", Median(vs))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", w, perOp(zkName), perOp(paddockName), client(zkName), client(paddockName))
	}
}

// liveData says how much of each server's RSS was live data.
func (sb *sideBySide) liveData(b *strings.Builder) {
	p := sb.p
	b.WriteString("\n## Live data behind the RSS\n\n")
	if zm, pm := sb.memory[zkName], sb.memory[paddockName]; zm != nil && pm != nil {
		fmt.Fprintf(b, "- ZooKeeper: %d MiB of RSS with %s znodes, of which %d MiB was live heap after a full GC "+
			"(`jcmd GC.run`, then `GC.heap_info`, after the RSS readings); the rest is heap the JVM keeps between "+
			"collections (up to -Xmx), metaspace, code and thread stacks.\n", zm.loadedRSS>>20, thousands(p.znodes), zm.liveHeap>>20)
		fmt.Fprintf(b, "- paddock: %d MiB of RSS after the last restart, of which %d MiB was live heap after a full "+
			"collection (runtime.GC through the admin port's `/debug/pprof/heap?gc=1`, then `go_memstats_heap_alloc_bytes` "+
			"from /metrics); the rest is the collector's headroom, memory not yet returned to the OS, and the runtime's own.\n",
			pm.recoveredRSS>>20, pm.liveHeap>>20)
	}
}

// lookedOff lists errors, failed sessions, failed clean-ups and, of rows, the runs that
// spread widely.
func (sb *sideBySide) lookedOff(b *strings.Builder, rows []Row) {
	b.WriteString("\n## What looked off\n\n")
	if len(sb.warnings) == 0 {
		b.WriteString("- No errors, no failed sessions, every clean-up complete.\n")
	}
	for _, w := range sb.warnings {
		fmt.Fprintf(b, "- %s\n", w)
	}
	for _, r := range rows {
		met, ok := r.Met()
		if paired, pok := r.MetPaired(); ok && pok && met != paired {
			fmt.Fprintf(b, "- %s: the goal (%s) is %s by the ratio of the medians (%s) but %s by the median of the "+
				"paired ratios (%s); the verdict is within the noise.\n", r.Metric, r.Goal, verdict(met),
				formatRatio(r.Ratio()), verdict(paired), formatRatio(r.PairedRatio()))
		}
		for _, side := range []struct {
			name string
			runs []float64
		}{{zkName, r.ZooKeeperRuns}, {paddockName, r.PaddockRuns}} {
			if len(side.runs) < 3 || r.Unit != UnitRate {
				continue
			}
			lo, hi := slices.Min(side.runs), slices.Max(side.runs)
			if lo > 0 && hi/lo > 1.25 {
				fmt.Fprintf(b, "- %s, %s: the runs spread by %.0f %% (%s to %s).\n", r.Metric, side.name,
					100*(hi/lo-1), FormatValue(lo, r.Unit), FormatValue(hi, r.Unit))
			}
		}
	}
}

// unmetGoals lists each goal of rows paddock missed, by how much, and why: for single
// servers from the analysis in docs/performance.md, for the ensembles from what they measured.
func (sb *sideBySide) unmetGoals(b *strings.Builder, rows []Row) {
	b.WriteString("\n## Goals not reached, by how much and why\n\n")
	missed := 0
	for _, r := range rows {
		if short := r.Shortfall(); short != "" {
			missed++
			why := whyMissed(r.Metric)
			if metric, ok := strings.CutPrefix(r.Metric, ensembleRowPrefix); ok {
				why = sb.ens.whyMissed(metric)
			}
			fmt.Fprintf(b, "- **%s**: %s. %s\n", r.Metric, short, why)
		}
	}
	if missed == 0 {
		b.WriteString("- None: every goal is met by the ratio of the medians.\n")
	}
}

// whyMissed explains a missed goal by the kind of metric.
func whyMissed(metric string) string {
	workload, stat, _ := strings.Cut(metric, " ")
	write := workload == WorkloadCreate || workload == WorkloadSet || workload == WorkloadDelete
	switch {
	case write && stat == "ops/s":
		return "Writes are bound by the group-commit cycle, not by CPU: with 64 requests in flight each batch " +
			"waits for one log fdatasync (about 250 µs on this disk under load) and the trip back to the client, " +
			"so throughput is about the batch size over that cycle; paddock spends 2–3× less CPU per write than " +
			"ZooKeeper (CPU table) but both wait on the same disk. A create costs more than a set (a B-tree insert, " +
			"the parent's update, and snapshots of a tree that grows by ~60,000 znodes a second)."
	case (write || workload == WorkloadMixed) && stat == "p99":
		return "The write tail is the disk's and the machine's: a log fdatasync over 2 ms (several a second on " +
			"this virtio disk, more while a snapshot of a growing tree is written) holds up every write in flight " +
			"in either server, and the server and the load generator together keep both cores busy, so a request " +
			"also waits for time slices. mixed's p99 lies among its writes (10 % of the requests)."
	case stat == "p99":
		return "Read tails on this machine come from CPU time slices: the server and the load generator keep both " +
			"cores busy, and a thread preempted by the other process waits up to a scheduler tick (4 ms); the " +
			"faster paddock is, the more of the cores the load generator takes (CPU table)."
	}
	return "See docs/performance.md."
}

// machine describes the machine and the software the comparison ran on.
func (sb *sideBySide) machine() [][2]string {
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	add("CPU", fmt.Sprintf("%s, %d cores", firstMatch("/proc/cpuinfo", "model name"), runtime.NumCPU()))
	var memKB int64
	fmt.Sscan(strings.TrimSuffix(firstMatch("/proc/meminfo", "MemTotal"), " kB"), &memKB)
	add("memory", fmt.Sprintf("%.1f GiB", float64(memKB)/(1<<20)))
	add("kernel", readTrim("/proc/sys/kernel/osrelease"))
	add("disk (both data directories)", diskOf(sb.dir))
	add("fsync on that disk", fsyncLatency(sb.dir))
	add("Go", runtime.Version())
	java, _ := exec.Command("java", "-version").CombinedOutput()
	add("Java", strings.SplitN(strings.TrimSpace(string(java)), "\n", 2)[0])
	add("ZooKeeper", sb.zkVersion+" (Debian package)")
	add("paddock", sb.commit)
	add("date", time.Now().UTC().Format(time.RFC3339))
	return out
}

// gitCommit names the commit the paddock binary was built from, and whether the working
// tree had changes on top of it.
func gitCommit() string {
	out, err := exec.Command("git", "log", "-1", "--format=%h %s").Output()
	if err != nil {
		return "unknown commit: " + err.Error()
	}
	s := "commit " + strings.TrimSpace(string(out))
	if dirty, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(dirty) > 0 {
		s += " (with uncommitted changes in the working tree)"
	}
	return s
}

// fsyncLatency measures the disk the servers write to: 500 appends of 100 bytes to a
// preallocated file, each followed by fdatasync, as both servers' logs do.
func fsyncLatency(dir string) string {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return err.Error()
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Truncate(1 << 20); err != nil {
		return err.Error()
	}
	f.Sync()
	h := NewHistogram()
	rec := make([]byte, 100)
	for i := range 500 {
		start := time.Now()
		if _, err := f.WriteAt(rec, int64(i*len(rec))); err != nil {
			return err.Error()
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return err.Error()
		}
		h.Record(int64(time.Since(start)))
	}
	s := h.Summary()
	return fmt.Sprintf("100-byte append + fdatasync to a preallocated file: p50 %s, p99 %s (500 samples)", ms(s.P50), ms(s.P99))
}

// firstMatch returns the value of the first "key: value" line of file with key.
func firstMatch(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown"
}

func readTrim(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}

// diskOf names the file system and device dir is on, from /proc/self/mountinfo, and
// whether the kernel thinks the device rotates.
func diskOf(dir string) string {
	dir, _ = filepath.EvalSymlinks(dir)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	best, desc := "", "unknown"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options ... - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		mount := fields[4]
		if (dir == mount || strings.HasPrefix(dir, strings.TrimSuffix(mount, "/")+"/")) && len(mount) > len(best) {
			best = mount
			fsType, source := fields[sep+1], fields[sep+2]
			desc = fmt.Sprintf("%s on %s (mounted at %s)", fsType, source, mount)
			if dev := filepath.Base(source); strings.HasPrefix(source, "/dev/") {
				// virtio disks say 1 whatever is behind them, so this is the kernel's belief only
				desc += ", queue/rotational=" + readTrim("/sys/block/"+dev+"/queue/rotational")
			}
		}
	}
	return desc
}
