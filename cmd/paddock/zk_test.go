package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// zkTick is the test servers' tick: sessions may time out in under a second.
const zkTick = 100 * time.Millisecond

// startZKPaddock starts paddock with TTL nodes enabled and a short tick.
func startZKPaddock(t *testing.T) string {
	t.Helper()
	return testutil.StartPaddock(t, func(c *server.Config) {
		c.TickTime = zkTick
		c.ExtendedTypes = true
		c.FourLetterWords = []string{"srvr", "dump"}
	})
}

// zkSessions returns how many sessions the server at addr holds, from its dump.
func zkSessions(t *testing.T, addr string) int {
	t.Helper()
	out, err := testutil.FourLetterWord(addr, "dump", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var sets, sessions int
	at := strings.Index(out, "Session Sets (")
	if at < 0 {
		t.Fatalf("dump %q has no session count", out)
	}
	if _, err := fmt.Sscanf(out[at:], "Session Sets (%d)/(%d):", &sets, &sessions); err != nil {
		t.Fatalf("dump %q: %v", out, err)
	}
	return sessions
}

// zkBuffer is a bytes.Buffer safe to read while a command writes it.
type zkBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *zkBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *zkBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// zkInvocation is one in-process paddock zk run.
type zkInvocation struct {
	dial           zk.Dialer // nil: dial directly
	stdout, stderr io.Writer
	stdin          io.Reader // nil: empty
}

// run runs paddock zk with args under ctx, as the binary would, and returns the exit
// status: the one paddock zk exits with, or main's 1 for an error it returns.
func (inv zkInvocation) run(ctx context.Context, args ...string) int {
	code := 0
	z := &zkCLI{exit: func(c int) { code = c }, dial: inv.dial}
	root := &cobra.Command{Use: "paddock", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newZKCommand(z))
	root.SetArgs(append([]string{"zk"}, args...))
	root.SetOut(inv.stdout)
	root.SetErr(inv.stderr)
	if inv.stdin == nil {
		inv.stdin = strings.NewReader("")
	}
	root.SetIn(inv.stdin)
	if err := root.ExecuteContext(ctx); err != nil && !errors.Is(err, errExited) {
		fmt.Fprintln(inv.stderr, "paddock:", err) // what main does
		return 1
	}
	return code
}

// runZK runs paddock zk against addr with args and returns its exit status and output.
func runZK(t *testing.T, addr string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code = zkInvocation{stdout: &out, stderr: &errOut}.run(ctx, append([]string{"--zk", addr}, args...)...)
	return code, out.String(), errOut.String()
}

// zkConn opens a plain go-zk connection to addr, for changes made by another client.
func zkConn(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(zkTestLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
}

type zkTestLogger struct{}

func (zkTestLogger) Printf(string, ...any) {}

// zkCase is one paddock zk invocation and what it must do.
type zkCase struct {
	args       []string
	code       int
	stdout     string         // exact, unless stdoutLike is set
	stdoutLike *regexp.Regexp // stdout must match
	stderr     string         // contained in stderr
}

func (c zkCase) check(t *testing.T, addr string) string {
	t.Helper()
	code, stdout, stderr := runZK(t, addr, c.args...)
	if code != c.code {
		t.Errorf("paddock zk %q: exit %d, want %d; stderr:\n%s", c.args, code, c.code, stderr)
	}
	if c.stdoutLike != nil {
		if !c.stdoutLike.MatchString(stdout) {
			t.Errorf("paddock zk %q: stdout %q does not match %v", c.args, stdout, c.stdoutLike)
		}
	} else if stdout != c.stdout {
		t.Errorf("paddock zk %q: stdout %q, want %q", c.args, stdout, c.stdout)
	}
	if !strings.Contains(stderr, c.stderr) {
		t.Errorf("paddock zk %q: stderr %q, want it to contain %q", c.args, stderr, c.stderr)
	}
	if c.code == 0 && stderr != "" {
		t.Errorf("paddock zk %q succeeded with stderr %q", c.args, stderr)
	}
	return stdout
}

// Every command's output and exit status, and the errors each kind of failure prints, in
// the order a session with zkCli might run them.
func TestZKCommands(t *testing.T) {
	addr := startZKPaddock(t)
	binary := "\x00\xff\n raw \x01"
	steps := []struct {
		name string
		zkCase
	}{
		{"create", zkCase{args: []string{"create", "/a", "hello"}, stdout: "/a\n"}},
		{"create exists", zkCase{args: []string{"create", "/a"}, code: 1, stderr: "node already exists: /a\n"}},
		{"create no parent", zkCase{args: []string{"create", "/none/x"}, code: 1, stderr: "node does not exist: /none/x\n"}},
		{"get", zkCase{args: []string{"get", "/a"}, stdout: "hello"}},
		{"create binary", zkCase{args: []string{"create", "/bin", binary}, stdout: "/bin\n"}},
		{"get binary", zkCase{args: []string{"get", "/bin"}, stdout: binary}},
		{"create empty", zkCase{args: []string{"create", "/empty"}, stdout: "/empty\n"}},
		{"get empty", zkCase{args: []string{"get", "/empty"}, stdout: ""}},
		{"get missing", zkCase{args: []string{"get", "/missing"}, code: 1, stderr: "paddock zk: node does not exist: /missing\n"}},
		{"get invalid path", zkCase{args: []string{"get", "x"}, code: 1, stderr: "invalid path: x\n"}},
		{"set", zkCase{args: []string{"set", "/a", "world", "-v", "0"}}},
		{"set bad version", zkCase{args: []string{"set", "/a", "again", "-v", "0"}, code: 1,
			stderr: "version mismatch: /a (expected 0)\n"}},
		{"set any version", zkCase{args: []string{"set", "/a", "again"}}},
		{"get after set", zkCase{args: []string{"get", "/a"}, stdout: "again"}},
		{"set missing", zkCase{args: []string{"set", "/missing", "x"}, code: 1, stderr: "node does not exist: /missing\n"}},
		{"create child b", zkCase{args: []string{"create", "/a/b"}, stdout: "/a/b\n"}},
		{"create child c", zkCase{args: []string{"create", "/a/c"}, stdout: "/a/c\n"}},
		{"create grandchild", zkCase{args: []string{"create", "/a/b/d", "deep"}, stdout: "/a/b/d\n"}},
		{"ls", zkCase{args: []string{"ls", "/a"}, stdout: "b\nc\n"}},
		{"ls leaf", zkCase{args: []string{"ls", "/a/c"}, stdout: ""}},
		{"ls root", zkCase{args: []string{"ls", "/"}, stdout: "a\nbin\nempty\nzookeeper\n"}},
		{"ls -R", zkCase{args: []string{"ls", "-R", "/a"}, stdout: "/a\n/a/b\n/a/b/d\n/a/c\n"}},
		{"ls missing", zkCase{args: []string{"ls", "-R", "/missing"}, code: 1, stderr: "node does not exist: /missing\n"}},
		{"create sequential", zkCase{args: []string{"create", "-s", "/a/seq-", "x"},
			stdoutLike: regexp.MustCompile(`^/a/seq-\d{10}\n$`)}},
		{"create ephemeral", zkCase{args: []string{"create", "-e", "/eph"}, stdout: "/eph\n"}},
		{"ephemeral gone with its command", zkCase{args: []string{"get", "/eph"}, code: 1,
			stderr: "node does not exist: /eph\n"}},
		{"create ephemeral sequential", zkCase{args: []string{"create", "-e", "-s", "/a/eph-"},
			stdoutLike: regexp.MustCompile(`^/a/eph-\d{10}\n$`)}},
		{"create container", zkCase{args: []string{"create", "-c", "/cont", "box"}, stdout: "/cont\n"}},
		{"get container", zkCase{args: []string{"get", "/cont"}, stdout: "box"}},
		{"create ttl", zkCase{args: []string{"create", "-t", "1h", "/ttl", "t"}, stdout: "/ttl\n"}},
		{"create ttl sequential", zkCase{args: []string{"create", "-t", "1h", "-s", "/ttl-"},
			stdoutLike: regexp.MustCompile(`^/ttl-\d{10}\n$`)}},
		{"get ttl", zkCase{args: []string{"get", "/ttl"}, stdout: "t"}},
		{"delete not empty", zkCase{args: []string{"delete", "/a"}, code: 1, stderr: "node not empty: /a\n"}},
		{"delete bad version", zkCase{args: []string{"delete", "/a/c", "-v", "5"}, code: 1,
			stderr: "version mismatch: /a/c (expected 5)\n"}},
		{"delete", zkCase{args: []string{"delete", "/a/c", "-v", "0"}}},
		{"delete missing", zkCase{args: []string{"delete", "/a/c"}, code: 1, stderr: "node does not exist: /a/c\n"}},
		{"deleteall", zkCase{args: []string{"deleteall", "/a"}}},
		{"deleted subtree", zkCase{args: []string{"ls", "/"},
			stdoutLike: regexp.MustCompile(`^bin\ncont\nempty\nttl\nttl-\d{10}\nzookeeper\n$`)}},
		{"deleteall missing", zkCase{args: []string{"deleteall", "/a"}, code: 1, stderr: "node does not exist: /a\n"}},
		{"deleteall leaf", zkCase{args: []string{"deleteall", "/empty"}}},
	}
	for _, step := range steps {
		if !t.Run(step.name, func(t *testing.T) { step.check(t, addr) }) {
			t.FailNow() // the later steps build on this one
		}
	}
}

// stat prints every field as zkCli does, with the values the server holds.
func TestZKStat(t *testing.T) {
	addr := startZKPaddock(t)
	conn := zkConn(t, addr)
	if _, err := conn.Create("/s", []byte("12345"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/s/child", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set("/s", []byte("123456"), 0); err != nil {
		t.Fatal(err)
	}
	_, st, err := conn.Get("/s")
	if err != nil {
		t.Fatal(err)
	}
	date := func(ms int64) string { return time.UnixMilli(ms).Format("Mon Jan 02 15:04:05 MST 2006") }
	want := fmt.Sprintf("cZxid = 0x%x\nctime = %s\nmZxid = 0x%x\nmtime = %s\npZxid = 0x%x\n"+
		"cversion = 1\ndataVersion = 1\naclVersion = 0\nephemeralOwner = 0x0\ndataLength = 6\nnumChildren = 1\n",
		st.Czxid, date(st.Ctime), st.Mzxid, date(st.Mtime), st.Pzxid)
	if st.Czxid == 0 || st.Mzxid <= st.Czxid || st.Ctime == 0 {
		t.Fatalf("implausible stat %+v", st)
	}
	zkCase{args: []string{"stat", "/s"}, stdout: want}.check(t, addr)
	zkCase{args: []string{"stat", "/nope"}, code: 1, stderr: "node does not exist: /nope\n"}.check(t, addr)
	// An ephemeral node's owner is its session, in hex.
	eph := zkTestSession(t, addr, nil)
	if _, err := eph.Conn().Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, stdout, _ := runZK(t, addr, "stat", "/e")
	if want := fmt.Sprintf("\nephemeralOwner = 0x%x\n", eph.SessionID()); !strings.Contains(stdout, want) {
		t.Errorf("stat of an ephemeral node:\n%s\nwant %q", stdout, want)
	}
}

// zkTestSession opens a coordinator Session to addr, closed when the test ends.
func zkTestSession(t *testing.T, addr string, dial zk.Dialer) *coordinator.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := coordinator.Config{Servers: []string{addr}, SessionTimeout: time.Second, Dialer: dial}
	s, err := coordinator.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A server without TTL nodes says so.
func TestZKCreateTTLNotEnabled(t *testing.T) {
	addr := testutil.StartPaddock(t, nil)
	zkCase{args: []string{"create", "-t", "1m", "/ttl"}, code: 1,
		stderr: "not implemented by the server (TTL nodes need extendedTypesEnabled): /ttl\n"}.check(t, addr)
}

// Bad usage exits 2 with the usage, before or after connecting.
func TestZKUsageErrors(t *testing.T) {
	addr := startZKPaddock(t)
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no command", nil, "missing command"},
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"missing path", []string{"get"}, "accepts 1 arg(s), received 0"},
		{"extra arg", []string{"get", "/a", "/b"}, "accepts 1 arg(s), received 2"},
		{"set without data", []string{"set", "/a"}, "set: want the data: DATA, - (stdin), --file FILE or --stdin"},
		{"bad version", []string{"set", "/a", "x", "-v", "three"}, `invalid argument "three"`},
		{"unknown flag", []string{"get", "--nope", "/a"}, "unknown flag: --nope"},
		{"bad timeout", []string{"--timeout", "soon", "get", "/"}, `invalid argument "soon"`},
		{"zero timeout", []string{"--timeout", "0s", "get", "/"}, "--timeout 0s: must be positive"},
		{"bad auth", []string{"--auth", "nocolon", "get", "/"}, `--auth #1: want scheme:credentials`},
		{"bad server", []string{"--zk", "nowhere", "get", "/"}, `server "nowhere": want host:port`},
		{"container and ephemeral", []string{"create", "-c", "-e", "/x"}, "a container cannot be ephemeral"},
		{"ephemeral ttl", []string{"create", "-e", "-t", "1m", "/x"}, "a TTL node must be persistent"},
		{"negative ttl", []string{"create", "-t", "-1m", "/x"}, "want a positive duration"},
		{"lock without command", []string{"lock", "/l"}, "requires at least 2 arg(s)"},
		{"lock command flags without --", []string{"lock", "/l", "sh", "-c", "true"}, "unknown shorthand flag: 'c'"},
		{"deleteall root", []string{"deleteall", "/"}, "refusing to delete /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--zk", addr}, tt.args...)
			if tt.name == "bad server" {
				args = tt.args
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := zkInvocation{stdout: &stdout, stderr: &stderr}.run(ctx, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), "Usage:") {
				t.Errorf("stderr %q, want %q and the usage", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			if tt.name == "bad auth" && strings.Contains(stderr.String(), "nocolon") {
				t.Errorf("stderr %q shows the credentials", stderr.String())
			}
		})
	}
}

