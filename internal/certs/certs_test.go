package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"
)

// password is the password of the test stores; no error may contain it.
const password = "s3cret-Pa55"

func newCA(t *testing.T, name string) *CA {
	t.Helper()
	ca, err := NewCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *CA, o IssueOptions) (certPEM, keyPEM []byte) {
	t.Helper()
	if o.Validity == 0 {
		o.Validity = time.Hour
	}
	certPEM, keyPEM, err := ca.Issue(o)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// write writes data to name in a fresh temporary directory and returns its path.
func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// memberStore writes a PEM key store for member id issued by ca and loads it.
func memberStore(t *testing.T, ca *CA, id uint64, hosts ...string) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := issue(t, ca, IssueOptions{Hosts: hosts, MemberID: id})
	cert, err := LoadKeyStore(write(t, "member.pem", KeyStorePEM(certPEM, keyPEM, ca.CertPEM())), "", "")
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func trustStore(t *testing.T, cas ...*CA) *x509.CertPool {
	t.Helper()
	var data []byte
	for _, ca := range cas {
		data = append(data, ca.CertPEM()...)
	}
	pool, err := LoadTrustStore(write(t, "ca.pem", data), "", "")
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

// noSecret fails t if err shows a password.
func noSecret(t *testing.T, err error, secrets ...string) {
	t.Helper()
	for _, s := range append(secrets, password) {
		if err != nil && strings.Contains(err.Error(), s) {
			t.Errorf("error shows the password %q: %v", s, err)
		}
	}
}

// wantErr fails t unless err contains every one of parts.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an error containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("err = %v\nwant it to contain %q", err, p)
		}
	}
	noSecret(t, err)
}

func TestPEMKeyStoreRoundTrip(t *testing.T) {
	ca := newCA(t, "test CA")
	certPEM, keyPEM := issue(t, ca, IssueOptions{Hosts: []string{"zk1.example.com", "127.0.0.1", "[::1]"}, MemberID: 3})
	store := KeyStorePEM(certPEM, keyPEM, ca.CertPEM())
	blocks, _ := pemBlocks(store)
	if got := []string{blocks[0].Type, blocks[1].Type, blocks[2].Type}; len(blocks) != 3 ||
		!slices.Equal(got, []string{"PRIVATE KEY", "CERTIFICATE", "CERTIFICATE"}) {
		t.Fatalf("KeyStorePEM blocks = %q, want the key, the leaf, the CA", got)
	}
	cert, err := LoadKeyStore(write(t, "member-3.pem", store), "", "")
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	switch {
	case leaf == nil || len(cert.Certificate) != 2 || cert.PrivateKey == nil:
		t.Fatalf("LoadKeyStore = %d certificates, leaf %v, key %T; want 2, a leaf, a key",
			len(cert.Certificate), leaf != nil, cert.PrivateKey)
	case leaf.Subject.CommonName != "zk1.example.com":
		t.Errorf("common name = %q, want the first host", leaf.Subject.CommonName)
	case !slices.Equal(leaf.DNSNames, []string{"zk1.example.com"}) || len(leaf.IPAddresses) != 2 ||
		!leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !leaf.IPAddresses[1].Equal(net.IPv6loopback):
		t.Errorf("SANs = %q %v, want zk1.example.com, 127.0.0.1, ::1", leaf.DNSNames, leaf.IPAddresses)
	case !slices.Equal(MemberIDs(leaf), []uint64{3}):
		t.Errorf("MemberIDs = %v, want [3]", MemberIDs(leaf))
	case leaf.IsCA || leaf.KeyUsage != x509.KeyUsageDigitalSignature || leaf.SerialNumber.BitLen() < 100:
		t.Errorf("IsCA %v, key usage %v, serial %v: want a leaf for signatures, a random serial",
			leaf.IsCA, leaf.KeyUsage, leaf.SerialNumber)
	}
	pool := trustStore(t, ca)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "zk1.example.com",
			KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
}

func TestCA(t *testing.T) {
	ca := newCA(t, "paddock test CA")
	c := ca.Certificate()
	if !c.IsCA || !c.MaxPathLenZero || c.MaxPathLen != 0 || c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageCRLSign ||
		c.Subject.CommonName != "paddock test CA" || c.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("CA certificate: IsCA %v, path len %d (zero %v), usage %v, name %q, key %v",
			c.IsCA, c.MaxPathLen, c.MaxPathLenZero, c.KeyUsage, c.Subject.CommonName, c.PublicKeyAlgorithm)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("CA certificate is not self-signed: %v", err)
	}
	if _, err := NewCA("x", 0); err == nil {
		t.Error("NewCA with validity 0 succeeded")
	}
}

