// Package testutil is the shared test harness: throwaway servers (Apache ZooKeeper from the
// Debian package, paddock in-process), free ports and polling helpers. Only tests import it.
package testutil

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/server/admin"
)

// Where the Debian zookeeper package (Apache ZooKeeper 3.8) puts the server. zookeeper.jar's
// manifest Class-Path names its dependencies, so the classpath adds a log4j binding, and
// the two jars Netty's TLS needs that the manifest leaves out (secureClientPort).
const (
	zooKeeperConfDir = "/etc/zookeeper/conf"
	zooKeeperJar     = "/usr/share/java/zookeeper.jar"
)

var zooKeeperClassPath = []string{
	zooKeeperConfDir,
	zooKeeperJar,
	"/usr/share/java/slf4j-log4j12.jar",
	"/usr/share/java/log4j-1.2.jar",
	"/usr/share/java/netty-codec.jar",
	"/usr/share/java/netty-resolver.jar",
}

// SuperDigestTest is the super digest the go-zookeeper/zk and kazoo test harnesses use: a
// connection that authenticates with scheme "digest" and "super:test" passes every ACL check.
const SuperDigestTest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// errNoZooKeeper is wrapped by StartZooKeeper when java or the ZooKeeper jars are missing.
var errNoZooKeeper = errors.New("testutil: Apache ZooKeeper is not installed: run `make test`, " +
	"which installs the Debian zookeeper package (or apt-get install -y zookeeper)")

// ZooKeeperOptions configures a throwaway Apache ZooKeeper: standalone, or a member of an
// ensemble with MyID, ClientPort and the ensemble's server.N lines in Config. The zero value
// is ZooKeeper's defaults (tickTime 2000 ms, 4lw whitelist "srvr" only, no TTL nodes,
// containers checked every minute), always on 127.0.0.1 with the AdminServer (port 8080)
// disabled.
type ZooKeeperOptions struct {
	// TickTime is zoo.cfg tickTime; zero means 2s. Session timeouts are clamped to
	// [2, 20] ticks.
	TickTime time.Duration
	// ExtendedTypes enables TTL nodes (-Dzookeeper.extendedTypesEnabled=true).
	ExtendedTypes bool
	// SuperDigest, e.g. SuperDigestTest, sets -Dzookeeper.DigestAuthenticationProvider.superDigest.
	SuperDigest string
	// ContainerCheckInterval sets -Dznode.container.checkIntervalMs: how often empty
	// containers and expired TTL nodes are deleted. Zero keeps ZooKeeper's 60 s.
	ContainerCheckInterval time.Duration
	// FourLetterWords is 4lw.commands.whitelist, e.g. "*"; empty keeps the default ("srvr").
	FourLetterWords string
	// JuteMaxBuffer sets -Djute.maxbuffer, the largest request frame; zero keeps 0xfffff.
	JuteMaxBuffer int
	// StartTimeout bounds the wait for the server to answer ruok; zero means 30 s.
	StartTimeout time.Duration
	// Dir, if set, is the server's directory (zoo.cfg, data/, the log) in place of a fresh
	// temporary one. It is created if missing and kept by Stop, so that a later server can
	// start on the same data.
	Dir string
	// Config lines ("key=value") are appended to zoo.cfg after the harness's own; ZooKeeper
	// takes the last value of a key. E.g. maxClientCnxns=0, forceSync=yes, snapCount=N.
	Config []string
	// JVMFlags, if not nil, replace the flags that make a short-lived test JVM start fast
	// (a 512 MB heap, the serial collector, the C1 compiler only): a benchmark passes
	// ZooKeeper's production settings instead. The logging properties stay.
	JVMFlags []string
	// ExtraJVMFlags are added after the JVM flags, default or JVMFlags: the system
	// properties zoo.cfg cannot set, e.g. -Dreadonlymode.enabled=true.
	ExtraJVMFlags []string
	// ClientPort, if not 0, is the client port on 127.0.0.1, in place of a free one. An
	// ensemble member needs it: its server.N line names its client address, and ZooKeeper
	// refuses a clientPort that differs. A start that finds it taken fails.
	ClientPort int
	// MyID, if not 0, makes the server a member of an ensemble: it is written to
	// Dir/data/myid, the server runs as QuorumPeerMain (which needs the ensemble's
	// server.N lines, initLimit and syncLimit in Config), and it is ready once srvr says
	// "Mode: leader" or "Mode: follower", which takes a quorum of members running: start
	// the members concurrently.
	MyID int
}

