package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/task"
)

func TestParseDynamicConfig(t *testing.T) {
	got := parseDynamicConfig(strings.Join([]string{
		"server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181",
		"server.2=10.0.0.2:2888:3888;2182",
		"server.3=[fd00::3]:2888:3888:observer;[::]:2183",
		"server.4=10.0.0.4:2888:3888:participant;10.1.0.4:2184",
		"server.5=10.0.0.5:2888:3888:participant",
		"version=100000000",
		"server.x=junk",
	}, "\n"))
	want := []memberTarget{
		{ID: 1, Client: "10.0.0.1:2181", Role: "participant"},
		{ID: 2, Client: "10.0.0.2:2182", Role: "participant"},
		{ID: 3, Client: "[fd00::3]:2183", Role: "observer"},
		{ID: 4, Client: "10.1.0.4:2184", Role: "participant"},
		{ID: 5, Client: "", Role: "participant"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("member %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestAdminAddrsValidate(t *testing.T) {
	cfg := testConfig(t, "127.0.0.1:2181")
	cfg.AdminAddrs = []string{"1=127.0.0.1:8081", "two=127.0.0.1:8082", "3=nope", "0=127.0.0.1:1"}
	err := cfg.Validate()
	for _, bad := range []string{"admin_addrs[1] = two=127.0.0.1:8082", "admin_addrs[2] = 3=nope", "admin_addrs[3] = 0=127.0.0.1:1"} {
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Validate: %v; want it to name %s", err, bad)
		}
	}
	if err != nil && strings.Contains(err.Error(), "admin_addrs[0]") {
		t.Errorf("Validate refuses a good entry: %v", err)
	}
}

func TestParseSrvr(t *testing.T) {
	var m MemberView
	answer := "Zookeeper version: 3.8.4\nLatency min/avg/max: 0/1.5/12\nReceived: 40\nSent: 41\n" +
		"Connections: 3\nOutstanding: 0\nZxid: 0x10000002a\nMode: follower\nNode count: 9\n"
	if err := parseSrvr(strings.NewReader(answer), &m); err != nil {
		t.Fatal(err)
	}
	if !m.Up || m.Mode != "follower" || m.Zxid != "0x10000002a" || m.zxid != 0x10000002a || m.Connections != 3 ||
		m.Received != 40 || m.LatencyAvgMs != 1.5 || m.LatencyMaxMs != 12 {
		t.Errorf("parsed %+v", m)
	}
	m = MemberView{}
	if err := parseSrvr(strings.NewReader("srvr is not executed because it is not in the whitelist.\n"), &m); err == nil ||
		!strings.Contains(err.Error(), "admin_addrs") {
		t.Errorf("a refused srvr: %v, want an error naming admin_addrs", err)
	}
	m = MemberView{}
	if err := parseSrvr(strings.NewReader("This ZooKeeper instance is not currently serving requests\n"), &m); err != nil ||
		!m.Up || m.Mode != "not serving" {
		t.Errorf("a member not serving: %+v %v", m, err)
	}
}

func TestQuantile(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	from := histogram{bounds: bounds, counts: []uint64{10, 10, 10}, total: 10}
	// 100 more requests: 90 under 1 ms, 9 more under 10 ms, 1 more under 100 ms.
	to := histogram{bounds: bounds, counts: []uint64{100, 109, 110}, total: 110}
	q, ok := quantile(0.99, from, to)
	if !ok || q < 0.001 || q > 0.01+1e-9 {
		t.Errorf("p99 = %v, %v; want in the 1-10 ms bucket", q, ok)
	}
	if q, ok := quantile(0.5, from, to); !ok || q > 0.001 {
		t.Errorf("p50 = %v, %v; want under 1 ms", q, ok)
	}
	if _, ok := quantile(0.99, to, to); ok {
		t.Error("p99 of no request: want none")
	}
	// Past the last finite bound: the last bound.
	beyond := histogram{bounds: bounds, counts: []uint64{10, 10, 10}, total: 20}
	if q, ok := quantile(0.99, from, beyond); !ok || q != 0.1 {
		t.Errorf("p99 over +Inf requests = %v, %v; want 0.1", q, ok)
	}
}

func TestRingBound(t *testing.T) {
	r := newRing(5)
	base := time.Unix(1000, 0)
	for i := range 12 {
		r.add(Sample{Time: base.Add(time.Duration(i) * time.Second)})
	}
	got := r.samples()
	if len(got) != 5 || cap(r.buf) != 5 {
		t.Fatalf("%d samples (buffer %d), want 5", len(got), cap(r.buf))
	}
	for i, s := range got {
		if want := base.Add(time.Duration(7+i) * time.Second); !s.Time.Equal(want) {
			t.Errorf("sample %d at %v, want %v (the newest 5, oldest first)", i, s.Time, want)
		}
	}
	if h := newHistory(sampleInterval, historySize); h.view().Capacity != 360 {
		t.Errorf("capacity %d, want 360: an hour of 10 s samples", h.view().Capacity)
	}
}

func TestHistorySample(t *testing.T) {
	h := newHistory(sampleInterval, 10)
	at := time.Unix(5000, 0)
	up := func(addr string, received, conns int64, avg float64) MemberView {
		return MemberView{Address: addr, Up: true, Zxid: "0x1", Received: received, Connections: conns, LatencyAvgMs: avg}
	}
	lag := 2.5
	repl := ReplSummary{Tasks: []ReplTaskHealth{{Name: "a", LagSeconds: &lag}, {Name: "b"}}}
	first := h.sample(at, EnsembleView{Members: []MemberView{up("a", 100, 2, 1), up("b", 50, 1, 3)}}, repl)
	if first.RequestsPerSec != nil || first.Sessions == nil || *first.Sessions != 3 || *first.LatencyAvgMs != 3 ||
		first.ReplLagSeconds == nil || *first.ReplLagSeconds != 2.5 {
		t.Errorf("first sample %+v", first)
	}
	// 10 s later: a answered 200 more packets, b is down, c is new.
	second := h.sample(at.Add(10*time.Second), EnsembleView{Members: []MemberView{up("a", 300, 2, 1),
		{Address: "b"}, up("c", 7, 1, 0)}}, ReplSummary{})
	if second.RequestsPerSec == nil || *second.RequestsPerSec != 20 || *second.Sessions != 3 || second.ReplLagSeconds != nil {
		t.Errorf("second sample %+v; want 20 requests/s, 3 sessions, no lag", second)
	}
	// a restarted: its counter went back, so no rate from it.
	third := h.sample(at.Add(20*time.Second), EnsembleView{Members: []MemberView{up("a", 5, 0, 0), up("c", 17, 1, 0)}}, ReplSummary{})
	if third.RequestsPerSec == nil || *third.RequestsPerSec != 1 {
		t.Errorf("third sample %+v; want 1 request/s (c only)", third)
	}
	if n := len(h.view().Samples); n != 3 {
		t.Errorf("%d samples, want 3", n)
	}
}

// startEnsembleConsole starts a 3-member ensemble, member 1 with its admin port on, and
// a console over it that knows member 1's admin port.
func startEnsembleConsole(t *testing.T) (*testutil.Ensemble, *fixture) {
	t.Helper()
	e := testutil.StartEnsemble(t, 3, 0, func(i int, c *server.Config) {
		if i == 0 {
			c.AdminAddr = "127.0.0.1:0"
		}
	})
	admin := e.Server(0).AdminAddr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys := testutil.NewKeys(t)
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: e.Addrs(), SessionTimeout: 10 * time.Second,
		Signer: keys.Signer(coordinator.RoleConsole), Trust: keys.Trust()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := testConfig(t, e.Addrs()[0])
	cfg.Servers, cfg.AdminAddrs = e.Addrs(), []string{"1=" + admin}
	c, err := New(cfg, s, testutil.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return e, &fixture{console: c, session: s, conn: s.Conn(), url: srv.URL, keys: keys}
}

func getOverview(t *testing.T, cl *client) OverviewView {
	t.Helper()
	r := cl.do("GET", "/api/v1/overview", nil)
	expect(t, r, http.StatusOK, "overview")
	var v OverviewView
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return v
}

func TestOverviewEnsemble(t *testing.T) {
	e, f := startEnsembleConsole(t)
	// Requests to member 1, whose admin port gives its p99 latency.
	zc, err := coordinator.Connect(testCtx(t), coordinator.Config{Servers: e.Addrs()[:1], SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	for range 20 {
		if _, _, err := zc.Conn().Exists("/"); err != nil {
			t.Fatal(err)
		}
	}
	cl := f.login(t, "vic")
	v := getOverview(t, cl)
	if len(v.Ensemble.Members) != 3 || v.Ensemble.Source != "/zookeeper/config" {
		t.Fatalf("members %+v from %s: want 3 from /zookeeper/config", v.Ensemble.Members, v.Ensemble.Source)
	}
	leader := e.Leader()
	for i, m := range v.Ensemble.Members {
		if m.ID != int64(i+1) || m.Address != e.Addrs()[i] || !m.Up || m.Zxid == "" || m.LagZxids == nil {
			t.Errorf("member %d: %+v; want id %d at %s, up, with a zxid and a lag", i, m, i+1, e.Addrs()[i])
		}
		wantMode, wantVia := "follower", "4lw"
		if i == leader {
			wantMode = "leader"
		}
		if i == 0 {
			wantVia = "admin"
		}
		if m.Mode != wantMode || m.Via != wantVia {
			t.Errorf("member %d: mode %s via %s, want %s via %s", i+1, m.Mode, m.Via, wantMode, wantVia)
		}
	}
	if v.Ensemble.Leader != e.Addrs()[leader] {
		t.Errorf("leader %q, want %s", v.Ensemble.Leader, e.Addrs()[leader])
	}
	if m := v.Ensemble.Members[0]; m.LatencyP99Ms == nil {
		t.Errorf("member 1 (admin port) has no p99 latency: %+v", m)
	}

	e.Stop(leader)
	var after OverviewView
	ok := testutil.WaitFor(20*time.Second, 500*time.Millisecond, func() bool {
		after = getOverview(t, cl)
		m := after.Ensemble.Members[leader]
		return !m.Up && m.Mode == "" && m.Error != "" && after.Ensemble.Leader != "" && after.Ensemble.Leader != e.Addrs()[leader]
	})
	if !ok {
		t.Fatalf("after stopping member %d (the leader): %+v; want it down and another leader", leader+1, after.Ensemble)
	}
	if nl := e.Leader(); after.Ensemble.Leader != e.Addrs()[nl] {
		t.Errorf("leader %s, want %s", after.Ensemble.Leader, e.Addrs()[nl])
	}
	page := cl.do("GET", "/", nil)
	if !strings.Contains(page.body, `<tr class="member down" data-address="`+e.Addrs()[leader]+`">`) ||
		!strings.Contains(page.body, `<td class="mode">leader</td>`) {
		t.Errorf("the overview page does not show the stopped member down and a leader: %s", page.body)
	}
}

func TestOverviewPlatformAndHistory(t *testing.T) {
	f := startAdminConsole(t)
	ctx := testCtx(t)
	id, err := task.NewClient(f.session, task.DefaultLayout).Submit(ctx, task.Spec{Command: "/bin/true"})
	if err != nil {
		t.Fatal(err)
	}
	cl := f.login(t, "vic")
	v := getOverview(t, cl)
	p := v.Platform
	counts := map[string]int{}
	for _, s := range p.Tasks.ByState {
		counts[s.State] = s.Count
	}
	if counts["pending"] != 1 || p.Tasks.Total != 1 || len(p.Tasks.ByState) != 7 || p.Tasks.Error != "" {
		t.Errorf("tasks %+v; want %s pending, 7 states", p.Tasks, id)
	}
	if p.Workers.Error != "" || p.Replication.Error != "" || p.Collection.Error != "" || len(p.Workers.Workers) != 0 {
		t.Errorf("platform %+v; want empty lists, no errors", p)
	}
	if len(v.Ensemble.Members) != 1 || v.Ensemble.Members[0].Mode != "standalone" || v.Ensemble.Leader == "" {
		t.Errorf("ensemble %+v; want one standalone member", v.Ensemble)
	}

	f.console.sampleNow(ctx)
	r := cl.do("GET", "/api/v1/overview/history", nil)
	expect(t, r, http.StatusOK, "history")
	var h HistoryView
	if err := json.Unmarshal([]byte(r.body), &h); err != nil {
		t.Fatal(err)
	}
	if h.Capacity != historySize || h.IntervalSeconds != 10 || len(h.Samples) != 1 {
		t.Fatalf("history %s: want one sample, capacity %d", r.body, historySize)
	}
	if s := h.Samples[0]; s.Sessions == nil || *s.Sessions < 1 || s.LatencyAvgMs == nil || s.RequestsPerSec != nil {
		t.Errorf("sample %s: want sessions and latency, no rate yet", r.body)
	}
	for _, raw := range []string{`"requests_per_s":null`, `"replication_lag_s":null`} {
		if !strings.Contains(r.body, raw) {
			t.Errorf("history %s lacks %s", r.body, raw)
		}
	}
	page := cl.do("GET", "/server", nil)
	if !strings.Contains(page.body, "<th>znode_count</th>") || strings.Contains(page.body, "<th>command</th>") ||
		strings.Contains(page.body, "<th>error</th>") {
		t.Errorf("server figures: want mntr without command and error rows: %s", page.body)
	}
}

func TestRefresherBoundsTheWait(t *testing.T) {
	release := make(chan struct{})
	reads := 0
	r := &refresher[int]{ttl: time.Hour, read: func(context.Context) (int, error) {
		reads++ // reads run one at a time
		<-release
		return 7, nil
	}}
	ctx := context.Background()
	for range 3 { // a read stuck in flight (the session is down): each caller waits 20 ms, then goes on
		if v, _, at := r.get(ctx, 20*time.Millisecond); v != 0 || !at.IsZero() {
			t.Fatalf("before the read ends: %d at %v, want nothing", v, at)
		}
	}
	close(release)
	if v, _, at := r.get(ctx, 5*time.Second); v != 7 || at.IsZero() {
		t.Fatalf("after the read ends: %d at %v, want 7", v, at)
	}
	if v, _, _ := r.get(ctx, 0); v != 7 || reads != 1 {
		t.Errorf("got %d after %d reads; want the cached 7 after one read", v, reads)
	}
}

func TestOverviewReplicationAndCollectors(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	rl, _ := replicator.NewLayout("/")
	if err := replicator.NewAdmin(f.session, rl).Create(ctx, "orders", replicator.TaskDef{Source: replDSN("repl", "1"),
		Target: replDSN("app", "2"), Include: []string{"shop.orders"}, ServerID: replicator.DefaultServerID("orders")}); err != nil {
		t.Fatal(err)
	}
	acl := zk.WorldACL(zk.PermAll)
	put := func(p string, v any) {
		t.Helper()
		if err := f.session.MakeDirs(ctx, parentOf(p)); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if _, err := f.conn.Create(p, b, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	put(rl.Status("orders"), replicator.Status{State: "running", LagSeconds: 3.5, EventsBehind: 7, Updated: now})
	ll, _ := logcollector.NewLayout("/")
	if err := logcollector.NewAdmin(f.session, ll).AddSource(ctx, "web1", "host-a", "/var/log/web1.log"); err != nil {
		t.Fatal(err)
	}
	put(ll.Collector("host-a"), logcollector.Assignment{Epoch: 1, Sources: []string{"web1"}})
	put(ll.Status("host-a"), logcollector.Status{State: "running", Host: "machine-a", Updated: now, Epoch: 1})
	if _, err := f.conn.Create(ll.Session("host-a"), []byte(`{}`), zk.FlagEphemeral, acl); err != nil { // host-a's process holds its id
		t.Fatal(err)
	}
	put(ll.Collector("host-b"), logcollector.Assignment{Epoch: 1})
	put(ll.Status("host-b"), logcollector.Status{State: "running", Updated: now.Add(-time.Hour), Epoch: 1})

	v := getOverview(t, f.login(t, "vic"))
	r := v.Platform.Replication
	if len(r.Tasks) != 1 || r.Tasks[0].Name != "orders" || r.Tasks[0].LagSeconds == nil || *r.Tasks[0].LagSeconds != 3.5 ||
		r.Tasks[0].EventsBehind != 7 || r.Tasks[0].Health == "" || len(r.ByHealth) != 1 || r.ByHealth[0].Count != 1 {
		t.Errorf("replication %+v; want orders with its health, 3.5 s and 7 events behind", r)
	}
	c := v.Platform.Collection
	if c.Sources != 1 || len(c.Collectors) != 2 || c.Collectors[0] != (CollectorSummary{"host-a", "machine-a", true, "running", 1}) ||
		c.Collectors[1] != (CollectorSummary{"host-b", "", false, "dead", 0}) {
		t.Errorf("collection %+v; want host-a on machine-a live with 1 source, host-b dead (no process holds it)", c)
	}
	if s := f.console.sampleNow(ctx); s.ReplLagSeconds == nil || *s.ReplLagSeconds != 3.5 {
		t.Errorf("sample %+v; want the replication lag 3.5 s", s)
	}
}
