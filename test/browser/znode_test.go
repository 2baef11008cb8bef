package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// Selectors of the znode page's path box, its error pages and its ACL form.
const (
	pathBox     = `#znode-path`
	pathGo      = `#znode-go`
	problem     = `#problem`
	nearestLink = `#nearest`
	identities  = `#identities`
	aclList     = `#acl`
	aclForm     = `#acl-form`
	changeForms = `form[action^="/znodes/"]`
)

// goTo types path into the path box and presses Go; it returns the status of the page
// it leads to.
func (h *harness) goTo(path string) int64 {
	h.t.Helper()
	h.do("type "+path+" into the path box",
		chromedp.WaitVisible(chromedp.CSS(pathBox)),
		chromedp.Clear(chromedp.CSS(pathBox)),
		chromedp.SendKeys(chromedp.CSS(pathBox), path))
	return h.navigate("press Go", chromedp.Click(chromedp.CSS(pathGo))).Status
}

// noChangeForms fails the test if the page has a form that changes a znode.
func (h *harness) noChangeForms(what string) {
	h.t.Helper()
	if n := run[int](h, `document.querySelectorAll('`+changeForms+`').length`); n != 0 {
		h.t.Errorf("%s: the page has %d change forms, want none", what, n)
	}
}

// The path box leads to the node typed; a bad path gets a page naming what is wrong,
// with the box keeping it, and no forms.
func TestZnodePathBoxAndBadPath(t *testing.T) {
	h := start(t)
	h.create("/app", nil)
	h.create("/app/config", []byte("replicas=1"))
	h.login("operator")
	h.open("/znodes", pathBox)
	if status := h.goTo("/app/config"); status != 200 {
		t.Fatalf("Go to /app/config: status %d", status)
	}
	if got := h.text(nodeTitle); got != "/app/config" {
		t.Fatalf("page title %q, want /app/config", got)
	}
	if got := h.text(textPanel); got != "replicas=1" {
		t.Errorf("data shown %q", got)
	}
	if status := h.goTo("app"); status != 400 {
		t.Errorf("Go to app: status %d, want 400", status)
	}
	if got := h.text(problem); !strings.Contains(got, `path "app": want an absolute path, starting with /`) {
		t.Errorf("bad path error %q", got)
	}
	if got := run[string](h, `document.querySelector('`+pathBox+`').value`); got != "app" {
		t.Errorf("path box holds %q after a bad path, want what was typed", got)
	}
	h.noChangeForms("bad path page")
}

// A missing node gets 404, a link to its nearest existing ancestor, and no forms.
func TestZnodeMissingPage(t *testing.T) {
	h := start(t)
	h.create("/app", nil)
	h.login("admin")
	if resp := h.open(znodeURL("/app/gone/deeper"), problem); resp.Status != 404 {
		t.Errorf("missing node: status %d, want 404", resp.Status)
	}
	if got := h.text(problem); !strings.Contains(got, "/app/gone/deeper: no such znode") {
		t.Errorf("missing node error %q", got)
	}
	h.noChangeForms("missing page")
	if got := h.text(nearestLink); got != "/app" {
		t.Fatalf("nearest link %q, want /app", got)
	}
	if resp := h.navigate("follow the nearest link", chromedp.Click(chromedp.CSS(nearestLink))); resp.Status != 200 {
		t.Fatalf("nearest link: status %d", resp.Status)
	}
	if got := h.text(nodeTitle); got != "/app" {
		t.Errorf("after the link the page shows %q, want /app", got)
	}
	h.open(znodeURL("/app/gone/deeper"), problem) // the screenshot is of the error page
}

// A node the console may not read gets 403 naming the console's identities, its ACL,
// and no forms.
func TestZnodeForbiddenPage(t *testing.T) {
	h := start(t)
	if _, err := h.conn.Create("/locked", []byte("hidden"), 0, zk.DigestACL(zk.PermAll, "owner", "0wner")); err != nil {
		t.Fatal(err)
	}
	h.login("admin")
	if resp := h.open(znodeURL("/locked"), problem); resp.Status != 403 {
		t.Errorf("forbidden node: status %d, want 403", resp.Status)
	}
	if got := h.text(problem); !strings.Contains(got, "may not read it") || !strings.Contains(got, "world:anyone") {
		t.Errorf("forbidden error %q: want it to say the console's identity may not read it", got)
	}
	if got := h.text(identities); !strings.Contains(got, "world:anyone") {
		t.Errorf("identities shown %q", got)
	}
	if body := run[string](h, `document.body.innerText`); strings.Contains(body, "hidden") {
		t.Errorf("the forbidden page shows the node's data")
	}
	h.noChangeForms("forbidden page")
}

