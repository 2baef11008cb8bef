package quorum

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/paddock/paddock/internal/certs"
)

// TLS is a member's mutual TLS settings for its peer link (Config.TLS).
//
// Both ends of every connection present a certificate. The dialling member names the
// member it is in the hello it sends after the handshake; the accepting member is the
// member the dialler dialled. Either way a connection proves member N exactly when the
// certificate its peer presented (Proves):
//
//  1. chains to Roots, with the intermediates the peer sent, is valid now, and is valid
//     for TLS server and TLS client authentication both — a member accepts connections
//     and makes them, so a certificate made for one end only (paddock certs client,
//     paddock certs server) proves no member; and
//  2. names N: its URI SANs include urn:paddock:member:N (certs.MemberURI, which paddock
//     certs member writes); or, in a certificate without member URIs (one made for
//     ZooKeeper), a DNS SAN equal to the host of N's server line (ignoring case; a
//     wildcard names no member) or an IP SAN equal to it; or, in a certificate without
//     any SAN, a common name equal to that host, the fallback ZooKeeper's host name
//     verifier takes; and
//  3. with HostnameVerification only, is valid for that host as a TLS client checks a
//     server's certificate: a DNS SAN (a leftmost * matching one label), an IP SAN, or,
//     without any SAN, the common name, as ZooKeeper's ssl.quorum.hostnameVerification.
//
// HostnameVerification adds 3 and takes nothing from 1 and 2: no setting lets a
// certificate prove a member it does not name, or a client's certificate prove a
// member. "The host of N's server line" is the address the transport has for N now:
// the dialler checks the acceptor's certificate during the handshake against the
// address it dialled; the acceptor checks the dialler's after its hello against the
// line of the member the hello claims, which for a member added by a reconfiguration
// is the line that added it (Transport.SetPeers). Observers are members here like any
// other.
type TLS struct {
	// Certificate is this member's private key and certificate chain.
	Certificate tls.Certificate
	// Roots are the CAs a peer's certificate must chain to.
	Roots *x509.CertPool
	// HostnameVerification requires a peer's certificate to be valid for the host of
	// that peer's address, besides naming the peer (3 above).
	HostnameVerification bool
	// MinVersion, MaxVersion and CipherSuites restrict the handshake (zero: Go's
	// defaults, which are TLS 1.2 to 1.3).
	MinVersion, MaxVersion uint16
	CipherSuites           []uint16
}

// memberUsages are the ends of a TLS link a member's certificate must serve: it
// accepts connections (server) and makes them (client).
var memberUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

// Proves says whether chain, the certificates a peer presented (its own first, then
// intermediates), proves member id, whose server line gives the peer address addr
// (host:port): nil if it does, else an error saying what is missing, naming the SAN
// that would prove id. The rules are TLS's doc comment. Safe for concurrent use.
func (c *TLS) Proves(chain []*x509.Certificate, id uint64, addr string) error {
	if len(chain) == 0 {
		return errors.New("quorum: the peer presented no certificate")
	}
	leaf := chain[0]
	inter := x509.NewCertPool()
	for _, ic := range chain[1:] {
		inter.AddCert(ic)
	}
	for _, usage := range memberUsages {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: c.Roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
		if err != nil {
			return fmt.Errorf("quorum: the certificate claiming member %d does not verify against the quorum trust store "+
				"for %s (a member's certificate must serve both ends of a link; a client's or a server's is no member's): %w",
				id, usageName(usage), err)
		}
	}
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if err := names(leaf, id, host); err != nil {
		return fmt.Errorf("quorum: the certificate claiming member %d %w", id, err)
	}
	if c.HostnameVerification {
		if err := validForHost(leaf, host); err != nil {
			return fmt.Errorf("quorum: the certificate of member %d is not valid for %s, the host of server.%d "+
				"(ssl.quorum.hostnameVerification): %w", id, host, id, err)
		}
	}
	return nil
}

func usageName(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "TLS server authentication"
	}
	return "TLS client authentication"
}

