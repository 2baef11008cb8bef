package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server/admin"
)

// BenchmarkEnsemble runs the ensemble section of the side-by-side comparison alone (`make
// bench-ensemble`, QUICK=1 for a short pass), to iterate on it: it prints the section's
// table and writes a report to the temporary directory, never to results.md, which only
// the full BenchmarkSideBySide writes. The Go micro-benchmarks skip it.
func BenchmarkEnsemble(b *testing.B) {
	sb := newBench(b)
	start := time.Now()
	sb.ensembles()
	sb.elapsed = time.Since(start)
	table := MarkdownTable(sb.ens.rows())
	fmt.Printf("\n%s, %s (%s)\n\n%s\n%s\n", ensembleTitle, sb.p.name, sb.elapsed.Round(time.Second), table, sb.ens.goalLine())
	out := filepath.Join(os.TempDir(), "paddock-bench-ensemble.md")
	if sb.p.quick {
		out = filepath.Join(os.TempDir(), "paddock-bench-ensemble-quick.md")
	}
	if err := os.WriteFile(out, []byte(sb.ensembleOnlyReport()), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Println("the report is in", out)
}

const (
	ensembleTitle = "3-member paddock ensemble vs 3-member Apache ZooKeeper 3.8 ensemble"
	ensembleSize  = 3
)

// ensembleCase is a workload of the ensemble section at a concurrency.
type ensembleCase struct {
	workload              string
	sessions, outstanding int
}

// name is the workload, followed by the concurrency unless it is the usual 16 × 4.
func (c ensembleCase) name() string {
	if c.sessions == benchSessions && c.outstanding == benchOutstanding {
		return c.workload
	}
	return fmt.Sprintf("%s %d×%d", c.workload, c.sessions, c.outstanding)
}

// write says whether the case's requests are all writes.
func (c ensembleCase) write() bool { return c.workload == WorkloadCreate || c.workload == WorkloadSet }

// ensembleCases are the runs of the ensemble section: the writes, which every member
// logs and the leader orders, and the reads, which each member answers alone, at 16
// sessions × 4 in flight; then the writes and mixed at 64 × 8, where more in flight
// lets both servers batch more.
var ensembleCases = []ensembleCase{
	{WorkloadCreate, benchSessions, benchOutstanding}, {WorkloadSet, benchSessions, benchOutstanding},
	{WorkloadGet, benchSessions, benchOutstanding}, {WorkloadMixed, benchSessions, benchOutstanding},
	{WorkloadCreate, 64, 8}, {WorkloadSet, 64, 8}, {WorkloadMixed, 64, 8},
}

// ensembleCaseOf returns the case a metric of the ensemble table is about.
func ensembleCaseOf(metric string) ensembleCase {
	best, found := ensembleCases[0], false
	for _, c := range ensembleCases {
		if strings.HasPrefix(metric, c.name()+" ") && (!found || len(c.name()) > len(best.name())) {
			best, found = c, true
		}
	}
	return best
}

// config is the load generator's configuration for case k on c.
func (k ensembleCase) config(sb *sideBySide, c *contestant) Config {
	cfg := sb.config(c, k.workload)
	cfg.Sessions, cfg.Outstanding = k.sessions, k.outstanding
	return cfg
}

// ensembleZooCfg is what the members of both ensembles add to sideBySideZooCfg, besides
// their server.N lines: ZooKeeper's sample zoo.cfg values, which a ZooKeeper ensemble
// requires. paddock accepts and ignores them: Raft's election timeout (1 s) does their job.
var ensembleZooCfg = []string{"initLimit=10", "syncLimit=5"}

// member is one server process of an ensemble.
type member struct {
	id      int
	addr    string
	pid     int
	logPath string
}

// ensembleSection is what the ensemble section measured.
type ensembleSection struct {
	p           plan
	runs        map[string][]runRecord // by server name + "/" + workload, in run order
	zk, paddock *contestant            // stopped by the time the report is written
	elapsed     time.Duration
	// loadBefore and loadAfter are the 1-minute load averages when the section started
	// and ended: a machine shared with other work makes the runs spread.
	loadBefore, loadAfter string
}

// ensembles starts a 3-member ensemble of each kind, waits until each has a leader and
// every member serves, and runs ensembleWorkloads on both: one throwaway run of each
// workload on each ensemble, then plan.runs measured runs alternating ZooKeeper and
// paddock, as throughput does for single servers.
func (sb *sideBySide) ensembles() {
	start := time.Now()
	e := &ensembleSection{p: sb.p, runs: map[string][]runRecord{}, loadBefore: loadAverage()}
	sb.ens = e
	e.zk = sb.startZooKeeperEnsemble(filepath.Join(sb.dir, "zookeeper-ensemble"))
	defer e.zk.kill()
	e.paddock = sb.startPaddockEnsemble(filepath.Join(sb.dir, "paddock-ensemble"))
	defer e.paddock.kill()
	sb.checkSameDevice(e.zk.dir, e.paddock.dir)
	pair := []*contestant{e.zk, e.paddock}
	for _, c := range pair {
		sb.logf("%s: leader member %d of %d, all serving %v after the processes started",
			c.name, c.leader+1, len(c.members), c.ready.Round(time.Millisecond))
	}
	for _, k := range ensembleCases {
		for _, c := range pair {
			cfg := k.config(sb, c)
			cfg.Duration, cfg.Warmup = sb.p.ensembleThrowaway, 0
			r := sb.run(c, cfg)
			sb.checkLeader(c)
			sb.logf("throwaway %-12s %-18s %s", k.name(), c.name, ensembleSummary(r))
		}
	}
	n, total := 0, sb.p.runs*len(ensembleCases)*2
	for rep := range sb.p.runs {
		for _, k := range ensembleCases {
			for _, c := range pair {
				n++
				r := sb.run(c, k.config(sb, c))
				sb.checkLeader(c)
				e.runs[c.name+"/"+k.name()] = append(e.runs[c.name+"/"+k.name()], r)
				sb.logf("[%d/%d] run %d %-12s %-18s %s", n, total, rep+1, k.name(), c.name, ensembleSummary(r))
			}
		}
	}
	e.elapsed = time.Since(start)
	e.loadAfter = loadAverage()
}

// loadAverage returns the 1-minute load average of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return "unknown"
	}
	return fields[0]
}

