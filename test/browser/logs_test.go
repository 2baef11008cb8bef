package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/logcollector"
)

// TestLogsDrainCollector: two collectors (in this process) on one host share two
// sources; an operator drains c1 from the logs page: the page says so, c1 ends up
// drained with no source and c2 with both; Undrain gives c1 its share back. A source
// whose glob matches nothing shows that instead of a lag.
func TestLogsDrainCollector(t *testing.T) {
	h := start(t)
	layout, _ := logcollector.NewLayout("/")
	admin := logcollector.NewAdmin(h.session, layout)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := t.TempDir()
	for _, id := range []string{"app", "nginx"} {
		p := filepath.Join(dir, id, id+".log")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(id+" line\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := admin.AddSource(ctx, id, "web1", filepath.Join(filepath.Dir(p), "*.log")); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.AddSource(ctx, "empty", "web1", filepath.Join(dir, "nothing", "*.log")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c1", "c2"} {
		cfg := logcollector.DefaultConfig()
		cfg.Servers, cfg.ID, cfg.Host, cfg.Sink = []string{h.addr}, id, "web1", filepath.Join(dir, "sink-"+id)
		cfg.StatusInterval, cfg.PollInterval, cfg.Grace, cfg.RebalanceInterval = 100*time.Millisecond, 50*time.Millisecond, 2*time.Second, 100*time.Millisecond
		cfg.SessionTimeout = 4 * time.Second
		s, err := logcollector.New(cfg, testutil.TestLogger())
		if err != nil {
			t.Fatal(err)
		}
		h.runService(id, s.Run)
	}
	assigned := func(id string) int {
		v, err := admin.Collector(ctx, id)
		if err != nil || v.Assignment == nil {
			return -1
		}
		return len(v.Assignment.Sources)
	}
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool { return assigned("c1")+assigned("c2") == 3 && assigned("c1") > 0 },
		"the sources spread over c1 and c2")

	h.login("operator")
	h.open("/logs", `tr.collector[data-id="c1"]`)
	if r := row(h.rows("Sources"), "empty"); len(r) < 5 || !strings.Contains(r[4], "no file matches") {
		t.Errorf("source row of empty: %q, want no file matches in place of the lag", r)
	}
	h.navigate("drain c1", chromedp.Click(chromedp.CSS(`form[action="/logs/collectors/c1/drain"] button`)))
	if got := h.text(`p.flash`); !strings.Contains(got, "drained collector c1") {
		t.Errorf("after drain the page says %q", got)
	}
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool {
		v, _ := admin.Collector(ctx, "c1")
		return v.State == "drained" && assigned("c1") == 0 && assigned("c2") == 3
	}, "c1 drained, its sources on c2")
	h.open("/logs", `form[action="/logs/collectors/c1/undrain"]`)
	if c := row(h.rows("Collectors"), "c1"); len(c) < 3 || !strings.Contains(c[2], "drained") {
		t.Errorf("collector row of c1 after drain: %q", c)
	}
	h.navigate("undrain c1", chromedp.Click(chromedp.CSS(`form[action="/logs/collectors/c1/undrain"] button`)))
	testutil.Eventually(t, 20*time.Second, 100*time.Millisecond, func() bool { return assigned("c1") > 0 },
		"c1 undrained gets sources again")
	h.open("/logs", `form[action="/logs/collectors/c1/drain"]`)
	recs, _, err := h.conn.Children("/paddock/audit")
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, r := range recs {
		data, _, _ := h.conn.Get("/paddock/audit/" + r)
		var rec struct {
			Action, Target, User string
		}
		json.Unmarshal(data, &rec)
		actions = append(actions, fmt.Sprintf("%s %s %s", rec.User, rec.Action, rec.Target))
	}
	for _, want := range []string{"operator logs.collector.drain c1", "operator logs.collector.undrain c1"} {
		if !strings.Contains(strings.Join(actions, "\n"), want) {
			t.Errorf("audit log %q lacks %q", actions, want)
		}
	}
}
