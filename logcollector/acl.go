package logcollector

import (
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// ACLRules returns the ACLs of the log collection's nodes under l, by role
// (docs/security.md has them as a table): the console (and the admin) defines sources,
// the collectors read them; the collectors and the rebalancer keep /logs/collector and
// the rebalancer's election; unauthenticated clients read nothing.
func (l Layout) ACLRules() []coordinator.Rule {
	const (
		all = zk.PermAll &^ zk.PermAdmin
		cr  = zk.PermCreate | zk.PermRead
	)
	console := coordinator.Grant{Role: coordinator.RoleConsole, Perms: all}
	lc := func(perms int32) []coordinator.Grant {
		return []coordinator.Grant{console, {Role: coordinator.RoleLogCollector, Perms: perms}}
	}
	return []coordinator.Rule{
		{Pattern: l.join(), Grants: lc(cr)},
		{Pattern: l.Sources(), Grants: lc(zk.PermRead)},
		{Pattern: l.Source("*"), Grants: lc(zk.PermRead)},
		{Pattern: l.join("**"), Grants: lc(all)},
	}
}
