package browser

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/master"
	"github.com/paddock/paddock/web"
	"github.com/paddock/paddock/worker"
)

const (
	defaultChromium = "/usr/bin/chromium"
	// stepTimeout bounds one browser step (a navigation, a wait, a read): long enough
	// for a cold Chromium on a busy 2-core machine, short enough to fail well inside
	// the package's budget.
	stepTimeout = 15 * time.Second
	dumpLimit   = 16 << 10 // bytes of page HTML and text a failing test logs
)

// accounts are the console's users; each one's password is the name + "-pw".
var accounts = []struct{ name, role string }{
	{"admin", "admin"}, {"operator", "operator"}, {"viewer", "viewer"},
}

func password(name string) string { return name + "-pw" }

// userEntries returns the Config.Users entries of accounts. The hashes use bcrypt's
// default cost (as `paddock web passwd` does), so they are made once per test binary.
var userEntries = sync.OnceValues(func() ([]string, error) {
	var out []string
	for _, a := range accounts {
		h, err := web.HashPassword(password(a.name))
		if err != nil {
			return nil, err
		}
		out = append(out, a.name+":"+a.role+":"+h)
	}
	return out, nil
})

// A harness is one test's world: a paddock server, a session on it, a console over that
// session, and one Chromium tab. Everything is closed when the test ends.
type harness struct {
	t       *testing.T
	session *coordinator.Session // the console's: it signs with the console's key of keys
	conn    *zk.Conn
	keys    *testutil.Keys  // the platform's signing keys, trusted by the console, the master and the worker
	addr    string          // the paddock server's client address, host:port
	url     string          // the console's base URL, http://127.0.0.1:port
	tab     context.Context // the chromedp context of the test's tab; no deadline
}

// start starts the harness for t.
func start(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t}
	h.startConsole()
	h.startBrowser()
	return h
}

func (h *harness) startConsole() {
	t := h.t
	t.Helper()
	addr := testutil.StartPaddock(t, nil)
	h.addr, h.keys = addr, testutil.NewKeys(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := coordinator.Connect(ctx, coordinator.Config{Servers: []string{addr}, SessionTimeout: 10 * time.Second,
		Signer: h.keys.Signer(coordinator.RoleConsole), Trust: h.keys.Trust()})
	if err != nil {
		t.Fatalf("connect to paddock at %s: %v", addr, err)
	}
	t.Cleanup(func() { s.Close() })
	h.session, h.conn = s, s.Conn()

	users, err := userEntries()
	if err != nil {
		t.Fatal(err)
	}
	cfg := web.DefaultConfig()
	cfg.Servers = []string{addr}
	cfg.Listen = "127.0.0.1:0"
	cfg.Users = users
	c, err := web.New(cfg, s, testutil.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	h.url = "http://" + c.Addr().String()
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("console: %v", err)
		}
	})
}

// startCluster runs a master and a worker "w1" (2 slots, output in a temp dir) on the
// harness's server, in this process, until the test ends. Nothing waits for them to be
// up: a task submitted before they are waits as pending.
func (h *harness) startCluster() {
	t := h.t
	t.Helper()
	mcfg := master.DefaultConfig()
	mcfg.Servers, mcfg.ID = []string{h.addr}, "m1"
	mcfg.SigningKey, mcfg.SignersFile = h.keys.KeyFile(coordinator.RoleMaster), h.keys.SignersFile
	m, err := master.New(mcfg, testutil.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	wcfg := worker.DefaultConfig()
	wcfg.Servers, wcfg.ID, wcfg.Capacity, wcfg.OutputDir = []string{h.addr}, "w1", 2, t.TempDir()
	wcfg.KillGrace, wcfg.SignersFile = time.Second, h.keys.SignersFile
	wcfg.StopGrace = 0    // a task still running when the test ends is handed back at once
	wcfg.AllowRoot = true // tasks use the test's directories, which are root's alone under CI
	w, err := worker.New(wcfg, testutil.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	h.runService("master", m.Run)
	h.runService("worker", w.Run)
}

// runService runs run in a goroutine until the test ends; cleanup cancels its context
// and waits for it, failing the test if it returned an error.
func (h *harness) runService(name string, run func(context.Context) error) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	h.t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("%s: %v", name, err)
			}
		case <-time.After(20 * time.Second):
			h.t.Errorf("%s: still running 20s after its stop", name)
		}
	})
}

// chromiumPath is the browser to run: PADDOCK_CHROMIUM, else /usr/bin/chromium. Its
// absence fails the test (test/deps.sh installs it), never skips it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PADDOCK_CHROMIUM")
	if p == "" {
		p = defaultChromium
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("no Chromium at %s (run test/deps.sh, or set PADDOCK_CHROMIUM): %v", p, err)
	}
	return p
}