// names checks rule 2 of TLS: that leaf names member id, whose server line's host is
// host. Its error completes "the certificate claiming member N ...".
func names(leaf *x509.Certificate, id uint64, host string) error {
	want := certs.MemberURI(id).String()
	if ids := certs.MemberIDs(leaf); len(ids) > 0 {
		if slices.Contains(ids, id) {
			return nil
		}
		return fmt.Errorf("names members %v only: want the URI SAN %s", ids, want)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("names no member, and the host of server.%d, %q, names no host: want the URI SAN %s", id, host, want)
	}
	if namesHost(leaf, host) {
		return nil
	}
	return fmt.Errorf("names neither the member nor the host of its server line: want the URI SAN %s, "+
		"or, in a certificate without member URIs, the DNS or IP SAN %s (the host of server.%d)", want, host, id)
}

// namesHost reports whether a certificate without member URIs names host: a DNS SAN
// equal to it but for case (never a wildcard), an IP SAN equal to it, or, without any
// SAN, a common name equal to it.
func namesHost(leaf *x509.Certificate, host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return slices.ContainsFunc(leaf.IPAddresses, ip.Equal) || !hasSAN(leaf) && ip.Equal(net.ParseIP(leaf.Subject.CommonName))
	}
	same := func(name string) bool {
		return !strings.Contains(name, "*") && strings.EqualFold(name, host)
	}
	return slices.ContainsFunc(leaf.DNSNames, same) || !hasSAN(leaf) && same(leaf.Subject.CommonName)
}

// validForHost checks rule 3 of TLS: leaf is valid for host as Go's TLS client checks a
// server's certificate, or, in a certificate without any SAN, by its common name, the
// fallback ZooKeeper's ZKHostnameVerifier takes and Go's does not.
func validForHost(leaf *x509.Certificate, host string) error {
	if hasSAN(leaf) {
		return leaf.VerifyHostname(host)
	}
	byCN := *leaf
	if ip := net.ParseIP(leaf.Subject.CommonName); ip != nil {
		byCN.IPAddresses = []net.IP{ip}
	} else {
		byCN.DNSNames = []string{leaf.Subject.CommonName}
	}
	return byCN.VerifyHostname(host)
}

// oidSubjectAltName is the subject alternative name extension (RFC 5280, 4.2.1.6).
var oidSubjectAltName = asn1.ObjectIdentifier{2, 5, 29, 17}

// hasSAN reports whether leaf has a subject alternative name extension, of whatever
// kinds of name: with one, ZooKeeper never falls back on the common name.
func hasSAN(leaf *x509.Certificate) bool {
	return slices.ContainsFunc(leaf.Extensions, func(e pkix.Extension) bool { return e.Id.Equal(oidSubjectAltName) })
}

// peerTLS builds the tls.Configs of a transport's connections.
type peerTLS struct {
	TLS
	server *tls.Config
}

func newPeerTLS(c *TLS) *peerTLS {
	p := &peerTLS{TLS: *c}
	p.server = &tls.Config{
		Certificates: []tls.Certificate{c.Certificate},
		// The chain, for client authentication; Proves checks the rest after the hello,
		// which says which member the peer claims to be.
		ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs:  c.Roots,
		MinVersion: c.MinVersion, MaxVersion: c.MaxVersion, CipherSuites: c.CipherSuites,
	}
	return p
}

// serverConfig is the configuration of an accepted connection.
func (p *peerTLS) serverConfig() *tls.Config { return p.server }

// clientConfig is the configuration of a connection to member id at addr: the peer's
// certificate must prove id (Proves) for the handshake to complete.
func (p *peerTLS) clientConfig(id uint64, addr string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.Certificate},
		RootCAs:      p.Roots,
		MinVersion:   p.MinVersion, MaxVersion: p.MaxVersion, CipherSuites: p.CipherSuites,
		// Go's own verification would check the host whatever HostnameVerification says,
		// and nothing of the member: Proves does both.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return p.Proves(cs.PeerCertificates, id, addr)
		},
	}
}
