package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
)

// TestUpListensOnLoopback: paddock up's client port is on 127.0.0.1 unless an address
// is given; the console and the metrics are too.
func TestUpListensOnLoopback(t *testing.T) {
	t.Setenv("PADDOCK_SERVER_CLIENT_ADDR", "") // not from the environment
	os.Unsetenv("PADDOCK_SERVER_CLIENT_ADDR")
	file := filepath.Join(t.TempDir(), "paddock.yaml")
	if err := os.WriteFile(file, []byte("server:\n  client_addr: \":3181\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "127.0.0.1:2181"},
		{[]string{"--client-port", "3181"}, "127.0.0.1:3181"},
		{[]string{"--client-addr", "0.0.0.0:2181"}, "0.0.0.0:2181"},
		{[]string{"--client-addr", ":2181"}, ":2181"},
		{[]string{"--config", file}, ":3181"},
	}
	for _, tt := range tests {
		cmd := newUpCmd()
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadUpServer(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ClientAddr != tt.want {
			t.Errorf("paddock up %v: client address %s, want %s", tt.args, cfg.ClientAddr, tt.want)
		}
	}
	if l := newUpCmd().Flags().Lookup("console-addr").DefValue; !strings.HasPrefix(l, "127.0.0.1:") {
		t.Errorf("console listens on %s by default", l)
	}
	cmd := newUpCmd()
	if err := cmd.ParseFlags([]string{"--client-port", "3181", "--client-addr", ":2181"}); err != nil {
		t.Fatal(err)
	}
	if _, err := loadUpServer(cmd); err == nil || !strings.Contains(err.Error(), "--client-port and --client-addr") {
		t.Errorf("both --client-port and --client-addr: %v, want an error naming both", err)
	}
}

// TestUpPortFlags: each of paddock up's ports has its flag, shown in --help with its
// default; --listen, the console's old flag, still works.
func TestUpPortFlags(t *testing.T) {
	_, help, _ := run(t, "up", "--help")
	for _, want := range []string{"--client-addr", "--client-port", "--admin-addr", "--console-addr", "--metrics-port",
		`(default "127.0.0.1:2181")`, `(default "127.0.0.1:8081")`, `(default "127.0.0.1:8080")`, "(default 8091)"} {
		if !strings.Contains(help, want) {
			t.Errorf("paddock up --help lacks %s", want)
		}
	}
	if strings.Contains(help, "--listen") {
		t.Errorf("paddock up --help shows --listen, the old name of --console-addr")
	}
	tests := []struct {
		args []string
		want string
	}{
		{nil, "127.0.0.1:8080"},
		{[]string{"--console-addr", "127.0.0.1:9080"}, "127.0.0.1:9080"},
		{[]string{"--listen", "127.0.0.1:9081"}, "127.0.0.1:9081"},
		{[]string{"--listen", "127.0.0.1:9081", "--console-addr", "127.0.0.1:9082"}, "127.0.0.1:9082"},
	}
	for _, tt := range tests {
		cmd := newUpCmd()
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		if got := upConsoleListen(cmd.Flags()); got != tt.want {
			t.Errorf("paddock up %v: console on %s, want %s", tt.args, got, tt.want)
		}
	}
}

// TestUpCredentials: the first start makes a password per role, 0600, and the roles
// file of their ids; a second start reuses them.
func TestUpCredentials(t *testing.T) {
	dir := t.TempDir()
	p1, err := platformCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "credentials", "worker"))
	p2, err := platformCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "credentials", "worker"))
	if string(first) != string(again) || p1.superDigest != p2.superDigest {
		t.Fatalf("a second start made new credentials")
	}
	auths, err := p1.access(coordinator.RoleWorker).Auths()
	if err != nil || len(auths) != 1 || auths[0].Scheme != "digest" || !strings.HasPrefix(auths[0].Credentials, "worker:") {
		t.Fatalf("worker's auth: %v, %v", auths, err)
	}
	roles, _ := os.ReadFile(filepath.Join(dir, "credentials", "roles"))
	if !strings.Contains(string(roles), "worker=digest:"+coordinator.IDOf(auths[0]).ID) || strings.Contains(string(roles), auths[0].Credentials) {
		t.Errorf("roles file %q: want the worker's digest id and no password", roles)
	}
	if !strings.HasPrefix(p1.superDigest, "admin:") {
		t.Errorf("super digest %q", p1.superDigest)
	}
	files := append(coordinator.KnownRoles, "roles", "signers")
	for _, role := range signingRoles {
		files = append(files, role+".key")
	}
	for _, name := range files {
		fi, err := os.Stat(filepath.Join(dir, "credentials", name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", name, err, fi.Mode().Perm())
		}
	}
	// A signing key per role that authors tasks, the same on a second start, each listed
	// under its role; the worker gets none.
	for _, role := range []string{coordinator.RoleWorker, coordinator.RoleReplicator, coordinator.RoleLogCollector} {
		if _, err := os.Stat(filepath.Join(dir, "credentials", role+".key")); err == nil || p1.access(role).SigningKey != "" {
			t.Errorf("%s has a signing key", role)
		}
	}
	signers, _ := os.ReadFile(filepath.Join(dir, "credentials", "signers"))
	cc, err := p2.access(coordinator.RoleMaster).Config([]string{"127.0.0.1:1"}, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(signers), "master="+cc.Signer.ID()) {
		t.Errorf("signers %q do not list the master's key %s", signers, cc.Signer.ID())
	}
	p3, err := platformCredentials(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "credentials", "signers")); string(again) != string(signers) || p3.dir != p1.dir {
		t.Errorf("a later start made new signing keys: %q, then %q", signers, again)
	}
}

