package quorum

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/internal/certs"
)

// The member-certificate matrix: every combination of what a certificate may say,
// each checked against the invariant of TLS's doc comment, which verdict states
// independently of the code.

// ekuKind is which ends of a TLS link a certificate is for.
type ekuKind int

const (
	ekuServer ekuKind = iota // paddock certs server
	ekuClient                // paddock certs client
	ekuBoth                  // paddock certs member
	ekuNone                  // no extended key usage: any end, as Go and Java read it
)

// nameKind is what a certificate's URI SANs, DNS/IP SANs or common name say.
type nameKind int

const (
	nameThis     nameKind = iota // the member claimed (its URI, or its server line's host)
	nameOther                    // another member, or another host
	nameNone                     // nothing of that kind
	nameBoth                     // URIs of the member and of another
	nameWildcard                 // a DNS SAN *.rest: the host's domain when the host is a name
)

// certCase is one combination of the matrix.
type certCase struct {
	eku      ekuKind
	uri, san nameKind
	cn       nameKind // nameThis: the host; nameOther: "member N"
	hv       bool     // HostnameVerification of the member checking
}

func (c certCase) String() string {
	return fmt.Sprintf("eku=%d/uri=%d/san=%d/cn=%d/hv=%v", c.eku, c.uri, c.san, c.cn, c.hv)
}

// certTrust is how a certificate stands with the trust store.
type certTrust int

const (
	trustOK       certTrust = iota
	trustExpired            // NotAfter passed
	trustNotYet             // NotBefore ahead
	trustStranger           // signed by another CA
)

// shape is what the matrix leaves to the seed: ids, hosts, and details that must not
// change the verdict (an extra non-member URI, an intermediate CA, the case of a DNS
// SAN) or that must refuse whatever the names (trust).
type shape struct {
	id, other       uint64
	host, otherHost string // as the server line writes them (IPv6 bracketed)
	hostIsDNS       bool
	extraURI        bool // a URI SAN naming no member
	viaIntermediate bool
	upperCase       bool // DNS SANs written in upper case
	trust           certTrust
}

// verdict is the invariant: member id is proven iff the certificate verifies for
// both ends of a link, names the member (its URI; without member URIs a DNS or IP SAN
// equal to the host; without any SAN the common name), and, with hostname
// verification, is valid for the host.
func verdict(c certCase, s shape) bool {
	if s.trust != trustOK || c.eku == ekuServer || c.eku == ekuClient {
		return false
	}
	noSAN := c.uri == nameNone && c.san == nameNone && !s.extraURI
	named := c.uri == nameThis || c.uri == nameBoth ||
		c.uri == nameNone && (c.san == nameThis || noSAN && c.cn == nameThis)
	validForHost := c.san == nameThis || c.san == nameWildcard && s.hostIsDNS || noSAN && c.cn == nameThis
	return named && (!c.hv || validForHost)
}

// allCases enumerates the matrix; wide adds URIs of two members and wildcards.
func allCases(wide bool) []certCase {
	uris := []nameKind{nameThis, nameOther, nameNone}
	sans := []nameKind{nameThis, nameOther, nameNone}
	if wide {
		uris, sans = append(uris, nameBoth), append(sans, nameWildcard)
	}
	var out []certCase
	for _, eku := range []ekuKind{ekuServer, ekuClient, ekuBoth, ekuNone} {
		for _, uri := range uris {
			for _, san := range sans {
				for _, cn := range []nameKind{nameThis, nameOther} {
					for _, hv := range []bool{false, true} {
						out = append(out, certCase{eku, uri, san, cn, hv})
					}
				}
			}
		}
	}
	return out
}

// testPKI is a root CA, an intermediate under it, and a stranger CA, which issue the
// matrix's certificates, all for one key (the matrix is about names, not keys).
type testPKI struct {
	t                       testing.TB
	key                     *ecdsa.PrivateKey
	root, inter, stranger   *x509.Certificate
	rootKey, interKey, sKey *ecdsa.PrivateKey
	roots                   *x509.CertPool
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{t: t, key: newKey(t), rootKey: newKey(t), interKey: newKey(t), sKey: newKey(t)}
	ca := func(name string, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) *x509.Certificate {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		return p.sign(tmpl, parent, &key.PublicKey, parentKey)
	}
	p.root = ca("matrix root", p.rootKey, nil, nil)
	p.inter = ca("matrix intermediate", p.interKey, p.root, p.rootKey)
	p.stranger = ca("stranger", p.sKey, nil, nil)
	p.roots = x509.NewCertPool()
	p.roots.AddCert(p.root)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (p *testPKI) sign(tmpl, parent *x509.Certificate, pub any, key *ecdsa.PrivateKey) *x509.Certificate {
	p.t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		p.t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		p.t.Fatal(err)
	}
	return cert
}

