package browser

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Selectors of the console's pages. The templates have few ids, so these go by form
// actions, field names and classes; a template change that breaks them should fail here.
const (
	childrenList = `section.children`
	nodeTitle    = `section.node h1`
	textPanel    = `[data-panel=text] pre.data`
	editForm     = `form[action="/znodes/edit"]`
	editData     = editForm + ` textarea[name=data]`
	editSubmit   = editForm + ` button[type=submit]`
	flash        = `main p.flash`
	pageError    = `main p.error`
	auditTable   = `table.list`
	auditNewest  = `table.list tbody tr:first-child`
)

// childNames returns the link texts of the page's children list.
func (h *harness) childNames() []string {
	h.t.Helper()
	h.do("wait for the children", chromedp.WaitVisible(chromedp.CSS(childrenList)))
	return run[[]string](h, `Array.from(document.querySelectorAll('`+childrenList+` li a'), a => a.textContent)`)
}

// childLink selects the link of the child named name in the znode browser's list.
func childLink(name string) string {
	return `//section[contains(concat(" ", @class, " "), " children ")]//li/a[normalize-space(.)="` + name + `"]`
}

func TestLoginBrowseEditAudit(t *testing.T) {
	h := start(t)
	h.create("/app", nil)
	h.create("/app/config", []byte("replicas=1"))
	_, before := h.get("/app/config")

	h.login("operator")
	// Browse by clicking the children's links, as a user does.
	h.open("/znodes", childrenList)
	if got := h.childNames(); !slices.Contains(got, "app") {
		t.Fatalf("/ lists %q, want app among them", got)
	}
	if resp := h.navigate("click app", chromedp.Click(chromedp.Search(childLink("app")))); resp.Status != 200 {
		t.Fatalf("the link to /app: status %d", resp.Status)
	}
	if got := h.childNames(); !slices.Equal(got, []string{"..", "config"}) {
		t.Fatalf("/app lists %q, want [.. config]", got)
	}
	if resp := h.navigate("click config", chromedp.Click(chromedp.Search(childLink("config")))); resp.Status != 200 {
		t.Fatalf("the link to /app/config: status %d", resp.Status)
	}
	h.do("wait for the znode", chromedp.WaitVisible(chromedp.CSS(nodeTitle)))
	if got := h.text(nodeTitle); got != "/app/config" {
		t.Fatalf("page title %q, want /app/config", got)
	}
	if got := h.text(textPanel); got != "replicas=1" {
		t.Fatalf("data shown %q, want replicas=1", got)
	}

	const edited = "replicas=3"
	h.do("type into the edit form",
		chromedp.Clear(chromedp.CSS(editData)),
		chromedp.SendKeys(chromedp.CSS(editData), edited))
	if resp := h.navigate("save", chromedp.Click(chromedp.CSS(editSubmit))); resp.Status != 200 {
		t.Fatalf("save: status %d, want 200 (the znode page after the redirect)", resp.Status)
	}
	if got := h.text(flash); got != "saved: version 1" {
		t.Errorf("flash %q, want %q", got, "saved: version 1")
	}
	if got := h.text(textPanel); got != edited {
		t.Errorf("data shown after save %q, want %q", got, edited)
	}
	data, after := h.get("/app/config")
	if string(data) != edited || after.Version != before.Version+1 || after.Mzxid <= before.Mzxid {
		t.Fatalf("after save: data %q version %d mzxid %d; want %q version %d and a newer mzxid than %d",
			data, after.Version, after.Mzxid, edited, before.Version+1, before.Mzxid)
	}

	h.open("/audit", auditTable)
	row := h.text(auditNewest)
	for _, want := range []string{"operator (operator)", "/app/config", "v0", "replicas=1", "v1", edited} {
		if !strings.Contains(row, want) {
			t.Errorf("newest audit row %q lacks %q", row, want)
		}
	}
}

func TestEditWithStaleVersionShowsConflict(t *testing.T) {
	h := start(t)
	h.create("/race", []byte("one"))
	h.login("admin")
	h.open(znodeURL("/race"), editForm)
	if _, err := h.conn.Set("/race", []byte("two"), 0); err != nil { // behind the page's back
		t.Fatal(err)
	}
	h.do("type into the edit form",
		chromedp.Clear(chromedp.CSS(editData)),
		chromedp.SendKeys(chromedp.CSS(editData), "three"))
	h.navigate("save", chromedp.Click(chromedp.CSS(editSubmit)))
	if got := h.text(pageError); !strings.Contains(got, "/race") {
		t.Errorf("error %q, want one naming /race", got)
	}
	if data, st := h.get("/race"); string(data) != "two" || st.Version != 1 {
		t.Errorf("after a stale save: data %q version %d, want \"two\" version 1", data, st.Version)
	}
}

