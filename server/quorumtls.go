package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"time"

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

// quorumTLS reads the member link's TLS settings: the key store, which must hold a
// certificate that is valid now, chains to the trust store and, if it names member
// ids, names this member's; and the trust store. Nil without QuorumTLS.
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
	if err := c.checkMemberCert(cert, roots); err != nil {
		return nil, fmt.Errorf("quorum_key_store = %s: %w", c.QuorumKeyStore, err)
	}
	minV, maxV, _ := certs.Versions(c.QuorumTLSProtocol, c.QuorumTLSEnabledProtocols)
	suites, _ := certs.CipherSuites(c.QuorumTLSCipherSuites)
	return &quorum.TLS{
		Certificate: cert, Roots: roots, HostnameVerification: c.QuorumHostnameVerification,
		MinVersion: minV, MaxVersion: maxV, CipherSuites: suites, MemberIDs: certs.MemberIDs,
	}, nil
}

// checkMemberCert checks at start what every peer would refuse later: a certificate
// out of its validity, from another CA than the trust store's, or naming other members.
func (c *Config) checkMemberCert(cert tls.Certificate, roots *x509.CertPool) error {
	leaf := cert.Leaf
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if ic, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(ic)
		}
	}
	// A member is a TLS server to the members that dial it and a client to those it
	// dials: its certificate must do for both.
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: time.Now(),
			KeyUsages: []x509.ExtKeyUsage{usage}})
		if err != nil {
			return fmt.Errorf("this member's certificate does not verify against quorum_trust_store: %w", err)
		}
	}
	if ids := certs.MemberIDs(leaf); len(ids) > 0 && !slices.Contains(ids, uint64(c.ServerID)) {
		return fmt.Errorf("the certificate names members %v, and this server is %d (myid)", ids, c.ServerID)
	}
	return nil
}