func TestLoadCA(t *testing.T) {
	ca := newCA(t, "test CA")
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := write(t, "ca.pem", ca.CertPEM()), write(t, "ca-key.pem", keyPEM)
	loaded, err := LoadCA(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := memberStore(t, loaded, 1, "localhost").Leaf.CheckSignatureFrom(ca.Certificate()); err != nil {
		t.Errorf("a certificate the loaded CA issued is not signed by the CA: %v", err)
	}

	other := newCA(t, "other CA")
	otherKey, _ := other.KeyPEM()
	leafPEM, leafKey := issue(t, ca, IssueOptions{Hosts: []string{"localhost"}})
	for _, tt := range []struct {
		name              string
		certPath, keyPath string
		want              []string
	}{
		{"key of another CA", certPath, write(t, "other-key.pem", otherKey),
			[]string{"certs: CA key", "does not match"}},
		{"a leaf as CA", write(t, "leaf.pem", leafPEM), write(t, "leaf-key.pem", leafKey),
			[]string{"not a CA certificate"}},
		{"missing key", certPath, filepath.Join(t.TempDir(), "nope.pem"), []string{"nope.pem", "no such file"}},
		{"missing certificate", filepath.Join(t.TempDir(), "nope.pem"), keyPath, []string{"nope.pem"}},
		{"key file without key", certPath, certPath, []string{"no private key"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadCA(tt.certPath, tt.keyPath)
			wantErr(t, err, tt.want...)
		})
	}
}

func TestIssue(t *testing.T) {
	ca := newCA(t, "test CA") // valid for an hour
	certPEM, _ := issue(t, ca, IssueOptions{MemberID: 12, Validity: 24 * time.Hour})
	leaf := parseCert(t, certPEM)
	if !leaf.NotAfter.Equal(ca.Certificate().NotAfter) {
		t.Errorf("NotAfter = %v, want the CA's %v", leaf.NotAfter, ca.Certificate().NotAfter)
	}
	if leaf.Subject.CommonName != "paddock member 12" {
		t.Errorf("common name = %q, want paddock member 12", leaf.Subject.CommonName)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ext key usage = %v, want server and client auth", leaf.ExtKeyUsage)
	}
	if len(leaf.URIs) != 1 || leaf.URIs[0].String() != "urn:paddock:member:12" {
		t.Errorf("URIs = %v, want urn:paddock:member:12", leaf.URIs)
	}
	for _, tt := range []struct {
		name string
		o    IssueOptions
		want string
	}{
		{"no name", IssueOptions{Validity: time.Hour}, "needs a common name, a host or a member id"},
		{"host with port", IssueOptions{Hosts: []string{"zk1:2888"}, Validity: time.Hour}, `host "zk1:2888"`},
		{"empty host", IssueOptions{Hosts: []string{""}, Validity: time.Hour}, `host ""`},
		{"no validity", IssueOptions{CommonName: "x"}, "validity 0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ca.Issue(tt.o)
			wantErr(t, err, tt.want)
		})
	}
}

// A certificate issued for one end of a link verifies for that end only.
func TestIssueExtKeyUsage(t *testing.T) {
	ca := newCA(t, "test CA")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	for _, tt := range []struct {
		name  string
		usage []x509.ExtKeyUsage
	}{
		{"client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{"server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			certPEM, _ := issue(t, ca, IssueOptions{CommonName: tt.name, ExtKeyUsage: tt.usage})
			leaf := parseCert(t, certPEM)
			if !slices.Equal(leaf.ExtKeyUsage, tt.usage) {
				t.Fatalf("ext key usage = %v, want %v", leaf.ExtKeyUsage, tt.usage)
			}
			for _, u := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{u}})
				if want := u == tt.usage[0]; (err == nil) != want {
					t.Errorf("verified for usage %v: %v, want ok %v", u, err, want)
				}
			}
		})
	}
}

