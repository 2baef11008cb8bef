package conformance

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
)

// TestQuota compares quotas (ZooKeeper 3.7+) on a pair of targets that enforce them:
// Apache ZooKeeper with enforceQuota=true in zoo.cfg (which it turns into the system
// property zookeeper.enforceQuota) and paddock with EnforceQuota. It always starts its
// own pair, as TestDefaults does.
//
// raw drives the quota nodes over the wire as zkCli's setquota does and writes past the
// limits; zkcli runs Apache's zkCli.sh setquota, listquota and delquota against both and
// compares what it prints.
func TestQuota(t *testing.T) {
	ref := target{name: "reference", kind: "zookeeper"}
	sub := target{name: "subject", kind: subject.kind}
	if sub.kind == "address" {
		sub.kind = "paddock"
	}
	opts := referenceOptions
	opts.Config = append(opts.Config, "enforceQuota=true")
	var wg sync.WaitGroup
	var refErr, subErr error
	start := func(tg *target, errp *error) {
		defer wg.Done()
		zk, err := testutil.StartZooKeeper(t, opts)
		if err != nil {
			*errp = err
			return
		}
		tg.addr = zk.Addr
	}
	wg.Add(1)
	go start(&ref, &refErr)
	if sub.kind == "paddock" {
		sub.addr = startPaddock(t, func(c *server.Config) {
			configurePaddock(c)
			c.EnforceQuota = true
		})
	} else {
		wg.Add(1)
		go start(&sub, &subErr)
	}
	wg.Wait()
	if refErr != nil || subErr != nil {
		t.Fatalf("start servers: %v %v", refErr, subErr)
	}
	t.Run("raw", func(t *testing.T) { compare(t, ref, sub, scenarioQuota) })
	t.Run("zkcli", func(t *testing.T) { compareZkCliQuota(t, ref, sub) })
}

// scenarioQuota sets a quota the way zkCli's setquota does (the quota path's nodes,
// zookeeper_limits, then zookeeper_stats with count=0,bytes=0, which the server recounts
// at once), reads the nodes back, and writes past the hard limits: creates and setData
// refused with QuotaExceeded (-125), NodeExists before QuotaExceeded, QuotaExceeded
// before BadVersion, shrinking allowed, writes outside the quota'd subtree untouched.
// Then the limits change (setData), the quota goes (delete), and writes pass again.
func scenarioQuota(sc *Scenario) {
	s := sc.Connect("s", ConnectOptions{})
	q := sc.Path("q")
	qp := "/zookeeper/quota" + q
	s.create(sc.Root, nil, 0)
	s.create(q, []byte("x"), 0)
	s.create(q+"/a", []byte("yy"), 0)
	s.create(sc.Path("qq"), []byte("outside"), 0)

	sc.Note("setquota -N 4 -B 10, as zkCli writes it")
	createPath(s, qp)
	s.create(qp+"/zookeeper_limits", []byte("count=-1,bytes=-1=;byteHardLimit=10;countHardLimit=4"), 0)
	s.create2(qp+"/zookeeper_stats", []byte("count=0,bytes=0"), 0)
	s.getData(qp+"/zookeeper_stats", false)
	s.getData(qp+"/zookeeper_limits", false)

	sc.Note("count: 2 of 4, then 4 of 4, then refused; NodeExists comes first")
	s.create(q+"/b", []byte("1"), 0)
	s.create(q+"/a/c", nil, 0)
	s.create(q+"/d", nil, 0)
	s.create(q+"/a", nil, 0)
	s.create2(q+"/s-", nil, wire.FlagPersistentSequential)
	s.create(sc.Path("qq/free"), []byte("no quota here"), 0)
	s.getData(qp+"/zookeeper_stats", false)

	sc.Note("bytes: 4 of 10; growing past 10 is refused, before a bad version; shrinking passes")
	s.setData(q+"/b", []byte("1234567"), -1)
	s.setData(q+"/b", []byte("12345678"), 5)
	s.setData(q+"/b", []byte("1234567"), -1)
	s.setData(q+"/a", nil, -1)
	s.getData(qp+"/zookeeper_stats", false)

	sc.Note("a delete frees room")
	s.delete(q+"/a/c", -1)
	s.create(q+"/d", nil, 0)
	s.getData(qp+"/zookeeper_stats", false)

	sc.Note("soft limits are not enforced: setquota -n 1 keeps only the soft count")
	s.setData(qp+"/zookeeper_limits", []byte("count=1,bytes=-1=;byteHardLimit=-1;countHardLimit=-1"), -1)
	s.create(q+"/e", nil, 0)
	s.setData(q+"/e", []byte("0123456789abcdef"), -1)
	s.getData(qp+"/zookeeper_stats", false)

	sc.Note("delquota: with the limits node gone, nothing is refused and the stats stop")
	s.setData(qp+"/zookeeper_limits", []byte("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=1"), -1)
	s.create(q+"/f", nil, 0)
	s.delete(qp+"/zookeeper_limits", -1)
	s.create(q+"/f", nil, 0)
	s.getData(qp+"/zookeeper_stats", false)
	s.delete(qp+"/zookeeper_stats", -1)
	deletePath(s, qp)
}

