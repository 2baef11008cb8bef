package main

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/server"
)

// paddock certs server and client make the secure client port's key store and a
// client's certificate, for one end of the link each, whose TLS handshake succeeds
// with the subject the command printed as the client's identity.
func TestCertsServerAndClient(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, "certs", "ca", "--dir", dir)
	abs := func(name string) string { a, _ := filepath.Abs(filepath.Join(dir, name)); return a }

	stdout := mustRun(t, "certs", "server", "--dir", dir, "--host", "127.0.0.1", "--host", "zk.example.com")
	for _, want := range []string{"wrote " + filepath.Join(dir, "server.pem") + " (mode 0600)",
		"secureClientPort=2281\n", "ssl.keyStore.location=" + abs("server.pem") + "\n",
		"ssl.trustStore.location=" + abs("ca.pem") + "\n", "ssl.clientAuth=need\n",
		"client_tls_key_store: " + abs("server.pem") + "\n", "client_tls_trust_store: " + abs("ca.pem") + "\n",
		"client_tls_auth: need\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("paddock certs server printed\n%s\nwant it to say %q", stdout, want)
		}
	}
	wantMode(t, filepath.Join(dir, "server.pem"), 0o600)
	checkServerConfig(t, stdout)
	serverCert, err := certs.LoadKeyStore(filepath.Join(dir, "server.pem"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(serverCert.Certificate) != 2 {
		t.Errorf("%d certificates in server.pem, want its own and the CA's", len(serverCert.Certificate))
	}
	if u := serverCert.Leaf.ExtKeyUsage; !slices.Equal(u, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("server certificate's ext key usage %v, want server authentication only", u)
	}

	stdout = mustRun(t, "certs", "client", "--dir", dir, "--name", "worker-1")
	for _, want := range []string{"the certificate of x509:CN=worker-1 ", "  x509:CN=worker-1\n",
		`roles: ["worker=x509:CN=worker-1"]`, "--roles worker=x509:CN=worker-1\n",
		"--tls-ca " + abs("ca.pem") + " --tls-cert " + abs("client-worker-1.pem") + " --tls-key " + abs("client-worker-1-key.pem"),
		"-Dzookeeper.ssl.keyStore.location=" + abs("client-worker-1-store.pem")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("paddock certs client printed\n%s\nwant it to say %q", stdout, want)
		}
	}
	if strings.Contains(stdout, "PRIVATE KEY") {
		t.Errorf("paddock certs client printed a key:\n%s", stdout)
	}
	wantMode(t, filepath.Join(dir, "client-worker-1-key.pem"), 0o600)
	wantMode(t, filepath.Join(dir, "client-worker-1-store.pem"), 0o600)
	wantMode(t, filepath.Join(dir, "client-worker-1.pem"), 0o644)
	if _, err := certs.LoadKeyStore(filepath.Join(dir, "client-worker-1-store.pem"), "", ""); err != nil {
		t.Errorf("the client's key store: %v", err)
	}
	conf, err := coordinator.TLSFiles{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "client-worker-1.pem"),
		Key: filepath.Join(dir, "client-worker-1-key.pem")}.Config()
	if err != nil {
		t.Fatal(err)
	}
	clientLeaf, err := x509.ParseCertificate(conf.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if u := clientLeaf.ExtKeyUsage; !slices.Equal(u, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("client certificate's ext key usage %v, want client authentication only", u)
	}

	// The handshake the secure client port does (client_tls_auth need), with the files as they are.
	pool, err := certs.LoadTrustStore(filepath.Join(dir, "ca.pem"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	serverConf := &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	conf.ServerName = "zk.example.com"
	if id := handshake(t, serverConf, conf); id != "CN=worker-1" {
		t.Errorf("the server read the client's subject as %q, want CN=worker-1", id)
	}
	// Neither certificate stands in for the other: the server's is no client's.
	conf.Certificates = []tls.Certificate{serverCert}
	if id := handshake(t, serverConf, conf); id != "" {
		t.Errorf("the server's certificate authenticated a client as %q", id)
	}
}

// checkServerConfig checks that the zoo.cfg and YAML lines paddock certs server
// printed configure a server with a secure client port only, with its files.
func checkServerConfig(t *testing.T, printed string) {
	t.Helper()
	zooCfg, yaml := "dataDir="+t.TempDir()+"\n", "server:\n"
	for line := range strings.SplitSeq(printed, "\n") {
		switch {
		case !strings.HasPrefix(line, "  "):
		case strings.Contains(line, "="):
			zooCfg += strings.TrimSpace(line) + "\n"
		default:
			yaml += line + "\n"
		}
	}
	for name, opts := range map[string]configs.Options{
		"zoo.cfg": {ZooCfg: writeFile(t, "zoo.cfg", zooCfg)},
		"YAML":    {File: writeFile(t, "paddock.yaml", yaml)},
	} {
		cfg, err := configs.LoadServer(opts)
		if err != nil {
			t.Errorf("the %s lines paddock certs server printed: %v", name, err)
			continue
		}
		if cfg.ClientAddr != "" || !strings.HasSuffix(cfg.SecureClientAddr, ":2281") || cfg.ClientTLSAuth != server.ClientAuthNeed ||
			!strings.HasSuffix(cfg.ClientTLSKeyStore, "server.pem") || !strings.HasSuffix(cfg.ClientTLSTrustStore, "ca.pem") {
			t.Errorf("the %s lines paddock certs server printed: client_addr %q, secure_client_addr %q, client_tls_auth %q, "+
				"key store %q, trust store %q", name, cfg.ClientAddr, cfg.SecureClientAddr, cfg.ClientTLSAuth,
				cfg.ClientTLSKeyStore, cfg.ClientTLSTrustStore)
		}
	}
}

// handshake runs a TLS handshake between server and client over a pipe and returns the
// subject of the client's certificate as the server verified it, or "" if it failed.
func handshake(t *testing.T, server, client *tls.Config) string {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() {
		c := tls.Client(b, client)
		err := c.Handshake()
		if err == nil {
			_, err = c.Read(make([]byte, 1)) // TLS 1.3: the server's verdict on the client comes after
		}
		b.Close()
		done <- err
	}()
	s := tls.Server(a, server)
	err := s.Handshake()
	var id string
	if err == nil {
		id, err = subjectOf(s.ConnectionState().PeerCertificates[0])
	}
	a.Close()
	<-done
	if err != nil {
		return ""
	}
	return id
}

func subjectOf(c *x509.Certificate) (string, error) { return server.SubjectDN(c.RawSubject) }

// A name outside [A-Za-z0-9._-] still makes files, with '_' for the rest, and the
// identity printed is the subject as the server prints it, quoted for the shell.
func TestCertsClientName(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, "certs", "ca", "--dir", dir)
	stdout := mustRun(t, "certs", "client", "--dir", dir, "--name", "Ops team, 1")
	for _, want := range []string{"  x509:CN=Ops team\\, 1\n", "--roles 'worker=x509:CN=Ops team\\, 1'\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("paddock certs client printed\n%s\nwant it to say %q", stdout, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "client-Ops_team__1.pem")); err != nil {
		t.Error(err)
	}
	stdout = mustRun(t, "certs", "client", "--dir", dir, "--name", "submitter")
	if !strings.Contains(stdout, "--roles submitter=x509:CN=submitter\n") {
		t.Errorf("a client named for a role gets another role in the example:\n%s", stdout)
	}
}

func TestCertsClientRefusals(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "certs", "client", "--dir", dir, "--name", "w"); code != 1 ||
		!strings.Contains(stderr, "paddock certs ca --dir") {
		t.Errorf("paddock certs client without a CA: exit %d, stderr %s; want 1 and how to make the CA", code, stderr)
	}
	if code, _, stderr := run(t, "certs", "server", "--dir", dir, "--host", "h"); code != 1 ||
		!strings.Contains(stderr, "paddock certs ca --dir") {
		t.Errorf("paddock certs server without a CA: exit %d, stderr %s; want 1 and how to make the CA", code, stderr)
	}
	mustRun(t, "certs", "ca", "--dir", dir)
	mustRun(t, "certs", "client", "--dir", dir, "--name", "w")
	mustRun(t, "certs", "server", "--dir", dir, "--host", "h")
	before, _ := os.ReadFile(filepath.Join(dir, "client-w-key.pem"))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"certs", "client", "--dir", dir, "--name", ""}, "--name is empty"},
		{[]string{"certs", "client", "--dir", dir, "--name", strings.Repeat("x", 65)}, "65 characters, want at most 64"},
		{[]string{"certs", "client", "--dir", dir, "--name", "a\nb"}, "control characters"},
		{[]string{"certs", "client", "--dir", dir}, `required flag(s) "name" not set`},
		{[]string{"certs", "client", "--dir", dir, "--name", "w"}, "client-w.pem exists: keep it, or replace it with --force"},
		{[]string{"certs", "server", "--dir", dir, "--host", "h"}, "server.pem exists"},
		{[]string{"certs", "server", "--dir", dir}, `required flag(s) "host" not set`},
		{[]string{"certs", "server", "--dir", dir, "--out", filepath.Join(dir, "s2.pem"), "--host", "zk1:2281"}, `host "zk1:2281"`},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("paddock %q: exit %d, stderr %s; want 1 and %q", tt.args, code, stderr, tt.want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "client-w-key.pem")); !slices.Equal(before, after) {
		t.Error("a refused paddock certs client changed client-w-key.pem")
	}
	if err := os.Chmod(filepath.Join(dir, "client-w-key.pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "certs", "client", "--dir", dir, "--name", "w", "--force")
	if after, _ := os.ReadFile(filepath.Join(dir, "client-w-key.pem")); slices.Equal(before, after) {
		t.Error("paddock certs client --force kept the old key")
	}
	wantMode(t, filepath.Join(dir, "client-w-key.pem"), 0o600)
}

func mustRun(t *testing.T, args ...string) (stdout string) {
	t.Helper()
	code, stdout, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("paddock %q: exit %d, stderr %s", args, code, stderr)
	}
	return stdout
}
