package taskcluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// The processes of a task die with its worker (issue 31, attack 8): a worker killed -9
// with a running task must not leave the task running while the master runs it
// again elsewhere.

// asNobody is the flag that makes a worker run its tasks as nobody where the test runs
// as root (as on CI); elsewhere tasks run as the test's user.
func asNobody() []string {
	if os.Geteuid() == 0 {
		return []string{"--run-as", "nobody"}
	}
	return nil
}

// procTree is testutil.ProcTree as a task writing into dir, every process of it
// carrying PROC_MARK=mark; from its second attempt on it only exits.
func procTree(dir, mark string) task.Spec {
	script := `[ "$PADDOCK_TASK_ATTEMPT" = 1 ] || exit 0
` + testutil.ProcTree("wait")
	return task.Spec{Command: "sh", Args: []string{"-c", script}, Env: map[string]string{"D": dir, "PROC_MARK": mark}}
}

// taskLeft lists what of a procTree still runs: the named processes alive, and any
// other carrying its mark.
func taskLeft(pids map[string]int, mark string) []string {
	var left []string
	for _, name := range testutil.ProcTreeNames {
		if testutil.ProcessAlive(pids[name]) {
			left = append(left, name)
		}
	}
	if m := testutil.ProcessesWithEnv("PROC_MARK=" + mark); len(m) > 0 {
		left = append(left, fmt.Sprintf("marked %v", m))
	}
	return left
}

// supervisorUnder finds the task supervisor the worker of pid started.
func supervisorUnder(t *testing.T, worker int) int {
	t.Helper()
	var found int
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
		f, err := os.Open("/proc")
		if err != nil {
			return false
		}
		defer f.Close()
		names, _ := f.Readdirnames(-1)
		for _, n := range names {
			pid, err := strconv.Atoi(n)
			if err != nil {
				continue
			}
			args, _ := os.ReadFile("/proc/" + n + "/cmdline")
			stat, _ := os.ReadFile("/proc/" + n + "/stat")
			i := bytes.LastIndexByte(stat, ')')
			if !bytes.HasPrefix(args, []byte("paddock-task-supervisor\x00")) || i < 0 {
				continue
			}
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(worker) {
				found = pid
				return true
			}
		}
		return false
	}, "no supervisor under worker %d", worker)
	return found
}

// cgroupOf reads from a worker's log the base cgroup it makes its runs' in; "" if it
// makes none.
func cgroupOf(t *testing.T, w *testutil.Child) string {
	t.Helper()
	var dir string
	testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool {
		line := regexp.MustCompile(`msg="task processes are killed [^\n]*`).FindString(w.LogTail(1000))
		if m := regexp.MustCompile(` cgroup=(\S+)`).FindStringSubmatch(line); m != nil {
			dir = m[1]
		}
		return line != ""
	}, "the worker never said how it kills tasks:\n%s", w.LogTail(20))
	return dir
}

// gone reports whether path does not exist.
func gone(path string) bool {
	_, err := os.Stat(path)
	return os.IsNotExist(err)
}

// modeFlag runs a subtest with the workers' cgroups on, then off.
func modeFlag(t *testing.T, run func(t *testing.T, flag string)) {
	for _, on := range []bool{true, false} {
		flag := "--use-cgroup=" + strconv.FormatBool(on)
		t.Run(flag[2:], func(t *testing.T) { run(t, flag) })
	}
}