// startZooKeeperEnsemble starts the members of a ZooKeeper ensemble in dir/member-N,
// concurrently (a member serves only once a quorum runs), and waits for a leader.
func (sb *sideBySide) startZooKeeperEnsemble(dir string) *contestant {
	servers, err := testutil.FreeZooServers(ensembleSize)
	if err != nil {
		sb.b.Fatal(err)
	}
	settings := slices.Concat(sideBySideZooCfg, ensembleZooCfg, testutil.ZooServerLines(servers))
	zks := make([]*testutil.ZooKeeper, len(servers))
	errs := make([]error, len(servers))
	started := time.Now()
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			zks[i], errs[i] = testutil.StartZooKeeper(sb.b, testutil.ZooKeeperOptions{
				Dir: filepath.Join(dir, fmt.Sprintf("member-%d", s.ID)), FourLetterWords: "*", Config: settings,
				JVMFlags: zooKeeperJVMFlags, StartTimeout: 5 * time.Minute, ClientPort: s.ClientPort, MyID: s.ID,
			})
		})
	}
	wg.Wait()
	c := &contestant{name: zkName + " ensemble", dir: dir, started: started}
	c.kill = func() {
		for _, z := range zks {
			if z != nil {
				z.Stop()
			}
		}
	}
	for i, z := range zks {
		if errs[i] != nil {
			c.kill()
			sb.b.Fatalf("ZooKeeper ensemble member %d: %v", i+1, errs[i])
		}
		c.members = append(c.members, member{id: servers[i].ID, addr: z.Addr, pid: z.PID(),
			logPath: filepath.Join(z.Dir, "zookeeper.log")})
	}
	sb.waitEnsemble(c)
	if sb.zkVersion == "" {
		if out, err := testutil.FourLetterWord(c.members[0].addr, "srvr", 5*time.Second); err == nil {
			v, _, _ := strings.Cut(out, "\n")
			sb.zkVersion = strings.TrimPrefix(v, "Zookeeper version: ")
		}
	}
	return c
}

