package browser

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

const (
	ordersTask = "/mysql_replicator/tasks/orders"
	ordersDef  = `{"source":"repl:S3cretSrcPw@tcp(127.0.0.1:3306)/","target":"app:T4rgetPw@tcp(127.0.0.1:3307)/",` +
		`"server_id":7,"enabled":true}`
)

// An operator edits a replication task's znode in the browser without seeing its
// passwords, the stored passwords survive the save, and a viewer finds them on no page:
// the znode page (text, JSON, hex, edit box) and the audit log.
func TestZnodePagesNeverShowPasswords(t *testing.T) {
	h := start(t)
	if err := h.session.MakeDirs(context.Background(), "/mysql_replicator/tasks"); err != nil {
		t.Fatal(err)
	}
	h.create(ordersTask, []byte(ordersDef))

	h.login("operator")
	h.open(znodeURL(ordersTask), editForm)
	if found := h.pageHas("S3cretSrcPw", "T4rgetPw"); len(found) > 0 {
		t.Fatalf("the operator's znode page shows %v", found)
	}
	// JSON data opens on the JSON tab; the text panel is there, hidden.
	if got := run[string](h, `document.querySelector('`+textPanel+`').textContent`); !strings.Contains(got, "repl:****@tcp(127.0.0.1:3306)/") {
		t.Fatalf("data shown %q: want the DSN with its password masked", got)
	}
	// Turn the task off in the edit box, leaving the masked DSNs as they are.
	if !run[bool](h, `(() => { const t = document.querySelector('`+editData+`');
		t.value = t.value.replace('"enabled":true', '"enabled":false'); return t.value.includes('"enabled":false'); })()`) {
		t.Fatal("the edit box does not hold the task's JSON")
	}
	if resp := h.navigate("save", chromedp.Click(chromedp.CSS(editSubmit))); resp.Status != 200 {
		t.Fatalf("save: status %d", resp.Status)
	}
	if got := h.text(flash); !strings.HasPrefix(got, "saved") {
		t.Fatalf("flash %q, want saved", got)
	}
	data, _ := h.get(ordersTask)
	if want := strings.Replace(ordersDef, `"enabled":true`, `"enabled":false`, 1); string(data) != want {
		t.Fatalf("stored after the save:\n%s\nwant\n%s", data, want)
	}

	h.login("viewer")
	for _, page := range []string{znodeURL(ordersTask), "/audit"} {
		h.open(page, "main")
		if found := h.pageHas("S3cretSrcPw", "T4rgetPw"); len(found) > 0 {
			t.Errorf("the viewer's page %s shows %v", page, found)
		}
	}
	h.open("/audit", auditNewest)
	if got := h.text(auditNewest); !strings.Contains(got, ordersTask) {
		t.Errorf("newest audit row %q: want the save of %s", got, ordersTask)
	}
}
