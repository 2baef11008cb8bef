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

// mayProceed reports whether a request of type op may run on this connection under
// enforce.auth: auth and sasl always may (they are how a client authenticates), any
// other request only once the connection holds an identity of an enforced scheme. As
// in ZooKeeper (AuthenticationHelper.enforceAuthentication) pings and closeSession are
// refused too: a refused request is answered SessionClosedRequireSaslAuth with zxid 0,
// and the connection closed.
func (c *conn) mayProceed(op wire.Op) bool {
	if !c.s.cfg.EnforceAuth || op == wire.OpAuth || op == wire.OpSASL {
		return true
	}
	for _, id := range c.identities() {
		if c.s.enforced(id.Scheme) {
			return true
		}
	}
	c.s.logger.Info("request refused: enforce.auth and no identity of the schemes", "op", op.String(),
		"session_id", hexID(c.sessionID.Load()), "schemes", strings.Join(c.s.cfg.EnforceAuthSchemes, ","))
	return false
}