// TestMakeRunPorts: make run's port variables reach paddock up as its flags.
func TestMakeRunPorts(t *testing.T) {
	out, err := exec.Command("make", "-n", "-C", "../..", "run", "CLIENT_PORT=3999", "ADMIN_ADDR=127.0.0.1:3997",
		"CONSOLE_ADDR=127.0.0.1:3998", "METRICS_PORT=3996").Output()
	if err != nil {
		t.Fatalf("make -n run: %v", err)
	}
	_, line, ok := strings.Cut(strings.ReplaceAll(string(out), "\\\n", " "), " up ")
	if !ok {
		t.Fatalf("make -n run runs no paddock up:\n%s", out)
	}
	line, _, _ = strings.Cut(line, "\n")
	var args []string
	for _, a := range strings.Fields(line) {
		args = append(args, strings.Trim(a, "'"))
	}
	cmd := newUpCmd()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("paddock up %v: %v", args, err)
	}
	cfg, err := loadUpServer(cmd)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := cmd.Flags().GetInt("metrics-port")
	if cfg.ClientAddr != "127.0.0.1:3999" || cfg.AdminAddr != "127.0.0.1:3997" ||
		upConsoleListen(cmd.Flags()) != "127.0.0.1:3998" || metrics != 3996 {
		t.Errorf("make run gives client %s, admin %s, console %s, metrics %d",
			cfg.ClientAddr, cfg.AdminAddr, upConsoleListen(cmd.Flags()), metrics)
	}
}

// TestUpPortInUse: paddock up, one of its ports held by another process, stops and
// says which address, by its key, once (issue 18: four failed starts to find them).
// The admin port is the exception: TestUpAdminPortInUse.
func TestUpPortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	addr := held.Addr().String()
	port := held.Addr().(*net.TCPAddr).Port
	free := func() string {
		p, err := testutil.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(p)
	}
	tests := []struct {
		name string
		flag []string
		want string
	}{
		{"client", []string{"--client-addr", addr},
			"paddock: server: client_addr " + addr + ": the address is in use by another process (another paddock or ZooKeeper?): address already in use\n"},
		{"console", []string{"--console-addr", addr},
			"paddock: web: listen = " + addr + ": the address is in use by another process: address already in use\n"},
		{"metrics", []string{"--metrics-port", fmt.Sprint(port)},
			"paddock: master: metrics_addr = " + addr + ": the address is in use by another process: address already in use\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"up", "--data-dir", t.TempDir(), "--workers", "1", "--log-level", "error",
				"--client-addr", "127.0.0.1:" + free(), "--admin-addr", "127.0.0.1:" + free(),
				"--console-addr", "127.0.0.1:" + free(), "--metrics-port", "0"}
			code, _, stderr := run(t, append(args, tt.flag...)...)
			lines := strings.SplitAfter(stderr, "\n")
			last := lines[len(lines)-1]
			if last == "" && len(lines) > 1 {
				last = lines[len(lines)-2]
			}
			if code != 1 || last != tt.want {
				t.Errorf("exit %d, last line %q; want 1, %q\nstderr:\n%s", code, last, tt.want, stderr)
			}
		})
	}
}