// startPaddockEnsemble starts the members of a paddock ensemble in dir/member-N, each
// `paddock server --zoo-cfg` with the same zoo.cfg settings as ZooKeeper's members and its
// dataDir/myid, and waits for a leader.
func (sb *sideBySide) startPaddockEnsemble(dir string) *contestant {
	return sb.startPaddockEnsembleWith(dir, slices.Concat(sideBySideZooCfg, ensembleZooCfg))
}

// startPaddockEnsembleWith is startPaddockEnsemble with settings as the zoo.cfg lines
// besides tickTime, dataDir, the client port and address, the 4lw whitelist and the
// server.N lines.
func (sb *sideBySide) startPaddockEnsembleWith(dir string, settings []string) *contestant {
	servers, err := testutil.FreeZooServers(ensembleSize)
	if err != nil {
		sb.b.Fatal(err)
	}
	c := &contestant{name: paddockName + " ensemble", dir: dir}
	var procs []*testutil.PaddockProcess
	c.kill = func() {
		for _, p := range procs {
			p.Kill()
		}
	}
	c.started = time.Now()
	for _, s := range servers {
		mdir := filepath.Join(dir, fmt.Sprintf("member-%d", s.ID))
		data := filepath.Join(mdir, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			sb.b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(s.ID)+"\n"), 0o644); err != nil {
			sb.b.Fatal(err)
		}
		lines := slices.Concat([]string{"tickTime=2000", "dataDir=" + data, "clientPort=" + strconv.Itoa(s.ClientPort),
			"clientPortAddress=127.0.0.1", "4lw.commands.whitelist=*"},
			settings, testutil.ZooServerLines(servers))
		cfg := filepath.Join(mdir, "zoo.cfg")
		if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			sb.b.Fatal(err)
		}
		logPath := filepath.Join(mdir, "paddock.log")
		p, err := testutil.LaunchPaddockProcess(sb.b, testutil.PaddockProcessOptions{
			Binary: sb.binary, DataDir: data, Args: []string{"--zoo-cfg", cfg},
			LogPath: logPath, StartTimeout: 5 * time.Minute,
		}, s.ClientPort)
		if err != nil {
			c.kill()
			sb.b.Fatal(err)
		}
		procs = append(procs, p)
		c.members = append(c.members, member{id: s.ID, addr: p.Addr, pid: p.PID(), logPath: logPath})
	}
	for i, p := range procs {
		if err := p.WaitServing(); err != nil {
			c.kill()
			sb.b.Fatalf("paddock ensemble member %d: %v", i+1, err)
		}
		if log, err := os.ReadFile(p.LogPath); err == nil && strings.Contains(string(log), "force_sync is off") {
			c.kill()
			sb.b.Fatalf("paddock ensemble member %d runs with force_sync off:\n%s", i+1, log)
		}
	}
	sb.waitEnsemble(c)
	return c
}

