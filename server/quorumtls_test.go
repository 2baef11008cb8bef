package server_test

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// memberCA makes the CA of an ensemble's member certificates in dir (ca.pem) and a
// function that writes a key store of its issuing, returning the path.
func memberCA(t *testing.T) (trust string, store func(name string, o certs.IssueOptions) string) {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA("paddock test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	trust = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(trust, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return trust, func(name string, o certs.IssueOptions) string {
		t.Helper()
		o.Validity = time.Hour
		certPEM, keyPEM, err := ca.Issue(o)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(path, certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM()), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

var (
	clientOnly = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	serverOnly = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
)

// TestMemberCertificateMustProveItself: a member whose own certificate would not prove
// it to the other members refuses to start, saying which SAN would; one whose
// certificate proves it starts. Server 1's line is 127.0.0.1 (or 0.0.0.0, which names
// no host); each certificate is what paddock certs, or a ZooKeeper recipe, makes.
func TestMemberCertificateMustProveItself(t *testing.T) {
	trust, store := memberCA(t)
	const noHostCheck = "ssl.quorum.hostnameVerification=false"
	tests := []struct {
		name  string
		issue certs.IssueOptions
		host  string // server.1's host; 127.0.0.1 if empty
		hv    string // noHostCheck turns hostname verification off
		want  string // "" to start
	}{
		{name: "paddock certs member", issue: certs.IssueOptions{MemberID: 1, Hosts: []string{"127.0.0.1"}}},
		{name: "another member's", issue: certs.IssueOptions{MemberID: 2, Hosts: []string{"127.0.0.1"}},
			want: "names members [2] only: want the URI SAN urn:paddock:member:1"},
		{name: "paddock certs client", issue: certs.IssueOptions{CommonName: "member-1", ExtKeyUsage: clientOnly},
			want: "for TLS server authentication"},
		{name: "paddock certs server", issue: certs.IssueOptions{Hosts: []string{"127.0.0.1"}, ExtKeyUsage: serverOnly},
			want: "for TLS client authentication"},
		{name: "a ZooKeeper one for the host", issue: certs.IssueOptions{Hosts: []string{"127.0.0.1"}}},
		{name: "a ZooKeeper one by common name", issue: certs.IssueOptions{CommonName: "127.0.0.1"}},
		{name: "a ZooKeeper one for another host", issue: certs.IssueOptions{Hosts: []string{"zk9.example.com"}},
			want: "want the URI SAN urn:paddock:member:1, or, in a certificate without member URIs, the DNS or IP SAN 127.0.0.1 (the host of server.1)"},
		{name: "a ZooKeeper one on 0.0.0.0", issue: certs.IssueOptions{Hosts: []string{"0.0.0.0"}}, host: "0.0.0.0",
			want: `the host of server.1, "0.0.0.0", names no host: want the URI SAN urn:paddock:member:1`},
		{name: "member URI without the host", issue: certs.IssueOptions{MemberID: 1},
			want: "not valid for 127.0.0.1, the host of server.1 (ssl.quorum.hostnameVerification)"},
		{name: "member URI without the host, no host check", issue: certs.IssueOptions{MemberID: 1}, hv: noHostCheck},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testutil.PaddockConfig(t)
			host := tt.host
			if host == "" {
				host = "127.0.0.1"
			}
			peer, other := freePort(t), freePort(t)
			cfg.Ensemble = []string{fmt.Sprintf("1=%s:%d:%d", host, peer, peer), fmt.Sprintf("2=127.0.0.1:%d:%d", other, other)}
			cfg.QuorumTLS, cfg.QuorumTrustStore = true, trust
			cfg.QuorumKeyStore = store(fmt.Sprintf("case-%d", i), tt.issue)
			cfg.QuorumHostnameVerification = tt.hv != noHostCheck
			s, err := server.New(cfg, testutil.TestLogger())
			if err != nil {
				t.Fatal(err)
			}
			err = s.Start()
			if err == nil {
				s.Close()
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("start: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("started; want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("start: %v\nwant it to contain %q", err, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), "quorum_key_store = "+cfg.QuorumKeyStore+
				": this member's own certificate does not prove it is server.1"):
				t.Errorf("start: %v\nwant it to name quorum_key_store and server.1", err)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	p, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// onOwnHost moves a server line's peer address from 127.0.0.1 to 127.0.0.N, N its
// id: members on one machine that a certificate for a host tells apart.
func onOwnHost(entry string) string {
	return entryHost.ReplaceAllString(entry, "${1}=127.0.0.${1}:")
}

var entryHost = regexp.MustCompile(`^(?:server\.)?(\d+)=127\.0\.0\.1:`)

// TestEnsembleOfZooKeeperCertificates runs three members and an observer, each on a
// loopback address of its own, with certificates made as for ZooKeeper — no member
// URI; an IP SAN, a DNS and an IP SAN, or only a common name of the member's host —
// and hostname verification on: each proves its member by its host, the ensemble
// serves, and a fifth member added by a reconfiguration, its certificate for the host
// of the server line that adds it, joins and serves.
func TestEnsembleOfZooKeeperCertificates(t *testing.T) {
	trust, store := memberCA(t)
	zkCert := map[int64]certs.IssueOptions{
		1: {Hosts: []string{"127.0.0.1"}},
		2: {CommonName: "127.0.0.2"},
		3: {Hosts: []string{"zk3.example.com", "127.0.0.3"}},
		4: {Hosts: []string{"127.0.0.4"}},
		5: {Hosts: []string{"127.0.0.5"}},
	}
	secure := func(c *server.Config) {
		for i, e := range c.Ensemble {
			c.Ensemble[i] = onOwnHost(e)
		}
		c.QuorumTLS, c.QuorumTrustStore = true, trust
		c.QuorumKeyStore = store(fmt.Sprintf("zk-%d", c.ServerID), zkCert[c.ServerID])
	}
	e := testutil.StartEnsemble(t, 3, 1, func(_ int, c *server.Config) {
		c.Ensemble = append([]string(nil), c.Ensemble...)
		c.ReconfigEnabled, c.SkipACL = true, true
		secure(c)
	})
	conn, _ := connectTo(t, e.Addrs())
	if _, err := conn.Create("/zk-certs", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	five, entry := e.AddMember(false)
	e.Configs[five].Ensemble = append([]string(nil), e.Configs[five].Ensemble...)
	secure(&e.Configs[five])
	entry = "server." + onOwnHost(strings.TrimPrefix(entry, "server."))
	if !strings.Contains(entry, "=127.0.0.5:") {
		t.Fatalf("the reconfig's line %q: want member 5 on 127.0.0.5", entry)
	}
	e.Start(five)
	if _, err := conn.IncrementalReconfig([]string{entry}, nil, -1); err != nil {
		t.Fatalf("reconfig adding member 5: %v", err)
	}
	e.WaitServing()
	joined, _ := connectTo(t, e.Addrs()[five:])
	if _, err := joined.Sync("/zk-certs"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := joined.Get("/zk-certs"); err != nil || string(data) != "x" {
		t.Fatalf("member 5 reads /zk-certs = %q, %v", data, err)
	}
	observer, _ := connectTo(t, e.Addrs()[3:4])
	if _, err := observer.Create("/through-the-observer", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("a write through the observer: %v", err)
	}
}
