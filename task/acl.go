package task

import (
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

const (
	r  = zk.PermRead
	cr = zk.PermCreate | zk.PermRead
)

// ACLRules returns the ACLs of the cluster's nodes under l, by role (docs/security.md
// has them as a table): only submitters, the console and the master create under
// /tasks; workers read tasks and create their outcome under a task; only the master
// (and the console) makes assignments, and only the worker (and the master) takes
// one away; nobody but the admin changes a node's ACL (no role needs to: what a worker
// or the master acts on is trusted by its signature, not its ACL). The console and the
// admin have all permissions everywhere else; unauthenticated clients have none.
func (l Layout) ACLRules() []coordinator.Rule {
	const (
		all  = zk.PermAll &^ zk.PermAdmin
		crd  = zk.PermCreate | zk.PermRead | zk.PermDelete
		rwd  = zk.PermRead | zk.PermWrite | zk.PermDelete
		rw   = zk.PermRead | zk.PermWrite
		crdw = crd | zk.PermWrite
	)
	g := func(grants ...coordinator.Grant) []coordinator.Grant {
		return append([]coordinator.Grant{{Role: coordinator.RoleConsole, Perms: all}}, grants...)
	}
	m, w, s := coordinator.RoleMaster, coordinator.RoleWorker, coordinator.RoleSubmitter
	return []coordinator.Rule{
		{Pattern: l.Tasks(), Grants: g(coordinator.Grant{Role: s, Perms: cr}, coordinator.Grant{Role: m, Perms: cr}, coordinator.Grant{Role: w, Perms: r})},
		{Pattern: l.join("tasks", "*"), Grants: g(coordinator.Grant{Role: s, Perms: cr}, coordinator.Grant{Role: m, Perms: cr}, coordinator.Grant{Role: w, Perms: cr})},
		{Pattern: l.join("tasks", "*", "*"), Grants: g(coordinator.Grant{Role: s, Perms: r}, coordinator.Grant{Role: m, Perms: r}, coordinator.Grant{Role: w, Perms: r})},
		{Pattern: l.Master(), Grants: g(coordinator.Grant{Role: m, Perms: all}, coordinator.Grant{Role: w, Perms: r}, coordinator.Grant{Role: s, Perms: r})},
		{Pattern: l.Workers(), Grants: g(coordinator.Grant{Role: w, Perms: cr}, coordinator.Grant{Role: m, Perms: cr}, coordinator.Grant{Role: s, Perms: r})},
		{Pattern: l.join("workers", "*"), Grants: g(coordinator.Grant{Role: w, Perms: all}, coordinator.Grant{Role: m, Perms: r}, coordinator.Grant{Role: s, Perms: r})},
		// A drain request is the operators': the console (and the admin) write it, the
		// worker and the master only read it.
		{Pattern: l.Drains(), Grants: g(coordinator.Grant{Role: w, Perms: r}, coordinator.Grant{Role: m, Perms: r}, coordinator.Grant{Role: s, Perms: r})},
		{Pattern: l.join("drain", "*"), Grants: g(coordinator.Grant{Role: w, Perms: r}, coordinator.Grant{Role: m, Perms: r}, coordinator.Grant{Role: s, Perms: r})},
		// The clock node: readers (master, console) write it to learn the servers' time.
		{Pattern: l.Clock(), Grants: g(coordinator.Grant{Role: m, Perms: crdw}, coordinator.Grant{Role: w, Perms: r}, coordinator.Grant{Role: s, Perms: r})},
		{Pattern: l.Assign(), Grants: g(coordinator.Grant{Role: m, Perms: crdw}, coordinator.Grant{Role: w, Perms: cr}, coordinator.Grant{Role: s, Perms: r})},
		{Pattern: l.join("assign", "*"), Grants: g(coordinator.Grant{Role: m, Perms: crd}, coordinator.Grant{Role: w, Perms: crd}, coordinator.Grant{Role: s, Perms: r})},
		{Pattern: l.join("assign", "*", "*"), Grants: g(coordinator.Grant{Role: m, Perms: rwd}, coordinator.Grant{Role: w, Perms: rwd}, coordinator.Grant{Role: s, Perms: r})},
		// Jobs are the submitters' (and the console's); their fires and shard plans are the
		// master's, and a submitter deleting a job deletes its fire records first.
		{Pattern: l.Jobs(), Grants: g(coordinator.Grant{Role: s, Perms: crd}, coordinator.Grant{Role: m, Perms: cr}, coordinator.Grant{Role: w, Perms: r})},
		{Pattern: l.join("jobs", "*"), Grants: g(coordinator.Grant{Role: s, Perms: crdw}, coordinator.Grant{Role: m, Perms: crd}, coordinator.Grant{Role: w, Perms: r})},
		// A job's signature is rewritten with each update, by whoever updates it.
		{Pattern: l.JobSig("*"), Grants: g(coordinator.Grant{Role: s, Perms: rw}, coordinator.Grant{Role: m, Perms: r}, coordinator.Grant{Role: w, Perms: r})},
		{Pattern: l.join("jobs", "*", "*"), Grants: g(coordinator.Grant{Role: s, Perms: r | zk.PermDelete}, coordinator.Grant{Role: m, Perms: crdw}, coordinator.Grant{Role: w, Perms: r})},
		{Pattern: l.join("jobs", "*", "*", "*"), Grants: g(coordinator.Grant{Role: s, Perms: r}, coordinator.Grant{Role: m, Perms: rwd}, coordinator.Grant{Role: w, Perms: r})},
		// Items in error are the master's record; the console (an operator) clears one by
		// deleting it, and everyone else reads them.
		{Pattern: l.Faults(), Grants: g(coordinator.Grant{Role: m, Perms: cr}, coordinator.Grant{Role: s, Perms: r}, coordinator.Grant{Role: w, Perms: r})},
		{Pattern: l.join("faults", "*"), Grants: g(coordinator.Grant{Role: m, Perms: crd}, coordinator.Grant{Role: s, Perms: r}, coordinator.Grant{Role: w, Perms: r})},
		{Pattern: l.join("faults", "*", "*"), Grants: g(coordinator.Grant{Role: m, Perms: rwd}, coordinator.Grant{Role: s, Perms: r}, coordinator.Grant{Role: w, Perms: r})},
	}
}
