package worker

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// treeScript is testutil.ProcTree as a task writing into dir.
func treeScript(dir, end string) task.Spec { return shell(testutil.ProcTree(end), "D="+dir) }

// markedPIDs lists the live processes whose environment holds entry.
func markedPIDs(entry string) []int {
	pids, _ := listPIDs()
	var marked []int
	for _, pid := range pids {
		if alive(pid) && environHas(pid, entry) {
			marked = append(marked, pid)
		}
	}
	return marked
}

// waitTreeGone waits until none of pids lives and no process carries run's mark.
func waitTreeGone(t *testing.T, w *Worker, id string, pids map[string]int) {
	t.Helper()
	mark := runMarkEnv + "=" + runMark(w.key, runName(id, 1)) + "\x00"
	testutil.Eventually(t, waitLong, poll, func() bool {
		for _, name := range testutil.ProcTreeNames {
			if alive(pids[name]) {
				return false
			}
		}
		return len(markedPIDs(mark[:len(mark)-1])) == 0
	}, "task %s: processes left: %v of %v, marked %v", id, livePIDs(pids), pids, markedPIDs(mark[:len(mark)-1]))
}

func livePIDs(pids map[string]int) []string {
	var live []string
	for _, name := range testutil.ProcTreeNames {
		if alive(pids[name]) {
			live = append(live, name)
		}
	}
	return live
}

// uidOf reads the real uid of process pid from /proc/<pid>/status.
func uidOf(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid in /proc/%d/status", pid)
	return 0
}

// expectedMode is the kill mode a worker must pick here: cgroup where it runs as root
// on a host with a cgroup2 hierarchy mounted (this one, and CI, have one beside v1),
// unless useCgroup is off.
func expectedMode(t *testing.T, useCgroup bool) string {
	t.Helper()
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := parseCgroup2Mount(mountinfo); ok && os.Geteuid() == 0 && useCgroup {
		return killModeCgroup
	}
	return killModeSubreaper
}

// treeWorker starts worker w1 for the tree tests: 4 slots, run as nobody where the test
// runs as root, and with the cgroups on or off; it checks the mode the worker picked.
func treeWorker(t *testing.T, c *cluster, useCgroup bool) (*running, string) {
	t.Helper()
	cfg := c.config("w1")
	cfg.Capacity, cfg.UseCgroup = 4, useCgroup
	if os.Geteuid() == 0 {
		cfg.RunAs, cfg.AllowRoot = "nobody", false
	}
	r := c.start(cfg)
	c.session("w1")
	mode := expectedMode(t, useCgroup)
	testutil.Eventually(t, waitLong, poll, func() bool {
		return promtest.ToFloat64(r.w.runner.metrics.killMode.WithLabelValues(mode)) == 1
	}, "worker never said kill mode %s", mode)
	t.Logf("kill mode %s", mode)
	return r, mode
}

