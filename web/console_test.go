package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/crypto/bcrypt"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
)

// testUsers are the accounts of every test console; each one's password is "pw-" + name.
var testUsers = []struct{ name, role string }{{"ada", "admin"}, {"olga", "operator"}, {"vic", "viewer"}}

func testConfig(t *testing.T, addr string) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Servers = []string{addr}
	cfg.Listen = "127.0.0.1:0"
	for _, u := range testUsers {
		h, err := bcrypt.GenerateFromPassword([]byte("pw-"+u.name), bcrypt.MinCost) // fast
		if err != nil {
			t.Fatal(err)
		}
		cfg.Users = append(cfg.Users, u.name+":"+u.role+":"+string(h))
	}
	return cfg
}

type fixture struct {
	console *Console
	session *coordinator.Session // signs as the console, with keys
	conn    *zk.Conn
	url     string
	keys    *testutil.Keys
}

// startConsole starts a paddock server, a session on it and a console served by
// httptest, all closed when the test ends.
func startConsole(t *testing.T) *fixture {
	t.Helper()
	return startConsoleOn(t, testutil.StartPaddock(t, nil), nil)
}

// startConsoleOn starts a session on the server at addr and a console served by
// httptest, its config adjusted by configure if not nil.
func startConsoleOn(t *testing.T, addr string, configure func(*Config)) *fixture {
	t.Helper()
	return startConsoleAs(t, addr, coordinator.Config{}, configure)
}

// client is a browser-like client: a cookie jar, no redirects followed.
type client struct {
	t    *testing.T
	base string
	http *http.Client
	csrf string
}

func (f *fixture) client(t *testing.T) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: f.url, http: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// login logs in as name and fails the test unless it works.
func (f *fixture) login(t *testing.T, name string) *client {
	t.Helper()
	cl := f.client(t)
	resp := cl.do("POST", "/api/v1/login", map[string]string{"user": name, "password": "pw-" + name})
	if resp.status != http.StatusOK {
		t.Fatalf("login %s: %d %s", name, resp.status, resp.body)
	}
	cl.csrf = resp.json["csrf_token"].(string)
	return cl
}

type response struct {
	status int
	header http.Header
	body   string
	json   map[string]any
}

// do sends a JSON request (body nil for none) with the client's CSRF token.
func (cl *client) do(method, path string, body any) response {
	cl.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, cl.base+path, rd)
	if cl.csrf != "" {
		req.Header.Set(csrfHeader, cl.csrf)
	}
	return cl.send(req)
}

// form posts a form; the CSRF field is the caller's.
func (cl *client) form(path string, v url.Values) response {
	cl.t.Helper()
	req, _ := http.NewRequest("POST", cl.base+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return cl.send(req)
}

func (cl *client) send(req *http.Request) response {
	cl.t.Helper()
	resp, err := cl.http.Do(req)
	if err != nil {
		cl.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, body: string(b)}
	_ = json.Unmarshal(b, &r.json)
	return r
}

func expect(t *testing.T, r response, status int, what string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
}

func TestLogin(t *testing.T) {
	f := startConsole(t)
	cl := f.login(t, "ada")
	expect(t, cl.do("GET", "/api/v1/znode?path=/", nil), http.StatusOK, "read after login")
	expect(t, cl.do("POST", "/api/v1/logout", nil), http.StatusOK, "logout")
	expect(t, cl.do("GET", "/api/v1/znode?path=/", nil), http.StatusUnauthorized, "read after logout")

	anon := f.client(t)
	bad := map[string]string{"user": "olga", "password": "wrong"}
	for i := range loginFreeFailures {
		expect(t, anon.do("POST", "/api/v1/login", bad), http.StatusUnauthorized, fmt.Sprintf("wrong password %d", i))
	}
	r := anon.do("POST", "/api/v1/login", map[string]string{"user": "olga", "password": "pw-olga"})
	expect(t, r, http.StatusTooManyRequests, "login after 3 failures, even with the right password")
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q, want seconds", ra)
	}
	// The limit is per user and address: another user from the same address is not blocked.
	expect(t, anon.do("POST", "/api/v1/login", map[string]string{"user": "vic", "password": "pw-vic"}),
		http.StatusOK, "other user from the same address")
}

