package coordinator

import (
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
