package clients

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// Read-only mode seen by real clients: a member of a three-member ensemble in read-only
// mode (paddock's read_only_mode, ZooKeeper's readonlymode.enabled) whose two peers are
// gone serves kazoo with read_only=True and zkCli.sh -r: reads from its tree, writes
// answered NotReadOnly. Against ZooKeeper with PADDOCK_CLIENTS_TARGET=zookeeper.

// readOnlyTree is written through member 1 while the ensemble is whole, parents first.
var readOnlyTree = []struct{ path, data string }{
	{"/ro", "root"},
	{"/ro/a", "alpha"},
	{"/ro/b", "beta"},
	{"/ro/b/c", "gamma"},
}

// readOnlyEnsemble is a three-member ensemble in read-only mode whose members can be
// stopped and started again by index, keeping their data.
type readOnlyEnsemble struct {
	addrs []string
	stop  func(i int)
	start func(i int) // returns once the member is back in a quorum
	// logTail, if set, returns the end of member 1's log: logged when a test fails.
	logTail func() string
}

// startReadOnlyEnsemble starts the ensemble under test (see targetEnv), writes
// readOnlyTree, stops members 2 and 3 and waits until member 1 says it is read-only.
func startReadOnlyEnsemble(t *testing.T) *readOnlyEnsemble {
	t.Helper()
	var re *readOnlyEnsemble
	switch target := os.Getenv(targetEnv); target {
	case "", "paddock":
		e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.ReadOnlyMode = true })
		re = &readOnlyEnsemble{addrs: e.Addrs(), stop: e.Stop, start: e.Start}
	case "zookeeper":
		re = startZooKeeperReadOnly(t)
	default:
		t.Fatalf("%s=%q: want paddock or zookeeper", targetEnv, target)
	}
	if re.logTail != nil {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("member 1's log:\n%s", re.logTail())
			}
		})
	}
	c := connectZK(t, re.addrs[0])
	for _, n := range readOnlyTree {
		if _, err := c.Create(n.path, []byte(n.data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", n.path, err)
		}
	}
	// Every member has the tree before two go: member 1 must serve it alone.
	for i, a := range re.addrs[1:] {
		r := connectZK(t, a)
		if _, err := r.Sync("/ro"); err != nil {
			t.Fatalf("sync on member %d: %v", i+2, err)
		}
		r.Close()
	}
	c.Close()
	start := time.Now()
	re.stop(1)
	re.stop(2)
	re.waitIsro(t, "ro", 20*time.Second, "member 1 never became read-only with both peers gone")
	t.Logf("member 1 read-only %v after its peers stopped", time.Since(start).Round(time.Millisecond))
	return re
}

// waitIsro waits until member 1 answers isro with want.
func (re *readOnlyEnsemble) waitIsro(t *testing.T, want string, timeout time.Duration, msg string) {
	t.Helper()
	var last string
	ok := testutil.WaitFor(timeout, 20*time.Millisecond, func() bool {
		out, err := testutil.FourLetterWord(re.addrs[0], "isro", time.Second)
		if err != nil {
			last = "error: " + err.Error()
		} else {
			last = out
		}
		return last == want
	})
	if !ok {
		t.Fatalf("after %v: %s (isro answers %q)", timeout, msg, last)
	}
}

// restoreQuorum starts member 2 again and waits until member 1 takes writes.
func (re *readOnlyEnsemble) restoreQuorum(t *testing.T) {
	t.Helper()
	re.start(1)
	re.waitIsro(t, "rw", 20*time.Second, "member 1 not read-write once member 2 was back")
}

// startZooKeeperReadOnly starts three Apache ZooKeeper members with
// -Dreadonlymode.enabled=true, each in a directory of its own that a restart keeps.
func startZooKeeperReadOnly(t *testing.T) *readOnlyEnsemble {
	t.Helper()
	e, err := testutil.StartZooKeeperEnsemble(t, 3, testutil.ZooKeeperOptions{
		TickTime: 500 * time.Millisecond, FourLetterWords: "*",
		ExtraJVMFlags: []string{"-Dreadonlymode.enabled=true"},
		// A read-only ZooKeeper 3.8 makes its sessions local ones: without
		// localSessionsEnabled neither kazoo nor zkCli gets one (kazoo reads a
		// truncated connect response, zkCli ConnectionLoss); apache/zookeeper#1922.
		Config: []string{"localSessionsEnabled=true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &readOnlyEnsemble{
		addrs: e.Addrs(),
		stop:  e.Stop,
		start: func(i int) {
			if err := e.Start(i); err != nil {
				t.Fatal(err)
			}
		},
		logTail: func() string {
			return zooKeeperLogTail(filepath.Join(e.Options[0].Dir, "zookeeper.log"), 60)
		},
	}
}

// zooKeeperLogTail returns the last n lines of a ZooKeeper member's log without its
// complaints about the members that are down (one stack trace each try).
func zooKeeperLogTail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var kept []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "\tat ") || strings.HasPrefix(line, "java.net.ConnectException") ||
			strings.Contains(line, "Cannot open channel to") {
			continue
		}
		kept = append(kept, line)
	}
	return tail(strings.Join(kept, "\n"), n)
}