func parseCert(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// selfSigned returns a PEM certificate for key, signed by itself.
func selfSigned(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "self"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestPEMKeyFormats(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ecKey)
	pkcs8 := func(k any) []byte { der, _ := x509.MarshalPKCS8PrivateKey(k); return der }
	for _, tt := range []struct {
		name  string
		key   crypto.Signer
		block pem.Block
	}{
		{"PKCS#8 ECDSA", ecKey, pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8(ecKey)}},
		{"PKCS#8 RSA", rsaKey, pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8(rsaKey)}},
		{"PKCS#8 Ed25519", edKey, pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8(edKey)}},
		{"PKCS#1", rsaKey, pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}},
		{"SEC 1", ecKey, pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The certificate before the key, and text around them: the order of the key and
			// the chain does not matter, as in ZooKeeper.
			data := append([]byte("Bag Attributes\n"), selfSigned(t, tt.key)...)
			data = append(append(data, "comment\n"...), pem.EncodeToMemory(&tt.block)...)
			cert, err := LoadKeyStore(write(t, "store.pem", data), "", password)
			if err != nil {
				t.Fatal(err)
			}
			if cert.Leaf.Subject.CommonName != "self" {
				t.Errorf("leaf = %q, want self", cert.Leaf.Subject.CommonName)
			}
		})
	}
}

// The encrypted keys of testdata are one P-256 key, openssl-cert.pem's, written by
// OpenSSL 3.0 with the password "secret":
//
//	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
//	openssl req -x509 -new -key key.pem -subj /CN=openssl-fixture -days 36500 -out openssl-cert.pem
//	openssl pkcs8 -topk8 -in key.pem -v2 aes-256-cbc -v2prf hmacWithSHA256 -passout pass:secret -out openssl-key-aes256.pem
//	openssl pkcs8 -topk8 -in key.pem -v2 des3 -v2prf hmacWithSHA1 -passout pass:secret -out openssl-key-des3.pem
//	openssl pkcs8 -topk8 -in key.pem -v2 aes-128-cbc -v2prf hmacWithSHA512 -passout pass:secret -out openssl-key-aes128.pem
//	openssl pkcs8 -topk8 -in key.pem -v1 PBE-SHA1-3DES -passout pass:secret -out openssl-key-pbes1.pem
//	openssl pkcs8 -topk8 -in key.pem -scrypt -passout pass:secret -out openssl-key-scrypt.pem
//	openssl ec -in key.pem -aes256 -passout pass:secret -out openssl-key-legacy.pem
func TestEncryptedPEMKey(t *testing.T) {
	certPEM, err := os.ReadFile("testdata/openssl-cert.pem")
	if err != nil {
		t.Fatal(err)
	}
	store := func(t *testing.T, keyFile string) string {
		t.Helper()
		keyPEM, err := os.ReadFile("testdata/" + keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return write(t, "store.pem", KeyStorePEM(certPEM, keyPEM, nil))
	}
	for _, file := range []string{"openssl-key-aes256.pem", "openssl-key-des3.pem", "openssl-key-aes128.pem"} {
		t.Run(file, func(t *testing.T) {
			path := store(t, file)
			cert, err := LoadKeyStore(path, "PEM", "secret")
			if err != nil {
				t.Fatal(err)
			}
			if cert.Leaf.Subject.CommonName != "openssl-fixture" {
				t.Errorf("leaf = %q, want openssl-fixture", cert.Leaf.Subject.CommonName)
			}
			_, err = LoadKeyStore(path, "PEM", "Secret")
			wantErr(t, err, path, "ENCRYPTED PRIVATE KEY", "wrong password")
			noSecret(t, err, "Secret")
			if !errors.Is(err, ErrPassword) {
				t.Errorf("wrong password: err = %v, want ErrPassword", err)
			}
			_, err = LoadKeyStore(path, "PEM", "")
			wantErr(t, err, path, "encrypted (ENCRYPTED PRIVATE KEY) and no password is set")
		})
	}
	for _, tt := range []struct{ file, want string }{
		{"openssl-key-pbes1.pem", "want PBES2 (convert with openssl pkcs8 -topk8 -v2 aes-256-cbc)"},
		{"openssl-key-scrypt.pem", "want PBKDF2"},
		{"openssl-key-legacy.pem", "EC PRIVATE KEY is encrypted the legacy OpenSSL way (Proc-Type: 4,ENCRYPTED)"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			_, err := LoadKeyStore(store(t, tt.file), "PEM", "secret")
			wantErr(t, err, tt.want)
			noSecret(t, err, "secret")
		})
	}
}