// TestWorkerKilledTaskDies: a `paddock worker` killed -9 while its task runs — a task
// whose processes are in a session of their own, ignore SIGTERM, or were orphaned —
// leaves no process of the task a second after its death, with cgroups and without;
// the task ran as nobody.
func TestWorkerKilledTaskDies(t *testing.T) {
	modeFlag(t, func(t *testing.T, flag string) {
		c := newCluster(t)
		c.startMaster("m1")
		w := c.startWorker("w1", 1, append(asNobody(), flag)...)
		base := cgroupOf(t, w)
		if (base != "") != (flag == "--use-cgroup=true" && os.Geteuid() == 0) {
			t.Errorf("with %s as uid %d, the worker's base cgroup is %q", flag, os.Geteuid(), base)
		}
		dir, mark := testutil.OpenTempDir(t), t.Name()
		c.submit(procTree(dir, mark))
		pids := testutil.ReadProcTree(t, dir)
		if os.Geteuid() == 0 && pids["uid"] != 65534 {
			t.Errorf("the task ran as uid %d; want nobody's, 65534", pids["uid"])
		}
		if left := taskLeft(pids, mark); len(left) < 4 || !slices.Equal(left[:4], []string{"leader", "setsid", "deaf", "orphan"}) {
			t.Fatalf("before the kill, running: %v; want the 4 processes of the task", left)
		}
		w.Kill() // SIGKILL, and waits for it to be gone
		dead := time.Now()
		testutil.Eventually(t, time.Second, 5*time.Millisecond, func() bool { return len(taskLeft(pids, mark)) == 0 },
			"a second after the worker's death the task still runs: %v\n%s", taskLeft(pids, mark), w.LogTail(10))
		t.Logf("no process of the task left %v after the worker's death", time.Since(dead).Round(time.Millisecond))
		// The supervisor removed the run's cgroup and, the last, the worker's.
		testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return base == "" || gone(base) },
			"the dead worker's cgroup %s is left", base)

		// Killed while it starts tasks — claimed, their supervisors starting or not —
		// a worker leaves neither a process nor a cgroup.
		w2 := c.startWorker("w2", 3, append(asNobody(), flag)...)
		base2 := cgroupOf(t, w2)
		mark2 := mark + "/starting"
		for range 3 {
			c.submit(task.Spec{Command: "sleep", Args: []string{"300"}, Env: map[string]string{"PROC_MARK": mark2}})
		}
		testutil.Eventually(t, 20*time.Second, 2*time.Millisecond, func() bool {
			return strings.Count(w2.LogTail(1000), `msg="task claimed"`) >= 3
		}, "w2 never claimed 3 tasks:\n%s", w2.LogTail(20))
		w2.Kill()
		testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool {
			return len(testutil.ProcessesWithEnv("PROC_MARK="+mark2)) == 0 && (base2 == "" || gone(base2))
		}, "a worker killed while starting tasks left processes %v, cgroup %s (exists: %v)",
			testutil.ProcessesWithEnv("PROC_MARK="+mark2), base2, !gone(base2))
	})
}

