package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server/wire"
)

// BenchmarkSideBySide runs paddock and Apache ZooKeeper 3.8 side by side on this machine,
// each as its own process, with the same client (this package) and the same durability,
// prints the comparison table and, unless in quick mode, writes it to results.md. `make
// bench` runs it with -benchtime 1x; PADDOCK_BENCH_QUICK=1 (make bench QUICK=1) makes a
// short pass for iterating. The Go micro-benchmarks skip it (make bench's first step).
//
// Method: both servers get the same zoo.cfg settings (sideBySideZooCfg) on data
// directories of the same device; ZooKeeper runs with the JVM heap its own scripts give it
// (zkEnv.sh: -Xmx1000m) and the default collector. Every workload first runs once on each
// server as a throwaway (JIT warm-up). Then each workload runs plan.runs times on each
// server, alternating ZooKeeper and paddock, and the table shows the medians. Memory and
// restart are measured on fresh servers loaded with plan.znodes znodes of 100 bytes.
// Last, a 3-member ensemble of each runs the write and read workloads the same way
// (ensemble_test.go; BenchmarkEnsemble runs that section alone).
func BenchmarkSideBySide(b *testing.B) {
	sb := newBench(b)
	p := sb.p
	start := time.Now()
	sb.throughput()
	sb.memoryAndRestart()
	sb.ensembles()
	sb.elapsed = time.Since(start)
	table := MarkdownTable(sb.rows())
	fmt.Printf("\npaddock vs Apache ZooKeeper 3.8, %s (%s)\n\n%s\n", sb.p.name, sb.elapsed.Round(time.Second), table)
	fmt.Printf("%s (%s)\n\n%s\n%s\n\n", ensembleTitle, sb.ens.elapsed.Round(time.Second), MarkdownTable(sb.ens.rows()),
		sb.ens.goalLine())
	out := "results.md"
	if p.quick { // a quick pass must not pass for the real thing
		out = filepath.Join(os.TempDir(), "paddock-bench-quick.md")
	}
	report := sb.report(table)
	if old, err := os.ReadFile("results.md"); err == nil && !p.quick {
		report = keepSections(report, string(old))
	}
	if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Println("the report is in", out)
}

// plan says how much the side-by-side comparison runs.
type plan struct {
	name      string
	quick     bool
	runs      int           // measured runs of each workload on each server
	duration  time.Duration // measurement of each run
	warmup    time.Duration // unmeasured start of each run
	throwaway time.Duration // the JIT warm-up run of each workload, per server
	deleteOps int64         // the delete workload deletes this many znodes per run
	watchers  int           // fan-out
	rounds    int64         // fan-out rounds per run
	znodes    int64         // loaded for the memory and restart measurements
	restarts  int           // restarts of each server

	ensembleThrowaway time.Duration // the JIT warm-up run of each workload, per ensemble
}

func fullPlan() plan {
	return plan{name: "full run", runs: 5, duration: 3 * time.Second, warmup: time.Second, throwaway: 8 * time.Second,
		deleteOps: 100_000, watchers: 10_000, rounds: 10, znodes: 1_000_000, restarts: 3, ensembleThrowaway: 5 * time.Second}
}

func quickPlan() plan {
	return plan{name: "quick run", quick: true, runs: 1, duration: time.Second, throwaway: time.Second,
		deleteOps: 10_000, watchers: 1000, rounds: 3, znodes: 100_000, restarts: 1, ensembleThrowaway: time.Second}
}

// The client settings of every run: 16 sessions × 4 requests in flight, 100-byte values.
const (
	benchSessions    = 16
	benchOutstanding = 4
	benchValueSize   = 100
)