// ZooKeeper is a running throwaway Apache ZooKeeper server process.
type ZooKeeper struct {
	// Addr is the client address, "127.0.0.1:port".
	Addr string
	// Dir is the directory holding zoo.cfg, the data (Dir/data) and the server log.
	Dir string
	// Started is the time just before the JVM was started; Ready is how long it took
	// from then until the server answered srvr as serving (polled every 10 ms).
	Started time.Time
	Ready   time.Duration

	cmd      *exec.Cmd
	member   bool          // of an ensemble (MyID): serving means leading or following
	exited   chan struct{} // closed when the process has exited and waitErr is set
	waitErr  error
	stopOnce sync.Once
	ownDir   bool // Dir was made here (no tb) and is removed by Stop
}

// StartZooKeeper starts a standalone Apache ZooKeeper 3.8 from the Debian package jars on a
// free 127.0.0.1 port and waits until it answers ruok. The JVM takes a second or more to
// start, so a test package should start one in TestMain and share it.
//
// tb may be nil (for TestMain): the caller must then call Stop. With a tb, the server's
// directory is tb.TempDir() and Stop is registered with tb.Cleanup.
// A missing java or ZooKeeper installation is an error telling to run `make test`;
// tests must fail on it, never skip.
func StartZooKeeper(tb testing.TB, opts ZooKeeperOptions) (*ZooKeeper, error) {
	if tb != nil {
		tb.Helper()
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("%w: java not found: %v", errNoZooKeeper, err)
	}
	if _, err := os.Stat(zooKeeperJar); err != nil {
		return nil, fmt.Errorf("%w: %v", errNoZooKeeper, err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken before Java binds it
		z, err := startZooKeeperOnce(tb, java, opts)
		if err == nil {
			if tb != nil {
				tb.Cleanup(func() { z.Stop() })
			}
			return z, nil
		}
		lastErr = err
		if !errors.Is(err, errPortTaken) || opts.ClientPort != 0 {
			break
		}
	}
	return nil, lastErr
}

var errPortTaken = errors.New("testutil: zookeeper client port already in use")

func startZooKeeperOnce(tb testing.TB, java string, opts ZooKeeperOptions) (*ZooKeeper, error) {
	var err error
	port := opts.ClientPort
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	z := &ZooKeeper{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), exited: make(chan struct{}),
		member: opts.MyID != 0}
	if opts.Dir != "" {
		z.Dir = opts.Dir
		if err := os.MkdirAll(z.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("testutil: zookeeper dir: %w", err)
		}
	} else if tb != nil {
		z.Dir = tb.TempDir()
	} else if z.Dir, err = os.MkdirTemp("", "zookeeper-"); err != nil {
		return nil, fmt.Errorf("testutil: zookeeper temp dir: %w", err)
	} else {
		z.ownDir = true
	}
	cfgPath := filepath.Join(z.Dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(opts.zooCfg(z.Dir, port)), 0o644); err != nil {
		return nil, fmt.Errorf("testutil: write zoo.cfg: %w", err)
	}
	if err := opts.writeMyID(z.Dir); err != nil {
		return nil, err
	}
	// Appended to: a server restarted in the same Dir keeps the earlier log.
	logFile, err := os.OpenFile(z.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testutil: zookeeper log: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor
	main := "org.apache.zookeeper.server.ZooKeeperServerMain"
	if z.member {
		main = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	}
	args := append(opts.jvmFlags(z.Dir), "-cp", strings.Join(zooKeeperClassPath, ":"), main, cfgPath)
	z.cmd = exec.Command(java, args...)
	z.cmd.Dir = z.Dir
	z.cmd.Stdout, z.cmd.Stderr = logFile, logFile
	z.cmd.SysProcAttr = childProcAttr()
	z.Started = time.Now()
	if err := z.cmd.Start(); err != nil {
		z.cleanDir()
		return nil, fmt.Errorf("testutil: start zookeeper: %w", err)
	}
	go func() {
		z.waitErr = z.cmd.Wait()
		close(z.exited)
	}()
	if err := z.waitReady(opts.startTimeout()); err != nil {
		z.Stop()
		return nil, err
	}
	z.Ready = time.Since(z.Started)
	return z, nil
}

// zooCfg renders zoo.cfg. Keys that ZooKeeper does not know become system properties
// "zookeeper.<key>", which is how 4lw.commands.whitelist and admin.enableServer work.
func (o ZooKeeperOptions) zooCfg(dir string, port int) string {
	tick := o.TickTime
	if tick <= 0 {
		tick = 2 * time.Second
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", tick.Milliseconds())
	fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(dir, "data"))
	fmt.Fprintf(&b, "clientPort=%d\n", port)
	b.WriteString("clientPortAddress=127.0.0.1\n")
	b.WriteString("admin.enableServer=false\n")
	if o.FourLetterWords != "" {
		fmt.Fprintf(&b, "4lw.commands.whitelist=%s\n", o.FourLetterWords)
	}
	for _, line := range o.Config {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// writeMyID writes dir/data/myid for an ensemble member: the id of its server.N line.
func (o ZooKeeperOptions) writeMyID(dir string) error {
	if o.MyID == 0 {
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fmt.Errorf("testutil: zookeeper data dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(o.MyID)+"\n"), 0o644); err != nil {
		return fmt.Errorf("testutil: write myid: %w", err)
	}
	return nil
}

// jvmFlags returns the JVM options: the system properties that cannot go in zoo.cfg
// (jute.maxbuffer is read without the zookeeper. prefix; znode.container.* likewise) and
// flags that make a short-lived JVM start fast, unless o.JVMFlags replaces them.
func (o ZooKeeperOptions) jvmFlags(dir string) []string {
	flags := []string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
	if o.JVMFlags != nil {
		flags = slices.Clone(o.JVMFlags)
	}
	flags = append(flags,
		"-Dzookeeper.log.dir="+dir,
		"-Dzookeeper.root.logger=INFO,CONSOLE",
		"-Dzookeeper.jmx.log4j.disable=true",
	)
	if o.ExtendedTypes {
		flags = append(flags, "-Dzookeeper.extendedTypesEnabled=true")
	}
	if o.SuperDigest != "" {
		flags = append(flags, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+o.SuperDigest)
	}
	if o.ContainerCheckInterval > 0 {
		flags = append(flags, fmt.Sprintf("-Dznode.container.checkIntervalMs=%d", o.ContainerCheckInterval.Milliseconds()))
	}
	if o.JuteMaxBuffer > 0 {
		flags = append(flags, fmt.Sprintf("-Djute.maxbuffer=%d", o.JuteMaxBuffer))
	}
	return append(flags, o.ExtraJVMFlags...)
}

func (o ZooKeeperOptions) startTimeout() time.Duration {
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return 30 * time.Second
}

func (z *ZooKeeper) logPath() string { return filepath.Join(z.Dir, "zookeeper.log") }

// PID returns the JVM's process id.
func (z *ZooKeeper) PID() int { return z.cmd.Process.Pid }

// waitReady polls until the server is serving, the process exits, or timeout passes.
func (z *ZooKeeper) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-z.exited:
			log := z.LogTail(60)
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, z.Addr)
			}
			return fmt.Errorf("testutil: zookeeper exited during start-up (%v); log tail:\n%s", z.waitErr, log)
		default:
		}
		if z.serving() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testutil: zookeeper at %s did not start serving within %v; log tail:\n%s",
				z.Addr, timeout, z.LogTail(60))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serving reports whether the server answers ruok and serves requests. ruok says imok (or,
// with the default whitelist, refuses) as soon as the port is open, before the database is
// loaded; srvr, which is always whitelisted, says "not currently serving" until then, and
// an ensemble member says so too until it leads or follows a leader.
func (z *ZooKeeper) serving() bool {
	out, err := FourLetterWord(z.Addr, "ruok", time.Second)
	if err != nil || (out != "imok" && !strings.Contains(out, "not in the whitelist")) {
		return false
	}
	out, err = FourLetterWord(z.Addr, "srvr", time.Second)
	if err != nil || !strings.HasPrefix(out, "Zookeeper version:") {
		return false
	}
	if z.member {
		mode, err := ParseSrvrMode(out)
		return err == nil && (mode == admin.ModeLeader || mode == admin.ModeFollower)
	}
	return true
}

// ServerMode asks the server at addr for its mode with srvr: leader, follower, observer
// or standalone (admin.ModeLeader ...; ZooKeeper says the same words). A server that does not serve (an ensemble member without a leader
// answers "This ZooKeeper instance is not currently serving requests", ZooKeeper and
// paddock alike) is an error that quotes its answer.
func ServerMode(addr string, timeout time.Duration) (string, error) {
	out, err := FourLetterWord(addr, "srvr", timeout)
	if err != nil {
		return "", err
	}
	return ParseSrvrMode(out)
}

// ParseSrvrMode returns the mode of srvr output's "Mode: ..." line.
func ParseSrvrMode(out string) (string, error) {
	for line := range strings.SplitSeq(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("testutil: no Mode line in srvr output %q", strings.TrimSpace(out))
}

// Stop kills the server and waits for the process to exit. It is idempotent and safe to
// call from several goroutines. A server started without a tb also loses its directory.
func (z *ZooKeeper) Stop() error {
	z.stopOnce.Do(func() {
		if z.cmd.Process != nil {
			z.cmd.Process.Kill() // throwaway data: no graceful shutdown needed
		}
		<-z.exited
		z.cleanDir()
	})
	return nil
}

func (z *ZooKeeper) cleanDir() {
	if z.ownDir {
		os.RemoveAll(z.Dir)
	}
}

// LogTail returns the last n lines of the server's log, for failure messages.
func (z *ZooKeeper) LogTail(n int) string { return logTail(z.logPath(), n) }

// FourLetterWord sends a four-letter word to addr and returns everything the server writes
// before it closes the connection.
func FourLetterWord(addr, word string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	out, err := io.ReadAll(c)
	return string(out), err
}

// ZooServer is an ensemble member's server.N line of zoo.cfg, all on 127.0.0.1, in the
// form both Apache ZooKeeper and paddock read:
// server.ID=127.0.0.1:PeerPort:ElectionPort;127.0.0.1:ClientPort.
type ZooServer struct {
	ID           int
	PeerPort     int
	ElectionPort int // ZooKeeper's leader election; paddock elects over the peer port
	ClientPort   int
}

// Line returns the member's server.N line.
func (s ZooServer) Line() string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d;%s", s.ID, s.PeerPort, s.ElectionPort, s.ClientAddr())
}

// ClientAddr returns the member's client address, 127.0.0.1:ClientPort.
func (s ZooServer) ClientAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ClientPort))
}