// TestRestartedWorkerKillsLeftovers: a worker stopped while its task's supervisor is
// killed -9, then killed -9 itself, leaves the task's processes running; restarted
// with the same id and output directory, it kills them all before it claims a task
// (its log says so before its first claim), with cgroups and without.
func TestRestartedWorkerKillsLeftovers(t *testing.T) {
	modeFlag(t, func(t *testing.T, flag string) {
		c := newCluster(t)
		c.startMaster("m1")
		args := append(asNobody(), flag)
		w := c.startWorker("w1", 1, args...)
		base := cgroupOf(t, w)
		dir, mark := testutil.OpenTempDir(t), t.Name()
		id := c.submit(procTree(dir, mark))
		pids := testutil.ReadProcTree(t, dir)
		sup := supervisorUnder(t, w.PID())
		// Stopped, the worker can kill nothing when its supervisor dies; killed, it
		// leaves the task to its next life.
		if err := syscall.Kill(w.PID(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return !testutil.ProcessAlive(sup) }, "supervisor %d lives", sup)
		w.Kill()
		// The first process had the supervisor's death as its own (PR_SET_PDEATHSIG);
		// the three it started are left.
		testutil.Eventually(t, 10*time.Second, 5*time.Millisecond, func() bool { return !testutil.ProcessAlive(pids["leader"]) },
			"the first process outlived its supervisor")
		if left := taskLeft(pids, mark); len(left) < 3 || !slices.Equal(left[:3], []string{"setsid", "deaf", "orphan"}) {
			t.Fatalf("after the supervisor's and the worker's deaths, running: %v; want the three the first process started", left)
		}

		again := c.start("worker-w1-again", append([]string{"worker", "--id", "w1", "--capacity", "1",
			"--output-dir", filepath.Join(c.dir, "output-w1"), "--kill-grace", "1s", "--allow-root"}, args...)...)
		c.workers["w1"] = again
		testutil.Eventually(t, 20*time.Second, 10*time.Millisecond, func() bool { return len(taskLeft(pids, mark)) == 0 },
			"the restarted worker left the task's processes running: %v\n%s", taskLeft(pids, mark), again.LogTail(20))
		// The master gives the task, lost with the old worker's session, to the new
		// one: its second attempt only exits.
		if tk := c.waitAll([]string{id}, 30*time.Second)[id]; tk.State != task.Done {
			t.Fatalf("%s: %s (%s); want done on its second attempt", id, tk.State, tk.Status.Error)
		}
		log, err := os.ReadFile(again.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		killed := bytes.Index(log, []byte(`msg="killed what an earlier life of this worker left running" worker=w1 processes=3`))
		claimed := bytes.Index(log, []byte(`msg="task claimed"`))
		if killed < 0 || claimed < 0 || killed > claimed {
			t.Errorf("the restarted worker's log: leftovers killed at %d, first claim at %d; want the kill of 3 first:\n%s",
				killed, claimed, again.LogTail(40))
		}
		if base != "" && !gone(base) {
			t.Errorf("the restarted worker, idle, keeps the cgroup %s", base)
		}
	})
}

// TestWorkerRunAs: `paddock worker` as root refuses to start without run_as or
// allow_root, naming both; with --run-as nobody its tasks run as nobody, with
// --allow-root as root. Not as root, it runs tasks as itself and refuses another
// run_as.
func TestWorkerRunAs(t *testing.T) {
	c := newCluster(t)
	c.startMaster("m1")
	_, errOut, code := c.paddockCmd("worker", "--zk", c.addr, "--id", "w0", "--output-dir", filepath.Join(c.dir, "w0"),
		"--signers-file", c.keys.SignersFile)
	switch root := os.Geteuid() == 0; {
	case root && (code != 1 || !strings.Contains(errOut, "running as root with no run_as") ||
		!strings.Contains(errOut, "allow_root: true")):
		t.Fatalf("paddock worker as root without run_as: exit %d, %q; want 1, naming run_as and allow_root", code, errOut)
	case !root:
		_, errOut, code = c.paddockCmd("worker", "--zk", c.addr, "--id", "w0", "--run-as", "nobody",
			"--signers-file", c.keys.SignersFile)
		if code != 1 || !strings.Contains(errOut, "not root: it can run tasks only as itself") {
			t.Fatalf("paddock worker --run-as nobody not as root: exit %d, %q; want refused", code, errOut)
		}
		return
	}
	ids := func() task.Spec { return task.Spec{Command: "sh", Args: []string{"-c", "id -u; id -g"}} }
	c.startWorker("nobody", 1, "--run-as", "nobody", "--labels", "as=nobody")
	c.startWorker("root", 1, "--labels", "as=root") // startWorker gives --allow-root
	for as, want := range map[string]string{"nobody": "65534\n65534\n", "root": "0\n0\n"} {
		spec := ids()
		spec.Selector = task.Selector{"as": as}
		id := c.submit(spec)
		if tk := c.waitAll([]string{id}, 30*time.Second)[id]; tk.State != task.Done || tk.Status.OutputTail != want {
			t.Errorf("as %s: %s, output %q; want done, %q", as, tk.State, tk.Status.OutputTail, want)
		}
	}
}
