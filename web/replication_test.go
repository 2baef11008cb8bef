package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/replicator"
)

// DSNs to unreachable addresses: nothing runs, the definitions are only stored.
const replSecret = "s3cr3t-Pw-9f2b"

func replDSN(user, port string) string {
	return user + ":" + replSecret + "@tcp(127.0.0.1:" + port + ")/"
}

func TestReplicationAPI(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	layout, _ := replicator.NewLayout("/")
	adm := replicator.NewAdmin(f.session, layout)
	if err := adm.Create(ctx, "orders", replicator.TaskDef{Source: replDSN("repl", "1"), Target: replDSN("app", "2"),
		Include: []string{"shop.orders"}, ServerID: replicator.DefaultServerID("orders")}); err != nil {
		t.Fatal(err)
	}
	// The password is stored: the checks below that it is never shown can fail.
	if data, _, err := f.conn.Get(layout.Task("orders")); err != nil || !strings.Contains(string(data), replSecret) {
		t.Fatalf("stored definition %q, %v: want the password in it", data, err)
	}
	var bodies []string
	keep := func(r response) response { bodies = append(bodies, r.body); return r }

	viewer := f.login(t, "vic")
	r := keep(viewer.do("GET", "/api/v1/replication", nil))
	expect(t, r, http.StatusOK, "list")
	if tasks := r.json["tasks"].([]any); len(tasks) != 1 || !strings.Contains(r.body, `repl:****@tcp(127.0.0.1:1)`) {
		t.Fatalf("list: %s", r.body)
	}
	r = keep(viewer.do("GET", "/api/v1/replication/orders", nil))
	expect(t, r, http.StatusOK, "get")
	if r.json["name"] != "orders" || !strings.Contains(r.body, "shop.orders") {
		t.Errorf("get: %s", r.body)
	}
	expect(t, viewer.do("GET", "/api/v1/replication/nope", nil), http.StatusNotFound, "get missing")
	expect(t, viewer.do("GET", "/api/v1/replication/-bad", nil), http.StatusBadRequest, "get bad name")

	create := map[string]any{"name": "users", "source": replDSN("repl", "3"), "target": replDSN("app", "4"),
		"exclude": []string{"shop.tmp_*"}}
	op := f.login(t, "olga")
	admin := f.login(t, "ada")
	// Roles: viewers change nothing, operators only enable and disable.
	expect(t, viewer.do("POST", "/api/v1/replication/orders/enable", nil), http.StatusForbidden, "viewer enables")
	expect(t, op.do("POST", "/api/v1/replication", create), http.StatusForbidden, "operator creates")
	expect(t, op.do("PUT", "/api/v1/replication/orders", map[string]any{"include": []string{}}), http.StatusForbidden, "operator updates")
	expect(t, op.do("DELETE", "/api/v1/replication/orders", nil), http.StatusForbidden, "operator deletes")
	token := admin.csrf
	admin.csrf = ""
	expect(t, admin.do("POST", "/api/v1/replication", create), http.StatusForbidden, "create without CSRF")
	admin.csrf = token

	r = keep(admin.do("POST", "/api/v1/replication", map[string]any{"name": "bad", "source": replDSN("repl", "3")}))
	if expect(t, r, http.StatusBadRequest, "create without target"); !strings.Contains(r.body, "target") {
		t.Errorf("bad create: %s does not name the field", r.body)
	}
	if _, err := adm.Get(ctx, "bad"); err == nil {
		t.Error("a bad definition was created")
	}
	r = keep(admin.do("POST", "/api/v1/replication", create))
	expect(t, r, http.StatusCreated, "create")
	got, err := adm.Get(ctx, "users")
	if err != nil || got.Def.ServerID != replicator.DefaultServerID("users") || got.Def.Enabled {
		t.Fatalf("created: %+v, %v", got, err)
	}
	expect(t, keep(admin.do("POST", "/api/v1/replication", create)), http.StatusConflict, "create again")

	r = keep(admin.do("PUT", "/api/v1/replication/users", map[string]any{"include": []string{"shop.*"}, "server_id": 777}))
	expect(t, r, http.StatusOK, "update")
	if got, _ := adm.Get(ctx, "users"); got.Def.ServerID != 777 || len(got.Def.Include) != 1 || len(got.Def.Exclude) != 1 {
		t.Errorf("updated: %+v", got.Def)
	}
	expect(t, keep(admin.do("PUT", "/api/v1/replication/users", map[string]any{"target": "nonsense"})), http.StatusBadRequest, "bad update")
	expect(t, admin.do("PUT", "/api/v1/replication/nope", map[string]any{"server_id": 5}), http.StatusNotFound, "update missing")

	expect(t, keep(op.do("POST", "/api/v1/replication/users/enable", nil)), http.StatusOK, "enable")
	if got, _ := adm.Get(ctx, "users"); !got.Def.Enabled {
		t.Error("not enabled")
	}
	expect(t, keep(admin.do("DELETE", "/api/v1/replication/users", nil)), http.StatusConflict, "delete enabled")
	expect(t, keep(op.do("POST", "/api/v1/replication/users/disable", nil)), http.StatusOK, "disable")
	expect(t, keep(admin.do("DELETE", "/api/v1/replication/users", nil)), http.StatusOK, "delete")
	if _, err := adm.Get(ctx, "users"); err == nil {
		t.Error("users still exists")
	}

	recs, body := auditRecords(t, viewer)
	bodies = append(bodies, body)
	for _, a := range []string{"replication.create", "replication.update", "replication.enable", "replication.disable", "replication.delete"} {
		rec := findAudit(t, recs, a, "users")
		if rec.Before == nil || rec.After == nil {
			t.Errorf("%s: before %v after %v", a, rec.Before, rec.After)
		}
	}
	if rec := findAudit(t, recs, "replication.enable", "users"); !strings.Contains(rec.Before.Data, `"enabled":false`) ||
		!strings.Contains(rec.After.Data, `"enabled":true`) || !strings.Contains(rec.After.Data, "****") {
		t.Errorf("enable record: before %+v after %+v", rec.Before, rec.After)
	}
	if rec := findAudit(t, recs, "replication.delete", "users"); !rec.Before.Exists || rec.After.Exists {
		t.Errorf("delete record: before %+v after %+v", rec.Before, rec.After)
	}

	for _, p := range []string{"/replication", "/replication/orders", "/audit"} {
		page := admin.do("GET", p, nil)
		expect(t, page, http.StatusOK, "page "+p)
		bodies = append(bodies, page.body)
	}
	for i, b := range bodies {
		if strings.Contains(b, replSecret) {
			t.Errorf("answer %d shows the password: %s", i, b)
		}
	}
}

