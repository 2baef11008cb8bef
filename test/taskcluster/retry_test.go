package taskcluster

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// metricsAddr returns a free loopback address for a child's /metrics.
func metricsAddr(t *testing.T) string {
	t.Helper()
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}

// scrapeMetrics reads a child's /metrics; "" until it serves.
func scrapeMetrics(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestUnrecordableTaskRunsOnce replays issue 31's attack 7 against real master and
// worker processes: a signed task whose node then lets no one create under it
// (world:anyone:r) ran
// 2,768 times in 10 s on the landed worker. Now it runs once: the worker refuses it
// (counted on its /metrics), the master, which cannot end it either, records it in
// error and never assigns it again, and meanwhile keeps its one term and assigns the
// tasks after it, which run to done.
func TestUnrecordableTaskRunsOnce(t *testing.T) {
	c := newCluster(t)
	maddr, waddr := metricsAddr(t), metricsAddr(t)
	c.startMaster("m1", "--metrics-addr", maddr)
	c.startWorker("w1", 2, "--metrics-addr", waddr)
	testutil.Eventually(t, 20*time.Second, 20*time.Millisecond, func() bool { return c.activeMaster() == "m1" }, "m1 active")
	_, st, err := c.s.Conn().Get(c.layout.Master())
	if err != nil {
		t.Fatal(err)
	}
	czxid := st.Czxid

	spec, _ := json.Marshal(c.runOnce(""))
	if err := c.s.MakeDirs(context.Background(), c.layout.Tasks()); err != nil {
		t.Fatal(err)
	}
	// A submitter signs its task, then leaves its node readable by all and writable by
	// none (an ACL it may set on its own node): the task runs, and nobody can record how.
	p, err := c.s.Conn().Create(c.layout.Task("task-"), spec, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	testutil.SignNode(t, c.s.Conn(), p, task.SpecDomain, spec, c.keys.Signer(coordinator.RoleSubmitter))
	if _, err := c.s.Conn().SetACL(p, zk.WorldACL(zk.PermRead), -1); err != nil {
		t.Fatal(err)
	}
	id := path.Base(p)
	var f task.Fault
	testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		data, _, err := c.s.Conn().Get(c.layout.TaskFault(id))
		return err == nil && json.Unmarshal(data, &f) == nil && f.Tries >= 2
	}, "%s not in error at the master twice:\n%s", id, c.logTails())
	if f.Step != "end" || !strings.Contains(f.Error, "not authenticated") {
		t.Errorf("fault %+v: want step end, not authenticated", f)
	}
	// The tasks after it run to done, on the same worker and master.
	var ids []string
	for range 3 {
		ids = append(ids, c.submit(c.runOnce("")))
	}
	for tid, tk := range c.waitAll(ids, 30*time.Second) {
		if tk.State != task.Done {
			t.Errorf("%s after the refused task: %s", tid, tk.State)
		}
	}
	if n := c.runs()[id]; n != 1 {
		t.Fatalf("the task whose outcome cannot be recorded ran %d times, want once", n)
	}
	if tk, err := c.client.Get(context.Background(), id); err != nil || tk.State.Ended() || tk.Fault == nil {
		t.Errorf("the refused task: %+v, %v; want not ended, in error", tk, err)
	}
	for addr, lines := range map[string][]string{
		waddr: {`paddock_worker_tasks_refused_total{reason="unrecorded"} 1`},
		maddr: {`paddock_master_terms_total 1`, `paddock_master_items_in_error{kind="task"} 1`},
	} {
		m := scrapeMetrics(addr)
		for _, line := range lines {
			if !strings.Contains(m, line+"\n") {
				t.Errorf("/metrics of %s lacks %q:\n%s", addr, line, m)
			}
		}
	}
	if _, st, err := c.s.Conn().Get(c.layout.Master()); err != nil || st.Czxid != czxid {
		t.Errorf("/master re-created or gone (%v): mastership was given up", err)
	}
}
