package clients

import (
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

const kazooSASLScript = "testdata/kazoo_sasl.py"

// startSASLServer starts paddock with SASL users alice and carol from a JAAS Server
// section, as a ZooKeeper deployment has them, and the given enforce.auth schemes.
func startSASLServer(t *testing.T, enforce ...string) string {
	t.Helper()
	file := writeJaas(t, `Server {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    user_alice="alice-secret"
    user_carol="carol-secret";
};`)
	return testutil.StartPaddock(t, func(c *server.Config) {
		c.SASLJaasConfig = file
		c.EnforceAuth, c.EnforceAuthSchemes = len(enforce) > 0, enforce
	})
}

func writeJaas(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "jaas.conf")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// kazooSASL runs one check of kazoo_sasl.py and returns the line it printed.
func kazooSASL(t *testing.T, addr, check string, login ...string) string {
	t.Helper()
	args := append([]string{kazooSASLScript, addr, check}, login...)
	stdout, stderr, err := run(t, 60*time.Second, "", systemPython, args...)
	if err != nil {
		t.Fatalf("kazoo_sasl.py %s %v: %v\nstdout:\n%s\nstderr:\n%s", check, login, err, stdout, tail(stderr, 30))
	}
	t.Logf("kazoo %s %v: %s", check, login, strings.TrimSpace(stdout))
	return strings.TrimSpace(stdout)
}

// TestKazooSASL logs in with kazoo's sasl_options (puresasl's DIGEST-MD5), makes a node
// only sasl:alice may use, and checks who else can read it.
func TestKazooSASL(t *testing.T) {
	requireFile(t, systemPython, "python3")
	requireFile(t, "/usr/lib/python3/dist-packages/puresasl/mechanisms.py", "python3-pure-sasl")
	addr := startSASLServer(t)
	if got, want := kazooSASL(t, addr, "acl", "alice", "alice-secret"), "OK secret sasl:alice:31"; got != want {
		t.Fatalf("alice's create: %q, want %q", got, want)
	}
	for _, tc := range []struct {
		name  string
		login []string
		want  string
	}{
		{"alice again", []string{"alice", "alice-secret"}, "OK secret"},
		{"wrong password", []string{"alice", "carol-secret"}, "REFUSED AuthFailedError"},
		{"unknown user", []string{"mallory", "alice-secret"}, "REFUSED AuthFailedError"},
		{"another user", []string{"carol", "carol-secret"}, "REFUSED NoAuthError"},
		{"no sasl", nil, "REFUSED NoAuthError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := kazooSASL(t, addr, "read", tc.login...); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEnforceAuthClients: with enforce.auth on for sasl and digest, kazoo and go-zk
// without credentials are refused, and with them (sasl for kazoo and zkCli, digest for
// go-zk, which has no SASL) they work.
func TestEnforceAuthClients(t *testing.T) {
	requireFile(t, systemPython, "python3")
	addr := startSASLServer(t, "sasl", "digest")
	if got := kazooSASL(t, addr, "acl", "alice", "alice-secret"); !strings.HasPrefix(got, "OK secret") {
		t.Fatalf("kazoo with sasl: %q", got)
	}
	if got := kazooSASL(t, addr, "read"); !strings.HasPrefix(got, "REFUSED") {
		t.Fatalf("kazoo without credentials: %q, want a refusal", got)
	}

	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Exists("/"); err == nil {
		t.Fatal("go-zk without credentials read /")
	}
	authed := connectZK(t, addr)
	if err := authed.AddAuth("digest", []byte("dave:pw")); err != nil {
		t.Fatalf("addauth: %v", err)
	}
	if ok, _, err := authed.Exists("/"); err != nil || !ok {
		t.Fatalf("go-zk with a digest identity: %v %v", ok, err)
	}

	// zkCli authenticates before its first request goes out (ZooKeeperSaslClient holds
	// the queue until SASL completes), so it works under enforce.auth.
	requireFile(t, zkCliPath, "zookeeper")
	out := zkCliSASL(t, addr, "carol", "carol-secret", "ls /\n")
	if !strings.Contains(out, "state:SaslAuthenticated") || !strings.Contains(out, "[kazoo-sasl, zookeeper]") {
		t.Errorf("zkCli with sasl under enforce.auth:\n%s", tail(out, 40))
	}
}

// zkCliSASL runs zkCli with a JAAS Client section for user and password, feeding it
// commands, and returns its output.
func zkCliSASL(t *testing.T, addr, user, password, commands string) string {
	t.Helper()
	jaasFile := writeJaas(t, `Client {
    org.apache.zookeeper.server.auth.DigestLoginModule required
    username="`+user+`"
    password="`+password+`";
};`)
	cmd := exec.Command(zkCliPath, "-server", addr)
	cmd.Env = append(os.Environ(), "CLIENT_JVMFLAGS=-Djava.security.auth.login.config="+jaasFile)
	cmd.Stdin = strings.NewReader(commands + "quit\n")
	out, err := runCombined(t, cmd, 60*time.Second)
	if err != nil && !failedCommandExit(err) {
		t.Fatalf("zkCli: %v\noutput:\n%s", err, tail(out, 60))
	}
	return out
}

// TestZkCliSASL: Apache's zkCli.sh with a JAAS Client section (ZooKeeperSaslClient)
// authenticates, creates a node with a sasl ACL and reads it; with a wrong password the
// server refuses it and zkCli sees AuthFailed.
func TestZkCliSASL(t *testing.T) {
	requireFile(t, zkCliPath, "zookeeper")
	addr := startSASLServer(t)
	out := zkCliSASL(t, addr, "alice", "alice-secret",
		"create /zkcli-sasl hello sasl:alice:cdrwa\nget /zkcli-sasl\ngetAcl /zkcli-sasl\nwhoami\n")
	for _, want := range []string{"state:SaslAuthenticated", "Created /zkcli-sasl", "\nhello\n", "'sasl,'alice\n: cdrwa", "sasl: alice"} {
		if !strings.Contains(out, want) {
			t.Errorf("zkCli output lacks %q:\n%s", want, tail(out, 40))
		}
	}

	out = zkCliSASL(t, addr, "alice", "wrong", "get /zkcli-sasl\n")
	if !strings.Contains(out, "state:AuthFailed") || strings.Contains(out, "\nhello\n") {
		t.Errorf("zkCli with a wrong password: want AuthFailed and no data:\n%s", tail(out, 40))
	}

	out = zkCliSASL(t, addr, "carol", "carol-secret", "get /zkcli-sasl\n")
	if !strings.Contains(out, "state:SaslAuthenticated") || !strings.Contains(out, "Insufficient permission") {
		t.Errorf("zkCli as carol: want authenticated and refused:\n%s", tail(out, 40))
	}
}
