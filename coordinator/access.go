package coordinator

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/paddock/paddock/provenance"
)

// Access is how a service or CLI authenticates to the servers, which ACLs the nodes it
// creates get, and how it signs and checks what it authors and acts on: the keys auth,
// auth_file, tls_ca, tls_cert, tls_key, roles, roles_file, signing_key and signers_file
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
	// SigningKey names the Ed25519 private key (PKCS#8 PEM, mode 0600) this service or
	// CLI signs the tasks and jobs it authors with (paddock up writes one per role that
	// submits or fires: <data-dir>/credentials/<role>.key). Empty: with TLSCert and
	// TLSKey, their key signs; else nothing is signed, and a submit is refused.
	SigningKey string `config:"signing_key"`
	// SignersFile names the file of "role=ed25519:<base64>" lines saying which key may
	// sign for which role (paddock up writes <data-dir>/credentials/signers). With
	// TLSCA, a client certificate of that CA whose subject holds a role in Roles may sign
	// for it too.
	SignersFile string `config:"signers_file"`
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

// CheckVerifier reports, for a service that acts only on what a trusted key signed (a
// worker runs tasks, a master assigns and fires them), that a has something to trust:
// signers_file, or tls_ca for certificates.
func (a Access) CheckVerifier() error {
	if a.SignersFile == "" && a.TLSCA == "" {
		return errors.New("signers_file = \"\": this service runs only tasks and jobs a trusted key signed: " +
			"set signers_file (paddock up writes <data-dir>/credentials/signers) or, with client certificates, tls_ca and roles")
	}
	return nil
}

// CheckSigner reports, for a service that authors tasks (a master signs the tasks of
// the jobs it fires), that a has a key to sign with: signing_key, or tls_cert and
// tls_key.
func (a Access) CheckSigner() error {
	if a.SigningKey == "" && a.TLSKey == "" {
		return errors.New("signing_key = \"\": this service signs the tasks it creates: set signing_key " +
			"(paddock up writes <data-dir>/credentials/<role>.key) or, with client certificates, tls_cert and tls_key")
	}
	return nil
}

// Signer returns the signer of SigningKey, else of TLSCert and TLSKey's key, else nil.
func (a Access) Signer() (*provenance.Signer, error) {
	switch {
	case a.SigningKey != "":
		s, err := provenance.LoadKey(a.SigningKey)
		if err != nil {
			return nil, fmt.Errorf("signing_key = %s: %w", a.SigningKey, err)
		}
		return s, nil
	case a.TLSCert != "" && a.TLSKey != "":
		s, err := provenance.LoadCert(a.TLSCert, a.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("tls_cert, tls_key as signing key: %w", err)
		}
		return s, nil
	}
	return nil, nil
}

// Trust returns whose signatures to believe: the keys of SignersFile, and client
// certificates chaining to roots (tls_ca's, nil for none) whose subjects hold roles.
func (a Access) Trust(roots *x509.CertPool) (*provenance.Trust, error) {
	var keys map[string][]string
	if a.SignersFile != "" {
		lines, err := readLines(a.SignersFile)
		if err == nil {
			keys, err = provenance.ParseSigners(lines, KnownRoles)
		}
		if err != nil {
			return nil, fmt.Errorf("signers_file = %s: %w", a.SignersFile, err)
		}
	}
	roles, err := a.roles()
	if err != nil {
		return nil, err
	}
	subjects := map[string][]string{}
	for role, ids := range roles {
		for _, id := range ids {
			if id.Scheme == "x509" {
				subjects[id.ID] = append(subjects[id.ID], role)
			}
		}
	}
	return provenance.NewTrust(keys, roots, subjects), nil
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
	roles, err := a.roles()
	if roles == nil || err != nil {
		return nil, err
	}
	return NewPolicy(roles, rules...), nil
}

// roles returns Roles and RolesFile's lines, parsed; nil if there are none.
func (a Access) roles() (Roles, error) {
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
	return ParseRoles(entries)
}

// Config returns the Config that connects to servers as a says, its nodes' ACLs by
// rules (see Policy), with its Signer and Trust.
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
	c.Signer, err = a.Signer()
	errs = append(errs, err)
	var roots *x509.CertPool
	if c.TLS != nil {
		roots = c.TLS.RootCAs
	}
	c.Trust, err = a.Trust(roots)
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