// FreeZooServers returns n members, ids 1 to n, on ports that were free a moment ago and
// are all different.
func FreeZooServers(n int) ([]ZooServer, error) {
	seen := map[int]bool{}
	port := func() (int, error) {
		for {
			p, err := FreePort()
			if err != nil || !seen[p] {
				seen[p] = true
				return p, err
			}
		}
	}
	servers := make([]ZooServer, n)
	for i := range servers {
		s := &servers[i]
		s.ID = i + 1
		for _, p := range []*int{&s.PeerPort, &s.ElectionPort, &s.ClientPort} {
			var err error
			if *p, err = port(); err != nil {
				return nil, err
			}
		}
	}
	return servers, nil
}

// ZooServerLines returns the server.N lines of members, in order.
func ZooServerLines(members []ZooServer) []string {
	lines := make([]string, len(members))
	for i, m := range members {
		lines[i] = m.Line()
	}
	return lines
}

// ZooKeeperEnsemble is an Apache ZooKeeper ensemble whose members run from one set of
// options: each has its own directory (kept when it stops, so that Start brings it back
// on its data), client port, myid and the ensemble's server.N lines.
type ZooKeeperEnsemble struct {
	tb      testing.TB
	Options []ZooKeeperOptions // member i's, as started
	mu      sync.Mutex
	members []*ZooKeeper // nil while stopped; guarded by mu
}

