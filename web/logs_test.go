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
	put(layout.Session("host-a"), map[string]any{"host": "machine-a", "pid": 7, "since": now}, zk.FlagEphemeral)
	put(layout.Clock(), map[string]any{"grace_ms": 10000}, 0)
	put(layout.Status("host-a"), logcollector.Status{State: "running", Updated: now, Epoch: 3, Host: "machine-a",
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
	if a, b := v.Collectors[0], v.Collectors[1]; a.ID != "host-a" || a.Host != "machine-a" || !a.Live || a.State != "running" ||
		a.Assignment.Epoch != 3 || !strings.Contains(a.Holder, "pid 7") ||
		b.ID != "host-b" || b.Live || b.State != logcollector.StateDead || b.Status.Epoch != 2 {
		t.Errorf("collectors: %+v %+v", a, b)
	}
	// web2's host has no live collector: it is unplaced, not lagging 0.
	if s := v.Sources[1]; !strings.Contains(s.Problem, "unplaced: no collector on host host-b") {
		t.Errorf("web2's problem: %q", s.Problem)
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

	// Collectors: drain and undrain (operators), remove a dead one, never a live one.
	expect(t, viewer.do("POST", "/api/v1/logs/collectors/host-a/drain", nil), http.StatusForbidden, "viewer drains")
	expect(t, op.do("POST", "/api/v1/logs/collectors/host-a/drain", nil), http.StatusOK, "drain")
	if ok, _, _ := f.conn.Exists(layout.Drained("host-a")); !ok {
		t.Error("drain made no drained node")
	}
	r = viewer.do("GET", "/api/v1/logs", nil)
	if json.Unmarshal([]byte(r.body), &v); !v.Collectors[0].Drained {
		t.Errorf("host-a not drained in the view: %+v", v.Collectors[0])
	}
	expect(t, op.do("POST", "/api/v1/logs/collectors/host-a/undrain", nil), http.StatusOK, "undrain")
	if ok, _, _ := f.conn.Exists(layout.Drained("host-a")); ok {
		t.Error("undrain left the drained node")
	}
	expect(t, op.do("POST", "/api/v1/logs/collectors/nosuch/drain", nil), http.StatusNotFound, "drain an unknown collector")
	r = op.do("DELETE", "/api/v1/logs/collectors/host-a", nil)
	if expect(t, r, http.StatusConflict, "remove a live collector"); !strings.Contains(r.body, "host-a") || !strings.Contains(r.body, "live") {
		t.Errorf("removing a live collector: %s", r.body)
	}
	expect(t, op.do("DELETE", "/api/v1/logs/collectors/host-b", nil), http.StatusOK, "remove a dead collector")
	if ok, _, _ := f.conn.Exists(layout.Collector("host-b")); ok {
		t.Error("host-b's node is still there")
	}
	expect(t, op.do("DELETE", "/api/v1/logs/collectors/host-b", nil), http.StatusNotFound, "remove it again")

	recs, _ := auditRecords(t, viewer)
	if rec := findAudit(t, recs, "logs.collector.drain", "host-a"); rec.Before.Exists || !rec.After.Exists {
		t.Errorf("drain record: before %+v after %+v", rec.Before, rec.After)
	}
	if rec := findAudit(t, recs, "logs.collector.undrain", "host-a"); !rec.Before.Exists || rec.After.Exists {
		t.Errorf("undrain record: before %+v after %+v", rec.Before, rec.After)
	}
	if rec := findAudit(t, recs, "logs.collector.remove", "host-b"); !rec.Before.Exists || rec.After.Exists {
		t.Errorf("remove record: before %+v after %+v", rec.Before, rec.After)
	}
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

	// A live collector (its session node, a status) gets Drain, then Undrain; a dead
	// one (no session) Remove. db1, of a host without a collector, shows unplaced.
	put := func(p string, v any, flags int32) {
		t.Helper()
		if err := f.session.MakeDirs(ctx, parentOf(p)); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if _, err := f.conn.Create(p, b, flags, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	put(layout.Collector("c1"), logcollector.Assignment{Epoch: 1}, 0)
	put(layout.Session("c1"), map[string]any{"host": "m1", "pid": 9}, zk.FlagEphemeral)
	put(layout.Status("c1"), logcollector.Status{State: "running", Host: "m1", Updated: time.Now()}, 0)
	put(layout.Collector("c2"), logcollector.Assignment{Epoch: 1}, 0)
	page = op.do("GET", "/logs", nil)
	if !strings.Contains(page.body, `action="/logs/collectors/c1/drain"`) || !strings.Contains(page.body, `action="/logs/collectors/c2/delete"`) ||
		strings.Contains(page.body, `action="/logs/collectors/c1/delete"`) {
		t.Errorf("the logs page does not offer Drain for the live collector and Remove for the dead one:\n%s", page.body)
	}
	if !strings.Contains(page.body, "unplaced: no collector on host h") {
		t.Error("the logs page does not show db1 unplaced")
	}
	if strings.Contains(viewer.do("GET", "/logs", nil).body, "/logs/collectors/c1/drain") {
		t.Error("the viewer is offered Drain")
	}
	r = op.form("/logs/collectors/c1/drain", url.Values{csrfField: {op.csrf}})
	if expect(t, r, http.StatusSeeOther, "drain form"); !strings.Contains(r.header.Get("Location"), "drained") {
		t.Errorf("drain form: redirected to %q", r.header.Get("Location"))
	}
	if page = op.do("GET", "/logs", nil); !strings.Contains(page.body, `action="/logs/collectors/c1/undrain"`) {
		t.Error("a drained collector is not offered Undrain")
	}
	r = op.form("/logs/collectors/c1/delete", url.Values{csrfField: {op.csrf}})
	if expect(t, r, http.StatusSeeOther, "remove a live one"); !strings.Contains(r.header.Get("Location"), "error=") {
		t.Errorf("removing a live collector from the form: redirected to %q", r.header.Get("Location"))
	}
	expect(t, op.form("/logs/collectors/c2/delete", url.Values{csrfField: {op.csrf}}), http.StatusSeeOther, "remove form")
	if ok, _, _ := f.conn.Exists(layout.Collector("c2")); ok {
		t.Error("the remove form left c2")
	}
}