// Every entry of the error table, and what is not in it.
func TestZKErrorWords(t *testing.T) {
	tests := []struct {
		err     error
		version int32
		want    string
	}{
		{zk.ErrNoNode, -1, "node does not exist: /x"},
		{zk.ErrNodeExists, -1, "node already exists: /x"},
		{zk.ErrBadVersion, 3, "version mismatch: /x (expected 3)"},
		{zk.ErrNotEmpty, -1, "node not empty: /x"},
		{zk.ErrNoAuth, -1, "not authorised: /x"},
		{zk.ErrInvalidPath, -1, "invalid path: /x"},
		{zk.ErrBadArguments, -1, "invalid arguments: /x"},
		{zk.ErrNoChildrenForEphemerals, -1, "ephemeral nodes cannot have children: /x"},
		{zk.ErrInvalidACL, -1, "invalid ACL: /x"},
		{zk.ErrInvalidFlags, -1, "invalid create flags: /x"},
		{zk.ErrShortBuffer, -1, "request larger than the servers' jute.maxbuffer (--max-buffer): /x"},
		{zk.ErrAuthFailed, -1, "authentication failed: /x"},
		{zk.ErrSessionExpired, -1, "session expired: /x"},
		{zk.ErrSessionMoved, -1, "session moved to another server: /x"},
		{zk.ErrConnectionClosed, -1, "connection lost: /x"},
		{zk.ErrNoServer, -1, "no server reachable: /x"},
		{zk.ErrClosing, -1, "connection closing: /x"},
		{zk.ErrAPIError, -1, "ZooKeeper API error: /x"},
		{zk.ErrUnknown, -1, "unknown ZooKeeper error: /x"},
		{errUnimplemented, -1, "not implemented by the server (TTL nodes need extendedTypesEnabled): /x"},
		{coordinator.ErrClosed, -1, "session closed: /x"},
		{context.DeadlineExceeded, -1, "timed out after 7s: /x"},
		{context.Canceled, -1, "interrupted: /x"},
		// Not entries of their own: how go-zk says them, wrapped, unknown.
		{fmt.Errorf("unknown error: %v", zk.ErrCode(-6)), -1,
			"not implemented by the server (TTL nodes need extendedTypesEnabled): /x"},
		{fmt.Errorf("CreateTTL requires TTL flag: %w", zk.ErrInvalidFlags), -1, "invalid create flags: /x"},
		{fmt.Errorf("acquire lock: %w", zk.ErrNoAuth), -1, "not authorised: /x"},
		{zk.ErrBadVersion, -1, "version mismatch: /x"},
		{errors.New("zk: something new"), -1, "something new: /x"},
	}
	covered := map[error]bool{}
	for _, tt := range tests {
		got := (&opError{path: "/x", version: tt.version, timeout: 7 * time.Second, err: tt.err}).Error()
		if got != tt.want {
			t.Errorf("%v: %q, want %q", tt.err, got, tt.want)
		}
		covered[tt.err] = true
	}
	for _, e := range zkErrors {
		if !covered[e.err] {
			t.Errorf("zkErrors entry %v (%q) has no test case", e.err, e.words)
		}
	}
}

