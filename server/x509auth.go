package server

import (
	"crypto/tls"
	"fmt"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// addCertIdentity gives a connection whose client certificate the handshake verified
// the identity x509:<subject> (ZooKeeper's X509AuthenticationProvider), and super too
// when the subject is X509SuperUser: as ZooKeeper adds it, before x509 and with the
// subject as its id (super:<subject>, where a digest or SASL super user gets super with
// an empty id). A connection without one keeps its ip identity.
func (c *conn) addCertIdentity(st tls.ConnectionState) error {
	if len(st.VerifiedChains) == 0 || len(st.PeerCertificates) == 0 {
		return nil // no certificate asked for (client_tls_auth none), or none given (want)
	}
	dn, err := SubjectDN(st.PeerCertificates[0].RawSubject)
	if err != nil {
		return fmt.Errorf("client certificate subject: %w", err)
	}
	ids := []wire.Identity{{Scheme: datatree.SchemeX509, ID: dn}}
	if su := c.s.cfg.X509SuperUser; su != "" && dn == su {
		ids = []wire.Identity{{Scheme: datatree.SchemeSuper, ID: dn}, ids[0]}
	}
	if !c.addIdentity(ids...) {
		return fmt.Errorf("client certificate subject longer than %d bytes", maxIdentityLength)
	}
	c.x509 = true
	c.s.logger.Debug("client certificate verified", "remote", c.nc.RemoteAddr().String(), "x509", dn)
	return nil
}

// authenticateX509 answers addauth x509: the identity comes from the client certificate
// at the handshake, so the auth succeeds, adding nothing, on a connection that gave a
// verified one, and fails, closing the connection, on any other, as in ZooKeeper.
func (c *conn) authenticateX509() bool {
	if !c.x509 {
		c.s.logger.Info("auth failed: x509 without a verified client certificate",
			"session_id", hexID(c.sessionID.Load()), "remote", c.nc.RemoteAddr().String())
	}
	return c.x509
}

// SubjectDN prints the DER distinguished name raw as ZooKeeper's x509 identity
// (datatree.SubjectDN, where the client-side checks of signatures find it too).
func SubjectDN(raw []byte) (string, error) { return datatree.SubjectDN(raw) }

// validDN reports whether s reads as an RFC 2253 name: attribute=value pairs separated
// by unescaped commas (or semicolons) and pluses, each type a keyword or a dotted OID.
// It is what an x509 ACL and X509SuperUser must be; like Java's X500Principal, which
// ZooKeeper checks them with, it accepts the empty name.
func validDN(s string) bool {
	return datatree.ValidX509ID(s)
}
