package replication

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// TestReplicatesWithRoleACLs: with role ACLs on, the console's identity defines a
// task whose DSNs only replicators (and the console) can read; replicator processes
// that authenticate as the replicator role run and replicate it; an unauthenticated
// client and another role get NoAuth on the definition.
func TestReplicatesWithRoleACLs(t *testing.T) {
	dir := t.TempDir()
	var roles []string
	for _, role := range []string{coordinator.RoleConsole, coordinator.RoleReplicator, coordinator.RoleWorker} {
		pw := role + "-pw-" + filepath.Base(dir)
		if err := os.WriteFile(filepath.Join(dir, role), []byte("digest:"+role+":"+pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		roles = append(roles, role+"=digest:"+coordinator.DigestID(role, pw))
	}
	rolesFile := filepath.Join(dir, "roles")
	if err := os.WriteFile(rolesFile, []byte(strings.Join(roles, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBusAs(t, coordinator.Access{AuthFile: filepath.Join(dir, coordinator.RoleConsole), RolesFile: rolesFile})
	b.args = []string{"--auth-file", filepath.Join(dir, coordinator.RoleReplicator), "--roles-file", rolesFile}
	b.schema("sec")
	b.createTask("sec", "sec")

	anon, _, err := zk.Connect([]string{b.addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	if _, _, err := anon.Get(b.layout.Task("sec")); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated read of the task's DSNs: %v, want %v", err, zk.ErrNoAuth)
	}
	worker, err := coordinator.Connect(t.Context(), coordinator.Config{Servers: []string{b.addr}, SessionTimeout: 4 * time.Second,
		Auth: []coordinator.Auth{{Scheme: "digest", Credentials: "worker:" + coordinator.RoleWorker + "-pw-" + filepath.Base(dir)}}})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	if _, _, err := worker.Conn().Get(b.layout.Task("sec")); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("a worker's read of the task's DSNs: %v, want %v", err, zk.ErrNoAuth)
	}

	b.start("r1", "--tasks", "sec")
	w := b.startWriter("sec", 0)
	w.waitCommitted(t, 50)
	w.halt(t)
	b.waitEqual(60*time.Second, "sec.orders", "sec.stock")
}
