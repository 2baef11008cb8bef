package coordinator

import (
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The roles of a paddock platform, as the services' ACLs name them (docs/security.md
// has the table of what each may do where).
const (
	RoleAdmin        = "admin"        // operators' CLIs and migrations: everything, everywhere
	RoleConsole      = "console"      // the web console (it applies its own users' roles)
	RoleMaster       = "master"       // task-cluster masters
	RoleWorker       = "worker"       // task-cluster workers
	RoleSubmitter    = "submitter"    // who may submit and cancel tasks
	RoleReplicator   = "replicator"   // replicator processes
	RoleLogCollector = "logcollector" // log collectors and the rebalancer
)

// KnownRoles lists the roles a Roles table may name.
var KnownRoles = []string{RoleAdmin, RoleConsole, RoleMaster, RoleWorker, RoleSubmitter, RoleReplicator, RoleLogCollector}

// ID is one ACL identity: {digest, user:base64(sha1(user:password))} or {x509, the
// subject DN of a client certificate}.
type ID struct {
	Scheme string
	ID     string
}

func (id ID) String() string { return id.Scheme + ":" + id.ID }

// DigestID returns the digest scheme's id of user with password, as ZooKeeper's
// DigestAuthenticationProvider computes it: user:base64(sha1(user:password)).
func DigestID(user, password string) string {
	sum := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// IDOf returns the ACL id a session authenticated with a gets from the server: the
// digest of digest credentials, the credentials themselves for any other scheme.
func IDOf(a Auth) ID {
	if a.Scheme == "digest" {
		user, pw, _ := strings.Cut(a.Credentials, ":")
		return ID{Scheme: "digest", ID: DigestID(user, pw)}
	}
	return ID{Scheme: a.Scheme, ID: a.Credentials}
}

// Roles maps each role to the identities that hold it. An identity may hold several.
type Roles map[string][]ID

// ParseRoles parses "role=scheme:id" entries (the roles key of every service's
// section), such as "worker=digest:worker:Hk3…=" or "worker=x509:CN=worker-1".
func ParseRoles(entries []string) (Roles, error) {
	roles := make(Roles)
	var errs []error
	for _, e := range entries {
		role, id, _ := strings.Cut(e, "=")
		scheme, val, ok := strings.Cut(id, ":")
		switch {
		case !slices.Contains(KnownRoles, role):
			errs = append(errs, fmt.Errorf("roles = %s: role %q: want one of %s", e, role, strings.Join(KnownRoles, ", ")))
		case !ok || scheme == "" || val == "":
			errs = append(errs, fmt.Errorf("roles = %s: want role=scheme:id, as in worker=digest:worker:<base64 sha1>", e))
		case scheme == "world":
			errs = append(errs, fmt.Errorf("roles = %s: world is everyone; name an authenticated identity", e))
		default:
			roles[role] = append(roles[role], ID{Scheme: scheme, ID: val})
		}
	}
	return roles, errors.Join(errs...)
}

// Grant gives a role permissions (zk.PermRead|zk.PermCreate…).
type Grant struct {
	Role  string
	Perms int32
}

// Rule gives the nodes whose paths match Pattern the grants, and World to every client,
// authenticated or not (world:anyone). A pattern is an absolute path whose names may be
// "*" (any one name) and whose last name may be "**" (one or more names).
type Rule struct {
	Pattern string
	Grants  []Grant
	World   int32
}

func (r Rule) matches(path string) bool {
	pat, got := splitPath(r.Pattern), splitPath(path)
	for i, p := range pat {
		if p == "**" && i == len(pat)-1 {
			return len(got) > i
		}
		if i >= len(got) || (p != "*" && p != got[i]) {
			return false
		}
	}
	return len(got) == len(pat)
}

func splitPath(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

// Policy decides the ACL of each node a Session creates: the first rule whose pattern
// matches the path; a path no rule matches gets every role's identities with all
// permissions but ADMIN (authenticated members of the platform, not the world). The
// admin role has all permissions on every node. A Policy is immutable and safe for concurrent use.
type Policy struct {
	roles Roles
	rules []Rule
}

// NewPolicy returns the policy of rules (in order, from each group in turn) over roles.
func NewPolicy(roles Roles, rules ...[]Rule) *Policy {
	return &Policy{roles: roles, rules: slices.Concat(rules...)}
}

// ACL returns the ACL of the node at path.
func (p *Policy) ACL(path string) []zk.ACL {
	grants, world := p.fallback(), int32(0)
	for _, r := range p.rules {
		if r.matches(path) {
			grants, world = r.Grants, r.World
			break
		}
	}
	acl := p.render(append([]Grant{{RoleAdmin, zk.PermAll}}, grants...))
	if world != 0 {
		acl = append(acl, zk.ACL{Perms: world, Scheme: "world", ID: "anyone"})
	}
	return acl
}

func (p *Policy) fallback() []Grant {
	g := make([]Grant, 0, len(KnownRoles))
	for _, r := range KnownRoles {
		g = append(g, Grant{r, zk.PermAll &^ zk.PermAdmin})
	}
	return g
}

// render turns grants into an ACL, one entry per identity with the union of its
// permissions, in a stable order. Roles without identities add nothing; an ACL that
// would be empty gives the creator's own identities everything (the auth scheme), as
// ZooKeeper refuses an empty ACL.
func (p *Policy) render(grants []Grant) []zk.ACL {
	var acl []zk.ACL
	for _, g := range grants {
		for _, id := range p.roles[g.Role] {
			i := slices.IndexFunc(acl, func(a zk.ACL) bool { return a.Scheme == id.Scheme && a.ID == id.ID })
			if i >= 0 {
				acl[i].Perms |= g.Perms
				continue
			}
			acl = append(acl, zk.ACL{Perms: g.Perms, Scheme: id.Scheme, ID: id.ID})
		}
	}
	if len(acl) == 0 {
		return zk.AuthACL(zk.PermAll)
	}
	return acl
}

// OpenToWorld reports whether acl lets an unauthenticated client write, create,
// delete or change the ACL: the ACL of nodes made by a paddock before role ACLs.
func OpenToWorld(acl []zk.ACL) bool { return worldPerms(acl)&^zk.PermRead != 0 }

// worldPerms returns what acl lets every client do.
func worldPerms(acl []zk.ACL) int32 {
	var perms int32
	for _, a := range acl {
		if a.Scheme == "world" && a.ID == "anyone" {
			perms |= a.Perms
		}
	}
	return perms
}

// openBeyond reports whether acl, the ACL of the node at path, lets unauthenticated
// clients do more than read and what p gives them there: a node to migrate.
func (p *Policy) openBeyond(path string, acl []zk.ACL) bool {
	return worldPerms(acl)&^(zk.PermRead|worldPerms(p.ACL(path))) != 0
}