// kazooReadOnlyChecks are the checks kazoo_readonly.py reports, in order (see the script).
var kazooReadOnlyChecks = []string{
	"refused_rw",      // without read_only: no session from the read-only member
	"connect_ro",      // read_only=True: KeeperState.CONNECTED_RO
	"reads",           // data and children of readOnlyTree
	"writes",          // create, set, delete, transaction, sync: NotReadOnlyCallError
	"watches",         // DataWatch and ChildrenWatch first calls
	"rw_after_quorum", // new read-write session once the member follows a leader again
}

// TestKazooReadOnly runs kazoo_readonly.py against a member cut off from its quorum and,
// when the script says it is done with the read-only session, brings a peer back: the
// member closes the read-only connection and kazoo, whose read-only session the ensemble
// does not know, starts a read-write one there.
func TestKazooReadOnly(t *testing.T) {
	requireFile(t, systemPython, "python3")
	requireFile(t, "/usr/lib/python3/dist-packages/kazoo/client.py", "python3-kazoo")
	re := startReadOnlyEnsemble(t)

	args := []string{"testdata/kazoo_readonly.py", re.addrs[0]}
	for _, n := range readOnlyTree {
		args = append(args, n.path+"="+n.data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, systemPython, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var stdout strings.Builder
	var restored time.Time
	restoring := false
	defer func() {
		if restoring { // restoreQuorum failed the test: show what the script had said
			t.Logf("stdout:\n%s\nstderr:\n%s", tail(stdout.String(), 20), tail(stderr.String(), 40))
		}
	}()
	sc := bufio.NewScanner(stdoutPipe)
	for sc.Scan() {
		line := sc.Text()
		stdout.WriteString(line + "\n")
		if line == "AWAIT quorum" {
			t.Logf("read-only checks took %v", time.Since(start).Round(time.Millisecond))
			restoring = true
			re.restoreQuorum(t)
			restoring = false
			restored = time.Now()
			if _, err := io.WriteString(stdin, "quorum\n"); err != nil {
				t.Errorf("tell the script the quorum is back: %v", err)
			}
		}
	}
	stdin.Close()
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (killed)", ctx.Err())
	}
	if !restored.IsZero() {
		t.Logf("kazoo read-write %v after member 1 was", time.Since(restored).Round(time.Millisecond))
	}

	out := stdout.String()
	results := parseKazooResults(out)
	for _, name := range kazooReadOnlyChecks {
		t.Run(name, func(t *testing.T) {
			res, ok := results[name]
			switch {
			case !ok:
				t.Fatalf("the script reported nothing for this check (exit: %v)\nstdout:\n%s\nstderr:\n%s",
					err, tail(out, 20), tail(stderr.String(), 40))
			case !res.passed:
				t.Fatalf("%s\nkazoo log:\n%s", res.detail, tail(stderr.String(), 40))
			}
			t.Logf("passed in %s", res.detail)
		})
	}
	if err != nil && !t.Failed() {
		t.Fatalf("script failed although every check passed: %v\nstdout:\n%s\nstderr:\n%s",
			err, tail(out, 20), tail(stderr.String(), 40))
	}
}

// TestZkCliReadOnly runs Apache's zkCli.sh -r (a client that allows a read-only
// session) against a member cut off from its quorum: it reads the tree, and every write,
// and sync, fails NotReadOnly, which zkCli prints as Java's message for
// KeeperException.NotReadOnlyException.
func TestZkCliReadOnly(t *testing.T) {
	requireFile(t, zkCliPath, "zookeeper")
	re := startReadOnlyEnsemble(t)
	steps := []cliStep{
		{cmd: "get /ro", want: []string{"root"}},
		{cmd: "ls /ro", want: []string{"[a, b]"}},
		{cmd: "ls -R /ro", want: []string{"/ro", "/ro/a", "/ro/b", "/ro/b/c"}},
		{cmd: "get /ro/b/c", want: []string{"gamma"}},
		// zkCli's text for KeeperException.NotReadOnlyException (CliWrapperException).
		{cmd: "create /ro/new x", want: []string{"Not a read-only call: /ro/new"}},
		{cmd: "create -e /ro/eph x", want: []string{"Not a read-only call: /ro/eph"}},
		{cmd: "set /ro/a x", want: []string{"Not a read-only call: /ro/a"}},
		{cmd: "setAcl /ro/a world:anyone:r", want: []string{"Not a read-only call: /ro/a"}},
		{cmd: "delete /ro/b/c", want: []string{"Not a read-only call: /ro/b/c"}},
		// sync prints the result code: -119 is NOTREADONLY.
		{cmd: "sync /ro", want: []string{"Sync has failed. rc=-119"}},
		{cmd: "get /ro/a", want: []string{"alpha"}},
		{cmd: "getAcl /ro/a", want: []string{"'world,'anyone", ": cdrwa"}},
	}
	start := time.Now()
	got := runZkCliArgs(t, []string{"-r", "-server", re.addrs[0]}, nil, steps)
	t.Logf("zkCli took %v", time.Since(start).Round(time.Millisecond))
	for i, step := range steps {
		if err := matchLines(got[i], step.want, step.unordered); err != nil {
			t.Errorf("step %d %q: %v\n got: %q\nwant: %q", i, step.cmd, err, got[i], step.want)
		}
	}
}
