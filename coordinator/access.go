package coordinator

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Access is how a service or CLI authenticates to the servers and which ACLs the
// nodes it creates get: the keys auth, auth_file, tls_ca, tls_cert, tls_key and roles
// of every service's configuration section, and the matching CLI flags. One Access
// serves every service, so that they all connect the same way.
type Access struct {
	// Auth is added to every connection, each "scheme:credentials"
	// ("digest:worker:password"). Prefer AuthFile, which keeps the password out of the
	// configuration.
	Auth []string `config:"auth"`
	// AuthFile names a file (mode 0600) of "scheme:credentials" lines, added as Auth is.
	AuthFile string `config:"auth_file"`
	// TLSCA, TLSCert and TLSKey are PEM files: the CA that signs the servers'
	// certificates, and the client's certificate and key (for the x509 scheme). Any of
	// them set means the servers' client port is a secure one.
	TLSCA   string `config:"tls_ca"`
	TLSCert string `config:"tls_cert"`
	TLSKey  string `config:"tls_key"`
	// Roles are the platform's identities by role, "role=scheme:id"
	// ("worker=digest:worker:<base64 sha1>", "worker=x509:CN=worker"); the nodes the
	// service creates get the ACLs docs/security.md lists for them. Empty: nodes are
	// open to all (world:anyone), as before paddock had roles.
	Roles []string `config:"roles"`
	// RolesFile names a file of "role=scheme:id" lines, added to Roles (paddock up
	// writes one: <data-dir>/credentials/roles).
	RolesFile string `config:"roles_file"`
}

// Check reports what is wrong with a, as "key = value: what is allowed", never
// showing a credential.
func (a Access) Check() []error {
	var errs []error
	for i, s := range a.Auth {
		if _, err := ParseAuth(s); err != nil {
			errs = append(errs, fmt.Errorf("auth[%d] = (hidden): want scheme:credentials, as in digest:user:password", i))
		}
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		errs = append(errs, fmt.Errorf("tls_cert = %s, tls_key = %s: give both or neither", a.TLSCert, a.TLSKey))
	}
	if _, err := ParseRoles(a.Roles); err != nil {
		errs = append(errs, err)
	}
	if (len(a.Roles) > 0 || a.RolesFile != "") && len(a.Auth) == 0 && a.AuthFile == "" && a.TLSCert == "" {
		// Its nodes would be made for the roles and not for it: it could not use them.
		errs = append(errs, errors.New("roles given without an identity: set auth, auth_file or tls_cert"))
	}
	return errs
}

// Auths returns the identities to add: Auth, then AuthFile's lines.
func (a Access) Auths() ([]Auth, error) {
	lines := a.Auth
	if a.AuthFile != "" {
		more, err := readLines(a.AuthFile)
		if err != nil {
			return nil, fmt.Errorf("auth_file = %s: %w", a.AuthFile, err)
		}
		lines = append(lines[:len(lines):len(lines)], more...)
	}
	auths := make([]Auth, 0, len(lines))
	for i, l := range lines {
		au, err := ParseAuth(l)
		if err != nil {
			return nil, fmt.Errorf("auth entry %d: want scheme:credentials, as in digest:user:password", i+1)
		}
		auths = append(auths, au)
	}
	return auths, nil
}

// Policy returns the ACL policy of rules over the roles, or nil when no roles are
// given (nodes open to all).
func (a Access) Policy(rules ...[]Rule) (*Policy, error) {
	entries := a.Roles
	if a.RolesFile != "" {
		lines, err := readLines(a.RolesFile)
		if err != nil {
			return nil, fmt.Errorf("roles_file = %s: %w", a.RolesFile, err)
		}
		entries = append(entries[:len(entries):len(entries)], lines...)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	roles, err := ParseRoles(entries)
	if err != nil {
		return nil, err
	}
	return NewPolicy(roles, rules...), nil
}

// Config returns the Config that connects to servers as a says, its nodes' ACLs by
// rules (see Policy).
func (a Access) Config(servers []string, sessionTimeout time.Duration, logger *slog.Logger, rules ...[]Rule) (Config, error) {
	c := Config{Servers: servers, SessionTimeout: sessionTimeout, Logger: logger}
	var errs []error
	auths, err := a.Auths()
	errs = append(errs, err)
	c.Auth = auths
	tf := TLSFiles{CA: a.TLSCA, Cert: a.TLSCert, Key: a.TLSKey}
	if tf.Enabled() {
		c.TLS, err = tf.Config()
		errs = append(errs, err)
	}
	c.Policy, err = a.Policy(rules...)
	errs = append(errs, err)
	return c, errors.Join(errs...)
}

// readLines returns the lines of the file at path that are neither blank nor comments
// (#), trimmed.
func readLines(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if line := string(bytes.TrimSpace(sc.Bytes())); line != "" && line[0] != '#' {
			lines = append(lines, line)
		}
	}
	return lines, sc.Err()
}
