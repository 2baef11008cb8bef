package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/provenance"
	"github.com/paddock/paddock/web"
)

// credentialsDirName is the directory, in the data directory, of the platform's
// credentials under paddock up: one file per role (digest:<role>:<password>, mode
// 0600), made on the first start, and roles, the ACL ids of them all; a signing key per
// role that authors tasks or jobs (<role>.key, Ed25519 in PKCS#8 PEM, mode 0600), made
// on the first start, and signers, which key signs for which role.
const credentialsDirName = "credentials"

// signingRoles are the roles that author what workers run: tasks (submitter, console,
// admin, and the master for a job's fires) and jobs. A worker holds no signing key.
var signingRoles = []string{coordinator.RoleSubmitter, coordinator.RoleConsole, coordinator.RoleMaster, coordinator.RoleAdmin}

// platform is the identities of a platform run by paddock up.
type platform struct {
	dir         string // <data-dir>/credentials
	superDigest string // the admin's digest id: the server's superDigest
}

// platformCredentials reads the platform's credentials from dataDir/credentials,
// making what is missing: a random password per role (a second start reuses them).
func platformCredentials(dataDir string) (platform, error) {
	p := platform{dir: filepath.Join(dataDir, credentialsDirName)}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return p, err
	}
	var roles []string
	for _, role := range coordinator.KnownRoles {
		a, err := roleAuth(filepath.Join(p.dir, role), role)
		if err != nil {
			return p, err
		}
		id := coordinator.IDOf(a)
		roles = append(roles, role+"="+id.String())
		if role == coordinator.RoleAdmin {
			p.superDigest = id.ID
		}
	}
	if err := os.WriteFile(p.rolesFile(), []byte(strings.Join(roles, "\n")+"\n"), 0o600); err != nil {
		return p, err
	}
	var signers []string
	for _, role := range signingRoles {
		s, err := roleKey(p.keyFile(role))
		if err != nil {
			return p, err
		}
		signers = append(signers, role+"="+s.ID())
	}
	err := os.WriteFile(p.signersFile(), []byte(strings.Join(signers, "\n")+"\n"), 0o600)
	return p, err
}

// roleKey reads the signing key at path, or makes it.
func roleKey(path string) (*provenance.Signer, error) {
	s, err := provenance.GenerateKey(path)
	if errors.Is(err, os.ErrExist) {
		s, err = provenance.LoadKey(path)
	}
	return s, err
}

// roleAuth reads the digest credentials of role from path, or makes them.
func roleAuth(path, role string) (coordinator.Auth, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		line := "digest:" + role + ":" + web.NewPassword()
		if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
			return coordinator.Auth{}, err
		}
		data = []byte(line)
	} else if err != nil {
		return coordinator.Auth{}, err
	}
	a, err := coordinator.ParseAuth(strings.TrimSpace(string(data)))
	if err != nil || a.Scheme != "digest" {
		return coordinator.Auth{}, fmt.Errorf("%s: want one line digest:%s:<password>", path, role)
	}
	return a, nil
}

func (p platform) rolesFile() string          { return filepath.Join(p.dir, "roles") }
func (p platform) signersFile() string        { return filepath.Join(p.dir, "signers") }
func (p platform) keyFile(role string) string { return filepath.Join(p.dir, role+".key") }

// adminLogin returns the admin's digest user and password, which the console sends to
// the admin port's guarded commands (admin.auth).
func (p platform) adminLogin() (user, password string, err error) {
	a, err := roleAuth(filepath.Join(p.dir, coordinator.RoleAdmin), coordinator.RoleAdmin)
	if err != nil {
		return "", "", err
	}
	user, password, _ = strings.Cut(a.Credentials, ":")
	return user, password, nil
}

// access returns how the service of role connects, signs (a role of signingRoles) and
// checks signatures.
func (p platform) access(role string) coordinator.Access {
	a := coordinator.Access{AuthFile: filepath.Join(p.dir, role), RolesFile: p.rolesFile(), SignersFile: p.signersFile()}
	if slices.Contains(signingRoles, role) {
		a.SigningKey = p.keyFile(role)
	}
	return a
}
