package clients

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// zkCliPath is the Java command-line client of the Debian zookeeper package. With stdin
// piped it reads one command per line as lines arrive, without a prompt.
const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// zkDigest is the id ZooKeeper's DigestAuthenticationProvider derives from "user:password":
// "user:" + base64(SHA-1("user:password")).
func zkDigest(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// cliStep is one zkCli command and the exact lines it prints. In want, <date> stands for a
// java.util.Date as zkCli prints ctime/mtime and <session> for a non-zero session id in hex.
type cliStep struct {
	cmd       string
	want      []string
	unordered bool // compare as sets: ZooKeeper prints these lines in an order paddock does not follow
}

// TestZkCli drives one zkCli session through a script of commands and checks every line
// each command prints, as Apache ZooKeeper 3.8 prints it (the script passes unchanged
// against it: PADDOCK_CLIENTS_TARGET=zookeeper). zxids are exact: the session is the
// only client of a fresh server, so they follow from the script (createSession is 0x1;
// failed writes consume a zxid as in ZooKeeper).
func TestZkCli(t *testing.T) {
	requireFile(t, zkCliPath, "zookeeper")
	addr := startServer(t)
	alice := zkDigest("alice", "secret")
	steps := []cliStep{
		{cmd: "ls /", want: []string{"[zookeeper]"}},
		{cmd: "create /a hello", want: []string{"Created /a"}},
		{cmd: "ls /", want: []string{"[a, zookeeper]"}},
		{cmd: "create /a again", want: []string{"Node already exists: /a"}},
		{cmd: "create -e /a/eph e", want: []string{"Created /a/eph"}},
		{cmd: "create -s /a/seq- s", want: []string{"Created /a/seq-0000000001"}},
		{cmd: "create -s /a/seq- s", want: []string{"Created /a/seq-0000000002"}},
		{cmd: "create -c /cont", want: []string{"Created /cont"}},
		{cmd: "create -e /a/eph/child x", want: []string{"Ephemerals cannot have children: /a/eph/child"}},
		{cmd: "create /nope/child x", want: []string{"Node does not exist: /nope/child"}},
		{cmd: "ls /a", want: []string{"[eph, seq-0000000001, seq-0000000002]"}},
		{cmd: "ls -s /a", want: append([]string{"[eph, seq-0000000001, seq-0000000002]"},
			stat(0x2, 0x2, 0x6, 3, 0, 0, "0x0", 5, 3)...)},
		{cmd: "get -s /a", want: append([]string{"hello"}, stat(0x2, 0x2, 0x6, 3, 0, 0, "0x0", 5, 3)...)},
		{cmd: "set -v 7 /a x", want: []string{"version No is not valid : /a"}},
		{cmd: "set -v 0 /a world"},
		{cmd: "get /a", want: []string{"world"}},
		{cmd: "stat /a", want: stat(0x2, 0xb, 0x6, 3, 1, 0, "0x0", 5, 3)},
		{cmd: "stat /a/eph", want: stat(0x4, 0x4, 0x4, 0, 0, 0, "<session>", 1, 0)},
		{cmd: "stat /cont", want: stat(0x7, 0x7, 0x7, 0, 0, 0, "0x0", 0, 0)},
		{cmd: "stat /missing", want: []string{"Node does not exist: /missing"}},
		{cmd: "getAllChildrenNumber /", want: []string{"8"}},
		{cmd: "getAllChildrenNumber /a", want: []string{"3"}},
		{cmd: "getEphemerals", want: []string{"[/a/eph]"}},
		{cmd: "getEphemerals /a", want: []string{"[/a/eph]"}},
		{cmd: "getEphemerals /nope", want: []string{"[]"}},
		{cmd: "whoami", want: []string{"Auth scheme: User", "ip: 127.0.0.1"}},
		{cmd: "delete /a", want: []string{"Node not empty: /a"}},
		{cmd: "delete -v 5 /a/seq-0000000001", want: []string{"version No is not valid : /a/seq-0000000001"}},
		{cmd: "delete /a/seq-0000000001"},
		{cmd: "delete /missing", want: []string{"Node does not exist: /missing"}},
		{cmd: "deleteall /a"},
		{cmd: "ls -R /", want: []string{"/", "/cont", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"}},
		{cmd: "getAllChildrenNumber /", want: []string{"4"}},
		// ACLs: a digest ACL computed as ZooKeeper does, then the auth scheme.
		{cmd: "create /secret s digest:" + alice + ":cdrwa", want: []string{"Created /secret"}},
		{cmd: "get /secret", want: []string{"Insufficient permission : /secret"}},
		{cmd: "getAcl /secret", want: []string{"Insufficient permission : /secret"}},
		{cmd: "addauth digest alice:wrong"}, // digest auth always succeeds; the id just does not match
		{cmd: "get /secret", want: []string{"Insufficient permission : /secret"}},
		{cmd: "addauth digest alice:secret"},
		{cmd: "get /secret", want: []string{"s"}},
		{cmd: "getAcl /secret", want: []string{"'digest,'" + alice, ": cdrwa"}},
		// Both addauths added one; ZooKeeper prints the identities in its set's order
		// (alice:secret's, ip, alice:wrong's), which paddock follows.
		{cmd: "whoami", want: []string{"Auth scheme: User", "digest: alice", "ip: 127.0.0.1", "digest: alice"}},
		// auth:: stands for every authenticated identity of the session: both digests.
		{cmd: "create /mine m auth::cdrwa", want: []string{"Created /mine"}},
		{cmd: "getAcl /mine", unordered: true, want: []string{"'digest,'" + alice, ": cdrwa",
			"'digest,'" + zkDigest("alice", "wrong"), ": cdrwa"}},
		{cmd: "setAcl -v 3 /mine world:anyone:r", want: []string{"version No is not valid : /mine"}},
		{cmd: "setAcl -v 0 /mine world:anyone:r"},
		{cmd: "getAcl -s /mine", want: append([]string{"'world,'anyone", ": r"},
			stat(0x12, 0x12, 0x12, 0, 0, 1, "0x0", 1, 0)...)},
		{cmd: "setAcl /mine world:anyone:rw", want: []string{"Insufficient permission : /mine"}},
		{cmd: "set /mine x", want: []string{"Insufficient permission : /mine"}},
		{cmd: "get /mine", want: []string{"m"}},
		{cmd: "getAcl /zookeeper/config", want: []string{"'world,'anyone", ": r"}},
		{cmd: "create /zookeeper/config/x", want: []string{"Insufficient permission : /zookeeper/config/x"}},
		{cmd: "delete /zookeeper", want: []string{"Arguments are not valid : /zookeeper"}},
	}
	got := runZkCliSteps(t, addr, steps)
	for i, step := range steps {
		if err := matchLines(got[i], step.want, step.unordered); err != nil {
			t.Errorf("step %d %q: %v\n got: %q\nwant: %q", i, step.cmd, err, got[i], step.want)
		}
	}
}

// stat is what zkCli prints for a Stat, with the dates left as <date>.
func stat(czxid, mzxid, pzxid int64, cversion, version, aversion int, owner string, dataLength, numChildren int) []string {
	return []string{
		fmt.Sprintf("cZxid = 0x%x", czxid),
		"ctime = <date>",
		fmt.Sprintf("mZxid = 0x%x", mzxid),
		"mtime = <date>",
		fmt.Sprintf("pZxid = 0x%x", pzxid),
		fmt.Sprintf("cversion = %d", cversion),
		fmt.Sprintf("dataVersion = %d", version),
		fmt.Sprintf("aclVersion = %d", aversion),
		"ephemeralOwner = " + owner,
		fmt.Sprintf("dataLength = %d", dataLength),
		fmt.Sprintf("numChildren = %d", numChildren),
	}
}

// placeholders are the patterns the <name> tokens of an expected line stand for.
var placeholders = strings.NewReplacer(
	regexp.QuoteMeta("<date>"), `[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d [A-Z]+ \d{4}`,
	regexp.QuoteMeta("<session>"), `0x[1-9a-f][0-9a-f]*`,
)

// lineMatches reports whether got is the expected line want, placeholders allowed.
func lineMatches(got, want string) bool {
	if got == want {
		return true
	}
	if !strings.Contains(want, "<") {
		return false
	}
	re := "^" + placeholders.Replace(regexp.QuoteMeta(want)) + "$"
	ok, err := regexp.MatchString(re, got)
	return err == nil && ok
}

// matchLines compares a step's output with its expected lines.
func matchLines(got, want []string, unordered bool) error {
	if unordered {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if !lineMatches(got[i], want[i]) {
			return fmt.Errorf("line %d is %q, want %q", i+1, got[i], want[i])
		}
	}
	return nil
}

// markPrefix starts the paths of the marker commands put between steps: "stat <path>" of
// a path that does not exist prints one line, "Node does not exist: <path>", which splits
// the output into the steps'. It is a read, so it changes no zxid.
const markPrefix = "/zkcli-mark-"

var markRE = regexp.MustCompile(`^Node does not exist: ` + markPrefix + `(\d+)$`)

// runZkCliSteps runs all steps in one zkCli process (a JVM start costs a second or more)
// and returns each step's cleaned output lines.
func runZkCliSteps(t *testing.T, addr string, steps []cliStep) [][]string {
	t.Helper()
	return runZkCliStepsWith(t, addr, nil, steps)
}

// runZkCliStepsWith is runZkCliSteps with JVM flags (CLIENT_JVMFLAGS), e.g. TLS's.
func runZkCliStepsWith(t *testing.T, addr string, jvmFlags []string, steps []cliStep) [][]string {
	t.Helper()
	return runZkCliArgs(t, []string{"-server", addr}, jvmFlags, steps)
}

// runZkCliArgs is runZkCliStepsWith with zkCli's own arguments (-server addr, -r ...).
func runZkCliArgs(t *testing.T, cliArgs, jvmFlags []string, steps []cliStep) [][]string {
	t.Helper()
	var in strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&in, "stat %s%d\n%s\n", markPrefix, i, s.cmd)
	}
	fmt.Fprintf(&in, "stat %s%d\nquit\n", markPrefix, len(steps))
	// stdout and stderr share one pipe so that lines stay in the order zkCli wrote them
	// (it prints "Created" and errors on stderr, data and stats on stdout).
	cmd := exec.Command(zkCliPath, cliArgs...)
	if len(jvmFlags) > 0 {
		cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS="+strings.Join(jvmFlags, " "))
	}
	cmd.Stdin = strings.NewReader(in.String())
	raw, err := runCombined(t, cmd, 60*time.Second)
	if err != nil && !failedCommandExit(err) {
		t.Fatalf("zkCli: %v\noutput:\n%s", err, tail(raw, 60))
	}
	lines := cleanZkCli(raw)
	out := make([][]string, len(steps))
	step := -1
	for _, line := range lines {
		if m := markRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			if n != step+1 {
				t.Fatalf("zkCli output markers out of order (marker %d after step %d)\noutput:\n%s", n, step, raw)
			}
			step = n
			continue
		}
		if step < 0 || step >= len(steps) {
			t.Errorf("zkCli printed %q outside any step", line)
			continue
		}
		out[step] = append(out[step], line)
	}
	if step != len(steps) {
		t.Fatalf("zkCli output ended after step %d of %d\noutput:\n%s", step, len(steps), tail(raw, 60))
	}
	return out
}

