package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/server/quorum"
)

// validateQuorumTLS checks the member link's TLS settings that need no file: the
// stores are named, the versions and suites are known and allowed. The stores are
// read at start (quorumTLS). No error holds a password.
func (c *Config) validateQuorumTLS() error {
	var errs []error
	bad := func(key string, value any, allowed string) {
		errs = append(errs, fmt.Errorf("%s = %v: %s", key, value, allowed))
	}
	if c.QuorumTLS {
		if c.QuorumKeyStore == "" {
			bad("quorum_key_store", `""`, "quorum_tls needs this member's key store (ssl.quorum.keyStore.location)")
		}
		if c.QuorumTrustStore == "" {
			bad("quorum_trust_store", `""`, "quorum_tls needs the CAs members' certificates chain to (ssl.quorum.trustStore.location)")
		}
	}
	errs = append(errs, tlsParamErrors("quorum_tls", c.QuorumTLSProtocol, c.QuorumTLSEnabledProtocols, c.QuorumTLSCipherSuites)...)
	return errors.Join(errs...)
}

// validatePlainPeerPort refuses a member without TLS whose own server line puts its
// peer port on an address other than loopback, unless QuorumPlaintext says so: without
// TLS whoever reaches the port can say it is any member and write as any identity.
func (c *Config) validatePlainPeerPort() error {
	if c.QuorumTLS && c.QuorumPlaintext && len(c.Ensemble) > 0 {
		return errors.New("quorum_plaintext = true: contradicts quorum_tls (sslQuorum), which secures the peer port: set one of them")
	}
	if addr, beyond := c.plainPeerPortBeyondLoopback(); beyond && !c.QuorumPlaintext {
		return fmt.Errorf("quorum_plaintext = false: the peer port of server.%d, %s, is not on a loopback address, "+
			"and without quorum_tls (sslQuorum) whoever reaches it can act as any member and write as any identity: "+
			"secure the member link with TLS (docs/security.md), or, on a network only the members reach, "+
			"set quorum_plaintext: true (zoo.cfg: quorum.plaintext=true)", c.ServerID, addr)
	}
	return nil
}

// warnPlainPeerPort logs, at start, a member whose plain peer port quorum_plaintext let
// listen beyond loopback.
func (c *Config) warnPlainPeerPort(logger *slog.Logger) {
	if addr, beyond := c.plainPeerPortBeyondLoopback(); beyond && c.QuorumPlaintext {
		logger.Warn("plain peer port beyond loopback (quorum_plaintext): whoever reaches it can act as any member "+
			"and write as any identity; keep it on a network only the members reach, or use quorum_tls",
			"peer_addr", addr)
	}
}

// plainPeerPortBeyondLoopback returns this member's peer address, and true when it is a
// member without TLS whose peer address is not loopback. A host name other than
// localhost counts as beyond loopback, whatever it resolves to now. A standalone server
// has no peer port; an ensemble without this server's line is validateEnsemble's to
// refuse.
func (c *Config) plainPeerPortBeyondLoopback() (string, bool) {
	if c.QuorumTLS {
		return "", false
	}
	addr, ok := c.ownPeerAddr()
	if !ok {
		return "", false
	}
	host, _, err := net.SplitHostPort(addr)
	return addr, err != nil || !isLoopbackHost(host)
}

// ownPeerAddr returns the peer address of this server's own server line; false if the
// ensemble does not parse or has no line for ServerID.
func (c *Config) ownPeerAddr() (string, bool) {
	members, err := c.Members()
	if err != nil {
		return "", false
	}
	i := slices.IndexFunc(members, func(m Member) bool { return m.ID == c.ServerID })
	if i < 0 {
		return "", false
	}
	return members[i].PeerAddr, true
}

// tlsParamErrors checks TLS versions and suites that the keys prefix_protocol,
// prefix_enabled_protocols and prefix_cipher_suites name: known, allowed, and not a
// restriction Go would silently drop.
func tlsParamErrors(prefix, protocol string, enabled, cipherSuites []string) []error {
	var errs []error
	bad := func(key string, value any, allowed string) {
		errs = append(errs, fmt.Errorf("%s_%s = %v: %s", prefix, key, value, allowed))
	}
	if protocol != "" {
		if _, err := certs.Version(protocol); err != nil {
			bad("protocol", protocol, err.Error())
		}
	}
	if _, _, err := certs.Versions("", enabled); err != nil {
		bad("enabled_protocols", enabled, err.Error())
	} else if _, _, err := certs.Versions(protocol, enabled); err != nil {
		bad("protocol", protocol, err.Error())
	}
	suites, err := certs.CipherSuites(cipherSuites)
	switch min, _, _ := certs.Versions(protocol, enabled); {
	case err != nil:
		bad("cipher_suites", cipherSuites, err.Error())
	case len(cipherSuites) > 0 && len(suites) == 0 && min < tls.VersionTLS13:
		// Go reads an empty list as "every default suite": the restriction would be lost.
		bad("cipher_suites", cipherSuites,
			"only TLS 1.3 suites, which cannot be chosen, while TLS 1.2 is allowed: name TLS 1.2 suites too, or allow TLS 1.3 only")
	}
	return errs
}

// quorumTLS reads the member link's TLS settings: the key store, whose certificate
// must prove this member (checkMemberCert), and the trust store. Nil without QuorumTLS.
func (c *Config) quorumTLS() (*quorum.TLS, error) {
	if !c.QuorumTLS {
		return nil, nil
	}
	cert, err := certs.LoadKeyStore(c.QuorumKeyStore, c.QuorumKeyStoreType, c.QuorumKeyStorePassword)
	if err != nil {
		return nil, fmt.Errorf("quorum_key_store = %s: %w", c.QuorumKeyStore, err)
	}
	roots, err := certs.LoadTrustStore(c.QuorumTrustStore, c.QuorumTrustStoreType, c.QuorumTrustStorePassword)
	if err != nil {
		return nil, fmt.Errorf("quorum_trust_store = %s: %w", c.QuorumTrustStore, err)
	}
	minV, maxV, _ := certs.Versions(c.QuorumTLSProtocol, c.QuorumTLSEnabledProtocols)
	suites, _ := certs.CipherSuites(c.QuorumTLSCipherSuites)
	t := &quorum.TLS{Certificate: cert, Roots: roots, HostnameVerification: c.QuorumHostnameVerification,
		MinVersion: minV, MaxVersion: maxV, CipherSuites: suites}
	if err := c.checkMemberCert(t); err != nil {
		return nil, fmt.Errorf("quorum_key_store = %s: %w", c.QuorumKeyStore, err)
	}
	return t, nil
}

// checkMemberCert checks at start what every peer would refuse later: that this
// member's own certificate proves this member, by the rule the peers apply
// (quorum.TLS.Proves) to its own server line — valid now, chaining to the trust store
// for both ends of a link, naming this member, and, with hostname verification, valid
// for its host. The error names the SAN that would prove it.
func (c *Config) checkMemberCert(t *quorum.TLS) error {
	chain := []*x509.Certificate{t.Certificate.Leaf}
	for _, der := range t.Certificate.Certificate[1:] {
		if ic, err := x509.ParseCertificate(der); err == nil {
			chain = append(chain, ic)
		}
	}
	addr, ok := c.ownPeerAddr()
	if !ok {
		return fmt.Errorf("server %d (myid) has no server line", c.ServerID)
	}
	if err := t.Proves(chain, uint64(c.ServerID), addr); err != nil {
		return fmt.Errorf("this member's own certificate does not prove it is server.%d, as the other members will check: %w",
			c.ServerID, err)
	}
	return nil
}