// sideBySideZooCfg is the configuration both servers get in zoo.cfg (paddock reads it
// with --zoo-cfg), besides tickTime=2000, dataDir, clientPort and the 4lw whitelist "*".
// Most are the defaults of both, written out so that the table's conditions are on record.
var sideBySideZooCfg = []string{
	"maxClientCnxns=0",            // 10,000 fan-out sessions come from one address
	"forceSync=yes",               // fsync before acknowledging a write
	"snapCount=100000",            // snapshot every 50,001..100,000 txns
	"preAllocSize=65536",          // 64 MiB log preallocation
	"globalOutstandingLimit=1000", // requests in flight before the server stops reading
	"admin.enableServer=false",
}

// zooKeeperJVMFlags are what zkServer.sh gives ZooKeeper 3.8 (zkEnv.sh's ZK_SERVER_HEAP).
var zooKeeperJVMFlags = []string{"-Xmx1000m"}

const (
	zkName      = "ZooKeeper"
	paddockName = "paddock"
)

// contestant is one server under test, as a child process, or an ensemble of them.
type contestant struct {
	name    string
	addr    string // an ensemble's: its members' client addresses, comma-separated
	pid     int    // an ensemble's: its leader's
	started time.Time
	ready   time.Duration
	dir     string
	logPath string
	kill    func()
	// adminAddr is paddock's admin HTTP address, if it has one.
	adminAddr string
	// members are an ensemble's member processes, in member order; nil for one server.
	members []member
	leader  int // the index in members of the leader
	// restart, if not nil, starts another server of the same kind and options on the
	// same directory (after kill).
	restart func() (*contestant, error)
}

type sideBySide struct {
	b       *testing.B
	p       plan
	dir     string // parent of both servers' directories
	binary  string // the paddock binary
	elapsed time.Duration

	zk, paddock *contestant
	runs        map[string][]runRecord // by server name + "/" + workload, in run order
	ens         *ensembleSection       // nil until ensembles runs
	memory      map[string]*memoryRecord
	warnings    []string // what looked off, for the report
	zkVersion   string   // srvr's first line
	commit      string   // what the paddock binary was built from
}

// runRecord is one measured run.
type runRecord struct {
	res       *Result
	serverCPU time.Duration // the server process's CPU time during the measurement; an ensemble's leader's
	clientCPU time.Duration // this process's CPU time during the measurement
	// membersCPU is, for an ensemble, every member's CPU time during the measurement.
	membersCPU time.Duration
	// machineCPU is the busy time of all the machine's cores during the measurement,
	// whatever process used them.
	machineCPU time.Duration
}

// memoryRecord is what the memory and restart measurements found on one server.
type memoryRecord struct {
	idleRSS, loadedRSS, loadedHWM, recoveredRSS int64
	// liveHeap is the live data: for ZooKeeper the heap in use after a full GC, for
	// paddock the heap allocated after a full collection after the last restart (liveHeap).
	liveHeap int64
	load     *Result
	restarts []time.Duration
}

// newBench returns the driver of a benchmark of processes: with the quick plan when
// PADDOCK_BENCH_QUICK is set (make bench QUICK=1), with the full plan otherwise.
func newBench(b *testing.B) *sideBySide {
	return newSideBySide(b, choose(os.Getenv("PADDOCK_BENCH_QUICK") != "", quickPlan, fullPlan))
}

// choose returns quick's plan in a quick pass, full's otherwise.
func choose[P any](quickPass bool, quick, full func() P) P {
	if quickPass {
		return quick()
	}
	return full()
}

func newSideBySide(b *testing.B, p plan) *sideBySide {
	sb := &sideBySide{b: b, p: p, dir: b.TempDir(), runs: map[string][]runRecord{}, memory: map[string]*memoryRecord{}}
	sb.commit = gitCommit() // before the build: others may commit while the comparison runs
	bin, err := testutil.BuildPaddock(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	sb.binary = bin
	return sb
}

// logf prints a progress line to stderr.
func (sb *sideBySide) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func (sb *sideBySide) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	sb.warnings = append(sb.warnings, msg)
	sb.logf("WARNING: %s", msg)
}

