package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/server/datatree"
)

// countingBody counts the bytes the console reads of a request body.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// A 50 MB login body is refused with 413 without being read: a Content-Length over
// the cap is not read at all, a chunked body no further than the cap.
func TestLoginBodyCap(t *testing.T) {
	f := startConsole(t)
	var read atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = countingBody{r.Body, &read}
		f.console.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	const size = 50 << 20
	big := func() io.Reader { return io.LimitReader(neverEnding('a'), size) }

	t.Run("content-length", func(t *testing.T) {
		read.Store(0)
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// Headers and the first 64 KiB only: the answer must come without the rest.
		fmt.Fprintf(conn, "POST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
		conn.Write(bytes.Repeat([]byte("a"), 64<<10))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "at most 4096 bytes") {
			t.Fatalf("status %d %s, want 413 naming the cap", resp.StatusCode, body)
		}
		if n := read.Load(); n != 0 {
			t.Errorf("the console read %d bytes of a body it refused by its Content-Length", n)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		read.Store(0)
		req, _ := http.NewRequest("POST", srv.URL+"/api/v1/login", big())
		req.ContentLength = -1 // chunked
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d, want 413", resp.StatusCode)
		}
		if n := read.Load(); n > loginBodyLimit+1 {
			t.Errorf("the console read %d bytes of a chunked login body; the cap is %d", n, loginBodyLimit)
		}
	})
	t.Run("unauthenticated znode write", func(t *testing.T) {
		read.Store(0)
		// By hand, as above: the console answers without reading the body and then drops
		// the connection, and an http.Client still writing the rest of 1 MiB met the reset
		// before it read the answer (seen once under make test's load).
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/v1/znode HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 1<<20)
		conn.Write(bytes.Repeat([]byte("a"), 64<<10))
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d, want 401", resp.StatusCode)
		}
		if n := read.Load(); n > 0 {
			t.Errorf("the console read %d bytes of an unauthenticated request's body", n)
		}
	})
	t.Run("znode write over 2 MiB", func(t *testing.T) {
		cl := f.login(t, "olga")
		r := cl.do("POST", "/api/v1/znode", map[string]string{"path": "/big", "data": strings.Repeat("x", znodeBodyLimit)})
		expect(t, r, http.StatusRequestEntityTooLarge, "a 2 MiB znode write")
		r = cl.do("POST", "/api/v1/znode", map[string]string{"path": "/big", "data": strings.Repeat("x", 900<<10)})
		expect(t, r, http.StatusCreated, "a 900 KiB znode write")
	})
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A long user name with control characters is logged cut and escaped, on one line.
func TestLoginNameLogged(t *testing.T) {
	f := startConsole(t)
	var logs syncBuffer
	c, err := New(f.console.cfg, f.session, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	name := "admin\n2026-01-01 level=INFO msg=login user=ada\x1b[2J" + strings.Repeat("x", 3000)
	b, _ := json.Marshal(map[string]string{"user": name, "password": "nope"})
	w := httptest.NewRecorder()
	c.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/api/v1/login", bytes.NewReader(b)))
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", w.Code)
	}
	out := logs.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.Contains(out, "login failed") {
		t.Fatalf("log = %q: want one line saying the login failed", out)
	}
	if len(out) > 400 || strings.ContainsAny(out, "\x1b") || !strings.Contains(out, `admin\\n2026`) ||
		!strings.Contains(out, "bytes)") {
		t.Errorf("log line %q: want the name cut, escaped and its length", out)
	}
}

// tryLogin posts a login for user from addr with device cookie device ("" for none).
func tryLogin(c *Console, addr, device, user, pw string) *httptest.ResponseRecorder {
	b, _ := json.Marshal(map[string]string{"user": user, "password": pw})
	r := httptest.NewRequest("POST", "/api/v1/login", bytes.NewReader(b))
	r.RemoteAddr = addr + ":40000"
	if device != "" {
		r.AddCookie(&http.Cookie{Name: deviceCookie, Value: device})
	}
	w := httptest.NewRecorder()
	c.Handler().ServeHTTP(w, r)
	return w
}

func deviceCookieOf(w *httptest.ResponseRecorder) string {
	for _, ck := range w.Result().Cookies() {
		if ck.Name == deviceCookie {
			return ck.Value
		}
	}
	return ""
}