// issue makes the certificate c and s describe, and the chain its holder presents.
func (p *testPKI) issue(c certCase, s shape, serial int64) []*x509.Certificate {
	p.t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	switch c.eku {
	case ekuServer:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case ekuClient:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case ekuBoth:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}
	}
	switch c.uri {
	case nameThis:
		tmpl.URIs = []*url.URL{certs.MemberURI(s.id)}
	case nameOther:
		tmpl.URIs = []*url.URL{certs.MemberURI(s.other)}
	case nameBoth:
		tmpl.URIs = []*url.URL{certs.MemberURI(s.other), certs.MemberURI(s.id)}
	}
	if s.extraURI {
		tmpl.URIs = append(tmpl.URIs, &url.URL{Scheme: "spiffe", Host: "cluster.example", Path: "/member/" + strconv.FormatUint(s.id, 10)})
	}
	addHost := func(h string) {
		h = strings.Trim(h, "[]")
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if s.upperCase {
			tmpl.DNSNames = append(tmpl.DNSNames, strings.ToUpper(h))
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	switch c.san {
	case nameThis:
		addHost(s.host)
	case nameOther:
		addHost(s.otherHost)
	case nameWildcard:
		if _, rest, ok := strings.Cut(s.host, "."); ok && s.hostIsDNS {
			tmpl.DNSNames = append(tmpl.DNSNames, "*."+rest)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, "*.example.org")
		}
	}
	tmpl.Subject.CommonName = fmt.Sprintf("member %d", s.id)
	if c.cn == nameThis {
		tmpl.Subject.CommonName = strings.Trim(s.host, "[]")
	}
	switch s.trust {
	case trustExpired:
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-2*time.Hour), time.Now().Add(-time.Second)
	case trustNotYet:
		tmpl.NotBefore = time.Now().Add(time.Minute)
	case trustStranger:
		return []*x509.Certificate{p.sign(tmpl, p.stranger, &p.key.PublicKey, p.sKey)}
	}
	if s.viaIntermediate {
		return []*x509.Certificate{p.sign(tmpl, p.inter, &p.key.PublicKey, p.interKey), p.inter}
	}
	return []*x509.Certificate{p.sign(tmpl, p.root, &p.key.PublicKey, p.rootKey)}
}

