package quorum

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
)

// TLS is a member's mutual TLS settings for its peer link (Config.TLS).
//
// Both ends of every connection present a certificate that must chain to Roots. The
// dialling member proves its id in the hello it sends after the handshake; the
// accepting member proves its own during the handshake, to the dialler that expects
// it. A certificate proves member N if it names N (a URI SAN MemberURI(N), as `paddock
// certs member` makes them) or names no member at all; with HostnameVerification it
// must also be valid for the host of N's address (the server.N line), as ZooKeeper's
// ssl.quorum.hostnameVerification requires. Certificates made for ZooKeeper name no
// member: then a certificate of any member may claim any member's id, which is
// ZooKeeper's own trust model (every holder of a trusted certificate is a member).
type TLS struct {
	// Certificate is this member's private key and certificate chain.
	Certificate tls.Certificate
	// Roots are the CAs a peer's certificate must chain to.
	Roots *x509.CertPool
	// HostnameVerification requires a peer's certificate to be valid for the host of
	// that peer's address.
	HostnameVerification bool
	// MinVersion, MaxVersion and CipherSuites restrict the handshake (zero: Go's
	// defaults, which are TLS 1.2 to 1.3).
	MinVersion, MaxVersion uint16
	CipherSuites           []uint16
	// MemberIDs returns the member ids a certificate names (nil if it names none).
	MemberIDs func(*x509.Certificate) []uint64
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
		ClientAuth:   tls.RequireAndVerifyClientCert, // the chain; proves checks the id after the hello
		ClientCAs:    c.Roots,
		MinVersion:   c.MinVersion, MaxVersion: c.MaxVersion, CipherSuites: c.CipherSuites,
	}
	return p
}

// serverConfig is the configuration of an accepted connection.
func (p *peerTLS) serverConfig() *tls.Config { return p.server }

// clientConfig is the configuration of a connection to member id at addr: the peer's
// certificate must chain to Roots and prove id.
func (p *peerTLS) clientConfig(id uint64, addr string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.Certificate},
		RootCAs:      p.Roots,
		MinVersion:   p.MinVersion, MaxVersion: p.MaxVersion, CipherSuites: p.CipherSuites,
		// The chain is verified below, the host only when HostnameVerification says so,
		// which Go's own verification cannot leave out.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if err := p.verifyChain(cs.PeerCertificates, x509.ExtKeyUsageServerAuth); err != nil {
				return err
			}
			return p.proves(cs, id, addr)
		},
	}
}

// verifyChain verifies a peer's certificate chain against Roots for usage.
func (p *peerTLS) verifyChain(certs []*x509.Certificate, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("quorum: peer sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: p.Roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		return fmt.Errorf("quorum: peer certificate: %w", err)
	}
	return nil
}

// proves says whether the verified certificate of a connection proves member id,
// whose address is addr.
func (p *peerTLS) proves(cs tls.ConnectionState, id uint64, addr string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("quorum: peer sent no certificate")
	}
	leaf := cs.PeerCertificates[0]
	if p.HostnameVerification {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		if err := leaf.VerifyHostname(host); err != nil {
			return fmt.Errorf("quorum: certificate of member %d: %w", id, err)
		}
	}
	if p.MemberIDs == nil {
		return nil
	}
	if ids := p.MemberIDs(leaf); len(ids) > 0 && !slices.Contains(ids, id) {
		return fmt.Errorf("quorum: certificate names members %v, not member %d", ids, id)
	}
	return nil
}