// fakeClock is a settable clock for the limiter.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestLoginLimits(t *testing.T) {
	f := startConsole(t)
	c := f.console
	clock := &fakeClock{t: time.Now()}
	c.limiter.now = clock.now

	// The real user logs in once from their own browser, which is then trusted.
	w := tryLogin(c, "192.0.2.50", "", "ada", "pw-ada")
	if w.Code != http.StatusOK || deviceCookieOf(w) == "" {
		t.Fatalf("first login: %d, device cookie %q", w.Code, deviceCookieOf(w))
	}
	device := deviceCookieOf(w)

	// 5 wrong passwords from A: A backs off, doubling.
	var codes []int
	for range 5 {
		codes = append(codes, tryLogin(c, "192.0.2.1", "", "ada", "wrong").Code)
	}
	if fmt.Sprint(codes) != "[401 401 401 429 429]" {
		t.Errorf("5 wrong passwords from A: %v, want 3 failures then 429", codes)
	}
	if w := tryLogin(c, "192.0.2.1", "", "ada", "pw-ada"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("right password from A while backing off: %d, Retry-After %q; want 429, 1", w.Code, w.Header().Get("Retry-After"))
	}
	clock.add(time.Second)
	tryLogin(c, "192.0.2.1", "", "ada", "wrong")
	if w := tryLogin(c, "192.0.2.1", "", "ada", "pw-ada"); w.Header().Get("Retry-After") != "2" {
		t.Errorf("after the 4th failure Retry-After = %q, want 2 (doubled)", w.Header().Get("Retry-After"))
	}

	// They do not lock the right password out from B.
	if w := tryLogin(c, "192.0.2.2", "", "ada", "pw-ada"); w.Code != http.StatusOK {
		t.Fatalf("right password from B after A's failures: %d %s", w.Code, w.Body)
	}

	// Guessing from many addresses is bounded by the user's budget...
	failures := 0
	for i := range 3 * loginUserBudget {
		switch tryLogin(c, fmt.Sprintf("198.51.100.%d", i), "", "ada", "guess").Code {
		case http.StatusUnauthorized:
			failures++
		case http.StatusTooManyRequests:
		default:
			t.Fatal("a guess got in")
		}
	}
	if failures > loginUserBudget {
		t.Errorf("%d guesses checked from %d addresses; the budget is %d", failures, 3*loginUserBudget, loginUserBudget)
	}
	if w := tryLogin(c, "203.0.113.9", "", "ada", "pw-ada"); w.Code != http.StatusTooManyRequests {
		t.Errorf("a new browser with the budget spent: %d, want 429", w.Code)
	}
	// ...which never applies to a browser that logged in before, from any address.
	if w := tryLogin(c, "203.0.113.10", device, "ada", "pw-ada"); w.Code != http.StatusOK {
		t.Errorf("trusted browser with the budget spent: %d %s, want 200", w.Code, w.Body)
	}
	// A name that is not a user answers as a user does once the budget is spent: a 429
	// does not tell which names are users.
	for i := range loginUserBudget + 1 { // as failed attempts would (an unknown name costs a bcrypt each)
		c.limiter.fail(loginAttempt{user: "nobody", addr: fmt.Sprintf("198.51.101.%d", i)})
	}
	if w := tryLogin(c, "203.0.113.20", "", "nobody", "guess"); w.Code != http.StatusTooManyRequests {
		t.Errorf("an unknown name with its budget spent: %d, want 429 as for a user", w.Code)
	}
	// A device cookie is for its user only, and cannot be forged.
	if w := tryLogin(c, "203.0.113.11", device, "olga", "pw-olga"); w.Code != http.StatusOK {
		t.Errorf("olga from a browser trusted for ada: %d (olga's budget is untouched)", w.Code)
	}
	if c.limiter.trusts(device, "olga") || c.limiter.trusts(device[:len(device)-2]+"xx", "ada") {
		t.Error("a device cookie is trusted for another user, or forged")
	}
	// The budget refills.
	clock.add(loginUserRefill)
	if w := tryLogin(c, "203.0.113.12", "", "ada", "pw-ada"); w.Code != http.StatusOK {
		t.Errorf("a new browser after a refill: %d, want 200", w.Code)
	}
}

func TestLoginLimiterBounded(t *testing.T) {
	l := newLoginLimiter(time.Now)
	for i := range loginMaxEntries + 500 {
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16, i>>8&255, i&255)
		l.fail(loginAttempt{user: "ada", addr: addr, known: true})
		l.fail(loginAttempt{user: fmt.Sprint("nobody", i), addr: addr})
	}
	if records, budgets := l.size(); records > loginMaxEntries || budgets > loginMaxEntries+1 {
		t.Errorf("%d records and %d budgets after %d failing addresses and names; the bound is %d",
			records, budgets, loginMaxEntries+500, loginMaxEntries)
	}
	if l.budgets["ada"] == nil {
		t.Error("a user's budget was forgotten")
	}
}

