package coordinator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/provenance"
	"github.com/paddock/paddock/server"
)

// tlsFront serves TLS on 127.0.0.1:0, asking for a client certificate signed by ca,
// and relays each connection to backend in plain TCP: a stand-in for a secure client
// port. It returns its address and the subject of each client certificate it saw.
func tlsFront(t *testing.T, ca *certs.CA, backend string) (string, <-chan string) {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	subjects := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					return
				}
				select {
				case subjects <- tc.ConnectionState().PeerCertificates[0].Subject.String():
				default:
				}
				b, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer b.Close()
				go io.Copy(b, c)
				io.Copy(c, b)
			}()
		}
	}()
	return ln.Addr().String(), subjects
}

// TestAccessTLS: the tls_ca, tls_cert and tls_key keys make a session connect over
// TLS, verifying the server against the CA and presenting the client certificate.
func TestAccessTLS(t *testing.T) {
	ca, err := certs.NewCA("paddock test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{CommonName: "worker-1", Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"ca.pem": ca.CertPEM(), "worker.pem": certPEM, "worker.key": keyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr, subjects := tlsFront(t, ca, testutil.StartPaddock(t, func(c *server.Config) { c.TickTime = testTick }))
	a := Access{TLSCA: filepath.Join(dir, "ca.pem"), TLSCert: filepath.Join(dir, "worker.pem"), TLSKey: filepath.Join(dir, "worker.key")}
	cfg, err := a.Config([]string{addr}, 4*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Connect(ctxT(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Conn().Create("/over-tls", nil, 0, s.ACL()); err != nil {
		t.Fatal(err)
	}
	if got := <-subjects; got != "CN=worker-1" {
		t.Errorf("client certificate %q, want CN=worker-1", got)
	}
	// Without the CA the server is not trusted.
	cfg, err = Access{TLSCert: a.TLSCert, TLSKey: a.TLSKey}.Config([]string{addr}, 4*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ce *ConnectError
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := Connect(ctx, cfg); !errors.As(err, &ce) || ce.LastDial == nil {
		t.Errorf("connect without the CA: %v, want a dial error", err)
	}
}

// TestAccessSigning: signing_key gives the Config a signer, signers_file a trust of the
// keys it lists by role, and the roles' x509 identities are trusted, through tls_ca,
// for theirs; a bad signers file is named with its line.
func TestAccessSigning(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "submitter.key")
	signer, err := provenance.GenerateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	signers := filepath.Join(dir, "signers")
	os.WriteFile(signers, []byte("# who signs\nsubmitter="+signer.ID()+"\n"), 0o600)
	a := Access{SigningKey: keyFile, SignersFile: signers, Auth: []string{"digest:s:pw"}, Roles: []string{"submitter=x509:CN=ci"}}
	c, err := a.Config([]string{"127.0.0.1:1"}, 4e9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Signer == nil || c.Signer.ID() != signer.ID() || c.Trust.Empty() {
		t.Fatalf("signer %v, trust %v", c.Signer, c.Trust)
	}
	rec, _ := c.Signer.Sign("d", 1, []byte("x"))
	if got, err := c.Trust.Verify("d", 1, []byte("x"), rec, RoleSubmitter); err != nil || got.Role != RoleSubmitter {
		t.Errorf("Verify: %+v, %v", got, err)
	}
	if _, err := c.Trust.Verify("d", 1, []byte("x"), rec, RoleWorker); !errors.Is(err, provenance.ErrUntrusted) {
		t.Errorf("Verify for another role: %v", err)
	}
	os.WriteFile(signers, []byte("wizard="+signer.ID()+"\n"), 0o600)
	if _, err := a.Config([]string{"127.0.0.1:1"}, 4e9, nil); err == nil || !strings.Contains(err.Error(), "signers_file = "+signers) ||
		!strings.Contains(err.Error(), "line 1") {
		t.Errorf("a bad signers file: %v", err)
	}
	if err := (Access{}).CheckVerifier(); err == nil || !strings.Contains(err.Error(), "signers_file") {
		t.Errorf("CheckVerifier without signers: %v", err)
	}
	if err := (Access{TLSCA: "ca.pem"}).CheckVerifier(); err != nil {
		t.Errorf("CheckVerifier with tls_ca: %v", err)
	}
	if err := (Access{}).CheckSigner(); err == nil || !strings.Contains(err.Error(), "signing_key") {
		t.Errorf("CheckSigner without a key: %v", err)
	}
}
