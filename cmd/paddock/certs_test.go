package main

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/paddock/paddock/internal/certs"
)

// paddock certs makes a CA and two members' key stores that internal/certs loads, that
// chain to the CA and that name their members and hosts.
func TestCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls") // made by the command
	code, stdout, stderr := run(t, "certs", "ca", "--dir", dir, "--name", "test CA")
	if code != 0 {
		t.Fatalf("paddock certs ca: exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"wrote " + filepath.Join(dir, "ca.pem"), "wrote " + filepath.Join(dir, "ca-key.pem") + " (mode 0600)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("paddock certs ca printed\n%s\nwant it to say %q", stdout, want)
		}
	}
	wantMode(t, filepath.Join(dir, "ca-key.pem"), 0o600)

	pool, err := certs.LoadTrustStore(filepath.Join(dir, "ca.pem"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		id    string
		hosts []string
	}{{"1", []string{"zk1.example.com", "127.0.0.1"}}, {"2", []string{"zk2.example.com"}}} {
		args := []string{"certs", "member", "--dir", dir, "--id", m.id}
		for _, h := range m.hosts {
			args = append(args, "--host", h)
		}
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("paddock %s: exit %d, stderr %s", strings.Join(args, " "), code, stderr)
		}
		path := filepath.Join(dir, "member-"+m.id+".pem")
		abs, _ := filepath.Abs(path)
		caAbs, _ := filepath.Abs(filepath.Join(dir, "ca.pem"))
		for _, want := range []string{"wrote " + path, "sslQuorum=true\n", "ssl.quorum.keyStore.location=" + abs + "\n",
			"ssl.quorum.trustStore.location=" + caAbs + "\n", "quorum_key_store: " + abs + "\n"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("paddock certs member printed\n%s\nwant it to say %q", stdout, want)
			}
		}
		if strings.Contains(stdout, "PRIVATE KEY") {
			t.Errorf("paddock certs member printed a key:\n%s", stdout)
		}
		wantMode(t, path, 0o600)

		cert, err := certs.LoadKeyStore(path, "", "")
		if err != nil {
			t.Fatal(err)
		}
		leaf := cert.Leaf
		if ids := certs.MemberIDs(leaf); len(ids) != 1 || ids[0] != uint64(m.id[0]-'0') {
			t.Errorf("member %s: certificate names members %v", m.id, ids)
		}
		if len(cert.Certificate) != 2 {
			t.Errorf("member %s: %d certificates in the key store, want its own and the CA's", m.id, len(cert.Certificate))
		}
		for _, h := range m.hosts {
			if err := leaf.VerifyHostname(h); err != nil {
				t.Errorf("member %s: %v", m.id, err)
			}
		}
		opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		if _, err := leaf.Verify(opts); err != nil {
			t.Errorf("member %s: certificate does not chain to the CA: %v", m.id, err)
		}
	}
}

func TestCertsRefusals(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "certs", "member", "--dir", dir, "--id", "1", "--host", "zk1"); code != 1 ||
		!strings.Contains(stderr, filepath.Join(dir, "ca.pem")) || !strings.Contains(stderr, "paddock certs ca --dir") {
		t.Errorf("paddock certs member without a CA: exit %d, stderr %s; want 1 and how to make the CA", code, stderr)
	}
	if code, _, stderr := run(t, "certs", "ca", "--dir", dir); code != 0 {
		t.Fatalf("paddock certs ca: exit %d, stderr %s", code, stderr)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"certs", "ca", "--dir", dir}, "ca.pem exists: keep it, or replace it with --force"},
		{[]string{"certs", "member", "--dir", dir, "--id", "0", "--host", "zk1"}, "--id 0: want a server id in [1, 254]"},
		{[]string{"certs", "member", "--dir", dir, "--id", "255", "--host", "zk1"}, "--id 255"},
		{[]string{"certs", "member", "--dir", dir, "--id", "1"}, `required flag(s) "host" not set`},
		{[]string{"certs", "member", "--dir", dir, "--id", "1", "--host", "zk1:2888"}, `host "zk1:2888"`},
		{[]string{"certs", "ca"}, `required flag(s) "dir" not set`},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("paddock %s: exit %d, stderr %s; want 1 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem")); !slices.Equal(before, after) {
		t.Error("a refused paddock certs ca changed ca-key.pem")
	}

	// --force replaces, and a key file that had become readable is 0600 again.
	if err := os.Chmod(filepath.Join(dir, "ca-key.pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "certs", "ca", "--dir", dir, "--force")
	if code != 0 || !strings.Contains(stdout, "make every member's again") {
		t.Fatalf("paddock certs ca --force: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "ca-key.pem")); slices.Equal(before, after) {
		t.Error("paddock certs ca --force kept the old key")
	}
	wantMode(t, filepath.Join(dir, "ca-key.pem"), 0o600)
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %o, want %o", path, got, want)
	}
}