// startZooKeeper starts ZooKeeper in dir, which it keeps across restarts, with the
// comparison's settings and heap.
func (sb *sideBySide) startZooKeeper(dir string) *contestant {
	c, err := sb.startZooKeeperWith(dir, zooKeeperStart{})
	if err != nil {
		sb.b.Fatal(err)
	}
	return c
}

// zooKeeperStart is how a ZooKeeper of the benchmarks starts, besides what every one gets.
type zooKeeperStart struct {
	jvmFlags []string // nil: zooKeeperJVMFlags
	settings []string // nil: sideBySideZooCfg
}

// startZooKeeperWith starts ZooKeeper in dir with o. A server that does not start (one
// whose heap cannot hold its data, say) is an error, not the benchmark's end.
func (sb *sideBySide) startZooKeeperWith(dir string, o zooKeeperStart) (*contestant, error) {
	flags, settings := orDefault(o.jvmFlags, zooKeeperJVMFlags), orDefault(o.settings, sideBySideZooCfg)
	z, err := testutil.StartZooKeeper(sb.b, testutil.ZooKeeperOptions{
		Dir: dir, FourLetterWords: "*", Config: settings, JVMFlags: flags, StartTimeout: 5 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	return &contestant{name: zkName, addr: z.Addr, pid: z.PID(), started: z.Started, ready: z.Ready,
		dir: dir, logPath: filepath.Join(dir, "zookeeper.log"), kill: func() { z.Stop() },
		restart: func() (*contestant, error) { return sb.startZooKeeperWith(dir, o) }}, nil
}

// orDefault returns vs, or def if vs is nil.
func orDefault(vs, def []string) []string {
	if vs == nil {
		return def
	}
	return vs
}

// startPaddock starts paddock in dir with the same zoo.cfg settings; each start logs to a
// file of its own. With admin, its admin HTTP server (for /metrics, and /debug/pprof for
// liveHeap's collection) listens on a free port.
func (sb *sideBySide) startPaddock(dir string, admin bool) *contestant {
	return sb.startPaddockWith(dir, paddockStart{admin: admin, pprof: admin})
}

// paddockStart is how a paddock of the benchmarks starts, besides what every one gets.
type paddockStart struct {
	// admin serves the admin port on a free port (for /metrics); pprof adds
	// /debug/pprof/ there (admin.pprof), which forceGC uses.
	admin, pprof bool
	settings     []string // zoo.cfg lines; nil: sideBySideZooCfg
	env          []string // "NAME=value", e.g. GODEBUG=gctrace=1
}

// startPaddockWith starts paddock in dir with o.
func (sb *sideBySide) startPaddockWith(dir string, o paddockStart) *contestant {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		sb.b.Fatal(err)
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	lines := slices.Concat([]string{"tickTime=2000", "dataDir=" + filepath.Join(dir, "data"), "clientPort=2181",
		"4lw.commands.whitelist=*"}, orDefault(o.settings, sideBySideZooCfg))
	if o.pprof {
		lines = append(lines, "admin.pprof=true")
	}
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		sb.b.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "paddock-*.log"))
	logPath := filepath.Join(dir, fmt.Sprintf("paddock-%d.log", len(logs)+1))
	args := []string{"--zoo-cfg", cfg}
	var adminAddr string
	if o.admin || o.pprof {
		port, err := testutil.FreePort()
		if err != nil {
			sb.b.Fatal(err)
		}
		adminAddr = fmt.Sprintf("127.0.0.1:%d", port)
		args = append(args, "--admin-addr", adminAddr) // the last --admin-addr wins
	}
	p := testutil.StartPaddockProcess(sb.b, testutil.PaddockProcessOptions{
		Binary: sb.binary, DataDir: filepath.Join(dir, "data"), Args: args, Env: o.env,
		LogPath: logPath, StartTimeout: 5 * time.Minute,
	})
	if log, err := os.ReadFile(logPath); err == nil && strings.Contains(string(log), "force_sync is off") {
		sb.b.Fatalf("paddock runs with force_sync off:\n%s", log)
	}
	return &contestant{name: paddockName, addr: p.Addr, pid: p.PID(), started: p.Started, ready: p.Ready,
		dir: dir, logPath: logPath, kill: p.Kill, adminAddr: adminAddr,
		restart: func() (*contestant, error) { return sb.startPaddockWith(dir, o), nil }}
}