const (
	taskPath = "/mysql_replicator/tasks/orders"
	taskData = `{"source":"repl:S3cretSrcPw@tcp(127.0.0.1:3306)/","target":"app:T4rgetPw@tcp(127.0.0.1:3307)/",` +
		`"server_id":7,"enabled":true}`
)

func noSecret(t *testing.T, what, body string) {
	t.Helper()
	for _, pw := range []string{"S3cretSrcPw", "T4rgetPw"} {
		if strings.Contains(body, pw) {
			t.Errorf("%s shows the password %s: %s", what, pw, body)
		}
	}
}

// A viewer reads no password through the znode API, the znode page or the audit log,
// also after an operator saved the task's znode through the znode API; the save keeps
// the stored passwords.
func TestViewerSeesNoPassword(t *testing.T) {
	f := startConsole(t)
	if err := f.session.MakeDirs(context.Background(), "/mysql_replicator/tasks"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.conn.Create(taskPath, []byte(taskData), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	viewer, operator := f.login(t, "vic"), f.login(t, "olga")

	r := viewer.do("GET", "/api/v1/znode?path="+taskPath, nil)
	expect(t, r, http.StatusOK, "viewer reads the task")
	noSecret(t, "GET /api/v1/znode", r.body)
	if !strings.Contains(r.body, `repl:****@tcp(127.0.0.1:3306)/`) {
		t.Errorf("znode API: want the DSN masked: %s", r.body)
	}
	page := viewer.do("GET", "/znodes?path="+url.QueryEscape(taskPath), nil)
	expect(t, page, http.StatusOK, "znode page")
	noSecret(t, "the znode page", page.body)

	// The operator saves what they read, with one change.
	text := r.json["text"].(string)
	edited := strings.Replace(text, `"enabled":true`, `"enabled":false`, 1)
	expect(t, operator.do("PUT", "/api/v1/znode", map[string]any{"path": taskPath, "data": edited, "version": -1}),
		http.StatusOK, "operator saves the masked task")
	stored, _, err := f.conn.Get(taskPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(taskData, `"enabled":true`, `"enabled":false`, 1); string(stored) != want {
		t.Errorf("stored after the save:\n%s\nwant\n%s", stored, want)
	}
	// The same through the page's edit form.
	form := url.Values{"path": {taskPath}, "version": {"-1"}, "data": {text}, csrfField: {operator.csrf}}
	if r := operator.form("/znodes/edit", form); r.status != http.StatusSeeOther || strings.Contains(r.header.Get("Location"), "error") {
		t.Errorf("edit form: %d to %s", r.status, r.header.Get("Location"))
	}
	if stored, _, _ := f.conn.Get(taskPath); string(stored) != taskData {
		t.Errorf("stored after the form save:\n%s\nwant\n%s", stored, taskData)
	}
	// A mask the console cannot restore is refused, and nothing is written.
	moved := strings.Replace(text, "127.0.0.1:3306", "10.1.1.1:3306", 1)
	r = operator.do("PUT", "/api/v1/znode", map[string]any{"path": taskPath, "data": moved, "version": -1})
	expect(t, r, http.StatusBadRequest, "a masked password with another host")
	noSecret(t, "the refusal", r.body)
	if stored, _, _ := f.conn.Get(taskPath); string(stored) != taskData {
		t.Errorf("stored after a refused save: %s", stored)
	}

	// An audit record written in plain by an older console is masked too.
	old, _ := json.Marshal(AuditRecord{User: "old", Action: "znode.set", Target: taskPath,
		After: &Snapshot{Exists: true, Data: taskData, DataEncoding: "text"}})
	if _, err := f.conn.Create(f.console.cfg.AuditRoot+"/"+auditPrefix, old, zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	r = viewer.do("GET", "/api/v1/audit?limit=100", nil)
	expect(t, r, http.StatusOK, "viewer reads the audit log")
	noSecret(t, "GET /api/v1/audit", r.body)
	if !strings.Contains(r.body, `repl:****@`) {
		t.Errorf("audit: want the masked DSN in the records: %s", r.body)
	}
	noSecret(t, "the audit page", viewer.do("GET", "/audit", nil).body)
	names, _, err := f.conn.Children(f.console.cfg.AuditRoot)
	if err != nil || len(names) < 3 {
		t.Fatalf("audit entries %v, %v", names, err)
	}
	for _, n := range names {
		p := f.console.cfg.AuditRoot + "/" + n
		noSecret(t, "GET /api/v1/znode?path="+p, viewer.do("GET", "/api/v1/znode?path="+p, nil).body)
		noSecret(t, "the znode page of "+p, viewer.do("GET", "/znodes?path="+url.QueryEscape(p), nil).body)
	}
}

// The znode API and forms refuse to change or delete the audit log, for every role.
func TestAuditLogAppendOnly(t *testing.T) {
	f := startConsole(t)
	admin := f.login(t, "ada")
	expect(t, admin.do("POST", "/api/v1/znode", map[string]string{"path": "/x", "data": "1"}), http.StatusCreated, "a change")
	root := f.console.cfg.AuditRoot
	names, _, err := f.conn.Children(root)
	if err != nil || len(names) == 0 {
		t.Fatalf("audit entries %v, %v", names, err)
	}
	entry := root + "/" + names[0]
	for _, tt := range []struct{ method, path string }{
		{"DELETE", "/api/v1/znode?path=" + entry},
		{"DELETE", "/api/v1/znode?path=" + root + "&recursive=true&confirm=" + root},
		{"DELETE", "/api/v1/znode?path=/paddock&recursive=true&confirm=/paddock"},
		{"DELETE", "/api/v1/znode?path=/paddock"},
	} {
		expect(t, admin.do(tt.method, tt.path, nil), http.StatusForbidden, tt.method+" "+tt.path)
	}
	expect(t, admin.do("PUT", "/api/v1/znode", map[string]any{"path": entry, "data": "{}", "version": -1}),
		http.StatusForbidden, "PUT an audit entry")
	expect(t, admin.do("POST", "/api/v1/znode", map[string]any{"path": root + "/entry-", "data": "{}", "flags": "sequential"}),
		http.StatusForbidden, "forge an audit entry")
	r := admin.form("/znodes/delete", url.Values{"path": {root}, "recursive": {"true"}, "confirm": {root}, csrfField: {admin.csrf}})
	if !strings.Contains(r.header.Get("Location"), "append-only") {
		t.Errorf("delete form on the audit root: %d to %s", r.status, r.header.Get("Location"))
	}
	after, _, err := f.conn.Children(root)
	if err != nil || len(after) < len(names) {
		t.Fatalf("audit entries after the attempts: %v, %v; before %v", after, err, names)
	}
	expect(t, f.login(t, "vic").do("GET", "/api/v1/audit", nil), http.StatusOK, "viewer reads the audit log")
	// Other deletes still work.
	expect(t, admin.do("DELETE", "/api/v1/znode?path=/x", nil), http.StatusOK, "delete /x")
}

// With https_cert and https_key the console serves HTTPS and its cookies are Secure.
func TestConsoleTLS(t *testing.T) {
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, keyPEM, 0o600)
	f := startConsoleOn(t, testutil.StartPaddock(t, nil), func(c *Config) { c.TLSCert, c.TLSKey = certFile, keyFile })
	c := f.console
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for c.Addr() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	b, _ := json.Marshal(map[string]string{"user": "ada", "password": "pw-ada"})
	resp, err := hc.Post("https://"+c.Addr().String()+"/api/v1/login", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
		t.Fatalf("login over HTTPS: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	for _, ck := range resp.Cookies() {
		if !ck.Secure {
			t.Errorf("cookie %s is not Secure over HTTPS", ck.Name)
		}
	}
	if resp, err := http.Get("http://" + c.Addr().String() + "/login"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP on the HTTPS port: %d, want 400 (Go's answer to HTTP on a TLS port)", resp.StatusCode)
		}
	}
	bad := f.console.cfg
	bad.TLSKey = ""
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "https_cert") {
		t.Errorf("https_cert without https_key: %v", err)
	}
}

func TestPlainHTTPWarning(t *testing.T) {
	for _, tt := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:8080", false}, {"[::1]:8080", false}, {"0.0.0.0:8080", true}, {"192.0.2.1:8080", true}} {
		a, _ := net.ResolveTCPAddr("tcp", tt.addr)
		if isLoopback(a) == tt.warn {
			t.Errorf("isLoopback(%s) = %v", tt.addr, !tt.warn)
		}
	}
}

// With the server's admin_auth on, the console sends its admin credentials and still
// shows the sessions; without them the sessions view says why it is empty.
func TestSessionsWithAdminAuth(t *testing.T) {
	cfg := testutil.PaddockConfig(t)
	cfg.AdminAddr, cfg.AdminAuth = "127.0.0.1:0", true
	cfg.SuperDigest = datatree.Digest("super:adm1n")
	srv := testutil.StartServer(t, cfg)
	admin := srv.AdminAddr().String()
	f := startConsoleOn(t, srv.Addr().String(), func(c *Config) {
		c.AdminAddr, c.AdminUser, c.AdminPassword = admin, "super", "adm1n"
	})
	r := f.login(t, "vic").do("GET", "/api/v1/sessions", nil)
	expect(t, r, http.StatusOK, "sessions with admin credentials")
	if !strings.Contains(r.body, hex64(f.session.SessionID())) {
		t.Errorf("sessions lack the console's own: %s", r.body)
	}
	g := startConsoleOn(t, srv.Addr().String(), func(c *Config) { c.AdminAddr = admin })
	r = g.login(t, "vic").do("GET", "/api/v1/sessions", nil)
	if r.status == http.StatusOK || !strings.Contains(r.body, "401") {
		t.Errorf("sessions without admin credentials: %d %s, want the 401 named", r.status, r.body)
	}
}

// A task's secrets (env values under password names, DSNs and --password values in its
// arguments) are masked in the task API and page, and stored as submitted.
func TestTaskSecretsMasked(t *testing.T) {
	f := startConsole(t)
	op, viewer := f.login(t, "olga"), f.login(t, "vic")
	spec := map[string]any{"command": "/usr/bin/mysqldump",
		"args": []string{"--password", "T4rgetPw", "--dsn=repl:S3cretSrcPw@tcp(127.0.0.1:3306)/", "orders"},
		"env":  map[string]string{"MYSQL_PASSWORD": "S3cretSrcPw", "TZ": "UTC"}}
	r := op.do("POST", "/api/v1/tasks", spec)
	expect(t, r, http.StatusCreated, "submit")
	id := r.json["id"].(string)
	got := viewer.do("GET", "/api/v1/tasks/"+id, nil)
	expect(t, got, http.StatusOK, "get task")
	noSecret(t, "GET /api/v1/tasks/"+id, got.body)
	if !strings.Contains(got.body, `"TZ":"UTC"`) || !strings.Contains(got.body, "orders") {
		t.Errorf("masking took more than the secrets: %s", got.body)
	}
	noSecret(t, "GET /api/v1/tasks", viewer.do("GET", "/api/v1/tasks", nil).body)
	page := viewer.do("GET", "/tasks/"+id, nil)
	expect(t, page, http.StatusOK, "task page")
	noSecret(t, "the task page", page.body)
	stored, err := f.console.taskClient().Get(testCtx(t), id)
	if err != nil || stored.Spec.Env["MYSQL_PASSWORD"] != "S3cretSrcPw" || stored.Spec.Args[1] != "T4rgetPw" {
		t.Errorf("stored spec %+v, %v: want the secrets as submitted", stored.Spec, err)
	}
}

// An error a replicator wrote that quotes a DSN is masked on the replication API and page.
func TestReplicationErrorMasked(t *testing.T) {
	f := startConsole(t)
	ctx := testCtx(t)
	layout, _ := replicator.NewLayout("/")
	if err := replicator.NewAdmin(f.session, layout).Create(ctx, "orders", replicator.TaskDef{
		Source: "repl:S3cretSrcPw@tcp(127.0.0.1:1)/", Target: "app:T4rgetPw@tcp(127.0.0.1:2)/",
		ServerID: replicator.DefaultServerID("orders")}); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(replicator.Status{State: "retrying",
		LastError: "connect repl:S3cretSrcPw@tcp(127.0.0.1:1)/: connection refused"})
	if _, err := f.conn.Create(layout.Status("orders"), st, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	viewer := f.login(t, "vic")
	for _, p := range []string{"/api/v1/replication", "/api/v1/replication/orders", "/replication"} {
		r := viewer.do("GET", p, nil)
		expect(t, r, http.StatusOK, p)
		noSecret(t, p, r.body)
	}
	if r := viewer.do("GET", "/api/v1/replication/orders", nil); !strings.Contains(r.body, "connect repl:****@tcp(127.0.0.1:1)/") {
		t.Errorf("the error is not shown masked: %s", r.body)
	}
}