// failedCommandExit reports whether err is zkCli's exit status 1, which it returns when
// a command of the session failed (the steps' expected errors and the markers do).
func failedCommandExit(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == 1
}

// runCombined runs cmd with stdout and stderr on one pipe and returns the output.
func runCombined(t *testing.T, cmd *exec.Cmd, timeout time.Duration) (string, error) {
	t.Helper()
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("still running after %v, killed", timeout)
	}
}

// syncBuffer is an append-only text buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// zkCli's own chatter and its logging, whatever logging backend the classpath provides.
var (
	logLineRE   = regexp.MustCompile(`^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{3}`) // log4j ISO8601 layout
	traceLineRE = regexp.MustCompile(`^(\s+at |\s*\.\.\. \d+ more|Caused by: )`)
	chatterRE   = regexp.MustCompile(`^(SLF4J: |log4j:|Connecting to |Welcome to ZooKeeper!$|JLine support is )`)
	eventRE     = regexp.MustCompile(`^WatchedEvent state:\S+ type:(\S+) path:`)
)

// cleanZkCli returns the lines zkCli prints for its commands and for node watch events,
// without its banner, log lines (with their stack traces) and connection-state events.
// An event prints as "\nWATCHER::" and "\nWatchedEvent ..." from the event thread; the
// blank lines go, and a WATCHER:: line stays only if the event it announces is kept.
func cleanZkCli(raw string) []string {
	var lines []string
	inLog := false
	for _, line := range strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n") {
		switch {
		case logLineRE.MatchString(line):
			inLog = true
			continue
		case inLog && traceLineRE.MatchString(line):
			continue
		}
		inLog = false
		if chatterRE.MatchString(line) {
			continue
		}
		lines = append(lines, line)
	}
	var out []string
	for i, line := range lines {
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		switch {
		case line == "" && (next == "WATCHER::" || eventRE.MatchString(next)):
			continue // the "\n" printed before WATCHER:: and each event
		case line == "WATCHER::" && !nextEventKept(lines[i+1:]):
			continue
		case eventRE.MatchString(line) && !eventKept(line):
			continue
		case line == "" && i == len(lines)-1:
			continue // end of output
		}
		out = append(out, line)
	}
	return out
}