// config returns the client configuration of workload w in this plan.
func (sb *sideBySide) config(c *contestant, w string) Config {
	cfg := DefaultConfig()
	cfg.Addr, cfg.Workload = c.addr, w
	cfg.Sessions, cfg.Outstanding, cfg.ValueSize = benchSessions, benchOutstanding, benchValueSize
	cfg.Duration, cfg.Warmup = sb.p.duration, sb.p.warmup
	cfg.Root = "/paddock-bench"
	switch w {
	case WorkloadDelete:
		cfg.Ops = sb.p.deleteOps
	case WorkloadFanout:
		cfg.Watchers, cfg.Ops, cfg.Warmup = sb.p.watchers, sb.p.rounds, 0
		cfg.RequestTimeout = time.Minute
	}
	return cfg
}

// run runs cfg against c and checks that it worked; errors in the run are recorded, a
// run that could not be set up ends the benchmark.
func (sb *sideBySide) run(c *contestant, cfg Config) runRecord {
	var rec runRecord
	var cpu0, self0, all0, machine0 time.Duration
	cfg.measureHook = func(begin bool) {
		cpu, self, all, machine := processCPU(c.pid), selfCPU(), c.membersCPU(), machineCPU()
		if begin {
			cpu0, self0, all0, machine0 = cpu, self, all, machine
		} else {
			rec.serverCPU, rec.clientCPU, rec.membersCPU, rec.machineCPU = cpu-cpu0, self-self0, all-all0, machine-machine0
		}
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		sb.b.Fatalf("%s %s: %v\nserver log (%s) tail:\n%s", c.name, cfg.Workload, err, c.logPath, tail(c.logPath, 40))
	}
	rec.res = res
	if !res.OK() {
		sb.warnf("%s %s: %d errors (%s)%s", c.name, cfg.Workload, res.Errors, formatErrors(res.ErrorCodes), formatFailures(res.Failures))
	}
	if res.CleanupError != "" {
		sb.warnf("%s %s: clean-up: %s", c.name, cfg.Workload, res.CleanupError)
	}
	return rec
}

// throughput runs every workload: one throwaway run on each server, then plan.runs
// measured runs on each, alternating ZooKeeper and paddock.
func (sb *sideBySide) throughput() {
	sb.zk = sb.startZooKeeper(filepath.Join(sb.dir, "zookeeper"))
	sb.paddock = sb.startPaddock(filepath.Join(sb.dir, "paddock"), false)
	sb.checkSameDevice(sb.zk.dir, sb.paddock.dir)
	if out, err := testutil.FourLetterWord(sb.zk.addr, "srvr", 5*time.Second); err == nil {
		v, _, _ := strings.Cut(out, "\n")
		sb.zkVersion = strings.TrimPrefix(v, "Zookeeper version: ")
	}
	defer sb.zk.kill()
	defer sb.paddock.kill()
	pair := []*contestant{sb.zk, sb.paddock}

	for _, w := range Workloads {
		for _, c := range pair {
			cfg := sb.config(c, w)
			cfg.Duration, cfg.Warmup = sb.p.throwaway, 0
			if w == WorkloadFanout {
				cfg.Ops = 3
			}
			r := sb.run(c, cfg)
			sb.logf("throwaway %-8s %-9s %s", w, c.name, summaryLine(r))
		}
	}
	n, total := 0, sb.p.runs*len(Workloads)*2
	for rep := range sb.p.runs {
		for _, w := range Workloads {
			for _, c := range pair {
				n++
				r := sb.run(c, sb.config(c, w))
				sb.runs[c.name+"/"+w] = append(sb.runs[c.name+"/"+w], r)
				sb.logf("[%d/%d] run %d %-8s %-9s %s", n, total, rep+1, w, c.name, summaryLine(r))
			}
		}
	}
}

