package server

import (
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// A full queue drops lines and counts them: the apply loop never waits for the disk.
func TestAuditQueueDropsWhenFull(t *testing.T) {
	a := &auditLog{lines: make(chan []byte, 2)} // no writer: nothing drains it
	for range 5 {
		a.log(&auditEvent{op: auditCreate, result: auditSuccess})
	}
	if len(a.lines) != 2 || a.dropped.Load() != 3 {
		t.Fatalf("queued %d, dropped %d; want 2 and 3", len(a.lines), a.dropped.Load())
	}
	a.closed.Store(true)
	a.log(&auditEvent{op: auditCreate, result: auditSuccess})
	if a.dropped.Load() != 4 {
		t.Fatalf("a line logged after close was not counted as dropped")
	}
}

// A path refused as invalid may hold any byte: the line stays one line, and a long
// field is cut.
func TestAuditLineEscapes(t *testing.T) {
	ev := auditEvent{session: "0x1", user: "127.0.0.1,bob\nforged=1", ip: "127.0.0.1", op: auditCreate,
		znode: "/a\tb\\c\xff" + strings.Repeat("x", 2*auditFieldMax), result: auditFailure}
	line := string(ev.format(time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)))
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") || strings.Count(line, "\t") != 5 {
		t.Fatalf("line not one line of six fields: %q", line)
	}
	for _, want := range []string{"2026-01-02 03:04:05,006 ERROR audit: session=0x1\t", `user=127.0.0.1,bob\x0aforged=1`,
		`znode=/a\x09b\\c\xffxxx`, "...(cut)\tresult=failure\n"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if len(line) > 3*auditFieldMax {
		t.Errorf("line of %d bytes: the field was not cut", len(line))
	}
}

func TestAuditUsersAndACL(t *testing.T) {
	ids := []wire.Identity{{Scheme: "ip", ID: "10.0.0.1"}, {Scheme: "super"}, {Scheme: "digest", ID: "alice:HASH="},
		{Scheme: "x509", ID: "CN=svc"}}
	if got := auditUsers(ids); got != "10.0.0.1,alice,CN=svc" {
		t.Errorf("users %q", got)
	}
	acl := []wire.ACL{{Perms: wire.PermRead | wire.PermAdmin, Scheme: "digest", ID: "alice:HASH="}, {Perms: wire.PermAll, Scheme: "world", ID: "anyone"}}
	if got := auditACL(acl); got != "digest:alice:x:ra,world:anyone:cdrwa" {
		t.Errorf("acl %q", got)
	}
}
