package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/paddock/paddock/internal/certs"
)

// The values of Config.ClientTLSAuth (ssl.clientAuth), which ZooKeeper reads in any case.
const (
	ClientAuthNeed = "need"
	ClientAuthWant = "want"
	ClientAuthNone = "none"
)

// clientAuth returns ClientTLSAuth in lower case, need when it is empty.
func (c *Config) clientAuth() string {
	if c.ClientTLSAuth == "" {
		return ClientAuthNeed
	}
	return strings.ToLower(c.ClientTLSAuth)
}

// validateClientTLS checks the secure client port's settings that need no file: the
// address, the stores named, the client auth mode, versions and suites. The stores are
// read at start (clientTLS). No error holds a password.
func (c *Config) validateClientTLS() error {
	var errs []error
	bad := func(key string, value any, allowed string) {
		errs = append(errs, fmt.Errorf("%s = %v: %s", key, value, allowed))
	}
	auth := c.clientAuth()
	switch auth {
	case ClientAuthNeed, ClientAuthWant, ClientAuthNone:
	default:
		bad("client_tls_auth", c.ClientTLSAuth, "want need, want or none (ssl.clientAuth)")
	}
	if c.SecureClientAddr != "" {
		if _, _, err := net.SplitHostPort(c.SecureClientAddr); err != nil {
			bad("secure_client_addr", c.SecureClientAddr, "want host:port, or empty for no TLS port")
		}
		if c.ClientTLSKeyStore == "" {
			bad("client_tls_key_store", `""`, "secure_client_addr needs the server's key store (ssl.keyStore.location)")
		}
		if c.ClientTLSTrustStore == "" && auth != ClientAuthNone {
			bad("client_tls_trust_store", `""`, "client_tls_auth "+auth+
				" needs the CAs clients' certificates chain to (ssl.trustStore.location), or client_tls_auth none")
		}
	}
	if c.X509SuperUser != "" && !validDN(c.X509SuperUser) {
		bad("x509_super_user", c.X509SuperUser, "want a subject as the x509 identity prints it (RFC 2253), e.g. CN=admin,O=example")
	}
	errs = append(errs, tlsParamErrors("client_tls", c.ClientTLSProtocol, c.ClientTLSEnabledProtocols, c.ClientTLSCipherSuites)...)
	return errors.Join(errs...)
}

// clientTLS reads the secure client port's key store, whose certificate must be valid
// now, and trust store, and returns the TLS configuration of the port. Nil without
// SecureClientAddr.
func (c *Config) clientTLS() (*tls.Config, error) {
	if c.SecureClientAddr == "" {
		return nil, nil
	}
	cert, err := certs.LoadKeyStore(c.ClientTLSKeyStore, c.ClientTLSKeyStoreType, c.ClientTLSKeyStorePassword)
	if err != nil {
		return nil, fmt.Errorf("client_tls_key_store = %s: %w", c.ClientTLSKeyStore, err)
	}
	if now := time.Now(); now.Before(cert.Leaf.NotBefore) || now.After(cert.Leaf.NotAfter) {
		return nil, fmt.Errorf("client_tls_key_store = %s: the certificate (subject %s) is valid from %s to %s, not now",
			c.ClientTLSKeyStore, cert.Leaf.Subject, cert.Leaf.NotBefore.Format(time.RFC3339), cert.Leaf.NotAfter.Format(time.RFC3339))
	}
	minV, maxV, _ := certs.Versions(c.ClientTLSProtocol, c.ClientTLSEnabledProtocols)
	suites, _ := certs.CipherSuites(c.ClientTLSCipherSuites)
	conf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   minV, MaxVersion: maxV, CipherSuites: suites,
	}
	if c.ClientTLSTrustStore != "" {
		if conf.ClientCAs, err = certs.LoadTrustStore(c.ClientTLSTrustStore, c.ClientTLSTrustStoreType, c.ClientTLSTrustStorePassword); err != nil {
			return nil, fmt.Errorf("client_tls_trust_store = %s: %w", c.ClientTLSTrustStore, err)
		}
	}
	switch c.clientAuth() {
	case ClientAuthNeed:
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	case ClientAuthWant:
		conf.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		conf.ClientAuth = tls.NoClientCert
	}
	return conf, nil
}

// listen binds the client listeners: the plain port and the TLS one, whichever are
// configured.
func (s *Server) listen() error {
	var err error
	if s.cfg.ClientAddr != "" {
		if s.ln, err = listenTCP("client_addr", s.cfg.ClientAddr); err != nil {
			return err
		}
		if ip := s.ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
			s.logger.Warn("plain client port on a non-loopback address: other hosts can connect "+
				"unencrypted and unauthenticated; use secure_client_addr (secureClientPort) or a loopback address",
				"client_addr", s.ln.Addr().String())
		}
	}
	if s.cfg.SecureClientAddr == "" {
		return nil
	}
	if s.tlsConf, err = s.cfg.clientTLS(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if s.secureLn, err = listenTCP("secure_client_addr", s.cfg.SecureClientAddr); err != nil {
		return err
	}
	return nil
}

// SecureAddr returns the TLS client listener's address, or nil without one; valid
// after Start.
func (s *Server) SecureAddr() net.Addr {
	if s.secureLn == nil {
		return nil
	}
	return s.secureLn.Addr()
}

// listenerPort returns ln's port, or -1 for no listener, as ZooKeeper's conf shows a
// port it does not listen on.
func listenerPort(ln net.Listener) int {
	if ln == nil {
		return -1
	}
	return ln.Addr().(*net.TCPAddr).Port
}

// tlsHandshake does the TLS handshake of a connection to the secure port, within what
// is left of HandshakeTimeout: the handshake and the ConnectRequest share it, so a
// client that stalls in either is closed. A verified client certificate gives the
// connection its x509 identity. It reports false, counting the failure, if the
// connection must close; a plain connection passes.
func (c *conn) tlsHandshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	tc.SetDeadline(c.est.Add(c.s.cfg.HandshakeTimeout))
	err := tc.HandshakeContext(c.ctx)
	if err == nil {
		tc.SetWriteDeadline(time.Time{})
		err = c.addCertIdentity(tc.ConnectionState())
	}
	if err != nil {
		if c.ctx.Err() != nil {
			return false // closed by the server (it is stopping): no failure of the client's
		}
		// Anyone can open connections: Debug only, as for other failed handshakes.
		c.s.limits.tlsHandshakeFailed.Add(1)
		c.s.logger.Debug("closing connection: tls handshake failed", "remote", c.nc.RemoteAddr().String(), "err", err)
		c.handshakeFailed(err)
		return false
	}
	return true
}
