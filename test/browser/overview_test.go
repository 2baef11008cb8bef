package browser

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/task"
)

// overviewWait bounds how long the overview may take to show a change: it polls every
// 3 s and probes at most every 2 s; a new leader is elected within about 1 s (500 ms
// election timeout) — generous for a busy 2-core machine.
const overviewWait = 30 * time.Second

// startOnEnsemble starts a 3-member ensemble (member 1 with its admin port on, so the
// console reads its p99 latency there; members 2 and 3 are probed with srvr), a console
// whose session may use any member, a master and a worker, and the browser. The
// console, master and worker are paddock processes: the leader is killed under them, and
// their clients reconnecting may trip go-zookeeper's own race on Conn.lastZxid, which a
// child's log check leaves out (testutil.Child.LogProblems) but a race in this test
// binary would fail the test with.
func startOnEnsemble(t *testing.T) (*harness, *testutil.Ensemble) {
	t.Helper()
	e := testutil.StartEnsemble(t, 3, 0, func(i int, c *server.Config) {
		if i == 0 {
			c.AdminAddr = "127.0.0.1:0"
		}
	})
	h := &harness{t: t, addr: e.Addrs()[0], keys: testutil.NewKeys(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: e.Addrs(), SessionTimeout: 10 * time.Second,
		Signer: h.keys.Signer(coordinator.RoleConsole), Trust: h.keys.Trust()})
	if err != nil {
		t.Fatalf("connect to the ensemble %v: %v", e.Addrs(), err)
	}
	t.Cleanup(func() { s.Close() })
	h.session, h.conn = s, s.Conn()
	users, err := userEntries()
	if err != nil {
		t.Fatal(err)
	}
	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := t.TempDir()
	cfg, err := json.Marshal(map[string]any{"web": map[string]any{ // JSON is YAML too
		"zk": e.Addrs(), "listen": listen, "users": users,
		"admin_addrs":  []string{"1=" + e.Server(0).AdminAddr().String()},
		"signing_key":  h.keys.KeyFile(coordinator.RoleConsole),
		"signers_file": h.keys.SignersFile,
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "console.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	zk := strings.Join(e.Addrs(), ",")
	h.startChild(filepath.Join(dir, "console.log"), "web", "--config", cfgPath)
	h.startChild(filepath.Join(dir, "master.log"), "master", "--zk", zk, "--id", "m1",
		"--signing-key", h.keys.KeyFile(coordinator.RoleMaster), "--signers-file", h.keys.SignersFile)
	h.startChild(filepath.Join(dir, "worker.log"), "worker", "--zk", zk, "--id", "w1", "--capacity", "2",
		"--output-dir", filepath.Join(dir, "output"), "--kill-grace", "1s", "--stop-grace", "0s", "--signers-file", h.keys.SignersFile,
		"--allow-root")
	h.url = "http://" + listen
	if !testutil.WaitFor(20*time.Second, 100*time.Millisecond, func() bool {
		resp, err := http.Get(h.url + "/login")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatalf("the console did not serve on %s", listen)
	}
	h.startBrowser()
	return h, e
}

// startChild runs the paddock binary with args until the test ends, its output in
// logPath; the test fails if the log shows a race, a panic or an error-level record.
func (h *harness) startChild(logPath string, args ...string) {
	h.t.Helper()
	c, err := testutil.StartChild(h.t, logPath, nil, paddock.Path(h.t), args...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		c.Stop(20 * time.Second)
		problems, err := c.LogProblems()
		if err != nil {
			h.t.Errorf("%s: %v", logPath, err)
		}
		if len(problems) > 0 {
			h.t.Errorf("%s:\n%s", logPath, strings.Join(problems, "\n"))
		}
	})
}

// memberRow is one row of the overview's members table as the page shows it.
type memberRow struct {
	Address string `json:"address"`
	Status  string `json:"status"` // "up" or "down"
	Mode    string `json:"mode"`
}

func (h *harness) members() []memberRow {
	h.t.Helper()
	return run[[]memberRow](h, `Array.from(document.querySelectorAll('#members tr.member'), r => ({
	  address: r.getAttribute('data-address'),
	  status: r.classList.contains('up') ? 'up' : 'down',
	  mode: r.querySelector('td.mode').textContent.trim(),
	}))`)
}

// cells returns the text of the cells of the rows of the table body sel.
func (h *harness) cells(sel string) [][]string {
	h.t.Helper()
	return run[[][]string](h, `Array.from(document.querySelectorAll(`+strconv.Quote(sel+" tr")+`),
	  r => Array.from(r.cells, c => c.innerText.trim()))`)
}

// waitPage polls the page until ok accepts it, failing with what after overviewWait.
func (h *harness) waitPage(what string, ok func() bool) {
	h.t.Helper()
	if !testutil.WaitFor(overviewWait, 500*time.Millisecond, ok) {
		h.t.Fatalf("%s: not within %v; members %+v", what, overviewWait, h.members())
	}
}

func TestOverviewEnsemble(t *testing.T) {
	h, e := startOnEnsemble(t)
	tc := task.NewClient(h.session, task.DefaultLayout)
	for _, spec := range []task.Spec{{Command: "/bin/true"}, {Command: "/bin/sleep", Args: []string{"120"}}} {
		if _, err := tc.Submit(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
	h.login("viewer")
	h.open("/", "#members tr.member")
	addrs := e.Addrs()
	leader := e.Leader()
	h.waitPage("3 members up, member "+strconv.Itoa(leader+1)+" leading", func() bool {
		ms := h.members()
		if len(ms) != 3 || h.text("#ensemble-leader") != addrs[leader] {
			return false
		}
		for i, m := range ms {
			if m.Address != addrs[i] || m.Status != "up" || (m.Mode == "leader") != (i == leader) {
				return false
			}
		}
		return true
	})
	// The platform summary: one task done, one running on w1, which has 2 slots.
	count := func(state string) string {
		return run[string](h, `(document.querySelector('#tasks-by-state tr[data-state=`+state+`] td') || {}).textContent`)
	}
	h.waitPage("a task done and one running on w1", func() bool {
		return count("done") == "1" && count("running") == "1" && slices.Equal(row(h.cells("#workers"), "w1"), []string{"w1", "1 / 2", "1"}) &&
			h.text("#master") == "m1"
	})
	// The charts draw the console's samples: sessions and latency have a value from the
	// first sample on (requests/s from the second, 10 s later).
	h.waitPage("charts with points", func() bool {
		for _, series := range []string{"sessions", "latency_avg_ms latency_p99_ms"} {
			pts := run[string](h, `(document.querySelector('svg[data-series="`+series+`"] polyline') || {getAttribute: () => ""}).getAttribute('points')`)
			if strings.Count(pts, ",") < 1 {
				return false
			}
		}
		return true
	})
	if n := run[int](h, `document.querySelectorAll('svg[data-series]').length`); n != 4 {
		t.Errorf("%d charts, want 4: throughput, latency, sessions, replication lag", n)
	}
	h.screenshot("ensemble")

	e.Stop(leader)
	h.waitPage("member "+strconv.Itoa(leader+1)+" down and another leading", func() bool {
		ms := h.members()
		nl := e.Leader()
		if len(ms) != 3 || nl < 0 || nl == leader || h.text("#ensemble-leader") != addrs[nl] {
			return false
		}
		return ms[leader].Status == "down" && ms[leader].Mode == "" && ms[nl].Mode == "leader" && ms[nl].Status == "up"
	})
	if got := h.text(`#members tr.down .note`); !strings.Contains(got, "refused") {
		t.Errorf("the stopped member's row says %q, want why its probe failed (connection refused)", got)
	}
	h.screenshot("leader_down")
	// Requests/s needs two samples (10 s apart): then the throughput chart has a line.
	h.waitPage("a throughput line", func() bool {
		pts := run[string](h, `(document.querySelector('svg[data-series="requests_per_s"] polyline') || {getAttribute: () => ""}).getAttribute('points')`)
		return strings.Count(pts, ",") >= 1
	})
}