func TestWithoutSession(t *testing.T) {
	f := startConsole(t)
	anon := f.client(t)
	r := anon.do("GET", "/api/v1/znodes?path=/", nil)
	expect(t, r, http.StatusUnauthorized, "API without session")
	if r.json["error"] == nil {
		t.Errorf("401 body %q: want a JSON error", r.body)
	}
	for _, page := range []string{"/", "/znodes?path=/", "/audit", "/nonexistent"} {
		r := anon.do("GET", page, nil)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login" {
			t.Errorf("GET %s: %d to %q, want 303 to /login", page, r.status, r.header.Get("Location"))
		}
	}
	expect(t, anon.do("GET", "/login", nil), http.StatusOK, "login page")
	expect(t, anon.do("GET", "/static/console.css", nil), http.StatusOK, "stylesheet")
	// A forged session cookie is no session.
	u, _ := url.Parse(f.url)
	anon.http.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: "forged"}})
	expect(t, anon.do("GET", "/api/v1/znode?path=/", nil), http.StatusUnauthorized, "forged cookie")
}

func TestRolesAndCSRF(t *testing.T) {
	f := startConsole(t)
	viewer := f.login(t, "vic")
	expect(t, viewer.do("GET", "/api/v1/znode?path=/", nil), http.StatusOK, "viewer reads")
	expect(t, viewer.do("POST", "/api/v1/znode", map[string]any{"path": "/v"}), http.StatusForbidden, "viewer creates")
	expect(t, viewer.do("DELETE", "/api/v1/znode?path=/paddock", nil), http.StatusForbidden, "viewer deletes")
	if page := viewer.do("GET", "/znodes?path=/", nil); strings.Contains(page.body, `action="/znodes/create"`) {
		t.Error("the viewer's page shows the create form")
	}

	op := f.login(t, "olga")
	token := op.csrf
	op.csrf = ""
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/a"}), http.StatusForbidden, "no CSRF token")
	op.csrf = "wrong"
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/a"}), http.StatusForbidden, "wrong CSRF token")
	expect(t, op.form("/znodes/create", url.Values{"parent": {"/"}, "name": {"a"}}), http.StatusForbidden, "form without token")
	if ok, _, _ := f.conn.Exists("/a"); ok {
		t.Fatal("/a created without a CSRF token")
	}
	op.csrf = token
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/a"}), http.StatusCreated, "with the token")
	r := op.form("/znodes/create", url.Values{csrfField: {token}, "parent": {"/a"}, "name": {"b"}, "data": {"x"}})
	expect(t, r, http.StatusSeeOther, "form create")
	if data, _, err := f.conn.Get("/a/b"); err != nil || string(data) != "x" {
		t.Fatalf("/a/b after the form: %q, %v", data, err)
	}
}