// A server that cannot be reached: the address and the reason, within --timeout.
func TestZKCannotConnect(t *testing.T) {
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	start := time.Now()
	code, stdout, stderr := runZK(t, addr, "--timeout", "1s", "get", "/")
	if code != 1 || stdout != "" {
		t.Errorf("exit %d, stdout %q; want 1 and nothing", code, stdout)
	}
	if want := "paddock zk: cannot connect to " + addr + ": "; !strings.HasPrefix(stderr, want) ||
		!strings.Contains(stderr, "connection refused") {
		t.Errorf("stderr %q, want %q and the dial error", stderr, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v with --timeout 1s", d)
	}
}

// --auth reads what only its digest user may read; without it, or with the wrong
// password, the error says not authorised.
func TestZKAuth(t *testing.T) {
	addr := startZKPaddock(t)
	conn := zkConn(t, addr)
	if err := conn.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/private", []byte("for alice"), 0, zk.DigestACL(zk.PermAll, "alice", "secret")); err != nil {
		t.Fatal(err)
	}
	zkCase{args: []string{"--auth", "digest:alice:secret", "get", "/private"}, stdout: "for alice"}.check(t, addr)
	zkCase{args: []string{"--auth", "digest:bob:x", "--auth", "digest:alice:secret", "set", "/private", "v2"}}.check(t, addr)
	zkCase{args: []string{"get", "/private"}, code: 1, stderr: "paddock zk: not authorised: /private\n"}.check(t, addr)
	zkCase{args: []string{"--auth", "digest:alice:wrong", "get", "/private"}, code: 1,
		stderr: "not authorised: /private\n"}.check(t, addr)
	zkCase{args: []string{"set", "/private", "mallory"}, code: 1, stderr: "not authorised: /private\n"}.check(t, addr)
	zkCase{args: []string{"--auth", "digest:alice:secret", "get", "/private"}, stdout: "v2"}.check(t, addr)
}

