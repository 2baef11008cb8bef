package clients

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
)

// TestClientsOverTLS runs Apache's zkCli, kazoo and go-zookeeper/zk against paddock's
// secure client port with client certificates (client_tls_auth need, the default):
// each client's certificate is its x509 identity, an x509 ACL lets its owner in and
// shuts another certificate (and the plain port) out, and the x509 super user passes.
func TestClientsOverTLS(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	secure, plain := startSecureServer(t, ct, "CN=admin")

	t.Run("gozk", func(t *testing.T) {
		alice := connectTLS(t, secure, ct, "gozk-alice")
		acl := zk.ACL{Perms: zk.PermAll, Scheme: "x509", ID: "CN=gozk-alice"}
		if _, err := alice.Create("/gozk-tls", []byte("a"), 0, []zk.ACL{acl}); err != nil {
			t.Fatal(err)
		}
		if got, _, err := alice.GetACL("/gozk-tls"); err != nil || len(got) != 1 || got[0] != acl {
			t.Errorf("getACL = %v, %v; want [%v]", got, err, acl)
		}
		for _, tc := range []struct {
			name string
			c    *zk.Conn
			want error
		}{
			{"alice", alice, nil},
			{"bob", connectTLS(t, secure, ct, "gozk-bob"), zk.ErrNoAuth},
			{"admin (super)", connectTLS(t, secure, ct, "admin"), nil},
			{"plain port", connectZK(t, plain), zk.ErrNoAuth},
		} {
			if _, _, err := tc.c.Get("/gozk-tls"); !errors.Is(err, tc.want) {
				t.Errorf("%s reads /gozk-tls: %v, want %v", tc.name, err, tc.want)
			}
		}
		if err := alice.AddAuth("x509", nil); err != nil {
			t.Errorf("addauth x509 with a certificate: %v", err)
		}
		if err := connectZK(t, plain).AddAuth("x509", nil); !errors.Is(err, zk.ErrAuthFailed) {
			t.Errorf("addauth x509 on the plain port: %v, want %v", err, zk.ErrAuthFailed)
		}
	})

	t.Run("zkcli", func(t *testing.T) {
		requireFile(t, zkCliPath, "zookeeper")
		got := runZkCliStepsWith(t, secure, zkCliTLSFlags(ct, ct.Issue(t, "zkcli-alice")), []cliStep{
			{cmd: "create /zkcli-tls z x509:CN=zkcli-alice:cdrwa", want: []string{"Created /zkcli-tls"}},
			{cmd: "get /zkcli-tls", want: []string{"z"}},
			{cmd: "getAcl /zkcli-tls", want: []string{"'x509,'CN=zkcli-alice", ": cdrwa"}},
			{cmd: "whoami", want: []string{"Auth scheme: User", "x509: CN=zkcli-alice", "ip: 127.0.0.1"}},
		})
		bob := runZkCliStepsWith(t, secure, zkCliTLSFlags(ct, ct.Issue(t, "zkcli-bob")), []cliStep{
			{cmd: "get /zkcli-tls", want: []string{"Insufficient permission : /zkcli-tls"}},
		})
		// ZooKeeper 3.8 shows the x509 super user's super identity with an empty id; it lists
		// the identities in its set's order, as paddock does.
		admin := runZkCliStepsWith(t, secure, zkCliTLSFlags(ct, ct.Issue(t, "admin")), []cliStep{
			{cmd: "get /zkcli-tls", want: []string{"z"}},
			{cmd: "whoami", want: []string{"Auth scheme: User", "super: ", "x509: CN=admin", "ip: 127.0.0.1"}},
		})
		want := [][]string{{"Created /zkcli-tls"}, {"z"}, {"'x509,'CN=zkcli-alice", ": cdrwa"},
			{"Auth scheme: User", "x509: CN=zkcli-alice", "ip: 127.0.0.1"}, {"Insufficient permission : /zkcli-tls"},
			{"z"}, {"Auth scheme: User", "super: ", "x509: CN=admin", "ip: 127.0.0.1"}}
		for i, lines := range append(append(got, bob...), admin...) {
			if err := matchLines(lines, want[i], false); err != nil {
				t.Errorf("zkCli step %d: %v\n got: %q\nwant: %q", i, err, lines, want[i])
			}
		}
	})

	t.Run("kazoo", func(t *testing.T) {
		requireFile(t, systemPython, "python3")
		requireFile(t, "/usr/lib/python3/dist-packages/kazoo/client.py", "python3-kazoo")
		alice, bob := ct.Issue(t, "kazoo-alice"), ct.Issue(t, "kazoo-bob")
		stdout, stderr, err := run(t, 60*time.Second, "", systemPython, "testdata/kazoo_tls.py", secure, ct.CAFile,
			alice.Cert, alice.Key, bob.Cert, bob.Key)
		for _, check := range []string{"x509_acl", "no_certificate_refused"} {
			if !strings.Contains(stdout, "PASS "+check+"\n") {
				t.Errorf("kazoo check %s did not pass (exit %v)\nstdout:\n%s\nstderr:\n%s", check, err, stdout, tail(stderr, 40))
			}
		}
	})
}

