package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/provenance"
)

// signingRoles are the roles paddock up gives a signing key (cmd/paddock's
// signingRoles); Keys also makes a worker's key, listed under worker, which no task may
// be signed with.
var signingRoles = []string{"submitter", "console", "master", "admin", "worker"}

// Keys is a signing key per role and a signers file listing them all, in a temporary
// directory: what paddock up writes in <data-dir>/credentials, for tests that submit,
// fire or run tasks. Key files are mode 0600.
type Keys struct {
	Dir         string
	SignersFile string
	signers     map[string]*provenance.Signer
	trust       *provenance.Trust
}

// NewKeys makes the keys and the signers file.
func NewKeys(tb testing.TB) *Keys {
	tb.Helper()
	k := &Keys{Dir: tb.TempDir(), signers: map[string]*provenance.Signer{}}
	var lines []string
	for _, role := range signingRoles {
		s, err := provenance.GenerateKey(k.KeyFile(role))
		if err != nil {
			tb.Fatal(err)
		}
		k.signers[role] = s
		lines = append(lines, role+"="+s.ID())
	}
	k.SignersFile = filepath.Join(k.Dir, "signers")
	if err := os.WriteFile(k.SignersFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	keys, err := provenance.ParseSigners(lines, signingRoles)
	if err != nil {
		tb.Fatal(err)
	}
	k.trust = provenance.NewTrust(keys, nil, nil)
	return k
}

// KeyFile is the file of role's signing key.
func (k *Keys) KeyFile(role string) string { return filepath.Join(k.Dir, role+".key") }

// Signer is role's signer.
func (k *Keys) Signer(role string) *provenance.Signer { return k.signers[role] }

// Trust trusts every key for the role it was made for.
func (k *Keys) Trust() *provenance.Trust { return k.trust }

// SignNode writes, as the child sig of the node at p (open to all), the signature by s
// of data, p's data, under domain, over p's czxid: what an author writes after its
// create. A signature already there is replaced (an update's).
func SignNode(tb testing.TB, conn *zk.Conn, p, domain string, data []byte, s *provenance.Signer) {
	tb.Helper()
	_, st, err := conn.Get(p)
	if err != nil {
		tb.Fatalf("sign %s: %v", p, err)
	}
	rec, err := s.Sign(domain, st.Czxid, data)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = conn.Create(p+"/sig", rec, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = conn.Set(p+"/sig", rec, -1)
	}
	if err != nil {
		tb.Fatalf("sign %s: %v", p, err)
	}
}