// TestUpAdminPortInUse: paddock up whose admin address another process holds runs
// without the admin port: the server warns with the address, the client port serves
// srvr, "platform up" says the admin port is not served, and SIGTERM stops it cleanly.
func TestUpAdminPortInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	admin := held.Addr().String()
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = testutil.FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	client := fmt.Sprintf("127.0.0.1:%d", ports[0])
	logPath := filepath.Join(t.TempDir(), "stderr")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := command("up", "--data-dir", t.TempDir(), "--workers", "1", "--log-level", "info",
		"--client-addr", client, "--admin-addr", admin,
		"--console-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--metrics-port", "0")
	cmd.Stderr = logFile // the child writes the file itself: the test reads it while it runs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill() // if the test failed before it stopped
		<-exited
	})
	stderr := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	platformUp := func() string {
		for line := range strings.SplitSeq(stderr(), "\n") {
			if strings.Contains(line, `msg="platform up"`) {
				return line
			}
		}
		return ""
	}
	var exitErr error
	gone := false
	up := testutil.WaitFor(30*time.Second, 50*time.Millisecond, func() bool {
		select {
		case exitErr = <-exited:
			exited <- exitErr // for the cleanup
			gone = true
			return true
		default:
		}
		return platformUp() != ""
	})
	switch {
	case gone:
		t.Fatalf("paddock up exited (%v) with its admin port taken; stderr:\n%s", exitErr, stderr())
	case !up:
		t.Fatalf("paddock up never said it was up; stderr:\n%s", stderr())
	}
	if line := platformUp(); !strings.Contains(line, `admin="not served"`) {
		t.Errorf("platform up line %q does not say the admin port is not served", line)
	}
	warned := false
	for line := range strings.SplitSeq(stderr(), "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "admin port not served") &&
			strings.Contains(line, "admin_addr="+admin) && strings.Contains(line, "address already in use") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no WARN line naming admin_addr=%s and why; stderr:\n%s", admin, stderr())
	}
	if out, err := testutil.FourLetterWord(client, "srvr", 5*time.Second); err != nil || !strings.Contains(out, "Mode: standalone") {
		t.Errorf("srvr on the client port: %q, %v", out, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Errorf("after SIGTERM: %v; stderr:\n%s", err, stderr())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20s after SIGTERM; stderr:\n%s", stderr())
	}
}

// TestNoRoleHoldsAdmin: on every node any service or CLI creates, under any root, only
// the admin role may change the ACL (ADMIN): no role needs it, since what a worker runs
// and the master fires is trusted by its signature, not by its ACL. The world may read
// and create at the root alone, read the quotas, and nothing elsewhere.
func TestNoRoleHoldsAdmin(t *testing.T) {
	var entries []string
	for _, role := range coordinator.KnownRoles {
		entries = append(entries, role+"=digest:"+coordinator.DigestID(role, "pw"))
	}
	roles, err := coordinator.ParseRoles(entries)
	if err != nil {
		t.Fatal(err)
	}
	admin := coordinator.DigestID(coordinator.RoleAdmin, "pw")
	for _, root := range []string{"/", "/paddock/cluster"} {
		rules := platformRules(root, "/paddock/audit")
		p := coordinator.NewPolicy(roles, rules)
		paths := []string{"/", "/elsewhere", "/a/b/c"}
		for _, r := range rules {
			paths = append(paths, strings.NewReplacer("**", "x/y", "*", "x").Replace(r.Pattern))
		}
		for _, path := range paths {
			for _, e := range p.ACL(path) {
				switch {
				case e.Scheme == "world" && path == "/" && e.Perms == zk.PermRead|zk.PermCreate:
				case e.Scheme == "world" && strings.HasPrefix(path, "/zookeeper/quota") && e.Perms == zk.PermRead:
				case e.Scheme == "world":
					t.Errorf("root %s: %s: the world has %v", root, path, e)
				case e.Perms&zk.PermAdmin != 0 && e.ID != admin:
					t.Errorf("root %s: %s: %s:%s holds ADMIN", root, path, e.Scheme, e.ID)
				}
			}
		}
	}
}
