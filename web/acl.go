package web

import (
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/task"
)

// ACLRules returns the ACLs of the nodes the console creates, by role
// (docs/security.md): the audit log is append-only for the console (it may create
// and read records, never change or delete one: only the admin may), and the
// services' layouts under Root have their own packages' rules.
func (c Config) ACLRules() []coordinator.Rule {
	console := func(perms int32) []coordinator.Grant {
		return []coordinator.Grant{{Role: coordinator.RoleConsole, Perms: perms}}
	}
	rules := []coordinator.Rule{
		{Pattern: c.AuditRoot, Grants: console(zk.PermCreate | zk.PermRead)},
		{Pattern: c.AuditRoot + "/*", Grants: console(zk.PermRead)},
	}
	tl, _ := task.NewLayout(c.Root) // Validate checked Root
	rl, _ := replicator.NewLayout(c.Root)
	ll, _ := logcollector.NewLayout(c.Root)
	return append(append(append(rules, tl.ACLRules()...), rl.ACLRules()...), ll.ACLRules()...)
}
