package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/test/conformance"
)

// startSecure starts a server with a plain and a secure client port, with the
// handshake timeout given, adjusted by configure.
func startSecure(t *testing.T, ct *testutil.ClientTLS, timeout time.Duration, configure func(*server.Config)) *server.Server {
	t.Helper()
	return startBounded(t, func(c *server.Config) {
		ct.Configure(c)
		c.HandshakeTimeout = timeout
		if configure != nil {
			configure(c)
		}
	})
}

// tlsConfig is a client's TLS configuration trusting ct's CA, with cert if it is named.
func tlsConfig(t *testing.T, ct *testutil.ClientTLS, cert *testutil.ClientCert) *tls.Config {
	t.Helper()
	files := coordinator.TLSFiles{CA: ct.CAFile}
	if cert != nil {
		files.Cert, files.Key = cert.Cert, cert.Key
	}
	conf, err := files.Config()
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// tlsSession opens a TLS connection to the secure port with a new session.
func tlsSession(t *testing.T, addr string, conf *tls.Config) (*conformance.Conn, error) {
	t.Helper()
	c, err := conformance.DialTLS(addr, conf, 5*time.Second)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, 16)}); err != nil {
		return nil, err
	}
	if _, _, err := c.ReadConnectResponse(5 * time.Second); err != nil {
		return nil, err
	}
	return c, nil
}

// TestSecureClientPortRefusesWhatIsNotTLS: a plain ZooKeeper client on the secure port
// is closed at once and counted; a client that stops halfway through its TLS handshake
// is kept until the handshake timeout, then closed and counted; the server serves TLS
// clients throughout.
func TestSecureClientPortRefusesWhatIsNotTLS(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	const timeout = time.Second
	srv := startSecure(t, ct, timeout, func(c *server.Config) {
		c.ClientTLSAuth = server.ClientAuthNone
		c.FourLetterWords = []string{"conf"}
	})
	secure := srv.SecureAddr().String()
	conf, err := testutil.FourLetterWord(srv.Addr().String(), "conf", 5*time.Second)
	if want := "secureClientPort=" + strconv.Itoa(srv.SecureAddr().(*net.TCPAddr).Port) + "\n"; err != nil || !strings.Contains(conf, want) {
		t.Errorf("conf = %q, %v; want it to show %q", conf, err, want)
	}

	plain, err := conformance.Dial(secure, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, 16)}); err != nil {
		t.Fatal(err)
	}
	// Well within the handshake timeout: the server does not wait for it.
	if _, err := plain.ReadFrame(timeout / 2); !conformance.IsClosed(err) {
		t.Fatalf("a plain client on the secure port: read %v, want the connection closed", err)
	}
	if n := srv.Stats().Limits.TLSHandshakesFailed; n != 1 {
		t.Errorf("tls handshakes failed = %d after a plain client, want 1", n)
	}

	stalled, err := conformance.Dial(secure, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	// A TLS record header announcing a ClientHello, and a few bytes of it.
	if err := stalled.WriteRaw([]byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00}); err != nil {
		t.Fatal(err)
	}
	if _, err := stalled.ReadFrame(timeout / 5); !conformance.IsTimeout(err) {
		t.Fatalf("a stalled handshake before the handshake timeout: read %v, want the connection still open", err)
	}
	if _, err := tlsSession(t, secure, tlsConfig(t, ct, nil)); err != nil {
		t.Fatalf("a TLS client while another stalls: %v", err)
	}
	waitClosed(t, stalled)
	testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool {
		l := srv.Stats().Limits
		return l.TLSHandshakesFailed == 2 && l.SessionlessExpired == 1
	}, "tls handshakes failed, sessionless expired = %d, %d; want 2, 1",
		srv.Stats().Limits.TLSHandshakesFailed, srv.Stats().Limits.SessionlessExpired)
	if _, err := tlsSession(t, secure, tlsConfig(t, ct, nil)); err != nil {
		t.Fatalf("a TLS client after the failures: %v", err)
	}
}