// zkWatchRun is paddock zk watch running in the background.
type zkWatchRun struct {
	stdout, stderr zkBuffer
	cancel         context.CancelFunc
	done           chan int // the exit status
}

func startZKWatch(t *testing.T, addr string, dial zk.Dialer, args ...string) *zkWatchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &zkWatchRun{cancel: cancel, done: make(chan int, 1)}
	go func() {
		w.done <- zkInvocation{dial: dial, stdout: &w.stdout, stderr: &w.stderr}.run(ctx,
			append([]string{"--zk", addr}, args...)...)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Error("watch still running 10s after its context was cancelled")
		}
	})
	if !testutil.WaitFor(10*time.Second, 5*time.Millisecond, func() bool {
		return strings.Contains(w.stderr.String(), "watching ")
	}) {
		t.Fatalf("watch never started; stderr %q", w.stderr.String())
	}
	return w
}

// waitLines waits until stdout holds want, exactly.
func (w *zkWatchRun) waitLines(t *testing.T, want ...string) {
	t.Helper()
	text := strings.Join(want, "\n") + "\n"
	if !testutil.WaitFor(10*time.Second, 5*time.Millisecond, func() bool { return w.stdout.String() == text }) {
		t.Fatalf("after 10s, watch printed %q, want %q; stderr %q", w.stdout.String(), text, w.stderr.String())
	}
}