// eventKept reports whether an event line is a node event (a session-state change has type None).
func eventKept(line string) bool {
	m := eventRE.FindStringSubmatch(line)
	return m != nil && m[1] != "None"
}

// nextEventKept reports whether the first event line in lines is kept.
func nextEventKept(lines []string) bool {
	for _, l := range lines {
		if eventRE.MatchString(l) {
			return eventKept(l)
		}
	}
	return false
}

// cliSession is a running zkCli driven line by line, for watches: the test sends a
// command, waits for its output, changes the tree with another client and waits for
// zkCli to print the event.
type cliSession struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   syncBuffer
	done  chan error
}

func startZkCli(t *testing.T, addr string) *cliSession {
	t.Helper()
	s := &cliSession{cmd: exec.Command(zkCliPath, "-server", addr), done: make(chan error, 1)}
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	s.cmd.WaitDelay = 5 * time.Second
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start zkCli: %v", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(func() {
		s.stdin.Close()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

func (s *cliSession) send(t *testing.T, command string) {
	t.Helper()
	if _, err := io.WriteString(s.stdin, command+"\n"); err != nil {
		t.Fatalf("send %q to zkCli: %v\noutput:\n%s", command, err, s.out.String())
	}
}

func (s *cliSession) lines() []string { return cleanZkCli(s.out.String()) }

// waitFor waits until zkCli has printed line (exactly, placeholders allowed).
func (s *cliSession) waitFor(t *testing.T, line string) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, 10*time.Millisecond, func() bool {
		return slices.ContainsFunc(s.lines(), func(l string) bool { return lineMatches(l, line) })
	}, "zkCli never printed %q; output so far:\n%s", line, tail(s.out.String(), 40))
}