// TestClientAuthNeed: with client_tls_auth need (the default) a client without a
// certificate, or with one from another CA, gets no session; one with a certificate of
// the trusted CA does.
func TestClientAuthNeed(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	srv := startSecure(t, ct, 5*time.Second, nil)
	secure := srv.SecureAddr().String()

	if _, err := tlsSession(t, secure, tlsConfig(t, ct, nil)); err == nil {
		t.Fatal("a client without a certificate got a session")
	}
	other := testutil.NewClientTLS(t)
	stranger := other.Issue(t, "mallory")
	if _, err := tlsSession(t, secure, tlsConfig(t, ct, &stranger)); err == nil {
		t.Fatal("a client with another CA's certificate got a session")
	}
	alice := ct.Issue(t, "alice")
	if _, err := tlsSession(t, secure, tlsConfig(t, ct, &alice)); err != nil {
		t.Fatalf("a client with the CA's certificate: %v", err)
	}
	testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool {
		return srv.Stats().Limits.TLSHandshakesFailed == 2
	}, "tls handshakes failed = %d, want 2", srv.Stats().Limits.TLSHandshakesFailed)
}

// TestX509Identity: a client's certificate is its x509 identity on the connection, for
// ACLs (exact match, the auth scheme included), for super (x509_super_user) and for
// addauth x509, which fails, closing the connection, without a certificate.
func TestX509Identity(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	srv := startSecure(t, ct, 5*time.Second, func(c *server.Config) {
		c.ClientTLSAuth = server.ClientAuthWant
		c.X509SuperUser = "CN=root"
	})
	secure := srv.SecureAddr().String()
	alice, bob, root := ct.Issue(t, "alice"), ct.Issue(t, "bob"), ct.Issue(t, "root")
	session := func(cert *testutil.ClientCert) *conformance.Conn {
		c, err := tlsSession(t, secure, tlsConfig(t, ct, cert))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, cb, cr, anon := session(&alice), session(&bob), session(&root), session(nil)
	acl := []wire.ACL{{Perms: wire.PermAll, Scheme: "x509", ID: "CN=alice"}}
	if f := call(t, ca, wire.OpCreate, &wire.CreateRequest{Path: "/alice", Data: []byte("a"), ACL: acl}); f.Header.Err != wire.OK {
		t.Fatalf("alice creates /alice: %v", f.Header.Err)
	}
	authACL := []wire.ACL{{Perms: wire.PermAll, Scheme: "auth"}}
	if f := call(t, ca, wire.OpCreate, &wire.CreateRequest{Path: "/alice-auth", ACL: authACL}); f.Header.Err != wire.OK {
		t.Fatalf("alice creates /alice-auth with the auth scheme: %v", f.Header.Err)
	}
	f := call(t, ca, wire.OpGetACL, &wire.PathRecord{Path: "/alice-auth"})
	var got wire.GetACLResponse
	got.Decode(wire.NewDecoder(f.Body))
	if len(got.ACL) != 1 || got.ACL[0] != acl[0] {
		t.Errorf("the auth scheme expands to %v, want %v", got.ACL, acl)
	}
	for _, tc := range []struct {
		name string
		c    *conformance.Conn
		want wire.Code
	}{{"alice", ca, wire.OK}, {"bob", cb, wire.ErrNoAuth}, {"root (super)", cr, wire.OK}, {"no certificate", anon, wire.ErrNoAuth}} {
		if f := call(t, tc.c, wire.OpGetData, &wire.PathWatchRequest{Path: "/alice"}); f.Header.Err != tc.want {
			t.Errorf("%s reads /alice: %v, want %v", tc.name, f.Header.Err, tc.want)
		}
	}
	// whoAmI in ZooKeeper's order, which for root follows from super's id being the
	// subject, added before x509.
	ip := wire.Identity{Scheme: "ip", ID: "127.0.0.1"}
	for _, tc := range []struct {
		name string
		c    *conformance.Conn
		want []wire.Identity
	}{
		{"alice", ca, []wire.Identity{{Scheme: "x509", ID: "CN=alice"}, ip}},
		{"root (super)", cr, []wire.Identity{{Scheme: "super"}, {Scheme: "x509", ID: "CN=root"}, ip}},
		{"no certificate", anon, []wire.Identity{ip}},
	} {
		if got := whoAmI(t, tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("%s: whoAmI %v, want %v", tc.name, got, tc.want)
		}
	}
	if f := call(t, ca, wire.OpAuth, &wire.AuthPacket{Scheme: "x509"}); f.Header.Err != wire.OK {
		t.Errorf("addauth x509 with a certificate: %v, want OK", f.Header.Err)
	}
	if f := call(t, anon, wire.OpAuth, &wire.AuthPacket{Scheme: "x509"}); f.Header.Err != wire.ErrAuthFailed {
		t.Errorf("addauth x509 without a certificate: %v, want AuthFailed", f.Header.Err)
	}
	waitClosed(t, anon)
	if f := call(t, ca, wire.OpCreate, &wire.CreateRequest{Path: "/bad", ACL: []wire.ACL{{Perms: wire.PermAll, Scheme: "x509", ID: "alice"}}}); f.Header.Err != wire.ErrInvalidACL {
		t.Errorf("an x509 ACL that is not a name: %v, want InvalidACL", f.Header.Err)
	}
}

// TestEnforceAuthX509: under enforce.auth with the x509 scheme, a TLS client with a
// verified certificate is served from its first request; one without (clientAuth want)
// is refused SessionClosedRequireSaslAuth and closed, as is a plain client.
func TestEnforceAuthX509(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	srv := startSecure(t, ct, 5*time.Second, func(c *server.Config) {
		c.ClientTLSAuth = server.ClientAuthWant
		c.EnforceAuth, c.EnforceAuthSchemes = true, []string{"x509"}
	})
	alice := ct.Issue(t, "alice")
	withCert, err := tlsSession(t, srv.SecureAddr().String(), tlsConfig(t, ct, &alice))
	if err != nil {
		t.Fatal(err)
	}
	if f := call(t, withCert, wire.OpExists, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.OK {
		t.Errorf("exists with a client certificate: %v, want OK", f.Header.Err)
	}
	without, err := tlsSession(t, srv.SecureAddr().String(), tlsConfig(t, ct, nil))
	if err != nil {
		t.Fatal(err)
	}
	if f := call(t, without, wire.OpExists, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.ErrSessionClosedRequireSASL {
		t.Errorf("exists without a certificate: %v, want SessionClosedRequireSaslAuth", f.Header.Err)
	}
	waitClosed(t, without)
	plain := rawSession(t, srv.Addr().String())
	if f := call(t, plain, wire.OpExists, &wire.PathWatchRequest{Path: "/"}); f.Header.Err != wire.ErrSessionClosedRequireSASL {
		t.Errorf("exists on the plain port: %v, want SessionClosedRequireSaslAuth", f.Header.Err)
	}
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.EnforceAuth, cfg.EnforceAuthSchemes = true, []string{"x509"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "x509 needs a secure client port") {
		t.Errorf("x509 enforced without a secure port: %v, want an error naming it", err)
	}
}

// TestSecureClientPortAlone: a server with no plain port serves TLS clients; Addr is
// the secure port's.
func TestSecureClientPortAlone(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	srv := startSecure(t, ct, 5*time.Second, func(c *server.Config) {
		c.ClientAddr = ""
		c.ClientTLSAuth = server.ClientAuthNone
	})
	if srv.Addr().String() != srv.SecureAddr().String() {
		t.Errorf("Addr = %v, want the secure port %v", srv.Addr(), srv.SecureAddr())
	}
	if _, err := tlsSession(t, srv.SecureAddr().String(), tlsConfig(t, ct, nil)); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultClientAddrIsLoopback: unconfigured, the plain client port is not on other
// hosts' reach.
func TestDefaultClientAddrIsLoopback(t *testing.T) {
	cfg := server.DefaultConfig()
	host, _, err := net.SplitHostPort(cfg.ClientAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Errorf("DefaultConfig().ClientAddr = %q, want a loopback address", cfg.ClientAddr)
	}
	if cfg.SecureClientAddr != "" {
		t.Errorf("DefaultConfig().SecureClientAddr = %q, want none", cfg.SecureClientAddr)
	}
}

func TestClientTLSConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		set  func(*server.Config)
		want string
	}{
		{"no port at all", func(c *server.Config) { c.ClientAddr = "" }, "client_addr"},
		{"no key store", func(c *server.Config) { c.SecureClientAddr = "127.0.0.1:0" }, "client_tls_key_store"},
		{"no trust store for need", func(c *server.Config) {
			c.SecureClientAddr, c.ClientTLSKeyStore = "127.0.0.1:0", "server.pem"
		}, "client_tls_trust_store"},
		{"bad auth mode", func(c *server.Config) { c.ClientTLSAuth = "sometimes" }, "client_tls_auth"},
		{"bad super user", func(c *server.Config) { c.X509SuperUser = "root" }, "x509_super_user"},
		{"TLS 1.0", func(c *server.Config) { c.ClientTLSProtocol = "TLSv1" }, "client_tls_protocol"},
		{"unknown suite", func(c *server.Config) { c.ClientTLSCipherSuites = []string{"TLS_NOPE"} }, "client_tls_cipher_suites"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			tt.set(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

// TestSubjectDN: subjects print as Java's X500Principal.getName() does (each case
// checked against Java 17's).
func TestSubjectDN(t *testing.T) {
	oid := func(ids ...int) asn1.ObjectIdentifier { return ids }
	var (
		cn     = oid(2, 5, 4, 3)
		uid    = oid(0, 9, 2342, 19200300, 100, 1, 1)
		dc     = oid(0, 9, 2342, 19200300, 100, 1, 25)
		email  = oid(1, 2, 840, 113549, 1, 9, 1)
		serial = oid(2, 5, 4, 5)
	)
	raw := func(tag int, value string) pkix.RDNSequence {
		return pkix.RDNSequence{{{Type: cn, Value: asn1.RawValue{Tag: tag, Bytes: []byte(value)}}}}
	}
	tests := []struct {
		name string
		dn   pkix.RDNSequence
		want string
	}{
		{"most specific first", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"dev"},
			Organization: []string{"acme"}, Country: []string{"DE"}, Locality: []string{"Berlin"},
			Province: []string{"BE"}}.ToRDNSequence(), "CN=alice,OU=dev,O=acme,L=Berlin,ST=BE,C=DE"},
		{"escapes", pkix.Name{CommonName: ` #a,b+c=d;e<f>g"h\i `}.ToRDNSequence(),
			`CN=\ \#a\,b\+c\=d\;e\<f\>g\"h\\i\ `},
		{"dc and uid keywords", pkix.RDNSequence{
			{{Type: dc, Value: "com"}}, {{Type: dc, Value: "example"}}, {{Type: uid, Value: "jdoe"}}},
			"UID=jdoe,DC=example,DC=com"},
		{"other types as OIDs in hex", pkix.RDNSequence{
			{{Type: email, Value: "a@b"}}, {{Type: serial, Value: "42"}}, {{Type: cn, Value: "x"}}},
			"CN=x,2.5.4.5=#13023432,1.2.840.113549.1.9.1=#0c03614062"},
		{"multi-valued", pkix.RDNSequence{{{Type: cn, Value: "a"}, {Type: uid, Value: "b"}}}, "CN=a+UID=b"},
		{"unicode", pkix.Name{CommonName: "jürgen"}.ToRDNSequence(), "CN=jürgen"},
		{"BMPString bytes read as UTF-8, as Java does", raw(asn1.TagBMPString, "\x00b\x00m"), `CN=\00b\00m`},
		{"NUL", raw(asn1.TagUTF8String, "\x00 "), `CN=\00\ `},
		{"IA5String", raw(asn1.TagIA5String, "i"), "CN=i"},
		{"VisibleString in hex", raw(26, "v"), "CN=#1a0176"},
		{"UniversalString in hex", raw(28, "\x00\x00\x00u"), "CN=#1c0400000075"},
		{"empty", pkix.RDNSequence{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := asn1.Marshal(tt.dn)
			if err != nil {
				t.Fatal(err)
			}
			got, err := server.SubjectDN(raw)
			if err != nil || got != tt.want {
				t.Errorf("SubjectDN = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := server.SubjectDN([]byte{0x30, 0x05, 0x01}); err == nil {
		t.Error("SubjectDN of garbage: no error")
	}
	emptyRDN, _ := asn1.Marshal(pkix.RDNSequence{{{Type: cn, Value: "a"}}, {}})
	if dn, err := server.SubjectDN(emptyRDN); err == nil {
		t.Errorf("SubjectDN with an empty RDN = %q, want an error", dn)
	}
	// Java prints U+FFFD for bytes that are not UTF-8, by rules of its own: refused.
	notUTF8, _ := asn1.Marshal(raw(asn1.TagUTF8String, "a\xffb"))
	if dn, err := server.SubjectDN(notUTF8); err == nil {
		t.Errorf("SubjectDN of a value that is not UTF-8 = %q, want an error", dn)
	}
}

// TestSecureClientPortPKCS12AndVersions: the server's key store may be PKCS12 with a
// password; client_tls_enabled_protocols [TLSv1.3] refuses a TLS 1.2 client, counted.
func TestSecureClientPortPKCS12AndVersions(t *testing.T) {
	ct := testutil.NewClientTLS(t)
	cert, err := tls.LoadX509KeyPair(ct.ServerStore, ct.ServerStore)
	if err != nil {
		t.Fatal(err)
	}
	p12, err := pkcs12.Modern.Encode(cert.PrivateKey, cert.Leaf, []*x509.Certificate{ct.CA.Certificate()}, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "server.p12")
	if err := os.WriteFile(store, p12, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startSecure(t, ct, 5*time.Second, func(c *server.Config) {
		c.ClientTLSKeyStore, c.ClientTLSKeyStorePassword = store, "s3cret"
		c.ClientTLSAuth = server.ClientAuthNone
		c.ClientTLSEnabledProtocols = []string{"TLSv1.3"}
	})
	secure := srv.SecureAddr().String()
	old := tlsConfig(t, ct, nil)
	old.MaxVersion = tls.VersionTLS12
	if _, err := tlsSession(t, secure, old); err == nil {
		t.Error("a TLS 1.2 client got a session from a TLS 1.3-only port")
	}
	if _, err := tlsSession(t, secure, tlsConfig(t, ct, nil)); err != nil {
		t.Fatalf("a TLS 1.3 client: %v", err)
	}
	testutil.Eventually(t, 5*time.Second, 5*time.Millisecond, func() bool {
		return srv.Stats().Limits.TLSHandshakesFailed == 1
	}, "tls handshakes failed = %d, want 1", srv.Stats().Limits.TLSHandshakesFailed)

	cfg := testutil.PaddockConfig(t)
	ct.Configure(&cfg)
	cfg.ClientTLSKeyStore, cfg.ClientTLSKeyStorePassword = store, "hunter2-x"
	s, err := server.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "client_tls_key_store") || strings.Contains(err.Error(), "hunter2-x") {
		s.Close()
		t.Errorf("start with a wrong key store password: %v; want an error naming client_tls_key_store, without the password", err)
	}
}

// FuzzSubjectDN: no subject, however malformed, panics the printing; what prints is
// valid UTF-8 and reads back as an x509 ACL id.
func FuzzSubjectDN(f *testing.F) {
	for _, n := range []pkix.Name{{CommonName: "alice", OrganizationalUnit: []string{"dev"}}, {CommonName: ` #,+=;<>"\ `}} {
		raw, _ := asn1.Marshal(n.ToRDNSequence())
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		dn, err := server.SubjectDN(raw)
		if err != nil {
			return
		}
		if !utf8.ValidString(dn) {
			t.Errorf("SubjectDN = %q: not UTF-8", dn)
		}
		if !datatree.ValidX509ID(dn) {
			t.Errorf("SubjectDN = %q, which is not a valid x509 ACL id", dn)
		}
	})
}
