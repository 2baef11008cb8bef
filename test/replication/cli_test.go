package replication

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/replicator"
)

// taskCmd runs `paddock replicator task --zk ADDR ARGS`.
func (b *bus) taskCmd(args ...string) (stdout, stderr string, code int) {
	b.t.Helper()
	cmd := exec.Command(paddock.Path(b.t), append([]string{"replicator", "task", "--zk", b.addr}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		b.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestTaskCLIAndMonitor drives tasks with paddock replicator task: a bad definition
// creates nothing; a password is never printed back; the elected monitor flags a task
// whose source cannot be reached, then a disabled one; a disabled task is deleted.
func TestTaskCLIAndMonitor(t *testing.T) {
	b := newBus(t)
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	source := "repl:s3cret@tcp(127.0.0.1:" + itoa(port) + ")/"

	_, errOut, code := b.taskCmd("create", "t1", "--source", source, "--include", "[")
	if code != 2 || !strings.Contains(errOut, "target") || !strings.Contains(errOut, "include") || strings.Contains(errOut, "s3cret") {
		t.Fatalf("bad create: exit %d, %q; want 2 naming target and include, no password", code, errOut)
	}
	if views, _ := b.admin.List(t.Context()); len(views) != 0 {
		t.Fatalf("a refused create left %d tasks", len(views))
	}
	if _, errOut, code := b.taskCmd("create", "t1", "--source", source, "--target", b.target.DSN(""), "--include", "app.*"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	b.start("m1", "--tasks", "t1", "--monitor-interval", "200ms")
	var v replicator.TaskView
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		out, _, code := b.taskCmd("get", "t1")
		if code != 0 || strings.Contains(out, "s3cret") || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("get: exit %d, output %s (a password shown?)", code, out)
		}
		return v.Health != nil && v.Health.State == "error" && strings.Contains(v.Health.Detail, itoa(port))
	}, "the monitor flags the unreachable source: %+v\n%s", v.Health, b.tails())
	if out, _, _ := b.taskCmd("list"); !strings.Contains(out, "error") || strings.Contains(out, "s3cret") {
		t.Fatalf("list:\n%s", out)
	}
	if _, errOut, code := b.taskCmd("delete", "t1"); code != 1 || !strings.Contains(errOut, "disable it first") {
		t.Fatalf("delete of an enabled task: exit %d, %q", code, errOut)
	}
	if _, errOut, code := b.taskCmd("disable", "t1"); code != 0 {
		t.Fatalf("disable: %d %s", code, errOut)
	}
	testutil.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		got, err := b.admin.Get(t.Context(), "t1")
		return err == nil && got.Health != nil && got.Health.State == "disabled" && got.Status != nil && got.Status.State == "disabled"
	}, "disabled in the status and by the monitor")
	if _, errOut, code := b.taskCmd("delete", "t1"); code != 0 {
		t.Fatalf("delete: %d %s", code, errOut)
	}
	if _, err := b.admin.Get(t.Context(), "t1"); !errors.Is(err, replicator.ErrNoTask) {
		t.Fatalf("after delete: %v", err)
	}
}
