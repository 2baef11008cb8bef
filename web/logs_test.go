package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/logcollector"
)

func TestLogsAPI(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	layout, _ := logcollector.NewLayout("/")
	adm := logcollector.NewAdmin(f.session, layout)
	const evilPath = `/var/log/<b onclick=x()>/*.log`
	if err := adm.AddSource(ctx, "web1", "host-a", evilPath); err != nil {
		t.Fatal(err)
	}
	if err := adm.AddSource(ctx, "web2", "host-b", "/var/log/web2.log"); err != nil {
		t.Fatal(err)
	}
	// Two fake collectors, host-a live and host-b stale, and an elected rebalancer.
	acl := zk.WorldACL(zk.PermAll)
	put := func(p string, v any, flags int32) {
		t.Helper()
		if err := f.session.MakeDirs(ctx, parentOf(p)); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if _, err := f.conn.Create(p, b, flags, acl); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	put(layout.Collector("host-a"), logcollector.Assignment{Epoch: 3, Sources: []string{"web1"}}, 0)
	put(layout.Status("host-a"), logcollector.Status{State: "running", Updated: now, Epoch: 3,
		Sources: map[string]logcollector.SourceStatus{"web1": {Epoch: 3, LagBytes: 42}}}, 0)
	put(layout.Collector("host-b"), logcollector.Assignment{Epoch: 2}, 0)
	put(layout.Status("host-b"), logcollector.Status{State: "running", Updated: now.Add(-time.Minute), Epoch: 2}, 0)
	put(layout.Rebalancer(), map[string]any{"host": "host-a", "pid": 7}, zk.FlagEphemeral)

	viewer := f.login(t, "vic")
	r := viewer.do("GET", "/api/v1/logs", nil)
	expect(t, r, http.StatusOK, "logs")
	var v LogsView
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Rebalancer["host"] != "host-a" || v.Total != 2 || len(v.Sources) != 2 || len(v.Collectors) != 2 {
		t.Fatalf("logs: %s", r.body)
	}
	if s := v.Sources[0]; s.ID != "web1" || s.Collector != "host-a" || s.LagBytes != 42 || s.Path != evilPath {
		t.Errorf("web1: %+v", s)
	}
	if s := v.Sources[1]; s.Collector != "" {
		t.Errorf("web2: %+v, want unassigned", s)
	}
	if a, b := v.Collectors[0], v.Collectors[1]; a.Host != "host-a" || !a.Live || a.Assignment.Epoch != 3 ||
		b.Host != "host-b" || b.Live || b.Status.Epoch != 2 {
		t.Errorf("collectors: %+v %+v", a, b)
	}
	r = viewer.do("GET", "/api/v1/logs?offset=1&limit=1", nil)
	if err := json.Unmarshal([]byte(r.body), &v); err != nil || len(v.Sources) != 1 || v.Sources[0].ID != "web2" || v.Next != nil {
		t.Errorf("second page: %s", r.body)
	}

	src := map[string]string{"id": "db1", "host": "host-c", "path": "/var/log/mysql/*.log"}
	expect(t, viewer.do("POST", "/api/v1/logs/sources", src), http.StatusForbidden, "viewer adds")
	expect(t, viewer.do("DELETE", "/api/v1/logs/sources/web1", nil), http.StatusForbidden, "viewer removes")
	op := f.login(t, "olga")
	token := op.csrf
	op.csrf = ""
	expect(t, op.do("POST", "/api/v1/logs/sources", src), http.StatusForbidden, "add without CSRF")
	op.csrf = token
	for _, bad := range []struct {
		body  map[string]string
		field string
	}{
		{map[string]string{"id": "-x", "host": "h", "path": "/a"}, "id"},
		{map[string]string{"id": "x", "host": " ", "path": "/a"}, "host"},
		{map[string]string{"id": "x", "host": "h", "path": "rel/*.log"}, "path"},
		{map[string]string{"id": "x", "host": "h", "path": "/a/[z"}, "path"},
	} {
		r := op.do("POST", "/api/v1/logs/sources", bad.body)
		if expect(t, r, http.StatusBadRequest, "bad source "+bad.field); !strings.Contains(r.body, bad.field) {
			t.Errorf("bad %s: %s does not name the field", bad.field, r.body)
		}
	}
	expect(t, op.do("POST", "/api/v1/logs/sources", src), http.StatusCreated, "add")
	expect(t, op.do("POST", "/api/v1/logs/sources", src), http.StatusConflict, "add again")
	if sources, _ := adm.Sources(ctx); len(sources) != 3 {
		t.Fatalf("%d sources, want 3", len(sources))
	}
	expect(t, op.do("DELETE", "/api/v1/logs/sources/web2", nil), http.StatusOK, "remove")
	expect(t, op.do("DELETE", "/api/v1/logs/sources/web2", nil), http.StatusNotFound, "remove again")

	recs, _ := auditRecords(t, viewer)
	if rec := findAudit(t, recs, "logs.source.add", "db1"); rec.Before.Exists || !strings.Contains(rec.After.Data, "host-c") {
		t.Errorf("add record: before %+v after %+v", rec.Before, rec.After)
	}
	if rec := findAudit(t, recs, "logs.source.remove", "web2"); !strings.Contains(rec.Before.Data, "web2.log") || rec.After.Exists {
		t.Errorf("remove record: before %+v after %+v", rec.Before, rec.After)
	}
}

func TestLogsPage(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	layout, _ := logcollector.NewLayout("/")
	adm := logcollector.NewAdmin(f.session, layout)
	const evil = `<script>alert(1)</script>`
	if err := adm.AddSource(ctx, "web1", "host-a", "/var/log/"+evil+".log"); err != nil {
		t.Fatal(err)
	}
	viewer := f.login(t, "vic")
	page := viewer.do("GET", "/logs", nil)
	expect(t, page, http.StatusOK, "logs page")
	if strings.Contains(page.body, evil) || !strings.Contains(page.body, "/var/log/&lt;script&gt;") {
		t.Error("the logs page does not show the source path escaped")
	}
	if !strings.Contains(page.body, "No rebalancer") || strings.Contains(page.body, `action="/logs/sources"`) {
		t.Error("the logs page does not say there is no rebalancer, or shows the viewer the add form")
	}

	op := f.login(t, "olga")
	expect(t, op.form("/logs/sources", url.Values{"id": {"db1"}, "host": {"h"}, "path": {"/x.log"}}), http.StatusForbidden, "form without CSRF")
	r := op.form("/logs/sources", url.Values{csrfField: {op.csrf}, "id": {"db1"}, "host": {"h"}, "path": {"/x.log"}})
	expect(t, r, http.StatusSeeOther, "add form")
	r = op.form("/logs/sources/web1/delete", url.Values{csrfField: {op.csrf}})
	expect(t, r, http.StatusSeeOther, "remove form")
	sources, err := adm.Sources(ctx)
	if err != nil || len(sources) != 1 || sources[0].ID != "db1" {
		t.Errorf("sources after the forms: %+v, %v", sources, err)
	}
}
