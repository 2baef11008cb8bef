package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server/datatree"
)

func readAudit(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	return string(b)
}

// auditFields parses one audit line: the timestamp and level, then tab-separated
// key=value pairs.
func auditFields(t *testing.T, line string) map[string]string {
	t.Helper()
	_, rest, ok := strings.Cut(line, " audit: ")
	if !ok {
		t.Fatalf("audit line without its prefix: %q", line)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(rest, "\t") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("audit field %q in %q", kv, line)
		}
		out[k] = v
	}
	return out
}

// TestAuditLog drives a real client through every audited operation, successes and
// failures, and checks the line each writes: who (the session's identities, as
// ZooKeeper's user=), from where, what, on which node, and the result. The data written
// and the digest password never appear, nor the password's hash.
func TestAuditLog(t *testing.T) {
	cfg := testutil.PaddockConfig(t)
	cfg.AuditEnable = true
	cfg.AuditLogFile = filepath.Join(t.TempDir(), "logs", "audit.log")
	srv := testutil.StartServer(t, cfg)
	c, _ := connectTo(t, []string{srv.Addr().String()})
	const password, secretData = "s3cret-PW", "TOPSECRET-DATA"
	if err := c.AddAuth("digest", []byte("alice:"+password)); err != nil {
		t.Fatal(err)
	}
	acl := zk.WorldACL(zk.PermAll)
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Create("/a", []byte(secretData), 0, acl)
	mustDo(err)
	seq, err := c.Create("/a/s-", nil, zk.FlagSequence, acl)
	mustDo(err)
	_, err = c.Create("/a/e", nil, zk.FlagEphemeral, acl)
	mustDo(err)
	_, err = c.Set("/a", []byte(secretData+"-2"), -1)
	mustDo(err)
	_, err = c.Create("/a", nil, 0, acl) // NodeExists
	if err != zk.ErrNodeExists {
		t.Fatalf("second create: %v", err)
	}
	if err := c.Delete("/a/missing", -1); err != zk.ErrNoNode {
		t.Fatalf("delete missing: %v", err)
	}
	_, _, err = c.Get("/a") // reads are not audited
	mustDo(err)
	_, err = c.Multi(&zk.CreateRequest{Path: "/m", Data: []byte(secretData), Acl: acl},
		&zk.SetDataRequest{Path: "/m", Data: []byte(secretData), Version: -1},
		&zk.CheckVersionRequest{Path: "/m", Version: 1},
		&zk.DeleteRequest{Path: seq, Version: -1})
	mustDo(err)
	_, err = c.Multi(&zk.CreateRequest{Path: "/m2", Acl: acl}, &zk.DeleteRequest{Path: "/nope", Version: -1})
	if err == nil {
		t.Fatal("failing multi succeeded")
	}
	_, err = c.SetACL("/m", zk.DigestACL(zk.PermAll, "alice", password), -1)
	mustDo(err)
	mustDo(c.Delete("/m", -1))
	c.Close() // its ephemeral /a/e goes
	testutil.Eventually(t, 10e9, 10e6, func() bool {
		return strings.Contains(readAudit(t, cfg.AuditLogFile), "operation=ephemeralZNodeDeletionOnSessionCloseOrExpire")
	}, "no line for the ephemeral deleted by the session's close")
	srv.Close()

	log := readAudit(t, cfg.AuditLogFile)
	digest := datatree.Digest("alice:" + password)
	_, hash, _ := strings.Cut(digest, ":")
	for _, secret := range []string{password, secretData, hash} {
		if strings.Contains(log, secret) {
			t.Errorf("the audit log holds %q:\n%s", secret, log)
		}
	}
	if fi, err := os.Stat(cfg.AuditLogFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %v (%v), want 0600", fi.Mode(), err)
	}

	type row struct{ op, znode, typ, acl, result string }
	var got []row
	var users, sessions, ips []string
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	for _, line := range lines {
		f := auditFields(t, line)
		got = append(got, row{f["operation"], f["znode"], f["znode_type"], f["acl"], f["result"]})
		users, sessions, ips = append(users, f["user"]), append(sessions, f["session"]), append(ips, f["ip"])
		if f["result"] == "failure" != strings.Contains(line, " ERROR audit: ") {
			t.Errorf("level does not follow the result: %q", line)
		}
	}
	want := []row{
		{"serverStart", "", "", "", "success"},
		{"create", "/a", "persistent", "", "success"},
		{"create", seq, "persistent_sequential", "", "success"},
		{"create", "/a/e", "ephemeral", "", "success"},
		{"setData", "/a", "", "", "success"},
		{"create", "/a", "persistent", "", "failure"},
		{"delete", "/a/missing", "", "", "failure"},
		{"create", "/m", "persistent", "", "success"},
		{"setData", "/m", "", "", "success"},
		{"delete", seq, "", "", "success"},
		{"multiOperation", "", "", "", "failure"},
		{"setAcl", "/m", "", "digest:alice:x:cdrwa", "success"},
		{"delete", "/m", "", "", "success"},
		{"ephemeralZNodeDeletionOnSessionCloseOrExpire", "/a/e", "", "", "success"},
		{"serverStop", "", "", "", "invoked"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit lines\n%v\nwant\n%v\nlog:\n%s", got, want, log)
	}
	session := "0x" + strings.TrimLeft(strings.ToLower(strings.TrimPrefix(sessions[1], "0x")), "0")
	for i := 1; i < len(lines)-2; i++ {
		if users[i] != "127.0.0.1,alice" || ips[i] != "127.0.0.1" || sessions[i] != session {
			t.Errorf("line %d: user %q ip %q session %q; want 127.0.0.1,alice from 127.0.0.1 in %s", i, users[i], ips[i], sessions[i], session)
		}
	}
	if end := len(lines) - 2; sessions[end] != session || ips[end] != "" || users[end] == "" || strings.Contains(users[end], "alice") {
		t.Errorf("ephemeral deletion line: user %q ip %q session %q; want the server's user, no ip, session %s",
			users[end], ips[end], sessions[end], session)
	}
}