// tlsCert is chain as a tls.Certificate of the PKI's key.
func (p *testPKI) tlsCert(chain []*x509.Certificate) tls.Certificate {
	c := tls.Certificate{PrivateKey: p.key, Leaf: chain[0]}
	for _, x := range chain {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	return c
}

// memberTLSOf is member id's own TLS settings: a certificate that proves it, of the PKI.
func (p *testPKI) memberTLSOf(id uint64, host string, hv bool) *TLS {
	chain := p.issue(certCase{eku: ekuBoth, uri: nameThis, san: nameThis}, shape{id: id, host: host}, int64(1000+id))
	return &TLS{Certificate: p.tlsCert(chain), Roots: p.roots, HostnameVerification: hv}
}

// drawShape draws a shape: its hosts any names and addresses, or only those a test can
// listen on (dialable: localhost, 127.0.0.0/8, ::1).
func drawShape(rng *mrand.Rand, dialable bool) shape {
	ids := []uint64{1, 2, 253, 254, 1 + rng.Uint64N(254), 1 + rng.Uint64N(1<<20)}
	s := shape{id: ids[rng.IntN(len(ids))]}
	for s.other = ids[rng.IntN(len(ids))]; s.other == s.id; s.other = 1 + rng.Uint64N(254) {
	}
	a, b := byte(2+rng.IntN(120)), byte(130+rng.IntN(120))
	var hosts [][2]string // this, another
	if dialable {
		hosts = [][2]string{{"localhost", "member-" + strconv.Itoa(int(b)) + ".example.net"},
			{fmt.Sprintf("127.0.0.%d", a), fmt.Sprintf("127.0.0.%d", b)}, {"[::1]", "[::2]"},
			{"localhost", fmt.Sprintf("127.0.0.%d", b)}}
	} else {
		hosts = [][2]string{{fmt.Sprintf("zk%d.example.com", a), fmt.Sprintf("zk%d.example.com", b)},
			{fmt.Sprintf("zk%d.example.com", a), fmt.Sprintf("zk%d.example.com.evil.org", a)},
			{fmt.Sprintf("10.%d.0.%d", a, b), fmt.Sprintf("10.%d.0.%d", b, a)},
			{fmt.Sprintf("[fd00::%x]", a), fmt.Sprintf("[fd00::%x]", b)},
			{fmt.Sprintf("[fd00::%x]", a), fmt.Sprintf("10.0.0.%d", a)},
			{fmt.Sprintf("zk%d.example.com", a), fmt.Sprintf("10.0.0.%d", a)}}
	}
	h := hosts[rng.IntN(len(hosts))]
	s.host, s.otherHost = h[0], h[1]
	s.hostIsDNS = net.ParseIP(strings.Trim(s.host, "[]")) == nil
	s.extraURI = rng.IntN(4) == 0
	s.viaIntermediate = rng.IntN(3) == 0
	s.upperCase = rng.IntN(3) == 0
	return s
}

// seedRange is the seeds a seeded test runs: PADDOCK_PEERTLS_SEED (the first, default
// 1) and PADDOCK_PEERTLS_SEEDS (how many, default n).
func seedRange(t *testing.T, n uint64) (first, count uint64) {
	t.Helper()
	first, count = 1, n
	for env, v := range map[string]*uint64{"PADDOCK_PEERTLS_SEED": &first, "PADDOCK_PEERTLS_SEEDS": &count} {
		if s := os.Getenv(env); s != "" {
			x, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: want an unsigned integer", env, s)
			}
			*v = x
		}
	}
	t.Logf("seeds %d to %d (PADDOCK_PEERTLS_SEED, PADDOCK_PEERTLS_SEEDS)", first, first+count-1)
	return first, count
}

// TestProvesMatrix checks Proves against verdict over the wide matrix — every
// extended key usage, URIs of this member, another, both or none, a DNS or IP SAN of
// this host, another, a wildcard or none, a common name of this host or not, hostname
// verification on and off — for 8 seeds (2048 certificates), each drawing ids (1, 254 and random ones),
// hosts (names, IPv4, IPv6, a name that only starts with the host's), and per case an
// intermediate CA, a non-member URI, upper-case DNS SANs and, one time in four, a
// certificate expired, not yet valid or of another CA. A refusal for want of a name
// names the URI SAN that would prove the member.
func TestProvesMatrix(t *testing.T) {
	p := newTestPKI(t)
	first, count := seedRange(t, 8)
	cases := allCases(true)
	checked, proven := 0, 0
	for seed := first; seed < first+count; seed++ {
		rng := mrand.New(mrand.NewPCG(seed, 31))
		for i, c := range cases {
			s := drawShape(rng, false)
			if rng.IntN(4) == 0 {
				s.trust = certTrust(1 + rng.IntN(3))
			}
			chain := p.issue(c, s, int64(i+2))
			want := verdict(c, s)
			tc := &TLS{Roots: p.roots, HostnameVerification: c.hv}
			err := tc.Proves(chain, s.id, net.JoinHostPort(strings.Trim(s.host, "[]"), "2888"))
			checked++
			if want {
				proven++
			}
			if (err == nil) != want {
				t.Fatalf("seed %d, %v, %+v: Proves = %v, want proven %v", seed, c, s, err, want)
			}
			verifies := s.trust == trustOK && (c.eku == ekuBoth || c.eku == ekuNone)
			named := verdict(certCase{eku: ekuBoth, uri: c.uri, san: c.san, cn: c.cn}, s)
			if verifies && !named && (err == nil || !strings.Contains(err.Error(), "want the URI SAN "+certs.MemberURI(s.id).String())) {
				t.Errorf("seed %d, %v: refusal %q does not name the SAN wanted, %s", seed, c, err, certs.MemberURI(s.id))
			}
		}
	}
	t.Logf("%d certificates checked, %d proved their member", checked, proven)
	if proven == 0 || proven == checked {
		t.Errorf("%d of %d certificates proved their member: the matrix tells nothing", proven, checked)
	}
}