// createPath creates every missing node of an absolute path, as setquota does for the
// quota path.
func createPath(s *Session, path string) {
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + part
		if p == "/zookeeper" || p == "/zookeeper/quota" {
			continue
		}
		s.create(p, nil, 0)
	}
}

// deletePath deletes path and its ancestors up to /zookeeper/quota, deepest first.
func deletePath(s *Session, path string) {
	for p := path; p != "/zookeeper/quota"; p = p[:strings.LastIndexByte(p, '/')] {
		s.delete(p, -1)
	}
}

// zkCliQuotaScript is run by zkCli.sh against both targets; ROOT is the target's root.
const zkCliQuotaScript = `create ROOT x
create ROOT/1 a
setquota -N 3 ROOT
listquota ROOT
create ROOT/2 b
create ROOT/3 c
setquota -B 8 ROOT
listquota ROOT
set ROOT/1 abcdefgh
set ROOT/1 abcd
setquota -n 10 ROOT
listquota ROOT
delquota -N ROOT
listquota ROOT
create ROOT/3 c
delquota ROOT
listquota ROOT
deleteall ROOT
`

// compareZkCliQuota runs zkCliQuotaScript against both targets, compares the lines
// zkCli prints for the commands, and checks the lines that show the quota at work.
func compareZkCliQuota(t *testing.T, ref, sub target) {
	var refOut, subOut string
	var refErr, subErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); refOut, refErr = runZkCli(ref.addr, "/cfq-"+runID+"-r") }()
	go func() { defer wg.Done(); subOut, subErr = runZkCli(sub.addr, "/cfq-"+runID+"-s") }()
	wg.Wait()
	if refErr != nil || subErr != nil {
		t.Fatalf("zkCli: reference %v, subject %v\nreference output:\n%s\nsubject output:\n%s", refErr, subErr, refOut, subOut)
	}
	if d := Diff(refOut, subOut, 4); d != "" {
		t.Errorf("zkCli output differs (-reference +subject):\n%s", d)
	}
	for _, want := range []string{
		"Quota has exceeded : ROOT/3",
		"Output quota for ROOT count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=3",
		"Output stat for ROOT count=3,bytes=3",
		"Quota has exceeded : ROOT/1",
		"Output quota for ROOT count=-1,bytes=-1=;byteHardLimit=8;countHardLimit=3",
		"Output stat for ROOT count=3,bytes=6",
		"Output quota for ROOT count=10,bytes=-1=;byteHardLimit=8;countHardLimit=-1",
		"Created ROOT/3",
		"quota for ROOT does not exist.",
	} {
		if !strings.Contains(subOut, want+"\n") {
			t.Errorf("subject's zkCli output lacks %q:\n%s", want, subOut)
		}
	}
}

// zkCliNoise matches the lines zkCli prints that are not its commands' output: its
// logging, its banner and its connection's watcher events.
var zkCliNoise = regexp.MustCompile(`^(\d{4}-\d\d-\d\d |SLF4J:|log4j:|Connecting to |Welcome to ZooKeeper|JLine support|WATCHER::|WatchedEvent |\s*$)`)

// runZkCli runs the script under root on the server at addr and returns zkCli's
// command output with root written as ROOT.
func runZkCli(addr, root string) (string, error) {
	const zkCli = "/usr/share/zookeeper/bin/zkCli.sh"
	if _, err := os.Stat(zkCli); err != nil {
		return "", err // make test installs the zookeeper package: fail, never skip
	}
	cmd := exec.Command(zkCli, "-server", addr)
	cmd.Stdin = strings.NewReader(strings.ReplaceAll(zkCliQuotaScript, "ROOT", root))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var kept []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if line := sc.Text(); !zkCliNoise.MatchString(line) {
			kept = append(kept, strings.ReplaceAll(line, root, "ROOT"))
		}
	}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			err = nil // zkCli exits 1 when its last command failed; the output says how
		}
	}
	return strings.Join(kept, "\n") + "\n", err
}