func TestZnodeCRUD(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/app", "data": "v1"}), http.StatusCreated, "create")
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/app"}), http.StatusConflict, "create again")
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/app/bin", "data": "AAEC/w==", "data_encoding": "base64"}),
		http.StatusCreated, "create binary")
	r := op.do("POST", "/api/v1/znode", map[string]any{"path": "/app/seq-", "flags": "sequential"})
	expect(t, r, http.StatusCreated, "create sequential")
	if p, _ := r.json["path"].(string); p != "/app/seq-0000000001" {
		t.Errorf("sequential path %q", p)
	}

	r = op.do("GET", "/api/v1/znode?path=/app", nil)
	expect(t, r, http.StatusOK, "get")
	if r.json["text"] != "v1" || r.json["data"] != "djE=" || r.json["stat"].(map[string]any)["version"] != 0.0 {
		t.Errorf("get /app: %s", r.body)
	}
	if r := op.do("GET", "/api/v1/znode?path=/app/bin", nil); r.json["text"] != nil || r.json["data"] != "AAEC/w==" {
		t.Errorf("get /app/bin: %s", r.body)
	}

	expect(t, op.do("PUT", "/api/v1/znode", map[string]any{"path": "/app", "data": "v2", "version": 0}), http.StatusOK, "set v0")
	r = op.do("PUT", "/api/v1/znode", map[string]any{"path": "/app", "data": "v3", "version": 0})
	expect(t, r, http.StatusConflict, "set stale version")
	if r.json["version"] != 1.0 {
		t.Errorf("conflict answer %s: want the current version 1", r.body)
	}

	expect(t, op.do("DELETE", "/api/v1/znode?path=/app", nil), http.StatusConflict, "delete with children")
	expect(t, op.do("DELETE", "/api/v1/znode?path=/app&recursive=true", nil), http.StatusBadRequest, "recursive without confirm")
	expect(t, op.do("DELETE", "/api/v1/znode?path=/app&recursive=true&confirm=/ap", nil), http.StatusBadRequest, "wrong confirm")
	r = op.do("DELETE", "/api/v1/znode?path=/app&recursive=true&confirm=/app", nil)
	expect(t, r, http.StatusOK, "recursive delete")
	if r.json["deleted"] != 3.0 {
		t.Errorf("deleted %v, want 3", r.json["deleted"])
	}
	expect(t, op.do("GET", "/api/v1/znode?path=/app", nil), http.StatusNotFound, "get deleted")

	for _, bad := range []string{"app", "/a//b", "/a/", "/a/../b", "/a/%01"} {
		r := op.do("GET", "/api/v1/znode?path="+bad, nil)
		expect(t, r, http.StatusBadRequest, "bad path "+bad)
		if e, _ := r.json["error"].(string); !strings.Contains(e, "path") {
			t.Errorf("bad path %s: error %q does not name the path", bad, e)
		}
	}
	expect(t, op.do("DELETE", "/api/v1/znode?path=/", nil), http.StatusBadRequest, "delete root")
}