// A damaged encrypted key gives an error, never a panic (CBC on a partial block).
func TestEncryptedPEMKeyDamaged(t *testing.T) {
	keyPEM, err := os.ReadFile("testdata/openssl-key-aes256.pem")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(keyPEM)
	var info encryptedPrivateKeyInfo
	if err := unmarshalAll(b.Bytes, &info); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"partial block", info.Data[:len(info.Data)-3], "not a whole number of cipher blocks"},
		{"flipped byte", append(slices.Clone(info.Data[:len(info.Data)-1]), info.Data[len(info.Data)-1]^1), "wrong password"},
		{"empty", nil, "not a whole number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			damaged := info
			damaged.Data = tt.data
			der, err := asn1.Marshal(damaged)
			if err != nil {
				t.Fatal(err)
			}
			_, err = decryptPKCS8(der, "secret")
			wantErr(t, err, tt.want)
		})
	}
	if _, err := decryptPKCS8(b.Bytes[:len(b.Bytes)-5], "secret"); err == nil {
		t.Error("truncated DER decrypted")
	}
}

func TestKeyStoreErrors(t *testing.T) {
	ca := newCA(t, "test CA")
	certPEM, keyPEM := issue(t, ca, IssueOptions{Hosts: []string{"localhost"}})
	otherCert, otherKey := issue(t, ca, IssueOptions{Hosts: []string{"localhost"}})
	for _, tt := range []struct {
		name, file string
		data       []byte
		typ        string
		want       []string
	}{
		{"key of another certificate", "m.pem", KeyStorePEM(certPEM, otherKey, nil), "",
			[]string{"m.pem: the private key does not match the first certificate", "localhost"}},
		{"chain before leaf", "m.pem", KeyStorePEM(ca.CertPEM(), keyPEM, certPEM), "",
			[]string{"does not match the first certificate"}},
		{"no key", "m.pem", certPEM, "", []string{"m.pem: no private key"}},
		{"no certificate", "m.pem", keyPEM, "", []string{"m.pem: no certificate"}},
		{"two keys", "m.pem", KeyStorePEM(certPEM, append(slices.Clone(keyPEM), otherKey...), nil), "",
			[]string{"more than one private key"}},
		{"not PEM", "m.pem", []byte("\x30\x82garbage"), "", []string{"m.pem: no PEM block"}},
		{"PEM named PKCS12", "m.pem", KeyStorePEM(otherCert, otherKey, nil), "PKCS12", []string{"m.pem"}},
		{"bad certificate", "m.pem", append(slices.Clone(keyPEM), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"...), "",
			[]string{"certificate 1"}},
		{"unknown key block", "m.pem", append(slices.Clone(certPEM), "-----BEGIN DSA PRIVATE KEY-----\nAAAA\n-----END DSA PRIVATE KEY-----\n"...), "",
			[]string{`unsupported private key block "DSA PRIVATE KEY"`}},
		{"JKS by name", "m.jks", nil, "", []string{"m.jks: a Java JKS store is not supported", "-deststoretype PKCS12"}},
		{"JKS by type", "m.pem", nil, "jks", []string{"store type JKS is not supported", "keytool -importkeystore"}},
		{"unknown name", "m.store", nil, "", []string{"m.store: cannot tell the store type", "PEM or PKCS12"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadKeyStore(write(t, tt.file, tt.data), tt.typ, password)
			wantErr(t, err, tt.want...)
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "missing.pem")
		_, err := LoadKeyStore(path, "", "")
		wantErr(t, err, path)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want fs.ErrNotExist", err)
		}
	})
}