// stop cancels the watch's context and returns its exit status.
func (w *zkWatchRun) stop(t *testing.T) int {
	t.Helper()
	w.cancel()
	select {
	case code := <-w.done:
		w.done <- code // for the cleanup
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not stop within 10s of its context's end")
		return -1
	}
}

// watch prints each change another client makes: creation, data, children, deletion,
// and stops, exit 0, when its context ends.
func TestZKWatch(t *testing.T) {
	addr := startZKPaddock(t)
	conn := zkConn(t, addr)
	w := startZKWatch(t, addr, nil, "watch", "/w")
	acl := zk.WorldACL(zk.PermAll)
	var lines []string
	step := func(line string, change func() error) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
		w.waitLines(t, lines...)
	}
	step("NodeCreated /w", func() error { _, err := conn.Create("/w", []byte("1"), 0, acl); return err })
	step("NodeDataChanged /w", func() error { _, err := conn.Set("/w", []byte("2"), -1); return err })
	step("NodeChildrenChanged /w", func() error { _, err := conn.Create("/w/c", nil, 0, acl); return err })
	step("NodeDataChanged /w", func() error { _, err := conn.Set("/w", []byte("3"), -1); return err })
	step("NodeChildrenChanged /w", func() error { return conn.Delete("/w/c", -1) })
	step("NodeDeleted /w", func() error { return conn.Delete("/w", -1) })
	step("NodeCreated /w", func() error { _, err := conn.Create("/w", nil, 0, acl); return err })
	step("NodeChildrenChanged /w", func() error { _, err := conn.Create("/w/c", nil, 0, acl); return err })
	if code := w.stop(t); code != 0 {
		t.Errorf("watch exited %d after its context ended; stderr %q", code, w.stderr.String())
	}
	if got := w.stdout.String(); got != strings.Join(lines, "\n")+"\n" {
		t.Errorf("watch printed %q after it stopped", got)
	}
	zkCase{args: []string{"watch", "x"}, code: 1, stderr: "invalid path: x\n"}.check(t, addr)
}