// startSecureServer starts the server under test (see targetEnv) with a plain and a
// secure client port, the latter with ct's certificates, client auth need and superUser
// as the x509 super user, and returns both addresses.
func startSecureServer(t *testing.T, ct *testutil.ClientTLS, superUser string) (secure, plain string) {
	t.Helper()
	if os.Getenv(targetEnv) == "zookeeper" {
		port, err := testutil.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		z, err := testutil.StartZooKeeper(t, testutil.ZooKeeperOptions{FourLetterWords: "*", Config: []string{
			fmt.Sprintf("secureClientPort=%d", port), "secureClientPortAddress=127.0.0.1",
			"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			"ssl.keyStore.location=" + ct.ServerStore, "ssl.keyStore.type=PEM",
			"ssl.trustStore.location=" + ct.CAFile, "ssl.trustStore.type=PEM",
			"X509AuthenticationProvider.superUser=" + superUser,
		}})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("127.0.0.1:%d", port), z.Addr
	}
	cfg := testutil.PaddockConfig(t)
	ct.Configure(&cfg)
	cfg.X509SuperUser = superUser
	srv := testutil.StartServer(t, cfg)
	return srv.SecureAddr().String(), srv.Addr().String()
}

// connectTLS opens a go-zookeeper/zk session to the secure port addr with a new client
// certificate for commonName, and closes it when the test ends.
func connectTLS(t *testing.T, addr string, ct *testutil.ClientTLS, commonName string) *zk.Conn {
	t.Helper()
	cert := ct.Issue(t, commonName)
	conf, err := coordinator.TLSFiles{CA: ct.CAFile, Cert: cert.Cert, Key: cert.Key}.Config()
	if err != nil {
		t.Fatal(err)
	}
	return connectWith(t, addr, coordinator.TLSDialer(conf, nil))
}

// zkCliTLSFlags are the JVM flags that make zkCli connect over TLS (Netty) with cert's
// PEM key store and the CA's certificate as the trust store. Debian's zkCli.sh puts
// only zookeeper.jar on the class path, whose manifest leaves out two jars Netty's TLS
// needs (netty-codec, netty-resolver: without them every request is ConnectionLoss and
// nothing is logged); a second -cp, which java takes over the first, adds them.
func zkCliTLSFlags(ct *testutil.ClientTLS, cert testutil.ClientCert) []string {
	return []string{
		"-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar",
		"-Dzookeeper.client.secure=true",
		"-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
		"-Dzookeeper.ssl.keyStore.location=" + cert.Store, "-Dzookeeper.ssl.keyStore.type=PEM",
		"-Dzookeeper.ssl.trustStore.location=" + ct.CAFile, "-Dzookeeper.ssl.trustStore.type=PEM",
	}
}
