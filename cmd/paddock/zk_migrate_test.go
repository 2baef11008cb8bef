package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// TestZKMigrateACLs: paddock zk migrate-acls gives nodes made open to all (as an older
// paddock made them) their role ACLs; a second run changes nothing; without roles it
// is a usage error.
func TestZKMigrateACLs(t *testing.T) {
	addr := startZKPaddock(t)
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	open := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/tasks", "/tasks/task-0000000001", "/tasks/task-0000000001/status"} {
		if _, err := conn.Create(p, nil, 0, open); err != nil {
			t.Fatal(err)
		}
	}
	roles := []string{"--roles", "admin=digest:" + coordinator.DigestID("admin", "pw"),
		"--roles", "submitter=digest:" + coordinator.DigestID("sub", "pw")}
	if code, _, stderr := runZK(t, addr, "migrate-acls", "/tasks"); code != 2 || !strings.Contains(stderr, "--roles") {
		t.Errorf("without roles: exit %d, %q", code, stderr)
	}
	roles = append(roles, "--auth", "digest:admin:pw")
	code, stdout, stderr := runZK(t, addr, append(roles, "migrate-acls", "/tasks")...)
	if code != 0 || !strings.Contains(stdout, "3 nodes") {
		t.Fatalf("migrate-acls: exit %d, %q, %q", code, stdout, stderr)
	}
	if _, err := conn.Create("/tasks/task-", nil, zk.FlagSequence, open); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated create under migrated /tasks: %v, want %v", err, zk.ErrNoAuth)
	}
	code, stdout, stderr = runZK(t, addr, append(roles, "migrate-acls", "/tasks")...)
	if code != 0 || !strings.Contains(stdout, "0 nodes") {
		t.Errorf("second migrate-acls: exit %d, %q, %q", code, stdout, stderr)
	}
	// The root alone, not its tree: the world keeps read and create, and only the admin
	// deletes a top-level node, so no one removes /tasks to make it again open.
	if _, err := conn.Create("/app", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runZK(t, addr, append(roles, "migrate-acls", "/")...)
	if code != 0 || !strings.Contains(stdout, "1 nodes") {
		t.Fatalf("migrate-acls /: exit %d, %q, %q", code, stdout, stderr)
	}
	if acl, _, err := conn.GetACL("/app"); err != nil || !coordinator.OpenToWorld(acl) {
		t.Errorf("/app after migrate-acls /: %v, %v; want it left as it was", acl, err)
	}
	if err := conn.Delete("/app", -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated delete of a top-level node: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := conn.Create("/other", nil, 0, open); err != nil {
		t.Errorf("unauthenticated create of a top-level node: %v", err)
	}
}