// watch keeps watching through a dropped connection and through an expired session,
// and reports what changed while it was expired.
func TestZKWatchSurvivesReconnection(t *testing.T) {
	addr := startZKPaddock(t)
	conn := zkConn(t, addr)
	acl := zk.WorldACL(zk.PermAll)
	if _, err := conn.Create("/w", []byte("1"), 0, acl); err != nil {
		t.Fatal(err)
	}
	cutter := testutil.NewCutter()
	w := startZKWatch(t, addr, cutter.Dial, "--session-timeout", "1s", "watch", "/w")

	// A short cut: the same session, the watch set again by the client.
	cutter.Cut()
	if _, err := conn.Set("/w", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	cutter.Restore()
	w.waitLines(t, "NodeDataChanged /w")

	// A cut past the session's expiry, with changes meanwhile.
	cutter.Cut()
	if _, err := conn.Set("/w", []byte("3"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/w/c", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	// The server expires the session at the tick after its timeout; on a loaded machine the
	// expiry may come later, and a client let back before it keeps its session. So the cut
	// lasts until the server holds only the test's own session.
	for deadline := time.Now().Add(30 * time.Second); zkSessions(t, addr) > 1; time.Sleep(zkTick) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher's session did not expire")
		}
	}
	cutter.Restore()
	w.waitLines(t, "NodeDataChanged /w", "NodeDataChanged /w", "NodeChildrenChanged /w")
	if !strings.Contains(w.stderr.String(), "session expired") {
		t.Errorf("stderr %q does not say the session expired", w.stderr.String())
	}
	// Still watching, data and children.
	if err := conn.Delete("/w/c", -1); err != nil {
		t.Fatal(err)
	}
	w.waitLines(t, "NodeDataChanged /w", "NodeDataChanged /w", "NodeChildrenChanged /w", "NodeChildrenChanged /w")
	if _, err := conn.Set("/w", []byte("4"), -1); err != nil {
		t.Fatal(err)
	}
	w.waitLines(t, "NodeDataChanged /w", "NodeDataChanged /w", "NodeChildrenChanged /w", "NodeChildrenChanged /w",
		"NodeDataChanged /w")
	if code := w.stop(t); code != 0 {
		t.Errorf("watch exited %d; stderr %q", code, w.stderr.String())
	}
}

// lock runs the command, passes its output through, exits with its status and releases
// the lock.
func TestZKLockRunsCommand(t *testing.T) {
	addr := startZKPaddock(t)
	zkCase{args: []string{"lock", "/l", "--", "sh", "-c", "echo held; exit 3"}, code: 3, stdout: "held\n"}.check(t, addr)
	zkCase{args: []string{"lock", "/l", "--", "sh", "-c", "echo again"}, stdout: "again\n"}.check(t, addr)
	zkCase{args: []string{"lock", "/l", "echo", "no", "dash"}, stdout: "no dash\n"}.check(t, addr)
	zkCase{args: []string{"lock", "/l", "--", "/nonexistent/cmd"}, code: 127, stderr: "cannot run /nonexistent/cmd"}.check(t, addr)
	zkCase{args: []string{"ls", "/l"}, stdout: ""}.check(t, addr) // every hold released
}

// Two lock invocations on the same path never run their commands at the same time.
func TestZKLockMutualExclusion(t *testing.T) {
	addr := startZKPaddock(t)
	log := filepath.Join(t.TempDir(), "log")
	script := `echo "start $0" >> "$1"; sleep 0.2; echo "end $0" >> "$1"`
	const workers, rounds = 2, 3
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for range rounds {
				code, _, stderr := runZK(t, addr, "lock", "/mutex", "--", "sh", "-c", script, fmt.Sprint(i), log)
				if code != 0 {
					t.Errorf("worker %d: exit %d; stderr %q", i, code, stderr)
				}
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2*workers*rounds {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), 2*workers*rounds, data)
	}
	for i := 0; i < len(lines); i += 2 {
		who, ok := strings.CutPrefix(lines[i], "start ")
		if !ok || lines[i+1] != "end "+who {
			t.Fatalf("commands overlapped at line %d:\n%s", i+1, data)
		}
	}
}