func TestReplicationPages(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	layout, _ := replicator.NewLayout("/")
	adm := replicator.NewAdmin(f.session, layout)
	if err := adm.Create(ctx, "orders", replicator.TaskDef{Source: replDSN("repl", "1"), Target: replDSN("app", "2"),
		ServerID: 42}); err != nil {
		t.Fatal(err)
	}
	viewer := f.login(t, "vic")
	page := viewer.do("GET", "/replication/orders", nil)
	if expect(t, page, http.StatusOK, "task page"); strings.Contains(page.body, "/enable") || !strings.Contains(page.body, "No instance") {
		t.Error("the viewer's task page shows the enable button, or no empty instance list")
	}
	expect(t, viewer.do("GET", "/replication/nope", nil), http.StatusNotFound, "missing task page")

	op := f.login(t, "olga")
	if page := op.do("GET", "/replication", nil); strings.Contains(page.body, `action="/replication"`) {
		t.Error("the operator's page shows the create form")
	}
	r := op.form("/replication/orders/enable", url.Values{csrfField: {op.csrf}})
	expect(t, r, http.StatusSeeOther, "enable form")
	if got, _ := adm.Get(ctx, "orders"); !got.Def.Enabled {
		t.Error("the form did not enable the task")
	}
	expect(t, op.form("/replication/orders/delete", url.Values{csrfField: {op.csrf}}), http.StatusForbidden, "operator's delete form")

	admin := f.login(t, "ada")
	if page := admin.do("GET", "/replication", nil); !strings.Contains(page.body, `action="/replication"`) {
		t.Error("the admin's page has no create form")
	}
	r = admin.form("/replication", url.Values{csrfField: {admin.csrf}, "name": {"users"}, "source": {replDSN("r", "3")},
		"target": {replDSN("a", "4")}, "include": {"shop.users\r\nshop.roles"}, "server_id": {""}})
	expect(t, r, http.StatusSeeOther, "create form")
	got, err := adm.Get(ctx, "users")
	if err != nil || len(got.Def.Include) != 2 || got.Def.ServerID != replicator.DefaultServerID("users") {
		t.Fatalf("task from the form: %+v, %v", got, err)
	}
	if strings.Contains(r.header.Get("Location"), replSecret) {
		t.Error("the redirect shows the password")
	}

	// The edit form: an empty DSN keeps the stored one (its password included), the
	// lists are replaced; an operator may not use it.
	page = admin.do("GET", "/replication/users", nil)
	if !strings.Contains(page.body, `action="/replication/users/edit"`) || strings.Contains(page.body, replSecret) {
		t.Fatal("the admin's task page has no edit form, or shows the password")
	}
	expect(t, op.form("/replication/users/edit", url.Values{csrfField: {op.csrf}, "include": {"x.*"}}),
		http.StatusForbidden, "operator's edit form")
	expect(t, admin.form("/replication/users/edit", url.Values{csrfField: {admin.csrf}, "include": {"shop.*"},
		"server_id": {"77"}}), http.StatusSeeOther, "edit form")
	raw, _, err := f.session.Conn().Get(layout.Task("users"))
	if err != nil || !strings.Contains(string(raw), replSecret) || !strings.Contains(string(raw), `"shop.*"`) ||
		!strings.Contains(string(raw), `"server_id":77`) {
		t.Fatalf("after the edit the stored definition is %s (%v); want the old DSNs with their password, include shop.*, server id 77", raw, err)
	}
	if r := admin.form("/replication/users/edit", url.Values{csrfField: {admin.csrf}, "include": {"["}}); r.status != http.StatusSeeOther ||
		!strings.Contains(r.header.Get("Location"), "include") {
		t.Errorf("a bad include: %d %s; want the page again with an error naming include", r.status, r.header.Get("Location"))
	}
}

