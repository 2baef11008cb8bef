package replicator

import (
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// ACLRules returns the ACLs of the replication bus's nodes under l, by role
// (docs/security.md has them as a table). A task's definition holds its DSNs, and so
// their passwords: only the replicators and the console (which shows them to no one)
// may read it, only the console may change it; unauthenticated clients and the other
// services can read no node of the bus.
func (l Layout) ACLRules() []coordinator.Rule {
	const (
		all = zk.PermAll &^ zk.PermAdmin
		cr  = zk.PermCreate | zk.PermRead
	)
	console := coordinator.Grant{Role: coordinator.RoleConsole, Perms: all}
	rep := func(perms int32) []coordinator.Grant {
		return []coordinator.Grant{console, {Role: coordinator.RoleReplicator, Perms: perms}}
	}
	return []coordinator.Rule{
		{Pattern: l.join(), Grants: rep(cr)},
		{Pattern: l.Tasks(), Grants: rep(cr)},
		{Pattern: l.Task("*"), Grants: rep(cr)},
		{Pattern: l.join("tasks", "*", "**"), Grants: rep(all)},
		{Pattern: l.join("**"), Grants: rep(all)},
	}
}