func TestPKCS12KeyStore(t *testing.T) {
	ca := newCA(t, "test CA")
	cert := memberStore(t, ca, 4, "localhost")
	data, err := pkcs12.Modern.Encode(cert.PrivateKey, cert.Leaf, []*x509.Certificate{ca.Certificate()}, password)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ file, typ string }{{"member.p12", ""}, {"member.pfx", ""}, {"member.bin", "pkcs12"}} {
		t.Run(tt.file, func(t *testing.T) {
			got, err := LoadKeyStore(write(t, tt.file, data), tt.typ, password)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Certificate) != 2 || !got.Leaf.Equal(cert.Leaf) || !slices.Equal(MemberIDs(got.Leaf), []uint64{4}) {
				t.Errorf("LoadKeyStore = %d certificates, leaf %q, want the member's and the CA's",
					len(got.Certificate), got.Leaf.Subject.CommonName)
			}
		})
	}
	// keytool has written PKCS12 since Java 9, into files often named .jks, which Java
	// reads as JKS stores; a true JKS file is refused.
	for _, tt := range []struct{ file, typ string }{{"keystore.jks", ""}, {"keystore.jks", "JKS"}, {"keystore", "jks"}} {
		if _, err := LoadKeyStore(write(t, tt.file, data), tt.typ, password); err != nil {
			t.Errorf("a PKCS12 file %s of type %q: %v", tt.file, tt.typ, err)
		}
	}
	_, err = LoadKeyStore(write(t, "keystore.jks", []byte("\xfe\xed\xfe\xed\x00\x00\x00\x02")), "", password)
	wantErr(t, err, "keystore.jks: a Java JKS store is not supported", "-deststoretype PKCS12")

	path := write(t, "member.p12", data)
	_, err = LoadKeyStore(path, "", "wrong")
	wantErr(t, err, path, "wrong password")
	if !errors.Is(err, ErrPassword) {
		t.Errorf("err = %v, want ErrPassword", err)
	}
	_, err = LoadKeyStore(write(t, "m.p12", []byte("not DER")), "", password)
	wantErr(t, err, "m.p12")
}

func TestTrustStore(t *testing.T) {
	ca, other := newCA(t, "CA"), newCA(t, "other CA")
	pool := trustStore(t, ca, other) // two CAs in one PEM file
	for _, c := range []*CA{ca, other} {
		leaf := memberStore(t, c, 1, "localhost").Leaf
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("a certificate of %s does not verify: %v", c.Certificate().Subject.CommonName, err)
		}
	}

	p12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Certificate()}, password)
	if err != nil {
		t.Fatal(err)
	}
	p12Pool, err := LoadTrustStore(write(t, "trust.p12", p12), "", password)
	if err != nil {
		t.Fatal(err)
	}
	if !p12Pool.Equal(trustStore(t, ca)) {
		t.Error("the PKCS12 trust store does not hold the CA alone")
	}
	if jksPool, err := LoadTrustStore(write(t, "truststore.jks", p12), "", password); err != nil || !jksPool.Equal(p12Pool) {
		t.Errorf("a PKCS12 trust store named .jks: %v", err)
	}

	member := memberStore(t, ca, 1, "localhost")
	keyStore, _ := pkcs12.Modern.Encode(member.PrivateKey, member.Leaf, nil, password)
	_, keyPEM := issue(t, ca, IssueOptions{Hosts: []string{"x"}})
	for _, tt := range []struct {
		name, file string
		data       []byte
		password   string
		want       []string
	}{
		{"wrong password", "trust.p12", p12, "wrong", []string{"trust.p12", "wrong password"}},
		{"key store as trust store", "key.p12", keyStore, password, []string{"certs: trust store", "key.p12"}},
		{"no certificate", "ca.pem", keyPEM, "", []string{"ca.pem: no CERTIFICATE block"}},
		{"empty", "ca.pem", nil, "", []string{"ca.pem: no PEM block"}},
		{"JKS", "truststore.jks", nil, "", []string{"JKS store is not supported"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadTrustStore(write(t, tt.file, tt.data), "", tt.password)
			wantErr(t, err, tt.want...)
		})
	}
}

func TestStoreType(t *testing.T) {
	for _, tt := range []struct {
		path, typ, want, err string
	}{
		{"a.pem", "", PEM, ""},
		{"/etc/zk/A.PEM", "", PEM, ""},
		{"a.crt", "", PEM, ""},
		{"a.cer", "", PEM, ""},
		{"a.key", "", PEM, ""},
		{"a.p12", "", PKCS12, ""},
		{"a.pfx", "", PKCS12, ""},
		{"a.p12", "pem", PEM, ""}, // the type wins over the name
		{"a", "Pkcs12", PKCS12, ""},
		{"a.jks", "", "", "a Java JKS store is not supported"},
		{"a.bcfks", "", "", "a Java BCFKS store is not supported"},
		{"a.pem", "JKS", "", "store type JKS is not supported: convert it to PKCS12"},
		{"a.pem", "BCFKS", "", "store type BCFKS"},
		{"a.pem", "DER", "", `unknown store type "DER": want PEM or PKCS12`},
		{"keystore", "", "", "keystore: cannot tell the store type from the file name"},
	} {
		got, err := StoreType(tt.path, tt.typ)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("StoreType(%q, %q) = %q, %v; want %q", tt.path, tt.typ, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("StoreType(%q, %q) = %q, %v; want an error containing %q", tt.path, tt.typ, got, err, tt.err)
		}
	}
}

