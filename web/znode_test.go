package web

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// startConsoleAs starts a console on the server at addr whose session is cc (its
// servers set to addr, signing with the console's key of new keys, which it trusts).
func startConsoleAs(t *testing.T, addr string, cc coordinator.Config, configure func(*Config)) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys := testutil.NewKeys(t)
	cc.Servers, cc.SessionTimeout = []string{addr}, 10*time.Second
	cc.Signer, cc.Trust = keys.Signer(coordinator.RoleConsole), keys.Trust()
	s, err := coordinator.Connect(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg := testConfig(t, addr)
	if configure != nil {
		configure(&cfg)
	}
	c, err := New(cfg, s, testutil.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return &fixture{console: c, session: s, conn: s.Conn(), url: srv.URL, keys: keys}
}

// zkAs connects a plain client to addr with digest credentials user:password.
func zkAs(t *testing.T, addr, user, password string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(zkQuiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if user != "" {
		if err := conn.AddAuth("digest", []byte(user+":"+password)); err != nil {
			t.Fatal(err)
		}
	}
	return conn
}

type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// noForms fails unless the page body has no edit, create, delete or ACL form.
func noForms(t *testing.T, what, body string) {
	t.Helper()
	for _, action := range []string{"/znodes/edit", "/znodes/create", "/znodes/delete", "/znodes/acl"} {
		if strings.Contains(body, `action="`+action+`"`) {
			t.Errorf("%s: the page has the %s form", what, action)
		}
	}
	if !strings.Contains(body, `id="znode-path"`) {
		t.Errorf("%s: the page has no path box", what)
	}
}

func TestZnodePageBadPath(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	for _, tt := range []struct{ path, want string }{
		{"app", "want an absolute path, starting with /"},
		{"/a/", "must not end with /"},
		{"/a//b", "path \"/a//b\""},
	} {
		r := op.do("GET", "/znodes?"+url.Values{"path": {tt.path}}.Encode(), nil)
		expect(t, r, http.StatusBadRequest, "page for "+tt.path)
		if !strings.Contains(r.body, "Bad path") || !strings.Contains(r.body, strings.ReplaceAll(tt.want, `"`, "&#34;")) {
			t.Errorf("page for %q does not say %q: %s", tt.path, tt.want, r.body)
		}
		if !strings.Contains(r.body, `value="`+tt.path+`"`) {
			t.Errorf("page for %q: the path box does not keep what was typed", tt.path)
		}
		noForms(t, "page for "+tt.path, r.body)
	}
	// The root and a good path have the box and the forms.
	r := op.do("GET", "/znodes", nil)
	expect(t, r, http.StatusOK, "root page")
	if !strings.Contains(r.body, `id="znode-path"`) || !strings.Contains(r.body, `action="/znodes/edit"`) {
		t.Errorf("root page lacks the path box or the edit form")
	}
}

func TestZnodePageMissing(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/app"}), http.StatusCreated, "create /app")
	r := op.do("GET", "/znodes?path=/app/x/y", nil)
	expect(t, r, http.StatusNotFound, "missing page")
	if !strings.Contains(r.body, "/app/x/y: no such znode") || !strings.Contains(r.body, `<a id="nearest" href="/znodes?path=%2fapp">/app</a>`) {
		t.Errorf("missing page does not name the node and link /app: %s", r.body)
	}
	noForms(t, "missing page", r.body)
	r = op.do("GET", "/api/v1/znode?path=/app/x/y", nil)
	expect(t, r, http.StatusNotFound, "missing API")
	if r.json["nearest"] != "/app" {
		t.Errorf("missing API: nearest %v, want /app: %s", r.json["nearest"], r.body)
	}
	r = op.do("GET", "/api/v1/znodes?path=/nope", nil)
	expect(t, r, http.StatusNotFound, "missing children API")
	if r.json["nearest"] != "/" {
		t.Errorf("missing children API: %s", r.body)
	}
}

// A znode the console may not read gets 403 naming the console's identities, and no
// forms; one whose ACL grants the console's identity is browsed.
func TestZnodePageForbidden(t *testing.T) {
	addr := testutil.StartPaddock(t, nil)
	f := startConsoleAs(t, addr, coordinator.Config{Auth: []coordinator.Auth{{Scheme: "digest", Credentials: "console:c0nsole"}}}, nil)
	other := zkAs(t, addr, "other", "0ther")
	consoleID := coordinator.DigestID("console", "c0nsole")
	if _, err := other.Create("/locked", []byte("secret"), 0, zk.DigestACL(zk.PermAll, "other", "0ther")); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create("/shared", []byte("hello"), 0, append(zk.DigestACL(zk.PermAll, "other", "0ther"),
		zk.ACL{Scheme: "digest", ID: consoleID, Perms: zk.PermRead})); err != nil {
		t.Fatal(err)
	}
	op := f.login(t, "ada")
	r := op.do("GET", "/znodes?path=/locked", nil)
	expect(t, r, http.StatusForbidden, "forbidden page")
	if !strings.Contains(r.body, "may not read it") || !strings.Contains(r.body, "digest:"+consoleID) {
		t.Errorf("forbidden page does not name the console's identity digest:%s: %s", consoleID, r.body)
	}
	if strings.Contains(r.body, "c0nsole") {
		t.Errorf("forbidden page shows the console's password")
	}
	noForms(t, "forbidden page", r.body)
	r = op.do("GET", "/api/v1/znode?path=/locked", nil)
	expect(t, r, http.StatusForbidden, "forbidden API")
	if ids, _ := r.json["identities"].([]any); len(ids) != 2 || ids[1] != "digest:"+consoleID {
		t.Errorf("forbidden API identities: %s", r.body)
	}
	r = op.do("GET", "/znodes?path=/shared", nil)
	expect(t, r, http.StatusOK, "a node granting the console read")
	if !strings.Contains(r.body, "hello") || !strings.Contains(r.body, "digest:"+consoleID) {
		t.Errorf("shared page: %s", r.body)
	}
	r = op.do("GET", "/api/v1/identity", nil)
	expect(t, r, http.StatusOK, "identity")
	if !strings.Contains(r.body, "digest:"+consoleID) {
		t.Errorf("identity: %s", r.body)
	}
	// The auth scheme: the server puts the console's own identity.
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/mine"}), http.StatusCreated, "create /mine")
	r = op.do("PUT", "/api/v1/acl", map[string]any{"path": "/mine", "acl": []ACLEntry{{Scheme: "auth", Perms: "cdrwa"}}, "version": 0})
	expect(t, r, http.StatusOK, "auth ACL")
	if acl, _, err := f.conn.GetACL("/mine"); err != nil || len(acl) != 1 || acl[0].Scheme != "digest" || acl[0].ID != consoleID {
		t.Errorf("auth ACL on the server: %+v, %v; want digest:%s", acl, err, consoleID)
	}
	if _, err := other.Set("/mine", []byte("x"), -1); err != zk.ErrNoAuth {
		t.Errorf("another identity writes /mine: %v, want no auth", err)
	}
}

// The ACL edit round trip through the API: set with a version, read back, stale
// version refused, bad entries named, the change audited without the password, and
// the server enforcing what was set.
func TestACLEditAPI(t *testing.T) {
	addr := testutil.StartPaddock(t, nil)
	f := startConsoleOn(t, addr, nil)
	admin := f.login(t, "ada")
	expect(t, admin.do("POST", "/api/v1/znode", map[string]any{"path": "/cfg", "data": "v"}), http.StatusCreated, "create")
	r := admin.do("GET", "/api/v1/acl?path=/cfg", nil)
	expect(t, r, http.StatusOK, "get acl")
	if r.json["aversion"] != 0.0 || !strings.Contains(r.body, `"scheme":"world","id":"anyone","perms":"cdrwa"`) {
		t.Fatalf("get acl: %s", r.body)
	}
	entries := []ACLEntry{
		{Scheme: "world", ID: "anyone", Perms: "ra"}, // the console keeps ADMIN: it sees the digest ids unmasked
		{Scheme: "digest", ID: "bob", Password: "b0bpass", Perms: "cdrwa"},
		{Scheme: "digest", ID: coordinator.DigestID("carol", "x"), Perms: "rw"},
		{Scheme: "ip", ID: "10.0.0.0/8", Perms: "r"},
		{Scheme: "x509", ID: "CN=worker-1,O=example", Perms: "r"},
		{Scheme: "sasl", ID: "svc", Perms: "r"},
	}
	expect(t, f.login(t, "olga").do("PUT", "/api/v1/acl", map[string]any{"path": "/cfg", "acl": entries, "version": 0}),
		http.StatusForbidden, "operator sets an ACL")
	r = admin.do("PUT", "/api/v1/acl", map[string]any{"path": "/cfg", "acl": entries, "version": 0})
	expect(t, r, http.StatusOK, "set acl")
	if r.json["aversion"] != 1.0 || strings.Contains(r.body, "b0bpass") {
		t.Errorf("set acl answer: %s", r.body)
	}
	acl, st, err := f.conn.GetACL("/cfg")
	if err != nil || st.Aversion != 1 || len(acl) != 6 {
		t.Fatalf("ACL on the server: %v %v %v", acl, st, err)
	}
	if acl[1].Scheme != "digest" || acl[1].ID != coordinator.DigestID("bob", "b0bpass") || acl[1].Perms != zk.PermAll {
		t.Errorf("bob's entry %+v: want the console's hash of his password", acl[1])
	}
	// The server enforces it: the world may read, not write; bob may write.
	if _, err := zkAs(t, addr, "", "").Set("/cfg", []byte("w"), -1); err != zk.ErrNoAuth {
		t.Errorf("world writes /cfg: %v, want no auth", err)
	}
	if _, err := zkAs(t, addr, "bob", "b0bpass").Set("/cfg", []byte("bob"), -1); err != nil {
		t.Errorf("bob writes /cfg: %v", err)
	}
	r = admin.do("PUT", "/api/v1/acl", map[string]any{"path": "/cfg", "acl": entries[:1], "version": 0})
	expect(t, r, http.StatusConflict, "stale aversion")
	if r.json["aversion"] != 1.0 || !strings.Contains(r.body, "aversion 1") {
		t.Errorf("stale aversion answer: %s", r.body)
	}
	for _, tt := range []struct {
		e    ACLEntry
		want string
	}{
		{ACLEntry{Scheme: "foo", ID: "x", Perms: "r"}, `scheme "foo"`},
		{ACLEntry{Scheme: "world", ID: "anyone", Perms: "rx"}, `'x' is not one of`},
		{ACLEntry{Scheme: "world", ID: "anyone", Perms: ""}, "perms: empty"},
		{ACLEntry{Scheme: "world", ID: "someone", Perms: "r"}, "not a world id"},
		{ACLEntry{Scheme: "digest", ID: "bob:notahash", Perms: "r"}, "not base64 of a SHA-1"},
		{ACLEntry{Scheme: "digest", ID: "bob:x", Password: "p", Perms: "r"}, "the user name alone"},
		{ACLEntry{Scheme: "ip", ID: "10.0.0.300", Perms: "r"}, "not an address or network"},
		{ACLEntry{Scheme: "x509", ID: " ", Perms: "r"}, "empty"},
		{ACLEntry{Scheme: "ip", ID: "10.0.0.1", Password: "p", Perms: "r"}, "only with the digest scheme"},
	} {
		r := admin.do("PUT", "/api/v1/acl", map[string]any{"path": "/cfg", "acl": []ACLEntry{tt.e}, "version": -1})
		expect(t, r, http.StatusBadRequest, "bad entry "+tt.e.Scheme+":"+tt.e.ID)
		if e, _ := r.json["error"].(string); !strings.Contains(e, tt.want) || strings.Contains(e, "b0bpass") {
			t.Errorf("bad entry %+v: error %q, want it to say %q", tt.e, e, tt.want)
		}
	}
	expect(t, admin.do("PUT", "/api/v1/acl", map[string]any{"path": "/cfg", "acl": []ACLEntry{}, "version": -1}),
		http.StatusBadRequest, "empty ACL")
	expect(t, admin.do("PUT", "/api/v1/acl", map[string]any{"path": "/cfg", "acl": entries}), http.StatusBadRequest, "no version")
	expect(t, admin.do("PUT", "/api/v1/acl", map[string]any{"path": "/nope", "acl": entries, "version": -1}),
		http.StatusNotFound, "missing node")
	expect(t, admin.do("PUT", "/api/v1/acl", map[string]any{"path": f.console.cfg.AuditRoot, "acl": entries[:1], "version": -1}),
		http.StatusForbidden, "the audit root's ACL")

	r = admin.do("GET", "/api/v1/audit", nil)
	if !strings.Contains(r.body, `"action":"znode.setacl"`) || !strings.Contains(r.body, "digest:bob:"+strings.TrimPrefix(
		coordinator.DigestID("bob", "b0bpass"), "bob:")) || strings.Contains(r.body, "b0bpass") {
		t.Errorf("audit log of the ACL change: %s", r.body)
	}
}

// The page's ACL form: text entries plus a digest user whose password the console
// hashes, guarded by the ACL version.
func TestACLEditForm(t *testing.T) {
	f := startConsole(t)
	admin := f.login(t, "ada")
	expect(t, admin.do("POST", "/api/v1/znode", map[string]any{"path": "/f"}), http.StatusCreated, "create")
	r := admin.do("GET", "/znodes?path=/f", nil)
	if !strings.Contains(r.body, `action="/znodes/acl"`) || !strings.Contains(r.body, "world:anyone:cdrwa") {
		t.Fatalf("admin's page lacks the ACL form: %s", r.body)
	}
	if r := f.login(t, "olga").do("GET", "/znodes?path=/f", nil); strings.Contains(r.body, `action="/znodes/acl"`) {
		t.Errorf("an operator's page has the ACL form")
	}
	r = admin.form("/znodes/acl", url.Values{csrfField: {admin.csrf}, "path": {"/f"}, "aversion": {"0"},
		"acl": {"world:anyone:ra\n"}, "digest_user": {"dora"}, "digest_password": {"d0ra"}, "digest_perms": {"cdrwa"}})
	if loc := r.header.Get("Location"); r.status != http.StatusSeeOther || !strings.Contains(loc, "ACL+saved") {
		t.Fatalf("ACL form: %d to %s", r.status, loc)
	}
	acl, _, _ := f.conn.GetACL("/f")
	if len(acl) != 2 || acl[1].ID != coordinator.DigestID("dora", "d0ra") {
		t.Errorf("ACL after the form: %+v", acl)
	}
	r = admin.form("/znodes/acl", url.Values{csrfField: {admin.csrf}, "path": {"/f"}, "aversion": {"0"}, "acl": {"world:anyone:cdrwa"}})
	if loc, _ := url.QueryUnescape(r.header.Get("Location")); !strings.Contains(loc, "ACL version conflict") {
		t.Errorf("stale ACL form: %s", loc)
	}
	r = admin.form("/znodes/acl", url.Values{csrfField: {admin.csrf}, "path": {"/f"}, "aversion": {"1"}, "acl": {"world-anyone"}})
	if loc, _ := url.QueryUnescape(r.header.Get("Location")); !strings.Contains(loc, "want scheme:id:perms") {
		t.Errorf("bad ACL text: %s", loc)
	}
}

// A 1 MB value is written and read back through the API and the edit form; a value
// over the servers' jute.maxbuffer is refused naming it, a body over the console's cap
// naming both.
func TestLargeValue(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/big"}), http.StatusCreated, "create")
	mb := make([]byte, 1000000)
	for i := range mb {
		mb[i] = byte(i)
	}
	r := op.do("PUT", "/api/v1/znode", map[string]any{"path": "/big", "data": base64.StdEncoding.EncodeToString(mb),
		"data_encoding": "base64", "version": -1})
	expect(t, r, http.StatusOK, "set 1 MB")
	r = op.do("GET", "/api/v1/znode?path=/big", nil)
	expect(t, r, http.StatusOK, "get 1 MB")
	if got, _ := base64.StdEncoding.DecodeString(r.json["data"].(string)); string(got) != string(mb) {
		t.Errorf("read back %d bytes, want the 1000000 written", len(got))
	}
	text := strings.Repeat("x", 1000000)
	r = op.form("/znodes/edit", url.Values{csrfField: {op.csrf}, "path": {"/big"}, "version": {"-1"}, "data": {text}})
	if loc := r.header.Get("Location"); !strings.Contains(loc, "flash=saved") {
		t.Errorf("edit form with 1 MB: %d to %s", r.status, loc)
	}
	if data, _, _ := f.conn.Get("/big"); string(data) != text {
		t.Errorf("after the form: %d bytes", len(data))
	}
	expect(t, op.do("GET", "/znodes?path=/big", nil), http.StatusOK, "page of 1 MB")

	over := strings.Repeat("y", 1<<20)
	r = op.do("PUT", "/api/v1/znode", map[string]any{"path": "/big", "data": over, "version": -1})
	expect(t, r, http.StatusRequestEntityTooLarge, "set 1 MiB")
	for _, want := range []string{"1048576 bytes", "jute.maxbuffer", "1048575", "2097152"} {
		if e, _ := r.json["error"].(string); !strings.Contains(e, want) {
			t.Errorf("1 MiB refused with %q: does not say %q", e, want)
		}
	}
	r = op.do("POST", "/api/v1/znode", map[string]any{"path": "/big2", "data": over})
	expect(t, r, http.StatusRequestEntityTooLarge, "create 1 MiB")
	r = op.form("/znodes/edit", url.Values{csrfField: {op.csrf}, "path": {"/big"}, "version": {"-1"}, "data": {over}})
	if loc, _ := url.QueryUnescape(r.header.Get("Location")); !strings.Contains(loc, "jute.maxbuffer") {
		t.Errorf("edit form with 1 MiB: %d to %s", r.status, loc)
	}
	r = op.do("PUT", "/api/v1/znode", map[string]any{"path": "/big", "data": strings.Repeat("z", 3<<20), "version": -1})
	expect(t, r, http.StatusRequestEntityTooLarge, "3 MiB body")
	for _, want := range []string{"2097152", "jute.maxbuffer", "1048575"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("3 MiB body refused with %s: does not say %q", r.body, want)
		}
	}
	// The session still works: nothing was sent that made the server drop it.
	expect(t, op.do("GET", "/api/v1/znode?path=/big", nil), http.StatusOK, "get after the refusals")
}

// With the servers' max_buffer raised, a console told so (max_buffer) writes and reads
// a 2 MB value: go-zk's own 1.5 MiB send buffer ("zk: buffer too small") is raised.
func TestLargeValueRaisedMaxBuffer(t *testing.T) {
	addr := testutil.StartPaddock(t, func(c *server.Config) { c.MaxBuffer = 4 << 20 })
	f := startConsoleAs(t, addr, coordinator.Config{MaxBuffer: 4 << 20}, func(c *Config) { c.MaxBuffer = 4 << 20 })
	op := f.login(t, "olga")
	two := strings.Repeat("t", 2000000)
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/two", "data": two}), http.StatusCreated, "create 2 MB")
	if data, _, err := f.conn.Get("/two"); err != nil || string(data) != two {
		t.Errorf("read 2 MB: %d bytes, %v", len(data), err)
	}
}

// A znode whose ACL gives the console a but not r: 403, its ACL shown, no forms.
func TestZnodePageForbiddenShowsACL(t *testing.T) {
	f := startConsole(t)
	if _, err := f.conn.Create("/adminonly", []byte("x"), 0, zk.WorldACL(zk.PermAdmin)); err != nil {
		t.Fatal(err)
	}
	r := f.login(t, "ada").do("GET", "/znodes?path=/adminonly", nil)
	expect(t, r, http.StatusForbidden, "admin-only znode")
	if !strings.Contains(r.body, "world:anyone <code>a</code>") || !strings.Contains(r.body, "(world:anyone) may not read it") {
		t.Errorf("admin-only page: %s", r.body)
	}
	noForms(t, "admin-only page", r.body)
}

func TestParseACLText(t *testing.T) {
	got, err := parseACLText("world:anyone:cdrwa\n\n ip:::1:r \ndigest:bob:Hk3=:rw\nauth::a\n")
	want := []ACLEntry{{"world", "anyone", "cdrwa", ""}, {"ip", "::1", "r", ""}, {"digest", "bob:Hk3=", "rw", ""}, {"auth", "", "a", ""}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("parseACLText: %v, %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, err := parseACLText("world:anyone:r\nnocolon"); err == nil || !strings.Contains(err.Error(), "ACL line 2") {
		t.Errorf("a line without colons: %v", err)
	}
	if _, err := (ACLEntry{Scheme: "ip", ID: "::1", Perms: "r"}).toACL(); err != nil {
		t.Errorf("ip ::1: %v", err)
	}
}

// The console's size check is exact: the largest data the servers take is written, one
// byte more is refused before sending.
func TestLargeValueExactLimit(t *testing.T) {
	f := startConsole(t)
	op := f.login(t, "olga")
	expect(t, op.do("POST", "/api/v1/znode", map[string]any{"path": "/edge"}), http.StatusCreated, "create")
	room := f.session.MaxBuffer() - requestOverhead("/edge", nil)
	expect(t, op.do("PUT", "/api/v1/znode", map[string]any{"path": "/edge", "data": strings.Repeat("e", room), "version": -1}),
		http.StatusOK, "set the largest value")
	r := op.do("PUT", "/api/v1/znode", map[string]any{"path": "/edge", "data": strings.Repeat("e", room+1), "version": -1})
	expect(t, r, http.StatusRequestEntityTooLarge, "set one byte more")
	if e, _ := r.json["error"].(string); !strings.Contains(e, "leaves "+strconv.Itoa(room)+" bytes") {
		t.Errorf("one byte more: %q", e)
	}
	if data, _, err := f.conn.Get("/edge"); err != nil || len(data) != room {
		t.Errorf("after: %d bytes, %v", len(data), err)
	}
}