// TestPagingManyChildren: a node with 100k children stays usable: one getChildren,
// sorted and paged, as the issue asks (zkui could not open a node with 312k children).
func TestPagingManyChildren(t *testing.T) {
	f := startConsole(t)
	const n = 100_000
	if _, err := f.conn.Create("/big", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 1000 {
		ops := make([]any, 0, 1000)
		for i := lo; i < lo+1000; i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/big/c%05d", i), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := f.conn.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	cl := f.login(t, "ada")
	r := cl.do("GET", "/api/v1/znodes?path=/big", nil)
	expect(t, r, http.StatusOK, "first page")
	kids := r.json["children"].([]any)
	if len(kids) != 100 || kids[0] != "c00000" || kids[99] != "c00099" || r.json["total"] != float64(n) || r.json["next"] != 100.0 {
		t.Fatalf("first page: %d children from %v, total %v, next %v", len(kids), kids[0], r.json["total"], r.json["next"])
	}
	r = cl.do("GET", fmt.Sprintf("/api/v1/znodes?path=/big&offset=%d&limit=1000", n-500), nil)
	kids = r.json["children"].([]any)
	if len(kids) != 500 || kids[0] != fmt.Sprintf("c%05d", n-500) || r.json["next"] != nil {
		t.Fatalf("last page: %d children from %v, next %v", len(kids), kids[0], r.json["next"])
	}
	expect(t, cl.do("GET", "/api/v1/znodes?path=/big&limit=5000", nil), http.StatusBadRequest, "limit too big")
	page := cl.do("GET", "/znodes?path=/big&offset=200", nil)
	if !strings.Contains(page.body, ">c00299<") || strings.Contains(page.body, ">c00300<") || !strings.Contains(page.body, "offset=300") {
		t.Error("page 3 of /big does not list c00200..c00299 with a next link")
	}
	r = cl.do("DELETE", "/api/v1/znode?path=/big&recursive=true&confirm=/big", nil)
	if expect(t, r, http.StatusOK, "recursive delete of 100k"); r.json["deleted"] != float64(n+1) {
		t.Errorf("deleted %v", r.json["deleted"])
	}
}

func TestPageEscapesHTML(t *testing.T) {
	f := startConsole(t)
	acl := zk.WorldACL(zk.PermAll)
	const evil = `<img src=x onerror=alert(1)>`
	for _, p := range []string{"/esc", "/esc/" + evil} {
		if _, err := f.conn.Create(p, []byte(`<b onmouseover="x()">bold</b>`), 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	cl := f.login(t, "ada")
	for _, p := range []string{"/esc", "/esc/" + evil} {
		page := cl.do("GET", "/znodes?path="+url.QueryEscape(p), nil)
		expect(t, page, http.StatusOK, "page "+p)
		if strings.Contains(page.body, "<img src=x") || strings.Contains(page.body, "<b onmouseover") {
			t.Errorf("page %s has unescaped HTML from the znode", p)
		}
		if !strings.Contains(page.body, "&lt;b onmouseover=") {
			t.Errorf("page %s does not show the data escaped", p)
		}
	}
	if page := cl.do("GET", "/znodes?path=/esc", nil); !strings.Contains(page.body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the child's name is not shown escaped")
	}
}

func TestAuditRecordsEdit(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/cfg", "data": "old"}), http.StatusCreated, "create")
	r := op.do("PUT", "/api/v1/znode", map[string]any{"path": "/cfg", "data": "new", "version": 0})
	expect(t, r, http.StatusOK, "set")
	if e := r.header.Get("X-Audit-Error"); e != "" {
		t.Fatalf("X-Audit-Error: %s", e)
	}

	viewer := f.login(t, "vic")
	r = viewer.do("GET", "/api/v1/audit?limit=1", nil)
	expect(t, r, http.StatusOK, "audit")
	var got struct{ Records []AuditRecord }
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || len(got.Records) != 1 {
		t.Fatalf("audit answer %s: %v", r.body, err)
	}
	rec := got.Records[0]
	if rec.User != "olga" || rec.Role != "operator" || rec.Action != "znode.set" || rec.Target != "/cfg" || rec.Method != "PUT" {
		t.Errorf("record %+v", rec)
	}
	if rec.Before == nil || rec.Before.Data != "old" || rec.Before.Version != 0 ||
		rec.After == nil || rec.After.Data != "new" || rec.After.Version != 1 {
		t.Errorf("before %+v after %+v: want old@0 then new@1", rec.Before, rec.After)
	}
	r = viewer.do("GET", fmt.Sprintf("/api/v1/audit?before=%d", rec.Seq), nil)
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || len(got.Records) != 1 || got.Records[0].Action != "znode.create" {
		t.Errorf("records before %d: %s", rec.Seq, r.body)
	}
	if page := viewer.do("GET", "/audit", nil); !strings.Contains(page.body, "znode.set") {
		t.Error("the audit page does not list the edit")
	}
}

func TestOverviewWithoutAdminAddr(t *testing.T) {
	f := startConsole(t)
	page := f.login(t, "vic").do("GET", "/", nil)
	expect(t, page, http.StatusOK, "overview")
	// Without an admin port the member is probed with srvr on its client port.
	if !strings.Contains(page.body, `<td class="mode">standalone</td>`) || !strings.Contains(page.body, "<td>4lw</td>") {
		t.Errorf("the overview does not show the standalone member probed with 4lw: %s", page.body)
	}
	if s := f.login(t, "vic").do("GET", "/server", nil); !strings.Contains(s.body, "No admin address configured") {
		t.Errorf("the server figures page does not say mntr is skipped: %s", s.body)
	}
}

func TestRunShutsDown(t *testing.T) {
	f := startConsole(t)
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.console.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.console.Run(ctx) }()
	resp, err := http.Get("http://" + f.console.Addr().String() + "/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /login: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
