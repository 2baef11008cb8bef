package coordinator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestDigestIDMatchesGoZookeeper(t *testing.T) {
	want := zk.DigestACL(zk.PermAll, "worker", "s3cret")[0].ID
	if got := DigestID("worker", "s3cret"); got != want {
		t.Fatalf("DigestID = %q, want %q (go-zookeeper's)", got, want)
	}
}

func TestParseRoles(t *testing.T) {
	roles, err := ParseRoles([]string{"worker=digest:worker:abc=", "worker=x509:CN=worker-2,O=paddock", "console=digest:c:x="})
	if err != nil {
		t.Fatal(err)
	}
	if got := roles[RoleWorker]; len(got) != 2 || got[1] != (ID{"x509", "CN=worker-2,O=paddock"}) {
		t.Fatalf("worker ids: %v", got)
	}
	for _, bad := range []string{"wizard=digest:a:b", "worker", "worker=digest", "worker=world:anyone", "worker=:x"} {
		if _, err := ParseRoles([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseRoles(%q): %v, want an error naming it", bad, err)
		}
	}
}

func TestPolicyACL(t *testing.T) {
	roles := Roles{
		RoleAdmin:     {{"digest", "admin:A="}},
		RoleWorker:    {{"digest", "worker:W="}},
		RoleSubmitter: {{"digest", "sub:S="}, {"x509", "CN=ci"}},
		RoleConsole:   {{"digest", "worker:W="}}, // one identity, two roles
	}
	p := NewPolicy(roles, []Rule{
		{Pattern: "/tasks", Grants: []Grant{{RoleSubmitter, zk.PermCreate | zk.PermRead}, {RoleWorker, zk.PermRead}}},
		{Pattern: "/tasks/*/*", Grants: []Grant{{RoleWorker, zk.PermRead}}},
		{Pattern: "/logs/**", Grants: []Grant{{RoleLogCollector, zk.PermAll}}},
	})
	tests := []struct {
		path string
		want []zk.ACL
	}{
		{"/tasks", []zk.ACL{acl(zk.PermAll, "digest", "admin:A="), acl(zk.PermCreate|zk.PermRead, "digest", "sub:S="),
			acl(zk.PermCreate|zk.PermRead, "x509", "CN=ci"), acl(zk.PermRead, "digest", "worker:W=")}},
		{"/tasks/t1/status", []zk.ACL{acl(zk.PermAll, "digest", "admin:A="), acl(zk.PermRead, "digest", "worker:W=")}},
		// No rule: every role's identities, all permissions but ADMIN; worker:W= once.
		{"/tasks/t1", []zk.ACL{acl(zk.PermAll, "digest", "admin:A="), acl(cdrw, "digest", "worker:W="),
			acl(cdrw, "digest", "sub:S="), acl(cdrw, "x509", "CN=ci")}},
		// A rule whose roles have no identities: the admin alone.
		{"/logs/sources/a", []zk.ACL{acl(zk.PermAll, "digest", "admin:A=")}},
	}
	for _, tt := range tests {
		if got := p.ACL(tt.path); !slices.Equal(got, tt.want) {
			t.Errorf("ACL(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
	// Without identities at all: the creator's own (ZooKeeper refuses an empty ACL).
	if got := NewPolicy(Roles{}).ACL("/x"); !slices.Equal(got, zk.AuthACL(zk.PermAll)) {
		t.Errorf("empty roles: %v", got)
	}
}

func TestRuleMatches(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/tasks", "/tasks", true},
		{"/tasks", "/tasks/a", false},
		{"/tasks/*", "/tasks/a", true},
		{"/tasks/*", "/tasks", false},
		{"/tasks/*/*", "/tasks/a/b", true},
		{"/a/**", "/a", false},
		{"/a/**", "/a/b/c", true},
		{"/a/*/**", "/a/b", false},
		{"/", "/", true},
	}
	for _, tt := range tests {
		if got := (Rule{Pattern: tt.pattern}).matches(tt.path); got != tt.want {
			t.Errorf("%s matches %s: %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestAccessFiles(t *testing.T) {
	dir := t.TempDir()
	auth := filepath.Join(dir, "worker")
	roles := filepath.Join(dir, "roles")
	os.WriteFile(auth, []byte("# the worker\ndigest:worker:pw\n"), 0o600)
	os.WriteFile(roles, []byte("worker="+"digest:"+DigestID("worker", "pw")+"\n"), 0o600)
	a := Access{AuthFile: auth, RolesFile: roles}
	c, err := a.Config([]string{"127.0.0.1:1"}, 4e9, nil, []Rule{{Pattern: "/w", Grants: []Grant{{RoleWorker, zk.PermRead}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Auth) != 1 || c.Auth[0] != (Auth{"digest", "worker:pw"}) {
		t.Errorf("auth: %v", c.Auth)
	}
	if got := c.Policy.ACL("/w"); len(got) != 1 || got[0].ID != DigestID("worker", "pw") || got[0].Perms != zk.PermRead {
		t.Errorf("policy ACL(/w): %v", got)
	}
	if c.TLS != nil {
		t.Error("TLS on without tls files")
	}
	// Errors never show the credentials.
	errs := Access{Auth: []string{"s3cretpassword"}, TLSCert: "c.pem"}.Check()
	if len(errs) != 2 || strings.Contains(errs[0].Error(), "s3cret") {
		t.Errorf("Check: %v", errs)
	}
	if errs := (Access{RolesFile: roles}).Check(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "without an identity") {
		t.Errorf("roles without an identity: %v", errs)
	}
	if _, err := (Access{AuthFile: filepath.Join(dir, "missing")}).Auths(); err == nil || !strings.Contains(err.Error(), "auth_file") {
		t.Errorf("missing auth file: %v", err)
	}
}

func TestOpenToWorld(t *testing.T) {
	if !OpenToWorld(zk.WorldACL(zk.PermAll)) || OpenToWorld(zk.WorldACL(zk.PermRead)) || OpenToWorld(zk.DigestACL(zk.PermAll, "a", "b")) {
		t.Fatal("OpenToWorld")
	}
}

const cdrw = zk.PermAll &^ zk.PermAdmin

func acl(perms int32, scheme, id string) zk.ACL { return zk.ACL{Perms: perms, Scheme: scheme, ID: id} }

// TestPolicyWorld: a rule's World grant is the world:anyone entry of the ACL, and a node
// is open beyond its policy when the world may do more than read and what the rule
// gives it there.
func TestPolicyWorld(t *testing.T) {
	p := NewPolicy(Roles{RoleAdmin: {{"digest", "admin:A="}}}, []Rule{
		{Pattern: "/", World: zk.PermRead | zk.PermCreate},
		{Pattern: "/svc"},
	})
	want := []zk.ACL{acl(zk.PermAll, "digest", "admin:A="), acl(zk.PermRead|zk.PermCreate, "world", "anyone")}
	if got := p.ACL("/"); !slices.Equal(got, want) {
		t.Errorf("ACL(/) = %v, want %v", got, want)
	}
	for _, tt := range []struct {
		path string
		acl  []zk.ACL
		want bool
	}{
		{"/", zk.WorldACL(zk.PermAll), true},
		{"/", want, false},
		{"/", zk.WorldACL(zk.PermRead), false},
		{"/svc", zk.WorldACL(zk.PermAll), true},
		{"/svc", zk.WorldACL(zk.PermCreate), true},
		{"/svc", zk.WorldACL(zk.PermRead), false},
		{"/svc", zk.DigestACL(zk.PermAll, "a", "b"), false},
	} {
		if got := p.openBeyond(tt.path, tt.acl); got != tt.want {
			t.Errorf("openBeyond(%s, %v) = %v, want %v", tt.path, tt.acl, got, tt.want)
		}
	}
}

// TestMigrateRootACL: MigrateACL gives the root znode, open to all, the policy's ACL —
// the world reads and creates top-level nodes, only the admin deletes them or changes
// the root's ACL — once: a second run changes nothing, and the children are not
// touched.
func TestMigrateRootACL(t *testing.T) {
	addr := paddockBackend.addr(t)
	roles := Roles{RoleAdmin: {{"digest", DigestID("admin", "pw")}}}
	s := connect(t, addr, func(c *Config) {
		c.Auth, c.Policy = []Auth{{"digest", "admin:pw"}}, NewPolicy(roles, []Rule{{Pattern: "/", World: zk.PermRead | zk.PermCreate}})
	})
	anon := connect(t, addr)
	if _, err := anon.Conn().Create("/app", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.MigrateACL(context.Background(), "/"); !changed || err != nil {
		t.Fatalf("MigrateACL(/) = %v, %v; want changed", changed, err)
	}
	if changed, err := s.MigrateACL(context.Background(), "/"); changed || err != nil {
		t.Errorf("MigrateACL(/) again = %v, %v; want nothing changed", changed, err)
	}
	if got, _, err := anon.Conn().GetACL("/app"); err != nil || !slices.Equal(got, zk.WorldACL(zk.PermAll)) {
		t.Errorf("a child's ACL: %v, %v; want it untouched", got, err)
	}
	if _, err := anon.Conn().Create("/other", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Errorf("unauthenticated create of a top-level node: %v", err)
	}
	if err := anon.Conn().Delete("/app", -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated delete of a top-level node: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := anon.Conn().SetACL("/", zk.WorldACL(zk.PermAll), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated setACL of the root: %v, want %v", err, zk.ErrNoAuth)
	}
	if err := s.Conn().Delete("/app", -1); err != nil {
		t.Errorf("the admin's delete: %v", err)
	}
}