// TestTaskTreeEndsWithIt: whatever ends a task — its first process exiting, a
// timeout (with a process that ignores SIGTERM), a cancel, its supervisor killed -9
// under a live worker — every process it started ends too: the one in a session of
// its own, the one that ignores SIGTERM and the orphan, and no process carrying the
// run's mark is left. In both kill modes; the processes run as nobody where the test
// runs as root.
func TestTaskTreeEndsWithIt(t *testing.T) {
	t.Parallel()
	for _, useCgroup := range []bool{true, false} {
		t.Run("use_cgroup="+strconv.FormatBool(useCgroup), func(t *testing.T) {
			t.Parallel()
			c := newCluster(t)
			r, mode := treeWorker(t, c, useCgroup)
			dirs := map[string]string{"exit": testutil.OpenTempDir(t), "timeout": testutil.OpenTempDir(t), "cancel": testutil.OpenTempDir(t), "supervisor": testutil.OpenTempDir(t)}
			ids := map[string]string{}
			ids["exit"] = c.runTask("w1", treeScript(dirs["exit"], "exit 0"))
			timeout := treeScript(dirs["timeout"], "trap '' TERM; wait")
			timeout.Timeout = task.Duration(time.Second)
			ids["timeout"] = c.runTask("w1", timeout)
			// A shell must hear SIGTERM no later than the command it waits for, or it
			// carries on with its script once that command is gone.
			ids["cancel"] = c.runTask("w1", treeScript(dirs["cancel"], "sleep 300; echo survived"))
			ids["supervisor"] = c.runTask("w1", treeScript(dirs["supervisor"], "wait"))
			pids := map[string]map[string]int{}
			for k, dir := range dirs {
				pids[k] = testutil.ReadProcTree(t, dir)
			}
			if os.Geteuid() == 0 {
				if uid := uidOf(t, pids["cancel"]["deaf"]); uid != 65534 {
					t.Errorf("a task process runs as uid %d; want nobody's, 65534", uid)
				}
			}

			if st := c.status(ids["exit"]); st.State != task.Done {
				t.Errorf("exit: %+v; want done", st)
			}
			waitTreeGone(t, r.w, ids["exit"], pids["exit"])

			if st := c.status(ids["timeout"]); st.State != task.Failed || st.Error != "timed out after 1s" || st.Signal != "SIGKILL" {
				t.Errorf("timeout: %+v; want failed, timed out, by SIGKILL", st)
			}
			waitTreeGone(t, r.w, ids["timeout"], pids["timeout"])

			if err := c.client.Cancel(ctxT(t), ids["cancel"]); err != nil {
				t.Fatal(err)
			}
			if st := c.status(ids["cancel"]); st.State != task.Cancelled || st.Signal != "SIGTERM" || strings.Contains(st.OutputTail, "survived") {
				t.Errorf("cancel: %+v; want cancelled, the first process ended by SIGTERM", st)
			}
			waitTreeGone(t, r.w, ids["cancel"], pids["cancel"])

			sup := supervisorOf(t, r.w, ids["supervisor"])
			if err := syscall.Kill(sup, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			st := c.status(ids["supervisor"])
			if st.State != task.Failed || !strings.Contains(st.Error, "the task's supervisor ended (signal: killed)") {
				t.Errorf("supervisor killed: %+v; want failed, naming the supervisor's end", st)
			}
			waitTreeGone(t, r.w, ids["supervisor"], pids["supervisor"])
			// The first process died with its supervisor (its parent-death signal); the
			// worker killed the three others, by the cgroup and the mark.
			if n := promtest.ToFloat64(r.w.runner.metrics.leftovers.WithLabelValues(leftoversOfRun)); n < 3 && mode == killModeSubreaper {
				t.Errorf("leftovers of a run killed: %v; want the 3 the task left", n)
			}
			// An idle worker holds no cgroup: each run's went with it, the base with the last.
			if _, err := os.Stat(string(r.w.runner.base)); mode == killModeCgroup && !os.IsNotExist(err) {
				t.Errorf("the idle worker's base cgroup %s: %v; want it gone", r.w.runner.base, err)
			}
		})
	}
}

// supervisorOf finds the supervisor of task id's first run: the worker's child whose
// arguments name the run.
func supervisorOf(t *testing.T, w *Worker, id string) int {
	t.Helper()
	want := []string{supervisorArg0, runMark(w.key, runName(id, 1))}
	var found int
	testutil.Eventually(t, waitLong, poll, func() bool {
		pids, _ := listPIDs()
		for _, pid := range pids {
			if slices.Equal(cmdline(pid), want) && alive(pid) {
				found = pid
				return true
			}
		}
		return false
	}, "no supervisor %v", want)
	return found
}

// TestRunAs: a task of a worker with run_as nobody runs as nobody, its groups nobody's
// alone and HOME, USER and LOGNAME nobody's; a worker not running as root cannot take
// run_as nobody.
func TestRunAs(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	cfg := c.config("w1")
	cfg.RunAs, cfg.AllowRoot = "nobody", false
	if os.Geteuid() != 0 {
		_, err := New(cfg, nil)
		if err == nil || !strings.Contains(err.Error(), "not root") {
			t.Fatalf("New with run_as nobody, not as root: %v; want refused", err)
		}
		return
	}
	c.start(cfg)
	dir := testutil.OpenTempDir(t)
	spec := shell(`id -u; id -g; id -G; echo "$HOME $USER $LOGNAME"; touch "$D/made"`, "D="+dir)
	st := c.status(c.runTask("w1", spec))
	if want := "65534\n65534\n65534\n/nonexistent nobody nobody\n"; st.State != task.Done || st.OutputTail != want {
		t.Errorf("status %+v; want done, output %q", st, want)
	}
	fi, err := os.Stat(filepath.Join(dir, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 65534 {
		t.Errorf("a file the task made is uid %d's; want nobody's", uid)
	}

	// A directory nobody cannot enter: the run cannot start, and says as whom.
	private := t.TempDir() // 0700, root's
	st = c.status(c.runTask("w1", task.Spec{Command: "true", Dir: private}))
	if st.State != task.Failed || st.ExitCode != -1 || !strings.Contains(st.Error, "start as nobody (uid 65534, gid 65534)") ||
		!strings.Contains(st.Error, "permission denied (the user may not enter dir "+private) {
		t.Errorf("status %+v; want a failed start as nobody, permission denied", st)
	}
}