// waitEnsemble waits until srvr says on every member of c that it leads or follows, one
// leading, and completes c with the leader and the members' addresses.
func (sb *sideBySide) waitEnsemble(c *contestant) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		modes, leader, ok := ensembleModes(c.members)
		if ok {
			c.leader = leader
			break
		}
		if time.Now().After(deadline) {
			c.kill()
			sb.b.Fatalf("%s: no leader with every member serving within 2 minutes: %s\nleader candidate's log tail:\n%s",
				c.name, strings.Join(modes, "; "), tail(c.members[0].logPath, 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.ready = time.Since(c.started)
	var addrs []string
	for _, m := range c.members {
		addrs = append(addrs, m.addr)
	}
	c.addr = strings.Join(addrs, ",")
	c.pid, c.logPath = c.members[c.leader].pid, c.members[c.leader].logPath
}

// ensembleModes asks every member for its mode; ok says whether exactly one leads and
// every other follows. modes describes each member's answer.
func ensembleModes(members []member) (modes []string, leader int, ok bool) {
	leaders, followers := 0, 0
	for i, m := range members {
		mode, err := testutil.ServerMode(m.addr, 2*time.Second)
		switch {
		case err != nil:
			modes = append(modes, fmt.Sprintf("member %d: %v", m.id, err))
			continue
		case mode == admin.ModeLeader:
			leaders++
			leader = i
		case mode == admin.ModeFollower:
			followers++
		}
		modes = append(modes, fmt.Sprintf("member %d: %s", m.id, mode))
	}
	return modes, leader, leaders == 1 && leaders+followers == len(members)
}

// checkLeader warns if c's leader no longer leads: the runs after a change of leader,
// which closes the followers' sessions, do not measure the steady state.
func (sb *sideBySide) checkLeader(c *contestant) {
	if mode, err := testutil.ServerMode(c.members[c.leader].addr, 5*time.Second); err != nil || mode != admin.ModeLeader {
		sb.warnf("%s: member %d, the leader, now says %q (%v)", c.name, c.members[c.leader].id, mode, err)
		if _, leader, ok := ensembleModes(c.members); ok {
			c.leader = leader
			c.pid, c.logPath = c.members[leader].pid, c.members[leader].logPath
		}
	}
}

// membersCPU returns the CPU time of every member of an ensemble so far; 0 for one server.
func (c *contestant) membersCPU() time.Duration {
	var sum time.Duration
	for _, m := range c.members {
		sum += processCPU(m.pid)
	}
	return sum
}

// ensembleSummary is one line about an ensemble run for the progress output.
func ensembleSummary(r runRecord) string {
	res := r.res
	s := fmt.Sprintf("%.0f ops/s, p50 %s, p99 %s, max %s, %d errors", res.OpsPerSec,
		ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max), res.Errors)
	if el := res.Elapsed.Seconds(); el > 0 && r.clientCPU > 0 {
		s += fmt.Sprintf("; CPU: leader %.0f%%, all members %.0f%%, client %.0f%%, machine %.0f%%", 100*r.serverCPU.Seconds()/el,
			100*r.membersCPU.Seconds()/el, 100*r.clientCPU.Seconds()/el, 100*r.machineCPU.Seconds()/el)
	}
	return s
}

// rows builds the ensemble table: throughput and latency of each workload, the goal
// on the writes' throughput.
func (e *ensembleSection) rows() []Row {
	var rows []Row
	metric := func(name string, unit Unit, goal Goal, w string, f func(r runRecord) float64) {
		rows = append(rows, NewRow(name, unit, goal, e.values(e.zk, w, f), e.values(e.paddock, w, f)))
	}
	for _, k := range ensembleCases {
		w := k.name()
		rate, tail := GoalNone, GoalNone
		if k.write() || k.workload == WorkloadMixed {
			rate = GoalTwiceAsHigh
		}
		if k.write() {
			tail = GoalHalfOrLess
		}
		metric(w+" ops/s", UnitRate, rate, w, func(r runRecord) float64 { return r.res.OpsPerSec })
		metric(w+" p50", UnitDuration, GoalNone, w, func(r runRecord) float64 { return float64(r.res.Latency.P50) })
		metric(w+" p99", UnitDuration, tail, w, func(r runRecord) float64 { return float64(r.res.Latency.P99) })
		metric(w+" p99.9", UnitDuration, GoalNone, w, func(r runRecord) float64 { return float64(r.res.Latency.P999) })
	}
	var zkErr, pdErr float64
	for _, k := range ensembleCases {
		w := k.name()
		count := func(r runRecord) float64 { return float64(r.res.Errors + int64(len(r.res.Failures))) }
		for _, v := range e.values(e.zk, w, count) {
			zkErr += v
		}
		for _, v := range e.values(e.paddock, w, count) {
			pdErr += v
		}
	}
	return append(rows, NewRow("errors and failed sessions, all runs", UnitCount, GoalZero, []float64{zkErr}, []float64{pdErr}))
}

// values returns f of each measured run of workload w on c.
func (e *ensembleSection) values(c *contestant, w string, f func(r runRecord) float64) []float64 {
	var vs []float64
	for _, r := range e.runs[c.name+"/"+w] {
		vs = append(vs, f(r))
	}
	return vs
}

// goalLine says whether the ensemble goals are met, by the ratios of the medians, and by
// how much each missed one is missed.
func (e *ensembleSection) goalLine() string {
	var parts, short []string
	for _, r := range e.rows() {
		if r.Goal != GoalTwiceAsHigh && r.Goal != GoalHalfOrLess {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", r.Metric, formatRatio(r.Ratio())))
		if s := r.Shortfall(); s != "" {
			short = append(short, r.Metric+" "+s)
		}
	}
	line := "Goal: ensemble create and set ≥ 2× ZooKeeper's throughput with ≤ ½ its p99, at 16 × 4 and 64 × 8, " +
		"and mixed ≥ 2× (ratios of the medians): "
	if len(short) == 0 {
		return line + "**met** (" + strings.Join(parts, ", ") + ")."
	}
	return line + "**missed** (" + strings.Join(short, "; ") + ")."
}

// cpuPerOp returns the median of f(run)/ops over c's runs of w, in µs.
func (e *ensembleSection) cpuPerOp(c *contestant, w string, f func(r runRecord) time.Duration) float64 {
	return Median(e.values(c, w, func(r runRecord) float64 {
		return float64(f(r)) / float64(max(r.res.Ops, 1)) / 1e3
	}))
}

// cpuShare returns the median of f(run) as a share of one core over c's runs of w, in %.
func (e *ensembleSection) cpuShare(c *contestant, w string, f func(r runRecord) time.Duration) float64 {
	return Median(e.values(c, w, func(r runRecord) float64 { return 100 * f(r).Seconds() / r.res.Elapsed.Seconds() }))
}

// The CPU times of a run, for cpuShare and cpuPerOp.
func runLeaderCPU(r runRecord) time.Duration  { return r.serverCPU }
func runMembersCPU(r runRecord) time.Duration { return r.membersCPU }
func runClientCPU(r runRecord) time.Duration  { return r.clientCPU }
func runMachineCPU(r runRecord) time.Duration { return r.machineCPU }

// report renders the ensemble section of results.md.
func (e *ensembleSection) report(b *strings.Builder) {
	p := e.p
	fmt.Fprintf(b, "\n## %s\n\n", ensembleTitle)
	fmt.Fprintf(b, "- Each ensemble: %d member processes on 127.0.0.1, each with its own data directory on the disk above, "+
		"all running while either is measured. Every member's zoo.cfg has the settings above plus `%s` and the lines "+
		"`server.N=127.0.0.1:peer:election;127.0.0.1:client`, and dataDir/myid says which member it is.\n",
		ensembleSize, strings.Join(ensembleZooCfg, "`, `"))
	fmt.Fprintf(b, "- ZooKeeper members: `java %s` each, `QuorumPeerMain`. paddock members: `paddock server --zoo-cfg` "+
		"(Raft; initLimit and syncLimit are ignored, its election timeout is 1 s). fsync on every member of both.\n",
		strings.Join(zooKeeperJVMFlags, " "))
	fmt.Fprintf(b, "- Measured once srvr said, on every member, that one member leads and the others follow (ZooKeeper: %s; "+
		"paddock: %s after the processes started); the leader was checked after every run.\n",
		e.zk.describeStart(), e.paddock.describeStart())
	fmt.Fprintf(b, "- Client: the same client for both, %d-byte values, %d sessions × %d requests in flight unless the "+
		"workload's name says otherwise (64×8: 64 sessions × 8), the sessions connected round-robin to the members "+
		"(%s sessions of 16), each sending its reads and its writes to its own member: a follower answers reads from "+
		"its own copy and forwards writes to the leader. After preparing, each session writes the run's root once, "+
		"so that its member has applied what the other sessions prepared.\n",
		benchValueSize, benchSessions, benchOutstanding, sessionsPerMember())
	fmt.Fprintf(b, "- Workloads %s: one throwaway run of each on each ensemble (%v; JIT warm-up), then %d measured runs, "+
		"alternating ZooKeeper and paddock; each run %v unmeasured, then %v measured. The table shows medians. "+
		"The section took %s; the 1-minute load average was %s when it started and %s when it ended (%d cores).\n",
		ensembleCaseNames(), p.ensembleThrowaway, p.runs, p.warmup, p.duration,
		e.elapsed.Round(time.Second), e.loadBefore, e.loadAfter, runtime.NumCPU())
	fmt.Fprintf(b, "- Six servers and the load generator share %d cores, and the members' fsyncs one disk, where a "+
		"deployed ensemble has a machine and a disk per member: this compares what the two implementations cost "+
		"under the same crowding, not what either would do deployed.\n\n", runtime.NumCPU())
	b.WriteString(MarkdownTable(e.rows()))
	fmt.Fprintf(b, "\n%s\n\n", e.goalLine())
	b.WriteString(MarkdownRuns(e.rows()))
	b.WriteString("\nCPU during the measurements (medians): the leader's share of one core, every member's CPU time " +
		"per operation together, the load generator's share of one core, and how busy the whole machine was " +
		"(every process on it, in cores).\n\n")
	b.WriteString("| workload | ZooKeeper leader | paddock leader | ZooKeeper members CPU/op | paddock members CPU/op | " +
		"client vs ZooKeeper | client vs paddock | machine busy, ZooKeeper runs | machine busy, paddock runs |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range ensembleCases {
		w := k.name()
		fmt.Fprintf(b, "| %s | %.0f %% | %.0f %% | %.1f µs | %.1f µs | %.0f %% | %.0f %% | %.2f of %d | %.2f of %d |\n", w,
			e.cpuShare(e.zk, w, runLeaderCPU), e.cpuShare(e.paddock, w, runLeaderCPU),
			e.cpuPerOp(e.zk, w, runMembersCPU), e.cpuPerOp(e.paddock, w, runMembersCPU),
			e.cpuShare(e.zk, w, runClientCPU), e.cpuShare(e.paddock, w, runClientCPU),
			e.cpuShare(e.zk, w, runMachineCPU)/100, runtime.NumCPU(), e.cpuShare(e.paddock, w, runMachineCPU)/100, runtime.NumCPU())
	}
}

// describeStart says which member led and how long the ensemble took to serve.
func (c *contestant) describeStart() string {
	return fmt.Sprintf("member %d led, all serving %v", c.members[c.leader].id, c.ready.Round(100*time.Millisecond))
}

// ensembleCaseNames lists the cases' names: "create, set, get, …".
func ensembleCaseNames() string {
	names := make([]string, len(ensembleCases))
	for i, k := range ensembleCases {
		names[i] = k.name()
	}
	return strings.Join(names, ", ")
}

// sessionsPerMember says how the round-robin spreads benchSessions: "6, 5, 5".
func sessionsPerMember() string {
	counts := make([]string, ensembleSize)
	for i := range counts {
		counts[i] = strconv.Itoa((benchSessions - i + ensembleSize - 1) / ensembleSize)
	}
	return strings.Join(counts, ", ")
}

// whyMissed explains a missed goal of the ensemble table from what the runs measured:
// whether the machine's cores were the limit, and what each side spent per write.
func (e *ensembleSection) whyMissed(metric string) string {
	k := ensembleCaseOf(metric)
	w := k.name()
	cores := runtime.NumCPU()
	ours := func(c *contestant) float64 {
		return (e.cpuShare(c, w, runMembersCPU) + e.cpuShare(c, w, runClientCPU)) / 100
	}
	machine := e.cpuShare(e.paddock, w, runMachineCPU) / 100
	p50 := Median(e.values(e.paddock, w, func(r runRecord) float64 { return float64(r.res.Latency.P50) }))
	why := fmt.Sprintf("During %s, paddock's members and the load generator kept %.2f cores busy (ZooKeeper's: %.2f) "+
		"and the whole machine %.2f of its %d. ", w, ours(e.paddock), ours(e.zk), machine, cores)
	if machine > 0.9*float64(cores) {
		why += fmt.Sprintf("The cores were the limit: the members and the load generator shared them with "+
			"%.2f cores of work that was none of theirs (the idle ensemble, the kernel's, other processes on the "+
			"machine). ", machine-ours(e.paddock))
	} else {
		why += fmt.Sprintf("The cores were not the limit: at %d requests in flight the rate is the number in "+
			"flight over the commit latency (p50 %s): a write taken by a follower crosses the network three times "+
			"(to the leader, to the other follower, back) and waits for the leader's log and a follower's, whose "+
			"fsyncs share one disk with the third member's. ", k.sessions*k.outstanding, ms(time.Duration(p50)))
	}
	return why + fmt.Sprintf("paddock's leader used %.0f %% of a core and its members %.1f µs of CPU per write "+
		"together (ZooKeeper's: %.0f %% and %.1f µs).", e.cpuShare(e.paddock, w, runLeaderCPU),
		e.cpuPerOp(e.paddock, w, runMembersCPU), e.cpuShare(e.zk, w, runLeaderCPU), e.cpuPerOp(e.zk, w, runMembersCPU))
}

// ensembleOnlyReport renders the report of BenchmarkEnsemble: the machine, the settings
// shared with the standalone comparison, and the ensemble section.
func (sb *sideBySide) ensembleOnlyReport() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", ensembleTitle)
	fmt.Fprintf(&b, "Written by `make bench-ensemble` (bench/ensemble_test.go) on %s, %s, in %s. `make bench` writes "+
		"this section into bench/results.md.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), sb.p.name,
		sb.elapsed.Round(time.Second))
	b.WriteString("## Machine\n\n")
	for _, kv := range sb.machine() {
		fmt.Fprintf(&b, "- %s: %s\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, "\nzoo.cfg of every member: `tickTime=2000`, `%s`, `4lw.commands.whitelist=*`.\n",
		strings.Join(sideBySideZooCfg, "`, `"))
	sb.ens.report(&b)
	rows := sb.labelledEnsembleRows()
	sb.lookedOff(&b, rows)
	sb.unmetGoals(&b, rows)
	return b.String()
}

// ensembleRowPrefix labels the ensemble rows among the standalone ones.
const ensembleRowPrefix = "3-member ensembles: "

// labelledEnsembleRows returns the ensemble rows with their metric prefixed, for the
// lists that mix them with the standalone rows; none if the section did not run.
func (sb *sideBySide) labelledEnsembleRows() []Row {
	if sb.ens == nil {
		return nil
	}
	rows := sb.ens.rows()
	for i := range rows {
		rows[i].Metric = ensembleRowPrefix + rows[i].Metric
	}
	return rows
}

func TestEnsembleCaseOf(t *testing.T) {
	for metric, want := range map[string]string{
		"create ops/s": "create", "set p99": "set", "mixed ops/s": "mixed", "get p99.9": "get",
		"create 64×8 ops/s": "create 64×8", "set 64×8 p99": "set 64×8", "mixed 64×8 p50": "mixed 64×8",
	} {
		if got := ensembleCaseOf(metric).name(); got != want {
			t.Errorf("ensembleCaseOf(%q) = %q, want %q", metric, got, want)
		}
	}
}