// quit ends the session and waits for zkCli to exit.
func (s *cliSession) quit(t *testing.T) {
	t.Helper()
	s.send(t, "quit")
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		if err != nil && !failedCommandExit(err) {
			t.Fatalf("zkCli exited with %v\noutput:\n%s", err, tail(s.out.String(), 40))
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("zkCli did not exit after quit\noutput:\n%s", tail(s.out.String(), 40))
	}
}

// TestZkCliWatches sets watches with zkCli (get -w, ls -w, stat -w, addWatch), changes the
// tree from a go-zookeeper/zk client, and checks the WATCHER::/WatchedEvent lines zkCli
// prints: each one-shot watch fires once, in order, and the recursive watch sees
// descendants' creates, data changes and deletes but no child-list changes.
func TestZkCliWatches(t *testing.T) {
	requireFile(t, zkCliPath, "zookeeper")
	addr := startServer(t)
	c := connectZK(t, addr)
	mustCreate(t, c, "/w", "v0")
	mustCreate(t, c, "/dir", "")

	cli := startZkCli(t, addr)
	cli.send(t, "get -w /w")
	cli.send(t, "ls -w /dir")
	cli.send(t, "stat -w /later")
	cli.send(t, "addWatch -m PERSISTENT_RECURSIVE /tree")
	cli.send(t, "stat "+markPrefix+"0") // all four commands answered once this prints
	cli.waitFor(t, "Node does not exist: "+markPrefix+"0")
	if got, want := cli.lines(), []string{"v0", "[]", "Node does not exist: /later",
		"Node does not exist: " + markPrefix + "0"}; !slices.Equal(got, want) {
		t.Fatalf("zkCli output after setting the watches:\n got: %q\nwant: %q", got, want)
	}

	const event = "WatchedEvent state:SyncConnected type:%s path:%s"
	var want []string
	change := func(typ, path string, f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatalf("change for %s %s: %v", typ, path, err)
		}
		want = append(want, fmt.Sprintf(event, typ, path))
		cli.waitFor(t, want[len(want)-1])
	}
	set := func(path, data string) func() error {
		return func() error { _, err := c.Set(path, []byte(data), -1); return err }
	}
	create := func(path string) func() error {
		return func() error { _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); return err }
	}
	change("NodeDataChanged", "/w", set("/w", "v1"))
	change("NodeChildrenChanged", "/dir", create("/dir/x"))
	change("NodeCreated", "/later", create("/later"))
	change("NodeCreated", "/tree", create("/tree"))
	// One-shot watches are gone now: these print nothing. The recursive watch's next
	// event below is the fence: ordered after them, it proves they printed nothing.
	for _, f := range []func() error{set("/w", "v2"), create("/dir/y"), set("/later", "x")} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	change("NodeCreated", "/tree/a", create("/tree/a"))
	change("NodeDataChanged", "/tree/a", set("/tree/a", "1"))
	change("NodeCreated", "/tree/a/b", create("/tree/a/b"))
	change("NodeDeleted", "/tree/a/b", func() error { return c.Delete("/tree/a/b", -1) })
	change("NodeDataChanged", "/tree", set("/tree", "2"))

	cli.quit(t)
	var events []string
	lines := cli.lines()
	for i, l := range lines {
		if !strings.HasPrefix(l, "WatchedEvent") {
			continue
		}
		events = append(events, l)
		if i == 0 || lines[i-1] != "WATCHER::" {
			t.Errorf("event %q is not announced by a WATCHER:: line", l)
		}
	}
	if !slices.Equal(events, want) {
		t.Errorf("zkCli watch events:\n got: %q\nwant: %q", events, want)
	}
}