// The ACL editing round trip through the page: entries typed and a digest user whose
// password the console hashes, saved with the ACL version, shown back, enforced by the
// server, audited; a stale ACL version is refused.
func TestZnodeACLEditRoundTrip(t *testing.T) {
	h := start(t)
	h.create("/secured", []byte("v"))
	h.login("admin")
	// A change behind the page's back: the stale form is refused.
	h.open(znodeURL("/secured"), aclForm)
	if _, err := h.conn.SetACL("/secured", zk.WorldACL(zk.PermAll), 0); err != nil {
		t.Fatal(err)
	}
	h.navigate("save the stale ACL", chromedp.Click(chromedp.CSS(aclForm+` button[type=submit]`)))
	if got := h.text(pageError); !strings.Contains(got, "ACL version conflict") {
		t.Errorf("stale ACL save: error %q", got)
	}
	if _, st, _ := h.conn.Exists("/secured"); st.Aversion != 1 {
		t.Errorf("after the stale save the aversion is %d, want 1", st.Aversion)
	}

	if got := run[string](h, `document.querySelector('`+aclForm+` textarea[name=acl]').value`); got != "world:anyone:cdrwa\n" {
		t.Fatalf("ACL text %q, want world:anyone:cdrwa", got)
	}
	h.do("edit the ACL",
		chromedp.Clear(chromedp.CSS(aclForm+` textarea[name=acl]`)),
		chromedp.SendKeys(chromedp.CSS(aclForm+` textarea[name=acl]`), "world:anyone:ra"),
		chromedp.SendKeys(chromedp.CSS(aclForm+` input[name=digest_user]`), "eve"),
		chromedp.SendKeys(chromedp.CSS(aclForm+` input[name=digest_password]`), "3ve-secret"),
		chromedp.Clear(chromedp.CSS(aclForm+` input[name=digest_perms]`)),
		chromedp.SendKeys(chromedp.CSS(aclForm+` input[name=digest_perms]`), "cdrwa"))
	if resp := h.navigate("save the ACL", chromedp.Click(chromedp.CSS(aclForm+` button[type=submit]`))); resp.Status != 200 {
		t.Fatalf("save the ACL: status %d", resp.Status)
	}
	if got := h.text(flash); got != "ACL saved: aversion 2" {
		t.Errorf("flash %q", got)
	}
	eve := coordinator.DigestID("eve", "3ve-secret")
	shown := h.text(aclList)
	if !strings.Contains(shown, "world:anyone ra") || !strings.Contains(shown, "digest:"+eve+" cdrwa") {
		t.Errorf("ACL shown %q, want world:anyone ra and digest:%s cdrwa", shown, eve)
	}
	acl, st, err := h.conn.GetACL("/secured")
	if err != nil || st.Aversion != 2 || len(acl) != 2 || acl[1].ID != eve || acl[0].Perms != zk.PermRead|zk.PermAdmin {
		t.Fatalf("ACL on the server %+v %v %v", acl, st, err)
	}
	if _, err := h.conn.Set("/secured", []byte("w"), -1); err != zk.ErrNoAuth { // the console's session is the world
		t.Errorf("world write after the ACL change: %v, want no auth", err)
	}
	if body := run[string](h, `document.documentElement.outerHTML`); strings.Contains(body, "3ve-secret") {
		t.Errorf("the page shows eve's password")
	}

	h.open("/audit", auditTable)
	row := h.text(auditNewest)
	if !strings.Contains(row, "znode.setacl") || !strings.Contains(row, "digest:"+eve+":cdrwa") || strings.Contains(row, "3ve-secret") {
		t.Errorf("newest audit row %q: want the ACL change without the password", row)
	}
	h.open(znodeURL("/secured"), aclForm)
}
