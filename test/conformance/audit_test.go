package conformance

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// TestAuditLines runs the same client session against an Apache ZooKeeper with
// audit.enable=true and a paddock with AuditEnable, and compares the audit lines each
// writes (ZooKeeper's go to its log through Slf4jAuditLogger, paddock's to its file):
// every audited operation, successes and failures, multi, setAcl, and the deletion of an
// ephemeral at the session's close. The key=value part must be the same but for the
// session id, the root path, the digest hash that paddock masks in setAcl lines and
// paddock's identities field.
func TestAuditLines(t *testing.T) {
	opts := referenceOptions
	opts.Config = append(opts.Config, "audit.enable=true")
	auditFile := filepath.Join(t.TempDir(), "audit.log")
	var ref *testutil.ZooKeeper
	var refErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); ref, refErr = testutil.StartZooKeeper(t, opts) }()
	subAddr := startPaddock(t, func(c *server.Config) {
		configurePaddock(c)
		c.AuditEnable, c.AuditLogFile = true, auditFile
	})
	wg.Wait()
	if refErr != nil {
		t.Fatalf("start reference: %v", refErr)
	}
	refRoot, subRoot := "/cfa-"+runID+"-r", "/cfa-"+runID+"-s"
	wg.Add(2)
	go func() { defer wg.Done(); auditSession(t, ref.Addr, refRoot) }()
	go func() { defer wg.Done(); auditSession(t, subAddr, subRoot) }()
	wg.Wait()

	const want = 14 // serverStart and the session's 13 lines
	var refLines, subLines []string
	ok := testutil.WaitFor(10*time.Second, 20*time.Millisecond, func() bool {
		refLines = auditLines(ref.LogTail(100000), zkAuditMarker, refRoot)
		b, _ := os.ReadFile(auditFile)
		subLines = auditLines(string(b), paddockAuditMarker, subRoot)
		return len(refLines) >= want && len(subLines) >= want
	})
	if !ok {
		t.Fatalf("audit lines: reference %d, subject %d, want %d\nreference:\n%s\nsubject:\n%s", len(refLines), len(subLines), want,
			strings.Join(refLines, "\n"), strings.Join(subLines, "\n"))
	}
	if d := Diff(strings.Join(refLines, "\n"), strings.Join(subLines, "\n"), 3); d != "" {
		t.Errorf("audit lines differ (-reference +subject):\n%s", d)
	}
	for _, line := range subLines {
		if strings.Contains(line, "TOPSECRET") || strings.Contains(line, "pw-alice") {
			t.Errorf("the subject's audit log holds data or a password: %s", line)
		}
	}
}

// auditSession is the client session both servers audit.
func auditSession(t *testing.T, addr, root string) {
	c, events, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	steps := []func() error{
		func() error { return c.AddAuth("digest", []byte("alice:pw-alice")) },
		func() error { _, err := c.Create(root, []byte("TOPSECRET"), 0, acl); return err },
		func() error { _, err := c.Create(root+"/s-", nil, zk.FlagSequence, acl); return err },
		func() error { _, err := c.Create(root+"/e", nil, zk.FlagEphemeral, acl); return err },
		func() error { _, err := c.Set(root, []byte("TOPSECRET-2"), -1); return err },
		func() error { _, err := c.Create(root, nil, 0, acl); return expect(err, zk.ErrNodeExists) },
		func() error { return expect(c.Delete(root+"/missing", -1), zk.ErrNoNode) },
		func() error {
			_, err := c.Multi(&zk.CreateRequest{Path: root + "/m", Data: []byte("TOPSECRET"), Acl: acl},
				&zk.SetDataRequest{Path: root + "/m", Data: []byte("TOPSECRET"), Version: -1},
				&zk.CheckVersionRequest{Path: root + "/m", Version: 1},
				&zk.DeleteRequest{Path: root + "/s-0000000000", Version: -1})
			return err
		},
		func() error {
			_, err := c.Multi(&zk.CreateRequest{Path: root + "/m2", Acl: acl}, &zk.DeleteRequest{Path: root + "/nope", Version: -1})
			return expect(err, zk.ErrNoNode)
		},
		func() error {
			_, err := c.SetACL(root+"/m", zk.DigestACL(zk.PermAll, "alice", "pw-alice"), -1)
			return err
		},
		func() error { return c.Delete(root+"/m", -1) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Errorf("%s: step %d: %v", addr, i, err)
			return
		}
	}
}

func expect(err, want error) error {
	if err == want {
		return nil
	}
	if err == nil {
		return errUnexpectedSuccess
	}
	return err
}

var errUnexpectedSuccess = errors.New("succeeded where it should have failed")

var (
	// zkAuditMarker ends what Debian's log4j layout puts before a message of
	// Slf4jAuditLogger ("... - INFO  [SyncThread:0:Slf4jAuditLogger@NN] - "); paddockAuditMarker
	// ends paddock's timestamp and level.
	zkAuditMarker      = regexp.MustCompile(`Slf4jAuditLogger@\d+\] - `)
	paddockAuditMarker = regexp.MustCompile(` (INFO|ERROR) audit: `)

	sessionField = regexp.MustCompile(`session=0x[0-9a-f]+`)
	digestHash   = regexp.MustCompile(`(acl=digest:[^:\t]+:)[^:\t]+(:)`)
	// identitiesField is paddock's addition to a line (docs/compatibility.md): each
	// identity marked, where ZooKeeper's user= gives names alone.
	identitiesField = regexp.MustCompile(`\tidentities=[^\t]*`)
)

// auditLines returns the key=value part of each audit line in log (the text after
// marker), with the session id and root normalised, a setAcl digest hash written x and
// paddock's identities field left out.
func auditLines(log string, marker *regexp.Regexp, root string) []string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		loc := marker.FindStringIndex(line)
		if loc == nil {
			continue
		}
		kv := line[loc[1]:]
		kv = sessionField.ReplaceAllString(kv, "session=S")
		kv = strings.ReplaceAll(kv, root, "/ROOT")
		kv = digestHash.ReplaceAllString(kv, "${1}x$2")
		kv = identitiesField.ReplaceAllString(kv, "")
		out = append(out, kv)
	}
	return out
}
