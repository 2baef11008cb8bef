package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// enforceSchemes lists the schemes enforce.auth.schemes may name: those a connection
// can hold an identity of. ZooKeeper refuses at start a scheme with no provider.
var enforceSchemes = []string{datatree.SchemeDigest, datatree.SchemeIP, SchemeSASL, datatree.SchemeX509}

// validateAuth checks the SASL and enforce.auth settings.
func (c *Config) validateAuth() []error {
	errs := c.validateSASLPasswords()
	if c.SASLJaasSection != "" && c.SASLJaasConfig == "" {
		errs = append(errs, fmt.Errorf("sasl_jaas_section = %s: names a section of sasl_jaas_config, which is not set", c.SASLJaasSection))
	}
	if c.EnforceAuthKnownDigestsOnly {
		switch {
		case !c.EnforceAuth || !slices.Contains(c.EnforceAuthSchemes, datatree.SchemeDigest):
			errs = append(errs, fmt.Errorf("enforce_auth_known_digests_only = true: needs enforce_auth with digest among enforce_auth_schemes"))
		case c.SuperDigest == "" && c.KnownDigestsFile == "":
			errs = append(errs, fmt.Errorf("enforce_auth_known_digests_only = true: no digest is known: set super_digest or known_digests_file"))
		}
	}
	if !c.EnforceAuth {
		return errs
	}
	if len(c.EnforceAuthSchemes) == 0 {
		errs = append(errs, fmt.Errorf("enforce_auth_schemes = []: must name at least one scheme when enforce_auth is on, as in ZooKeeper"))
	}
	for _, s := range c.EnforceAuthSchemes {
		switch {
		case !slices.Contains(enforceSchemes, s):
			errs = append(errs, fmt.Errorf("enforce_auth_schemes = %s: want schemes among %s", strings.Join(c.EnforceAuthSchemes, ","),
				strings.Join(enforceSchemes, ", ")))
		case s == datatree.SchemeX509 && c.SecureClientAddr == "":
			errs = append(errs, fmt.Errorf("enforce_auth_schemes = %s: x509 needs a secure client port (secure_client_addr, secureClientPort)",
				strings.Join(c.EnforceAuthSchemes, ",")))
		case s == SchemeSASL && !c.saslEnabled():
			errs = append(errs, fmt.Errorf("enforce_auth_schemes = %s: sasl needs SASL users (sasl_jaas_config or sasl_passwords)",
				strings.Join(c.EnforceAuthSchemes, ",")))
		}
	}
	return errs
}

// enforced reports whether scheme is one of enforce.auth.schemes.
func (s *Server) enforced(scheme string) bool {
	return slices.Contains(s.cfg.EnforceAuthSchemes, scheme)
}

// satisfiesEnforce reports whether identity id satisfies enforce.auth: its scheme is
// enforced and, for a digest under enforce_auth_known_digests_only, the server knows it
// (knowndigests.go).
func (s *Server) satisfiesEnforce(id wire.Identity) bool {
	if !s.enforced(id.Scheme) {
		return false
	}
	return id.Scheme != datatree.SchemeDigest || !s.cfg.EnforceAuthKnownDigestsOnly || s.known.has(id.ID)
}

// warnEnforce logs, at start, the enforce.auth schemes that prove nothing: digest
// without enforce_auth_known_digests_only (any client can add any digest identity), and
// ip (every connection holds one).
func (s *Server) warnEnforce() {
	if !s.cfg.EnforceAuth {
		return
	}
	if s.enforced(datatree.SchemeDigest) && !s.cfg.EnforceAuthKnownDigestsOnly {
		s.logger.Warn("enforce.auth accepts any digest: a client may add a digest identity with any user and "+
			"password, so digest among enforce_auth_schemes proves nothing; set enforce_auth_known_digests_only "+
			"(docs/security.md)", "enforce_auth_schemes", strings.Join(s.cfg.EnforceAuthSchemes, ","))
	}
	if s.enforced(datatree.SchemeIP) {
		s.logger.Warn("enforce.auth accepts ip: every connection holds an ip identity, so ip among "+
			"enforce_auth_schemes lets every client in (docs/security.md)", "enforce_auth_schemes",
			strings.Join(s.cfg.EnforceAuthSchemes, ","))
	}
}

// mayProceed reports whether a request of type op may run on this connection under
// enforce.auth: auth and sasl always may (they are how a client authenticates), any
// other request only once the connection holds an identity of an enforced scheme (a
// known one, for digest under enforce_auth_known_digests_only: satisfiesEnforce). As
// in ZooKeeper (AuthenticationHelper.enforceAuthentication) pings and closeSession are
// refused too: a refused request is answered SessionClosedRequireSaslAuth with zxid 0,
// and the connection closed.
func (c *conn) mayProceed(op wire.Op) bool {
	if !c.s.cfg.EnforceAuth || op == wire.OpAuth || op == wire.OpSASL {
		return true
	}
	for _, id := range c.identities() {
		if c.s.satisfiesEnforce(id) {
			return true
		}
	}
	c.s.logger.Info("request refused: enforce.auth and no identity of the schemes", "op", op.String(),
		"session_id", hexID(c.sessionID.Load()), "schemes", strings.Join(c.s.cfg.EnforceAuthSchemes, ","))
	return false
}