// memoryAndRestart loads plan.znodes znodes into a fresh server of each kind, reads their
// memory, and then kills and restarts each plan.restarts times, alternating.
func (sb *sideBySide) memoryAndRestart() {
	zk := sb.startZooKeeper(filepath.Join(sb.dir, "zookeeper-memory"))
	pd := sb.startPaddock(filepath.Join(sb.dir, "paddock-memory"), false)
	defer func() { zk.kill(); pd.kill() }()
	roots := map[string]string{}
	for _, c := range []*contestant{zk, pd} {
		m := &memoryRecord{idleRSS: procStatus(c.pid, "VmRSS")}
		sb.memory[c.name] = m
		sb.warmUp(c)
		cfg := sb.config(c, WorkloadCreate)
		cfg.Ops, cfg.Warmup, cfg.Keep = sb.p.znodes, 0, true
		cfg.Progress, cfg.ProgressEvery = os.Stderr, 10*time.Second
		r := sb.run(c, cfg)
		m.load = r.res
		m.loadedRSS, m.loadedHWM = procStatus(c.pid, "VmRSS"), procStatus(c.pid, "VmHWM")
		roots[c.name] = r.res.Root
		sb.logf("load %d znodes into %s: %s; RSS %d MiB, peak %d MiB", sb.p.znodes, c.name, summaryLine(r),
			m.loadedRSS>>20, m.loadedHWM>>20)
	}
	// How much of ZooKeeper's RSS is live data: a full GC, then the heap in use. This
	// disturbs the JVM, so it comes after the RSS readings; the restarts replace it.
	if used, err := jvmLiveHeap(zk.pid); err != nil {
		sb.warnf("ZooKeeper live heap: %v", err)
	} else {
		sb.memory[zkName].liveHeap = used
	}
	for i := range sb.p.restarts {
		for _, c := range []**contestant{&zk, &pd} {
			old := *c
			old.kill()
			var next *contestant
			if old.name == zkName {
				next = sb.startZooKeeper(old.dir)
			} else {
				// The last restart serves /metrics, for the live heap; the RSS readings
				// of the loaded server above had no admin server.
				next = sb.startPaddock(old.dir, i == sb.p.restarts-1)
			}
			*c = next
			took, err := firstRead(next, roots[next.name]+"/0", benchValueSize)
			if err != nil {
				sb.b.Fatal(err)
			}
			m := sb.memory[next.name]
			m.restarts = append(m.restarts, took)
			m.recoveredRSS = procStatus(next.pid, "VmRSS")
			sb.logf("restart %d of %s with %d znodes: answered a read %v after the process started (srvr after %v); RSS %d MiB",
				i+1, next.name, sb.p.znodes, took.Round(time.Millisecond), next.ready.Round(time.Millisecond), m.recoveredRSS>>20)
			if next.adminAddr != "" {
				if live, _, err := liveHeap(next); err != nil {
					sb.warnf("paddock live heap: %v", err)
				} else {
					m.liveHeap = live
				}
			}
		}
	}
}

// warmUp runs 2 s of creates on c, removed afterwards: the JIT's warm-up before a load.
func (sb *sideBySide) warmUp(c *contestant) {
	warm := sb.config(c, WorkloadCreate)
	warm.Duration, warm.Warmup = 2*time.Second, 0
	sb.run(c, warm)
}

// firstRead reads path, which holds size bytes, on a new session and returns the time
// from the server process's start until the read succeeded.
func firstRead(c *contestant, path string, size int) (time.Duration, error) {
	s, err := dial(context.Background(), c.addr, DefaultConfig().sessionOptions(1, 4096))
	if err != nil {
		return 0, fmt.Errorf("%s after restart: %w", c.name, err)
	}
	defer s.close(10 * time.Second)
	e := s.begin(wire.OpGetData, 0)
	e.String(path)
	e.Bool(false)
	s.end()
	if err := s.flush(); err != nil {
		return 0, fmt.Errorf("%s after restart: %w", c.name, err)
	}
	r, err := s.next()
	if err != nil || r.hdr.Err != wire.OK || bodyInt(r.body) != int32(size) {
		return 0, fmt.Errorf("%s after restart: getData %s: %v %v", c.name, path, err, r.hdr.Err)
	}
	return time.Since(c.started), nil
}