func TestVersions(t *testing.T) {
	const v12, v13 = tls.VersionTLS12, tls.VersionTLS13
	for _, tt := range []struct {
		protocol string
		enabled  []string
		min, max uint16
		err      string
	}{
		{"", nil, v12, v13, ""},
		{"TLSv1.2", nil, v12, v12, ""},
		{"tlsv1.3", nil, v13, v13, ""},
		{"", []string{"TLSv1.2", "TLSv1.3"}, v12, v13, ""},
		{"", []string{"TLSv1.3", "TLSv1.2"}, v12, v13, ""},
		{"", []string{"TLSv1.3"}, v13, v13, ""},
		{"TLSv1.2", []string{"TLSv1.2", "TLSv1.3"}, v12, v13, ""},
		{"TLSv1.3", []string{"TLSv1.2"}, 0, 0, "protocol TLSv1.3 is not among the enabled protocols TLSv1.2"},
		{"TLSv1.1", nil, 0, 0, "TLS version TLSv1.1 is insecure (RFC 8996) and refused"},
		{"TLSv1", nil, 0, 0, "TLSv1 is insecure"},
		{"SSLv3", nil, 0, 0, "SSLv3 is insecure"},
		{"", []string{"TLSv1.1", "TLSv1.2"}, 0, 0, "TLSv1.1 is insecure"},
		{"TLS", nil, 0, 0, `unknown TLS version "TLS": want TLSv1.2 or TLSv1.3`},
		{"TLSv1.4", []string{"TLSv1.3"}, 0, 0, `unknown TLS version "TLSv1.4"`},
	} {
		min, max, err := Versions(tt.protocol, tt.enabled)
		switch {
		case tt.err == "" && (err != nil || min != tt.min || max != tt.max):
			t.Errorf("Versions(%q, %q) = %x, %x, %v; want %x, %x", tt.protocol, tt.enabled, min, max, err, tt.min, tt.max)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Versions(%q, %q) = %x, %x, %v; want an error containing %q", tt.protocol, tt.enabled, min, max, err, tt.err)
		}
	}
}

func TestCipherSuites(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  []uint16
		err   string
	}{
		{nil, nil, ""},
		{[]string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "tls_ecdhe_rsa_with_chacha20_poly1305_sha256"},
			[]uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}, ""},
		{[]string{"TLS_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"},
			[]uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}, ""},
		{[]string{"TLS_AES_256_GCM_SHA384"}, []uint16{}, ""},
		{[]string{"TLS_EMPTY_RENEGOTIATION_INFO_SCSV", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
			[]uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}, ""},
		{[]string{"TLS_ECDHE_RSA_WITH_RC4_128_SHA", "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"}, nil,
			"insecure cipher suites refused: TLS_ECDHE_RSA_WITH_RC4_128_SHA, TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256"},
		{[]string{"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "FOO"}, nil,
			"unknown cipher suites: TLS_DHE_RSA_WITH_AES_128_GCM_SHA256, FOO: want IANA names of suites Go supports: TLS_"},
	} {
		got, err := CipherSuites(tt.names)
		switch {
		case tt.err == "" && (err != nil || !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil)):
			t.Errorf("CipherSuites(%q) = %v, %v; want %v", tt.names, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("CipherSuites(%q) = %v, %v; want an error containing %q", tt.names, got, err, tt.err)
		}
	}
}

func TestMemberIDs(t *testing.T) {
	if got := MemberURI(7).String(); got != "urn:paddock:member:7" {
		t.Errorf("MemberURI(7) = %s, want urn:paddock:member:7", got)
	}
	var uris []*url.URL
	for _, s := range []string{
		"urn:paddock:member:1",
		"https://example.com/member/2",
		"URN:Paddock:Member:3", // the scheme and namespace in any case
		"urn:paddock:member:",
		"urn:paddock:member:0",
		"urn:paddock:member:04",
		"urn:paddock:member:+5",
		"urn:paddock:member:-6",
		"urn:paddock:member:7x",
		"urn:paddock:member:18446744073709551616", // beyond uint64
		"urn:paddock:member:8?x",
		"urn:paddock:members:9",
		"urn:other:member:10",
		"urn:paddock:member:18446744073709551615",
	} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, u)
	}
	got := MemberIDs(&x509.Certificate{URIs: uris})
	if want := []uint64{1, 3, 18446744073709551615}; !slices.Equal(got, want) {
		t.Errorf("MemberIDs = %v, want %v", got, want)
	}
	if got := MemberIDs(&x509.Certificate{}); got != nil {
		t.Errorf("MemberIDs of a certificate without URIs = %v, want none", got)
	}
}

