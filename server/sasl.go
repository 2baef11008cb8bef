package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/paddock/paddock/internal/sasl/digestmd5"
	"github.com/paddock/paddock/internal/sasl/jaas"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// SchemeSASL is the scheme of the identities SASL proves, sasl:<user>, and of the ACL
// entries that name them (ZooKeeper's SASLAuthenticationProvider).
const SchemeSASL = datatree.SchemeSASL

// DefaultJaasSection is the JAAS section ZooKeeper's server reads its SASL users from.
const DefaultJaasSection = "Server"

// saslEnabled reports whether the config names SASL users.
func (c *Config) saslEnabled() bool { return c.SASLJaasConfig != "" || len(c.SASLPasswords) > 0 }

// validateSASLPasswords checks the "name:password" entries, naming a bad one by its
// position only: an entry is a secret.
func (c *Config) validateSASLPasswords() []error {
	var errs []error
	for i, e := range c.SASLPasswords {
		if name, _, ok := strings.Cut(e, ":"); !ok || name == "" {
			errs = append(errs, fmt.Errorf("sasl_passwords entry %d (value hidden): want name:password", i+1))
		}
	}
	return errs
}

// loadSASLUsers reads the SASL users of cfg: the JAAS file's section, then
// SASLPasswords, which win for a name in both. It returns nil when SASL is off.
func loadSASLUsers(cfg *Config) (map[string]string, error) {
	if !cfg.saslEnabled() {
		return nil, nil
	}
	users := map[string]string{}
	if cfg.SASLJaasConfig != "" {
		f, err := jaas.ReadFile(cfg.SASLJaasConfig)
		if err != nil {
			return nil, fmt.Errorf("sasl_jaas_config: %w", err)
		}
		section := cfg.SASLJaasSection
		if section == "" {
			section = DefaultJaasSection
		}
		if users, err = f.Users(section); err != nil {
			return nil, fmt.Errorf("sasl_jaas_config %s: %w", cfg.SASLJaasConfig, err)
		}
	}
	for _, e := range cfg.SASLPasswords {
		name, pw, _ := strings.Cut(e, ":")
		users[name] = pw
	}
	return users, nil
}

// maxSASLLogError bounds the part of a refused token's error that is logged: the error
// may quote a directive of the client's.
const maxSASLLogError = 200

// saslStep runs one step of the connection's SASL exchange, started by its first sasl
// request, and turns r into its answer: r.rec becomes the server's token. Without SASL
// users the answer is an empty token and nothing more, as ZooKeeper's when it has no
// Server section. A failed step fails r with AuthFailed (SessionClosedRequireSaslAuth
// when enforce.auth requires sasl) and closes the connection after the answer, as
// ZooKeeper does unless allowSaslFailedClients.
func (c *conn) saslStep(r *request) {
	req := r.rec.(*wire.SASLRequest)
	users := c.s.saslUsers
	if users == nil {
		r.rec = &wire.SASLRequest{}
		return
	}
	if c.sasl == nil {
		c.sasl = digestmd5.NewServer(digestmd5.Config{Password: func(u string) (string, bool) {
			pw, ok := users[u]
			return pw, ok
		}})
	}
	out, err := c.sasl.Next(req.Token)
	if err == nil && c.sasl.Done() {
		err = c.saslAuthenticated(c.sasl.User())
	}
	if err != nil {
		msg := err.Error()
		if len(msg) > maxSASLLogError {
			msg = msg[:maxSASLLogError] + "…"
		}
		c.s.logger.Info("sasl auth failed", "remote", c.nc.RemoteAddr().String(),
			"session_id", hexID(c.sessionID.Load()), "err", msg)
		r.err, r.close, r.rec = wire.ErrAuthFailed, true, &wire.SASLRequest{}
		if c.s.cfg.EnforceAuth && c.s.enforced(SchemeSASL) {
			r.err = wire.ErrSessionClosedRequireSASL
		}
		return
	}
	r.rec = &wire.SASLRequest{Token: out}
}

// saslAuthenticated adds the identities of a completed exchange: sasl:<user>, and super
// if the user is SASLSuperUser.
func (c *conn) saslAuthenticated(user string) error {
	ids := []wire.Identity{{Scheme: SchemeSASL, ID: user}}
	if su := c.s.cfg.SASLSuperUser; su != "" && user == su {
		ids = append(ids, wire.Identity{Scheme: datatree.SchemeSuper})
	}
	if !c.addIdentity(ids...) {
		c.tooManyIdentities()
		return errors.New("too many identities")
	}
	c.s.logger.Info("sasl authenticated", "user", user, "session_id", hexID(c.sessionID.Load()))
	return nil
}