// TestReplicationHealth: the console judges a task when it reads it, by the
// coordination server's clock, whatever replicator processes live. A task nobody runs
// is unserved with no lag (never 0); a task whose instance stops reporting turns stale
// and its lag grows past the last reported one. A task whose source and target are one
// server is refused with 400.
func TestReplicationHealth(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	layout, _ := replicator.NewLayout("/")
	adm := replicator.NewAdmin(f.session, layout)
	if err := adm.Create(ctx, "never", replicator.TaskDef{Source: replDSN("repl", "1"), Target: replDSN("app", "2"),
		ServerID: 42, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	viewer := f.login(t, "vic")
	r := viewer.do("GET", "/api/v1/replication/never", nil)
	expect(t, r, http.StatusOK, "get")
	h, _ := r.json["health"].(map[string]any)
	if h["state"] != "unserved" || h["lag_seconds"] != nil || h["clock"] != "server" {
		t.Errorf("a task nobody runs: health %v, want unserved, lag_seconds null, judged by the server's clock", h)
	}
	page := viewer.do("GET", "/replication/never", nil)
	if !strings.Contains(page.body, "unserved") || !strings.Contains(page.body, "unknown (nothing applied yet)") {
		t.Errorf("the task page does not say unserved with an unknown lag:\n%s", page.body)
	}

	// An instance that reported once, lag 0, then stopped (its process hangs).
	inst := layout.Instance("never", "h_0000000001")
	if _, err := f.conn.Create(inst, []byte(`{"host":"h","state":"running"}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	st := `{"state":"running","instance":"h_0000000001","position":{"file":"bin.000001","pos":4,"ts":"2026-01-01T00:00:00Z"},"lag_seconds":0}`
	if _, err := f.conn.Create(layout.Status("never"), []byte(st), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var last map[string]any
	testutil.Eventually(t, 3*replicator.StaleAfter, 200*time.Millisecond, func() bool {
		r := viewer.do("GET", "/api/v1/replication/never", nil)
		last, _ = r.json["health"].(map[string]any)
		return last["state"] == "stale"
	}, "the task turns stale: %v", &last)
	if lag, ok := last["lag_seconds"].(float64); !ok || lag < replicator.StaleAfter.Seconds() {
		t.Errorf("stale with lag %v, want at least %v: it grows while nothing applies", last["lag_seconds"], replicator.StaleAfter)
	}
	if list := viewer.do("GET", "/replication", nil); !strings.Contains(list.body, "stale") {
		t.Error("the list page does not say stale")
	}

	admin := f.login(t, "ada")
	r = admin.do("POST", "/api/v1/replication", map[string]any{"name": "loop",
		"source": "repl:x@tcp(127.0.0.1:5)/", "target": "app:y@tcp(localhost:5)/"})
	if expect(t, r, http.StatusBadRequest, "create onto its source"); !strings.Contains(r.body, "same server") {
		t.Errorf("refusal %s does not say the same server", r.body)
	}
	r = admin.do("PUT", "/api/v1/replication/never", map[string]any{"target": replDSN("app", "1")})
	if expect(t, r, http.StatusBadRequest, "update onto its source"); !strings.Contains(r.body, "same server") {
		t.Errorf("refusal %s does not say the same server", r.body)
	}
}