// handshake runs a TLS handshake over net.Pipe and a byte from server to client, and
// returns what the server saw of the client and each end's error.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	sc, cc := net.Pipe()
	deadline := time.Now().Add(10 * time.Second) // a failing end may leave the other blocked
	sc.SetDeadline(deadline)
	cc.SetDeadline(deadline)
	type result struct {
		state tls.ConnectionState
		err   error
	}
	done := make(chan result, 1)
	go func() {
		s := tls.Server(sc, server)
		err := s.Handshake()
		if err == nil {
			_, err = s.Write([]byte{1})
		}
		sc.Close()
		done <- result{s.ConnectionState(), err}
	}()
	c := tls.Client(cc, client)
	err := c.Handshake()
	if err == nil { // in TLS 1.3 the server judges the client's certificate after the client's handshake
		_, err = io.ReadFull(c, make([]byte, 1))
	}
	cc.Close()
	r := <-done
	return r.state, r.err, err
}

func TestMutualTLS(t *testing.T) {
	ca, other := newCA(t, "ensemble CA"), newCA(t, "other CA")
	pool := trustStore(t, ca)
	min, max, err := Versions("", nil)
	if err != nil {
		t.Fatal(err)
	}
	serverConfig := func(cert tls.Certificate) *tls.Config {
		return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: min, MaxVersion: max}
	}
	clientConfig := func(cert tls.Certificate, maxVersion uint16) *tls.Config {
		return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "zk1.example.com",
			MinVersion: min, MaxVersion: maxVersion}
	}
	member1 := memberStore(t, ca, 1, "zk1.example.com")
	member2 := memberStore(t, ca, 2, "zk2.example.com")
	stranger := memberStore(t, other, 2, "zk2.example.com")
	strangeServer := memberStore(t, other, 1, "zk1.example.com")

	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		state, serr, cerr := handshake(t, serverConfig(member1), clientConfig(member2, version))
		if serr != nil || cerr != nil {
			t.Fatalf("TLS %x between members of one CA: server %v, client %v", version, serr, cerr)
		}
		if state.Version != version || len(state.PeerCertificates) == 0 ||
			!slices.Equal(MemberIDs(state.PeerCertificates[0]), []uint64{2}) {
			t.Errorf("TLS %x: the server saw version %x, member ids %v; want member 2", version, state.Version,
				MemberIDs(state.PeerCertificates[0]))
		}

		// A Go client sends no certificate the server's list of CAs does not name; a
		// hostile one sends it anyway.
		forced := clientConfig(stranger, version)
		forced.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger, nil }
		_, serr, cerr = handshake(t, serverConfig(member1), forced)
		if serr == nil || !strings.Contains(serr.Error(), "certificate signed by unknown authority") || cerr == nil {
			t.Errorf("TLS %x, a client of another CA: server %v, client %v; want both to fail", version, serr, cerr)
		}

		_, serr, cerr = handshake(t, serverConfig(strangeServer), clientConfig(member2, version))
		if cerr == nil || !strings.Contains(cerr.Error(), "certificate signed by unknown authority") || serr == nil {
			t.Errorf("TLS %x, a server of another CA: server %v, client %v; want both to fail", version, serr, cerr)
		}
	}

	_, serr, cerr := handshake(t, serverConfig(member1), &tls.Config{RootCAs: pool, ServerName: "zk1.example.com"})
	if serr == nil || cerr == nil {
		t.Errorf("a client without a certificate: server %v, client %v; want both to fail", serr, cerr)
	}
	wrongHost := clientConfig(member2, max)
	wrongHost.ServerName = "zk3.example.com"
	_, _, cerr = handshake(t, serverConfig(member1), wrongHost)
	if cerr == nil || !strings.Contains(cerr.Error(), "zk3.example.com") {
		t.Errorf("a server of another host name: client %v, want a host name error", cerr)
	}
}