// A lock lost while its command runs (the session cut off) kills the command and exits
// 1 saying so; the end of the context stops the command with SIGTERM.
func TestZKLockLostKillsCommand(t *testing.T) {
	addr := startZKPaddock(t)
	t.Run("lost", func(t *testing.T) {
		cutter := testutil.NewCutter()
		started := filepath.Join(t.TempDir(), "started")
		var stdout, stderr zkBuffer
		done := make(chan int, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done <- zkInvocation{dial: cutter.Dial, stdout: &stdout, stderr: &stderr}.run(ctx,
				"--zk", addr, "lock", "/lost", "--", "sh", "-c", `touch "$0"; exec sleep 30`, started)
		}()
		waitStarted(t, started, &stderr)
		start := time.Now()
		cutter.Cut()
		select {
		case code := <-done:
			if code != 1 || !strings.Contains(stderr.String(), "lock lost: /lost: killed sh") {
				t.Errorf("exit %d, stderr %q; want 1 and lock lost", code, stderr.String())
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the command ran on %v after the cut", d)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("paddock zk lock still running 15s after its session was cut off")
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		started := filepath.Join(t.TempDir(), "started")
		var stdout, stderr zkBuffer
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan int, 1)
		go func() {
			done <- zkInvocation{stdout: &stdout, stderr: &stderr}.run(ctx,
				"--zk", addr, "lock", "/int", "--", "sh", "-c", `touch "$0"; exec sleep 30`, started)
		}()
		waitStarted(t, started, &stderr)
		cancel()
		select {
		case code := <-done:
			if code != 128+15 {
				t.Errorf("exit %d, want %d (SIGTERM); stderr %q", code, 128+15, stderr.String())
			}
		case <-time.After(15 * time.Second):
			t.Fatal("paddock zk lock still running 15s after its context ended")
		}
		zkCase{args: []string{"ls", "/int"}, stdout: ""}.check(t, addr) // released
	})
}

// waitStarted waits for the command under lock to create the file started.
func waitStarted(t *testing.T, started string, stderr *zkBuffer) {
	t.Helper()
	if !testutil.WaitFor(10*time.Second, 5*time.Millisecond, func() bool {
		_, err := os.Stat(started)
		return err == nil
	}) {
		t.Fatalf("the command never started; stderr %q", stderr.String())
	}
}

// The binary itself exits with paddock zk's statuses.
func TestZKBinaryExitStatus(t *testing.T) {
	addr := startZKPaddock(t)
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"create", "/b", "data"}, 0, "/b\n", ""},
		{[]string{"get", "/b"}, 0, "data", ""},
		{[]string{"get", "/missing"}, 1, "", "paddock zk: node does not exist: /missing\n"},
		{[]string{"get"}, 2, "", "accepts 1 arg(s), received 0"},
		{[]string{"lock", "/bl", "--", "sh", "-c", "exit 3"}, 3, "", ""},
	}
	for _, tt := range tests {
		code, stdout, stderr := run(t, append([]string{"zk", "--zk", addr}, tt.args...)...)
		if code != tt.code || stdout != tt.stdout || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("paddock zk %q: exit %d, stdout %q, stderr %q; want %d, %q, %q",
				tt.args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
}