// jvmLiveHeap runs a full GC in JVM pid with jcmd and returns the heap then in use, from
// GC.heap_info's "garbage-first heap   total 1024000K, used 345678K".
func jvmLiveHeap(pid int) (int64, error) {
	if out, err := exec.Command("jcmd", strconv.Itoa(pid), "GC.run").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("jcmd GC.run: %v: %s", err, out)
	}
	out, err := exec.Command("jcmd", strconv.Itoa(pid), "GC.heap_info").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("jcmd GC.heap_info: %v: %s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if _, after, ok := strings.Cut(line, "heap"); ok && strings.Contains(after, "used ") {
			_, used, _ := strings.Cut(after, "used ")
			var kb int64
			if _, err := fmt.Sscanf(used, "%dK", &kb); err == nil {
				return kb << 10, nil
			}
		}
	}
	return 0, fmt.Errorf("no heap usage in jcmd GC.heap_info output:\n%s", out)
}

// metricsPage is a /metrics page in the Prometheus text format.
type metricsPage struct {
	addr, body string
}

// goMetrics reads adminAddr/metrics.
func goMetrics(adminAddr string) (metricsPage, error) {
	body, err := httpGet("http://" + adminAddr + "/metrics")
	return metricsPage{adminAddr, string(body)}, err
}

// value returns the value of the metric without labels called name.
func (m metricsPage) value(name string) (float64, error) {
	for line := range strings.SplitSeq(m.body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("no %s in %s/metrics", name, m.addr)
}

// httpGet returns the body of a 200 answer to a GET of url.
func httpGet(url string) ([]byte, error) {
	client := http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, err
}

// checkSameDevice fails unless both directories are on one device: the servers must
// share the disk whose fsync they wait for.
func (sb *sideBySide) checkSameDevice(a, b string) {
	var sa, sbb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		sb.b.Fatal(err)
	}
	if err := syscall.Stat(b, &sbb); err != nil {
		sb.b.Fatal(err)
	}
	if sa.Dev != sbb.Dev {
		sb.b.Fatalf("%s and %s are on different devices", a, b)
	}
}

// summaryLine is one line about a run for the progress output.
func summaryLine(r runRecord) string {
	res := r.res
	s := fmt.Sprintf("%.0f ops/s, p50 %s, p99 %s, max %s, %d errors", res.OpsPerSec,
		ms(res.Latency.P50), ms(res.Latency.P99), ms(res.Latency.Max), res.Errors)
	if res.Elapsed > 0 && r.clientCPU > 0 {
		s += fmt.Sprintf("; CPU: server %.0f%%, client %.0f%%", 100*r.serverCPU.Seconds()/res.Elapsed.Seconds(),
			100*r.clientCPU.Seconds()/res.Elapsed.Seconds())
	}
	return s
}