// StartZooKeeperEnsemble starts n members configured as base (its Dir, ClientPort, MyID
// and server lines are each member's own; initLimit and syncLimit come first in Config,
// base's lines after them) concurrently, as a quorum needs, and waits until each
// leads or follows. The members are stopped when tb ends.
func StartZooKeeperEnsemble(tb testing.TB, n int, base ZooKeeperOptions) (*ZooKeeperEnsemble, error) {
	tb.Helper()
	servers, err := FreeZooServers(n)
	if err != nil {
		return nil, err
	}
	e := &ZooKeeperEnsemble{tb: tb, members: make([]*ZooKeeper, n)}
	for _, s := range servers {
		o := base
		o.Dir, o.ClientPort, o.MyID = tb.TempDir(), s.ClientPort, s.ID
		o.Config = slices.Concat([]string{"initLimit=10", "syncLimit=5"}, base.Config, ZooServerLines(servers))
		e.Options = append(e.Options, o)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = e.Start(i) })
	}
	wg.Wait()
	return e, errors.Join(errs...)
}

// Addr returns member i's client address.
func (e *ZooKeeperEnsemble) Addr(i int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.Options[i].ClientPort))
}

// Addrs returns every member's client address, in member order.
func (e *ZooKeeperEnsemble) Addrs() []string {
	out := make([]string, len(e.Options))
	for i := range out {
		out[i] = e.Addr(i)
	}
	return out
}

// Start starts member i (again, on its data); with a quorum of others it returns once
// the member leads or follows.
func (e *ZooKeeperEnsemble) Start(i int) error {
	z, err := StartZooKeeper(e.tb, e.Options[i])
	e.mu.Lock()
	e.members[i] = z
	e.mu.Unlock()
	return err
}

// Stop kills member i, if running.
func (e *ZooKeeperEnsemble) Stop(i int) {
	e.mu.Lock()
	z := e.members[i]
	e.members[i] = nil
	e.mu.Unlock()
	if z != nil {
		z.Stop()
	}
}

// Member returns member i's process, nil while stopped.
func (e *ZooKeeperEnsemble) Member(i int) *ZooKeeper {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.members[i]
}
