package taskcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// taskCmd runs `paddock task --zk ADDR ARGS` and returns its stdout, stderr and exit code.
func (c *cluster) taskCmd(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	if c.keys != nil { // sign as a submitter
		args = append([]string{"--signing-key", c.keys.KeyFile(coordinator.RoleSubmitter), "--signers-file", c.keys.SignersFile}, args...)
	}
	cmd := exec.Command(paddock.Path(c.t), append([]string{"task", "--zk", c.addr}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		c.t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// submitCLI submits with paddock task submit and returns the id, its last line.
func (c *cluster) submitCLI(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.taskCmd(append([]string{"submit"}, args...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id := lines[len(lines)-1]
	if code != 0 || task.CheckID(id) != nil {
		c.t.Fatalf("paddock task submit %v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
	}
	return id
}

func (c *cluster) getCLI(id string) task.Task {
	c.t.Helper()
	out, errOut, code := c.taskCmd("get", id)
	var tk task.Task
	if code != 0 || json.Unmarshal([]byte(out), &tk) != nil {
		c.t.Fatalf("paddock task get %s: exit %d, %q %q", id, code, out, errOut)
	}
	return tk
}

// TestCLI drives the cluster with paddock task: retries up to the limit and wait's
// exit code, a timeout, a cancel of a running task, and a bad spec that creates
// nothing.
func TestCLI(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	c.startWorker("w1", 4)

	t.Run("retries then failed", func(t *testing.T) {
		id := c.submitCLI("--retries", "2", "--retry-delay", "50ms", "--", "sh", "-c", "echo try; exit 3")
		if _, errOut, code := c.taskCmd("wait", id); code != 3 {
			t.Fatalf("wait: exit %d (%s), want the task's 3", code, errOut)
		}
		tk := c.getCLI(id)
		if tk.State != task.Failed || tk.Status.Attempts != 3 || len(tk.History) != 2 || !strings.Contains(tk.Status.OutputTail, "try") {
			t.Fatalf("got %s after %d runs, history %d, output %q; want failed after 3 runs with the output",
				tk.State, tk.Status.Attempts, len(tk.History), tk.Status.OutputTail)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		id := c.submitCLI("--timeout", "300ms", "--", "sleep", "30")
		if _, _, code := c.taskCmd("wait", id); code != 1 {
			t.Fatalf("wait: exit %d, want 1", code)
		}
		if tk := c.getCLI(id); tk.State != task.Failed || !strings.Contains(tk.Status.Error, "timed out") {
			t.Fatalf("got %s (%q), want failed, timed out", tk.State, tk.Status.Error)
		}
	})

	t.Run("cancel running", func(t *testing.T) {
		id := c.submitCLI("--", "sleep", "30")
		testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool { return c.getCLI(id).State == task.Running }, "running")
		if _, errOut, code := c.taskCmd("cancel", id); code != 0 {
			t.Fatalf("cancel: exit %d: %s", code, errOut)
		}
		if _, _, code := c.taskCmd("wait", id); code != 1 {
			t.Fatalf("wait: exit %d, want 1", code)
		}
		if tk := c.getCLI(id); tk.State != task.Cancelled {
			t.Fatalf("got %s, want cancelled", tk.State)
		}
		// The error says the step, the task and why once (issue 18: no "task: " at each layer).
		want := "paddock task: cancel " + id + ": already ended (cancelled)\n"
		if _, errOut, code := c.taskCmd("cancel", id); code != 1 || errOut != want {
			t.Fatalf("cancel of an ended task: exit %d, %q; want 1 and %q", code, errOut, want)
		}
	})

	t.Run("bad spec creates nothing", func(t *testing.T) {
		before, err := c.client.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, errOut, code := c.taskCmd("submit", "--retries", "-1", "--env", "A=1", "--", "true")
		if code != 2 || !strings.Contains(errOut, "retries") {
			t.Fatalf("exit %d, stderr %q; want 2 naming retries", code, errOut)
		}
		after, _ := c.client.List(context.Background())
		if len(after) != len(before) {
			t.Fatalf("%d tasks after a refused submit, %d before", len(after), len(before))
		}
	})

	t.Run("submit-dag", func(t *testing.T) {
		dir := t.TempDir()
		good := filepath.Join(dir, "dag.json")
		os.WriteFile(good, []byte(`[{"name": "b", "spec": {"command": "true"}, "after": ["a"]},
			{"name": "a", "spec": {"command": "true"}}]`), 0o644)
		out, errOut, code := c.taskCmd("submit-dag", good)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "a task-") || !strings.HasPrefix(lines[1], "b task-") {
			t.Fatalf("submit-dag: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		b := strings.Fields(lines[1])[1]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if tk, err := c.client.Wait(ctx, b); err != nil || tk.State != task.Done || tk.Spec.After[0] != "a" {
			t.Fatalf("b: %+v, %v", tk, err)
		}

		before, _ := c.client.List(context.Background())
		cyclic := filepath.Join(dir, "cyclic.json")
		os.WriteFile(cyclic, []byte(`[{"name": "x", "spec": {"command": "true"}, "after": ["y"]},
			{"name": "y", "spec": {"command": "true"}, "after": ["x"]}, {"name": "z", "spec": {"command": "true"}}]`), 0o644)
		_, errOut, code = c.taskCmd("submit-dag", cyclic)
		if code != 2 || !strings.Contains(errOut, "a cycle: ") || !strings.Contains(errOut, "x → y") && !strings.Contains(errOut, "y → x") {
			t.Fatalf("a cyclic DAG: exit %d, stderr %q; want 2 naming the cycle", code, errOut)
		}
		if after, _ := c.client.List(context.Background()); len(after) != len(before) {
			t.Fatalf("%d tasks after a refused DAG, %d before", len(after), len(before))
		}
	})

	t.Run("list", func(t *testing.T) {
		out, _, code := c.taskCmd("list")
		if code != 0 || !strings.Contains(out, "cancelled") || !strings.Contains(out, "failed") {
			t.Fatalf("list: exit %d:\n%s", code, out)
		}
	})
}

// TestUp: paddock up runs the server, a master, two workers and a log collector in one
// process; a task submitted to it runs — as nobody where paddock up runs as root, which
// it says — its own log is collected, and SIGTERM stops it all cleanly.
func TestUp(t *testing.T) {
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	up, err := testutil.StartChild(t, filepath.Join(dir, "up.log"), nil, paddock.Path(t),
		"up", "--data-dir", filepath.Join(dir, "data"), "--client-addr", addr, "--admin-addr=", "--metrics-port", "0",
		"--listen", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, addr: addr, layout: task.DefaultLayout}
	s := upSession(t, up, addr, filepath.Join(dir, "data"), coordinator.RoleSubmitter)
	c.s, c.client = s, task.NewClient(s, c.layout)
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		ws, _, err := s.Conn().Children(c.layout.Workers())
		return err == nil && len(ws) == 2
	}, "two workers register")
	id := c.submit(task.Spec{Command: "sh", Args: []string{"-c", "echo up; id -u"}})
	uid := strconv.Itoa(os.Geteuid())
	if uid == "0" {
		uid = "65534"
	}
	if tk := c.waitAll([]string{id}, 30*time.Second)[id]; tk.State != task.Done || tk.Status.OutputTail != "up\n"+uid+"\n" {
		t.Fatalf("%s: %s, output %q, error %q; want up and uid %s", id, tk.State, tk.Status.OutputTail, tk.Status.Error, uid)
	}
	if said := strings.Contains(up.LogTail(1000), "the workers run tasks as nobody"); said != (os.Geteuid() == 0) {
		t.Errorf("paddock up as uid %d said it runs tasks as nobody: %v", os.Geteuid(), said)
	}
	upAttacks(t, addr, filepath.Join(dir, "data"), up)
	// The log collector ships the platform's own log, the demo source.
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "data", "logs", "paddock.jsonl"))
		return err == nil && strings.Contains(string(b), `"source":"paddock"`) && strings.Contains(string(b), "platform up")
	}, "the platform's log collected into data/logs/paddock.jsonl")
	// The console: its admin, whose password was printed once, logs in.
	var url, password string
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		log := up.LogTail(1000)
		if m := regexp.MustCompile(`password (\S+) \(shown once`).FindStringSubmatch(log); m != nil {
			password = m[1]
		}
		if m := regexp.MustCompile(`"console serving" url=(\S+)`).FindStringSubmatch(log); m != nil {
			url = m[1]
		}
		return url != "" && password != ""
	}, "the console's URL and first password in the log:\n%s", up.LogTail(40))
	resp, err := http.Post(url+"/api/v1/login", "application/json", strings.NewReader(`{"user":"admin","password":"`+password+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("console login as admin: %s", resp.Status)
	}
	if err := up.Stop(20 * time.Second); err != nil {
		t.Fatalf("paddock up after SIGTERM: %v\n%s", err, up.LogTail(20))
	}
	if problems, _ := up.LogProblems(); len(problems) > 0 {
		t.Errorf("paddock up's log:\n%s", strings.Join(problems, "\n"))
	}
}
