package testutil

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/server/admin"
)

func TestStartZooKeeper(t *testing.T) {
	zk, err := StartZooKeeper(t, ZooKeeperOptions{
		TickTime:               500 * time.Millisecond,
		ExtendedTypes:          true,
		SuperDigest:            SuperDigestTest,
		ContainerCheckInterval: 100 * time.Millisecond,
		FourLetterWords:        "*",
		JuteMaxBuffer:          1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(zk.Addr, "127.0.0.1:") {
		t.Errorf("Addr = %q, want 127.0.0.1:port", zk.Addr)
	}
	conf, err := FourLetterWord(zk.Addr, "conf", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tickTime=500\n", "minSessionTimeout=1000\n", "maxSessionTimeout=10000\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf output lacks %q:\n%s", want, conf)
		}
	}
	// "*" whitelists every word, so envi answers; it shows the system properties we set.
	envi, err := FourLetterWord(zk.Addr, "envi", 5*time.Second)
	if err != nil || !strings.Contains(envi, "zookeeper.version=3.8") {
		t.Errorf("envi = %q, %v; want a 3.8 zookeeper.version", envi, err)
	}

	if err := zk.Stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", zk.Addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", zk.Addr)
	}
	zk.Stop() // idempotent
}

func TestStartZooKeeperDefaultWhitelist(t *testing.T) {
	zk, err := StartZooKeeper(nil, ZooKeeperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Stop()
	out, err := FourLetterWord(zk.Addr, "stat", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := "stat is not executed because it is not in the whitelist.\n"; out != want {
		t.Errorf("stat = %q, want %q", out, want)
	}
}

func TestZooCfg(t *testing.T) {
	got := ZooKeeperOptions{TickTime: 250 * time.Millisecond, FourLetterWords: "*"}.zooCfg("/d", 1234)
	want := "tickTime=250\ndataDir=/d/data\nclientPort=1234\nclientPortAddress=127.0.0.1\n" +
		"admin.enableServer=false\n4lw.commands.whitelist=*\n"
	if got != want {
		t.Errorf("zooCfg =\n%s\nwant\n%s", got, want)
	}
}

// A server in a Dir of the caller's keeps its data across a restart; Config lines reach
// zoo.cfg and JVMFlags the java command line.
func TestStartZooKeeperInDirRestarts(t *testing.T) {
	opts := ZooKeeperOptions{
		Dir:             filepath.Join(t.TempDir(), "zk"),
		FourLetterWords: "*",
		Config:          []string{"maxClientCnxns=0", "snapCount=1000"},
		JVMFlags:        []string{"-Xmx200m"},
	}
	first, err := StartZooKeeper(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Ready <= 0 || first.Started.IsZero() {
		t.Errorf("Started %v, Ready %v: want both set", first.Started, first.Ready)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", first.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Split(string(cmdline), "\x00"); !slices.Contains(args, "-Xmx200m") || slices.Contains(args, "-XX:+UseSerialGC") {
		t.Errorf("java command line %q: want -Xmx200m in place of the test flags", args)
	}
	conf, err := FourLetterWord(first.Addr, "conf", 5*time.Second)
	if err != nil || !strings.Contains(conf, "maxClientCnxns=0\n") {
		t.Errorf("conf = %q, %v; want maxClientCnxns=0", conf, err)
	}
	c, _, err := zk.Connect([]string{first.Addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Create("/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll))
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	first.Stop()

	second, err := StartZooKeeper(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err = zk.Connect([]string{second.Addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if data, _, err := c.Get("/kept"); err != nil || string(data) != "v" {
		t.Errorf("after the restart: get /kept = %q, %v", data, err)
	}
	if log, err := os.ReadFile(filepath.Join(opts.Dir, "zookeeper.log")); err != nil ||
		strings.Count(string(log), "Reading configuration from") < 2 {
		t.Errorf("the log of the first start was not kept (%v)", err)
	}
}

// Three members started concurrently elect a leader; each has its myid, and a write on
// one is read on another.
func TestStartZooKeeperEnsemble(t *testing.T) {
	e, err := StartZooKeeperEnsemble(t, 3, ZooKeeperOptions{FourLetterWords: "*"})
	if err != nil {
		t.Fatal(err)
	}
	members := []*ZooKeeper{e.Member(0), e.Member(1), e.Member(2)}
	servers := make([]ZooServer, 3)
	for i, o := range e.Options {
		servers[i] = ZooServer{ID: o.MyID, ClientPort: o.ClientPort}
	}
	modes := map[string]int{}
	for i, m := range members {
		if m.Addr != servers[i].ClientAddr() {
			t.Errorf("member %d: Addr = %s, want %s", i+1, m.Addr, servers[i].ClientAddr())
		}
		if id, err := os.ReadFile(filepath.Join(m.Dir, "data", "myid")); err != nil || string(id) != fmt.Sprintf("%d\n", i+1) {
			t.Errorf("member %d: myid = %q, %v", i+1, id, err)
		}
		mode, err := ServerMode(m.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		modes[mode]++
	}
	if modes[admin.ModeLeader] != 1 || modes[admin.ModeFollower] != 2 {
		t.Errorf("modes %v, want one leader and two followers", modes)
	}
	write, _, err := zk.Connect([]string{members[0].Addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer write.Close()
	if _, err := write.Create("/replicated", []byte("v"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	read, _, err := zk.Connect([]string{members[2].Addr}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer read.Close()
	if _, err := read.Sync("/replicated"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := read.Get("/replicated"); err != nil || string(data) != "v" {
		t.Errorf("get /replicated on member 3 = %q, %v; want v", data, err)
	}
}

func TestParseSrvrMode(t *testing.T) {
	for _, tc := range []struct {
		out, mode string
		ok        bool
	}{
		{"Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: follower\nNode count: 5\n", "follower", true},
		{"Zookeeper version: 3.8.0\nMode: leader\n", "leader", true},
		{"This ZooKeeper instance is not currently serving requests\n", "", false},
	} {
		mode, err := ParseSrvrMode(tc.out)
		if mode != tc.mode || (err == nil) != tc.ok {
			t.Errorf("ParseSrvrMode(%q) = %q, %v; want %q, ok %v", tc.out, mode, err, tc.mode, tc.ok)
		}
	}
}

func TestFreeZooServers(t *testing.T) {
	servers, err := FreeZooServers(3)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[int]bool{}
	for i, s := range servers {
		if s.ID != i+1 {
			t.Errorf("server %d: ID %d", i, s.ID)
		}
		for _, p := range []int{s.PeerPort, s.ElectionPort, s.ClientPort} {
			if p <= 0 || ports[p] {
				t.Errorf("server %d: port %d zero or repeated", s.ID, p)
			}
			ports[p] = true
		}
	}
	s := ZooServer{ID: 2, PeerPort: 10, ElectionPort: 11, ClientPort: 12}
	if got, want := s.Line(), "server.2=127.0.0.1:10:11;127.0.0.1:12"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, time.Second, time.Millisecond, func() bool { n++; return n == 3 }, "never reached %d", 3)
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
	if WaitFor(20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("WaitFor reported true for a condition that never holds")
	}
}

func TestStartZooKeeperWithoutJava(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := StartZooKeeper(t, ZooKeeperOptions{})
	if err == nil || !strings.Contains(err.Error(), "make test") {
		t.Fatalf("err = %v, want one that says to run make test", err)
	}
}
