package testutil

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/server"
)

// ClientTLS is a test CA and the files of a secure client port it signs: the CA's
// certificate (the trust store of both ends) and the server's PEM key store, valid for
// 127.0.0.1 and localhost.
type ClientTLS struct {
	CA          *certs.CA
	Dir         string
	CAFile      string // the CA's certificate, PEM
	ServerStore string // the server's key, certificate and the CA's, PEM
}

// ClientCert is a client certificate's files, PEM: Cert and Key apart (go-zookeeper,
// kazoo), and Store, the key and certificate chain in one file (ZooKeeper's PEM key
// store, as zkCli reads it with zookeeper.ssl.keyStore.type=PEM).
type ClientCert struct {
	Cert, Key, Store string
}

// NewClientTLS makes a CA and a server certificate in a temporary directory.
func NewClientTLS(tb testing.TB) *ClientTLS {
	tb.Helper()
	dir := tb.TempDir()
	ca, err := certs.NewCA("paddock test client CA", time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	c := &ClientTLS{CA: ca, Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), ServerStore: filepath.Join(dir, "server.pem")}
	writeFile(tb, c.CAFile, ca.CertPEM())
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{Hosts: []string{"127.0.0.1", "localhost"}, Validity: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, c.ServerStore, certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM()))
	return c
}

// Configure gives cfg a secure client port on 127.0.0.1 (a free port) with the server's
// key store, trusting the CA's client certificates; client_tls_auth stays as cfg has it.
func (c *ClientTLS) Configure(cfg *server.Config) {
	cfg.SecureClientAddr = "127.0.0.1:0"
	cfg.ClientTLSKeyStore = c.ServerStore
	cfg.ClientTLSTrustStore = c.CAFile
}

// Issue makes a client certificate whose subject is CN=commonName, which is its x509
// identity, and writes its files.
func (c *ClientTLS) Issue(tb testing.TB, commonName string) ClientCert {
	tb.Helper()
	certPEM, keyPEM, err := c.CA.Issue(certs.IssueOptions{CommonName: commonName, Validity: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	base := filepath.Join(c.Dir, "client-"+filepath.Base(commonName))
	cc := ClientCert{Cert: base + ".crt", Key: base + ".key", Store: base + ".pem"}
	writeFile(tb, cc.Cert, certPEM)
	writeFile(tb, cc.Key, keyPEM)
	writeFile(tb, cc.Store, certs.KeyStorePEM(certPEM, keyPEM, c.CA.CertPEM()))
	return cc
}

func writeFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
}