// matrixTransport starts member 1's transport, on 127.0.0.1, with a certificate that
// proves it and peers as given.
func matrixTransport(t *testing.T, p *testPKI, hv bool, peers map[uint64]string) *Transport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := newTransport(ln, transportConfig{
		self: 1, peers: peers, queueLen: 4, tls: newPeerTLS(p.memberTLSOf(1, "127.0.0.1", hv)),
		limits: frameLimits{raft: 1 << 20, snap: 1 << 20, note: 1 << 10, chunk: 1 << 20},
		// The default timeouts: a handshake slowed by a loaded machine must not pass for a refusal.
		timeouts: defaultTimeouts, recv: func(uint64, *raftpb.Message) {}, unreachable: func(uint64) {},
		counters: &counters{}, refusals: newLimitedLog(testLogger()), logger: testLogger(),
	})
	t.Cleanup(func() { tr.Close() })
	return tr
}

// closedPort is a port on host nothing listens on.
func closedPort(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(strings.Trim(host, "[]"), "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	return port
}

// acceptorAdmits dials member 1 with chain, claiming member s.id, whose server line
// is s.host: true if member 1 answers the hello.
func acceptorAdmits(t *testing.T, p *testPKI, c certCase, s shape, chain []*x509.Certificate) bool {
	t.Helper()
	line := net.JoinHostPort(strings.Trim(s.host, "[]"), closedPort(t, s.host))
	tr := matrixTransport(t, p, c.hv, map[uint64]string{s.id: line})
	defer tr.Close()
	cert := p.tlsCert(chain)
	in, err := dialPeer(t, tr.Addr().String(), &tls.Config{InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})
	return err == nil && in.hello(s.id, 1) == nil
}

// diallerAdmits has member 1 dial member s.id at s.host, where a listener presents
// chain: true if member 1 completes the handshake and sends its hello.
func diallerAdmits(t *testing.T, p *testPKI, c certCase, s shape, chain []*x509.Certificate) bool {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(strings.Trim(s.host, "[]"), "0"))
	if s.host == "localhost" {
		ln, err = net.Listen("tcp", "127.0.0.1:0") // localhost is 127.0.0.1 (and maybe ::1, which Go tries too)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	tr := matrixTransport(t, p, c.hv, map[uint64]string{s.id: net.JoinHostPort(strings.Trim(s.host, "[]"), port)})
	defer tr.Close()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		t.Fatalf("member 1 never dialled member %d: %v", s.id, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{p.tlsCert(chain)}, ClientAuth: tls.RequireAnyClientCert})
	if tc.Handshake() != nil {
		return false
	}
	kind, body, err := readFrame(bufio.NewReader(tc), frameLimits{})
	if err != nil || kind != frameHello {
		return false
	}
	h, err := decodeHello(body)
	return err == nil && h.from == 1 && h.to == s.id
}

// TestPeerTLSMatrix runs the matrix over real connections, both ways: member 1 accepting
// a connection whose certificate claims member N in its hello, and member 1 dialling
// member N and meeting the certificate in the handshake — every extended key usage,
// URI of this member, another or none, DNS or IP SAN of this host, another or none,
// common name of the host or not, hostname verification on and off (288 connections).
// Each is admitted exactly when verdict says so. Hosts are those a test can listen on:
// localhost, 127.0.0.0/8, ::1.
func TestPeerTLSMatrix(t *testing.T) {
	p := newTestPKI(t)
	first, _ := seedRange(t, 1)
	rng := mrand.New(mrand.NewPCG(first, 37))
	for i, c := range allCases(false) {
		for _, side := range []string{"acceptor", "dialler"} {
			s := drawShape(rng, true)
			if s.id == 1 { // member 1 is the one checking
				s.id, s.other = 2, 3
			}
			chain := p.issue(c, s, int64(i+2))
			var got bool
			if side == "acceptor" {
				got = acceptorAdmits(t, p, c, s, chain)
			} else {
				got = diallerAdmits(t, p, c, s, chain)
			}
			if want := verdict(c, s); got != want {
				t.Errorf("%s, %v, member %d at %s (san %s): admitted %v, want %v", side, c, s.id, s.host, s.otherHost, got, want)
			}
		}
	}
}