// connectZK opens a go-zookeeper/zk session to addr and closes it when the test ends.
func connectZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	return connectWith(t, addr, nil)
}

// connectWith is connectZK with dialer (a TLS one) unless it is nil.
func connectWith(t *testing.T, addr string, dialer zk.Dialer) *zk.Conn {
	t.Helper()
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}), func(c *zk.Conn) {
		if dialer != nil {
			zk.WithDialer(dialer)(c)
		}
	})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-events:
			if e.State == zk.StateHasSession {
				return c
			}
		case <-timeout:
			t.Fatalf("no session with %s after 10s (state %v)", addr, c.State())
		}
	}
}

// quietLogger drops go-zookeeper/zk's connection chatter.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func mustCreate(t *testing.T, c *zk.Conn, path, data string) {
	t.Helper()
	if _, err := c.Create(path, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// TestZkCliReconfig adds a member to a paddock ensemble and removes it again with
// zkCli's reconfig (ZooKeeperAdmin.reconfigure), and reads the result with config.
func TestZkCliReconfig(t *testing.T) {
	requireFile(t, zkCliPath, "zookeeper")
	e := testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) { c.ReconfigEnabled, c.SkipACL = true, true })
	four, entry := e.AddMember(true)
	e.Start(four)
	steps := []cliStep{
		{cmd: "reconfig -add " + entry},
		{cmd: "config"},
		{cmd: "reconfig -remove 4"},
		{cmd: "config"},
	}
	got := runZkCliSteps(t, e.Addrs()[0], steps)
	for i, want := range []bool{true, true, false, false} {
		out := strings.Join(got[i], "\n")
		if strings.Contains(out, "server.4=") != want || !strings.Contains(out, "server.3=") ||
			!strings.Contains(out, "version=") {
			t.Errorf("step %d %q printed:\n%s\nwant server.4 %v", i, steps[i].cmd, out, want)
		}
	}
	if !strings.HasPrefix(strings.Join(got[0], "\n"), "Committed new configuration:") {
		t.Errorf("reconfig -add printed %q", got[0])
	}
}