// startBrowser starts headless Chromium with a fresh profile and opens one tab. At the
// end of the test it saves a full-page screenshot and, if the test failed, logs the
// page; then it stops Chromium and removes the profile.
func (h *harness) startBrowser() {
	t := h.t
	t.Helper()
	profile, err := os.MkdirTemp("", "paddock-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Chromium's helper processes may still write to the profile for a moment after
	// the browser exits, so removal is retried.
	t.Cleanup(func() {
		if !testutil.WaitFor(5*time.Second, 50*time.Millisecond, func() bool { return os.RemoveAll(profile) == nil }) {
			t.Logf("chromium profile %s not removed", profile)
		}
	})
	output := &syncWriter{} // Chromium's stdout and stderr, logged when the test fails
	var out io.Writer = output
	if os.Getenv("PADDOCK_TEST_LOG") != "" {
		out = os.Stderr
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(profile),
		// The flags of TESTING.md: without the networking ones Chromium keeps trying to
		// reach the internet, which the test machines cannot.
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Quieter and steadier under test: no prompts, no throttling, /tmp not /dev/shm
		// (small in containers).
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(out),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
		if t.Failed() {
			t.Logf("chromium output (D-Bus complaints left out):\n%s", tail(withoutDBus(output.String()), dumpLimit))
		}
	})
	// The first Run starts the browser; it must not carry a deadline (that would end
	// the browser with it), so the start is bounded by a watchdog instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tab) }()
	select {
	case err = <-started:
	case <-time.After(30 * time.Second):
		cancelTab()
		err = errors.Join(errors.New("timed out after 30s"), <-started)
	}
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	h.tab = tab
	artifacts := testutil.ArtifactDir(t)
	t.Cleanup(func() { h.finish(artifacts) })
}

// finish saves the screenshot and, for a failed test, logs the page.
func (h *harness) finish(dir string) {
	t := h.t
	ctx, cancel := context.WithTimeout(h.tab, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
	} else {
		name := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Errorf("save screenshot: %v", err)
		} else {
			t.Logf("screenshot: %s", name)
		}
	}
	if t.Failed() {
		h.dumpPage(ctx)
	}
}

// dumpPage logs the current page's URL, visible text and HTML.
func (h *harness) dumpPage(ctx context.Context) {
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	html, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		h.t.Logf("page %s: cannot read it: %v", loc, err)
		return
	}
	h.t.Logf("page %s\n--- text ---\n%s\n--- html ---\n%s", loc, tail(text, dumpLimit), tail(html, dumpLimit))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// withoutDBus drops the lines of Chromium's output about the D-Bus it cannot reach in a
// container: they come with every run and hide what matters.
func withoutDBus(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.Contains(line, ":ERROR:dbus/") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// syncWriter is a buffer for Chromium's stdout and stderr, which are copied
// concurrently.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// do runs steps in the tab within stepTimeout, failing the test with what on error.
func (h *harness) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.tab, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

// navigate runs steps that load a page (a link followed, a form submitted) and waits
// for the load; it returns the main document's response.
func (h *harness) navigate(what string, steps ...chromedp.Action[chromedp.Void]) *network.Response {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.tab, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, steps...)
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	return resp
}

// open loads the console page at path (such as "/znodes?path=%2Fa") and waits until
// the element sel is visible.
func (h *harness) open(path, sel string) *network.Response {
	h.t.Helper()
	resp := h.navigate("open "+path, chromedp.Navigate(h.url+path))
	h.do("wait for "+sel+" on "+path, chromedp.WaitVisible(chromedp.CSS(sel)))
	return resp
}

// run evaluates a JavaScript expression in the page.
func run[T any](h *harness, expr string) T {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.tab, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		h.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// text returns the visible text of the first element matching the CSS selector sel,
// waiting for it to be visible.
func (h *harness) text(sel string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.tab, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		h.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// fillLogin opens /login, types name and pw into the form and submits it; it returns
// the response to the form's POST (after its redirect, if any).
func (h *harness) fillLogin(name, pw string) *network.Response {
	h.t.Helper()
	h.open("/login", `form.login`)
	h.do("fill the login form",
		chromedp.SendKeys(chromedp.CSS(`form.login input[name=user]`), name),
		chromedp.SendKeys(chromedp.CSS(`form.login input[name=password]`), pw))
	return h.navigate("submit the login form", chromedp.Click(chromedp.CSS(`form.login button[type=submit]`)))
}

// login logs name in through the login form and checks that the console greets them.
func (h *harness) login(name string) {
	h.t.Helper()
	if resp := h.fillLogin(name, password(name)); resp.Status != 200 {
		h.t.Fatalf("login as %s: status %d, want 200 (the overview after the redirect)", name, resp.Status)
	}
	if got := h.text(`form.logout span`); !strings.Contains(got, name) {
		h.t.Fatalf("after login as %s the header shows %q", name, got)
	}
}

// znodeURL is the console page of the znode at path.
func znodeURL(path string) string { return "/znodes?path=" + url.QueryEscape(path) }

// create makes a persistent znode through the harness's own session, not the console.
func (h *harness) create(path string, data []byte) {
	h.t.Helper()
	if _, err := h.conn.Create(path, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		h.t.Fatalf("create %s: %v", path, err)
	}
}

func (h *harness) get(path string) ([]byte, *zk.Stat) {
	h.t.Helper()
	data, st, err := h.conn.Get(path)
	if err != nil {
		h.t.Fatalf("get %s: %v", path, err)
	}
	return data, st
}

// screenshot saves the page as TestName_step.png in the artifacts directory.
func (h *harness) screenshot(step string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.tab, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		h.t.Errorf("screenshot %s: %v", step, err)
		return
	}
	name := filepath.Join(testutil.ArtifactDir(h.t), h.t.Name()+"_"+step+".png")
	if err := os.WriteFile(name, png, 0o644); err != nil {
		h.t.Errorf("save screenshot: %v", err)
		return
	}
	h.t.Logf("screenshot: %s", name)
}

// paddock is the binary the tests that kill ensemble members run their services as.
var paddock testutil.Binary

// TestMain runs a task supervisor if this binary was started as one (startCluster's
// worker starts it as its tasks' supervisor), the tests otherwise.
func TestMain(m *testing.M) {
	worker.SupervisorMain()
	paddock.Main(m)
}