// processCPU returns the user and system CPU time of process pid so far, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	var utime, stime int64
	fmt.Sscan(fields[11], &utime) // field 14 overall
	fmt.Sscan(fields[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// machineCPU returns the time all cores have been busy so far, from /proc/stat's cpu
// line (in clock ticks of 1/100 s): everything but idle and iowait.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	var busy int64
	for i, f := range strings.Fields(line)[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// selfCPU returns this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus returns a "kB" field of /proc/PID/status (VmRSS, VmHWM) in bytes.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// rows builds the comparison table from the runs.
func (sb *sideBySide) rows() []Row {
	var rows []Row
	get := func(server, w string, f func(r runRecord) float64) []float64 {
		var vs []float64
		for _, r := range sb.runs[server+"/"+w] {
			vs = append(vs, f(r))
		}
		return vs
	}
	metric := func(name string, unit Unit, goal Goal, w string, f func(r runRecord) float64) {
		rows = append(rows, NewRow(name, unit, goal, get(zkName, w, f), get(paddockName, w, f)))
	}
	headline := map[string]bool{WorkloadCreate: true, WorkloadSet: true, WorkloadGet: true, WorkloadMixed: true}
	for _, w := range Workloads {
		if w == WorkloadFanout {
			continue
		}
		rate, lat := GoalNone, GoalNone
		if headline[w] {
			rate, lat = GoalTwiceAsHigh, GoalHalfOrLess
		}
		unit := "ops/s"
		if w == WorkloadChurn {
			unit = "sessions/s (10 ephemerals each)"
		}
		metric(w+" "+unit, UnitRate, rate, w, func(r runRecord) float64 { return r.res.OpsPerSec })
		metric(w+" p50", UnitDuration, GoalNone, w, func(r runRecord) float64 { return float64(r.res.Latency.P50) })
		metric(w+" p99", UnitDuration, lat, w, func(r runRecord) float64 { return float64(r.res.Latency.P99) })
		metric(w+" p99.9", UnitDuration, GoalNone, w, func(r runRecord) float64 { return float64(r.res.Latency.P999) })
	}
	fan := fmt.Sprintf("fan-out to %s watchers", thousands(int64(sb.p.watchers)))
	metric(fan+": all notified, p50", UnitDuration, GoalLower, WorkloadFanout, func(r runRecord) float64 { return float64(r.res.Latency.P50) })
	metric(fan+": all notified, max", UnitDuration, GoalNone, WorkloadFanout, func(r runRecord) float64 { return float64(r.res.Latency.Max) })
	metric(fan+": each notification, p50", UnitDuration, GoalNone, WorkloadFanout, func(r runRecord) float64 { return float64(r.res.Notify.P50) })

	var zkErr, pdErr float64
	for key, runs := range sb.runs {
		for _, r := range runs {
			n := float64(r.res.Errors + int64(len(r.res.Failures)))
			if strings.HasPrefix(key, zkName+"/") {
				zkErr += n
			} else {
				pdErr += n
			}
		}
	}
	rows = append(rows, NewRow("errors and failed sessions, all runs", UnitCount, GoalZero, []float64{zkErr}, []float64{pdErr}))

	zm, pm := sb.memory[zkName], sb.memory[paddockName]
	if zm == nil || pm == nil {
		return rows
	}
	mem := func(name string, goal Goal, f func(m *memoryRecord) float64) {
		rows = append(rows, NewRow(name, UnitBytes, goal, []float64{f(zm)}, []float64{f(pm)}))
	}
	n := thousands(sb.p.znodes)
	mem("RSS, idle before loading", GoalNone, func(m *memoryRecord) float64 { return float64(m.idleRSS) })
	mem("RSS with "+n+" znodes of 100 B", GoalHalfOrLess, func(m *memoryRecord) float64 { return float64(m.loadedRSS) })
	mem("peak RSS (VmHWM) loading them", GoalNone, func(m *memoryRecord) float64 { return float64(m.loadedHWM) })
	mem("RSS after restarting with them", GoalNone, func(m *memoryRecord) float64 { return float64(m.recoveredRSS) })
	rows = append(rows, NewRow("load rate of "+n+" znodes", UnitRate, GoalNone,
		[]float64{zm.load.OpsPerSec}, []float64{pm.load.OpsPerSec}))
	durs := func(ds []time.Duration) []float64 {
		vs := make([]float64, len(ds))
		for i, d := range ds {
			vs[i] = float64(d)
		}
		return vs
	}
	rows = append(rows, NewRow("restart with "+n+" znodes, to first read", UnitDuration, GoalUnder3s,
		durs(zm.restarts), durs(pm.restarts)))
	return rows
}