// TestClientCertificateIsNoMember replays issue 31's attack 6 on a TLS ensemble of
// three voters and an observer whose members do not verify host names: a client
// certificate of the ensemble's own CA (as paddock certs client makes it: client
// authentication only, a common name), a server certificate of it (paddock certs
// server: server authentication only, for the members' host), and a certificate made
// for both ends that names no member and no member's host each claim every member
// on every member's peer port. All are refused before a message gets through, each
// refusal is counted, and the ensemble keeps its leader and term and commits on.
func TestClientCertificateIsNoMember(t *testing.T) {
	c, ca, _ := tlsCluster(t, 3, 1, func(m *TLS) { m.HostnameVerification = false })
	lead := c.leader(10 * time.Second)
	term := c.members[lead].node.Status().Term
	c.propose(lead, "before")
	creds := map[string]tls.Certificate{
		"client": issuedCert(t, ca, certs.IssueOptions{CommonName: "member-2",
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}),
		"server": issuedCert(t, ca, certs.IssueOptions{Hosts: []string{"127.0.0.1"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}),
		"names no member": issuedCert(t, ca, certs.IssueOptions{CommonName: "outsider", Hosts: []string{"outsider.example.com"}}),
	}
	refused := func() (n uint64) {
		for _, m := range c.members {
			n += m.node.Counters().ConnsRefused
		}
		return n
	}
	before, attempts := refused(), uint64(0)
	for name, cert := range creds {
		for to := uint64(1); to <= 4; to++ {
			for from := uint64(1); from <= 4; from++ {
				if from == to {
					continue
				}
				attempts++
				cfg := &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}
				if in, err := dialPeer(t, c.addr(to), cfg); err == nil && in.hello(from, to) == nil {
					t.Errorf("the %s certificate got in on member %d as member %d", name, to, from)
				}
			}
		}
	}
	eventually(t, 5*time.Second, func() error {
		if got := refused() - before; got < attempts {
			return fmt.Errorf("%d refusals counted, want %d", got, attempts)
		}
		return nil
	})
	c.stable(lead, term, "after the attack")
}

// addr is member id's peer address.
func (c *cluster) addr(id uint64) string {
	if a, ok := c.voters[id]; ok {
		return a
	}
	return c.learners[id]
}

// TestServerLineNamesTheHost: a certificate made for ZooKeeper (no member URI, an IP
// SAN) proves a member only while that member's server line has that host: refused
// before a reconfiguration adds the member, admitted once its line is known, refused
// again when a later one moves the member to another host.
func TestServerLineNamesTheHost(t *testing.T) {
	p := newTestPKI(t)
	zk := p.tlsCert(p.issue(certCase{eku: ekuBoth, uri: nameNone, san: nameThis, cn: nameOther},
		shape{id: 5, host: "127.0.0.7"}, 77))
	tr := matrixTransport(t, p, true, map[uint64]string{2: "127.0.0.1:" + closedPort(t, "127.0.0.1")})
	claim := func() error {
		in, err := dialPeer(t, tr.Addr().String(), &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{zk}})
		if err != nil {
			return err
		}
		return in.hello(5, 1)
	}
	if claim() == nil {
		t.Error("member 5 admitted before any server line names it")
	}
	tr.SetPeers(map[uint64]string{2: "127.0.0.1:1", 5: "127.0.0.7:" + closedPort(t, "127.0.0.7")})
	if err := claim(); err != nil {
		t.Errorf("member 5 at 127.0.0.7, certificate for 127.0.0.7: %v", err)
	}
	tr.SetPeers(map[uint64]string{2: "127.0.0.1:1", 5: "127.0.0.8:" + closedPort(t, "127.0.0.8")})
	if claim() == nil {
		t.Error("member 5 moved to 127.0.0.8 is still proven by a certificate for 127.0.0.7")
	}
}