func TestViewerSeesNoForms(t *testing.T) {
	h := start(t)
	h.create("/app", []byte("read me"))
	h.login("viewer")
	h.open(znodeURL("/app"), nodeTitle)
	if got := h.text(textPanel); got != "read me" { // the page did render the znode
		t.Fatalf("data shown %q, want %q", got, "read me")
	}
	n := run[int](h, `document.querySelectorAll('form[action^="/znodes/"], textarea').length`)
	if n != 0 {
		t.Errorf("viewer's znode page has %d change forms or text areas, want none", n)
	}
	if got := h.text(`form.logout span`); got != "viewer (viewer)" {
		t.Errorf("header shows %q, want %q", got, "viewer (viewer)")
	}
}

func TestWrongPasswordShowsError(t *testing.T) {
	h := start(t)
	if resp := h.fillLogin("admin", "not-the-password"); resp.Status != 401 {
		t.Errorf("status %d, want 401", resp.Status)
	}
	if got := h.text(pageError); got != "wrong user name or password" {
		t.Errorf("error %q, want %q", got, "wrong user name or password")
	}
	if n := run[int](h, `document.querySelectorAll('form.logout').length`); n != 0 {
		t.Errorf("after a failed login the page shows a logout form")
	}
	h.open("/znodes", `form.login`) // still logged out: the console sends us back
	if loc := run[string](h, `location.pathname`); loc != "/login" {
		t.Errorf("/znodes without a login ended at %s, want /login", loc)
	}
	h.login("admin") // and the right password still works
}

func TestHTMLInZnodeIsShownAsText(t *testing.T) {
	h := start(t)
	// If any of these reached the DOM as markup, an img element would exist; had its
	// handler run (the console's CSP forbids inline handlers too), the marker would be set.
	const (
		name   = `<img src=x onerror="window.__paddockXSS='name'">`
		data   = `<img src=x onerror="window.__paddockXSS='data'"><script>window.__paddockXSS='script'</script>`
		edited = `</textarea><img src=x onerror="window.__paddockXSS='edit'">`
	)
	path := "/xss/" + name
	h.create("/xss", nil)
	h.create(path, []byte(data))
	h.login("admin")

	h.open(znodeURL("/xss"), childrenList)
	h.checkNoMarkup("/xss")
	if got := h.childNames(); !slices.Equal(got, []string{"..", name}) {
		t.Errorf("/xss lists %q, want [.. %q]", got, name)
	}
	h.open(znodeURL(path), nodeTitle)
	h.checkNoMarkup(path)
	if got := h.text(nodeTitle); got != path {
		t.Errorf("title %q, want %q", got, path)
	}
	if got := h.text(textPanel); got != data {
		t.Errorf("data shown %q, want %q", got, data)
	}
	if got := run[string](h, `document.querySelector('`+editData+`').value`); got != data {
		t.Errorf("edit form holds %q, want %q", got, data)
	}
	if got := run[string](h, `document.title`); !strings.Contains(got, path) {
		t.Errorf("document title %q lacks %q", got, path)
	}

	h.do("type into the edit form",
		chromedp.Clear(chromedp.CSS(editData)),
		chromedp.SendKeys(chromedp.CSS(editData), edited))
	h.navigate("save", chromedp.Click(chromedp.CSS(editSubmit)))
	h.do("wait for the saved page", chromedp.WaitVisible(chromedp.CSS(flash)))
	h.checkNoMarkup(path + " after saving")
	if got, _ := h.get(path); string(got) != edited {
		t.Fatalf("saved data %q, want %q", got, edited)
	}

	h.open("/audit", auditTable)
	h.checkNoMarkup("/audit")
	row := h.text(auditNewest)
	for _, want := range []string{path, data, edited} {
		if !strings.Contains(row, want) {
			t.Errorf("newest audit row %q lacks %q", row, want)
		}
	}
}

// checkNoMarkup fails the test if the page holds an img element, a script other than
// the console's own, or the marker global.
func (h *harness) checkNoMarkup(page string) {
	h.t.Helper()
	if n := run[int](h, `document.querySelectorAll('img').length`); n != 0 {
		h.t.Errorf("%s: %d img elements injected", page, n)
	}
	scripts := run[[]string](h, `Array.from(document.scripts, s => s.src)`)
	for _, src := range scripts {
		if u, err := url.Parse(src); err != nil || u.Path != "/static/console.js" {
			h.t.Errorf("%s: unexpected script %q", page, src)
		}
	}
	if v := run[string](h, `typeof window.__paddockXSS`); v != "undefined" {
		h.t.Errorf("%s: marker window.__paddockXSS is %s: a handler ran", page, v)
	}
}
