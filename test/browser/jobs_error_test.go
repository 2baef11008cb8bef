package browser

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// TestJobErrorInBrowser: a job the master cannot fire — its fires directory, made by
// its writer, lets the master only read — shows as in error in the jobs list and on its
// page, with the master's reason, its tries and its next try; the viewer sees it with no
// button; the operator mends the cause and clears the error, and the job fires.
func TestJobErrorInBrowser(t *testing.T) {
	h := start(t)
	h.startCluster()
	l := task.DefaultLayout
	data, _ := json.Marshal(task.Job{Task: task.Spec{Command: "true"}, Schedule: "@every 1s", Enabled: true,
		EnabledSince: time.Now().UTC()})
	for _, n := range []struct {
		path string
		data []byte
		acl  []zk.ACL
	}{
		{l.Jobs(), nil, zk.WorldACL(zk.PermAll)},
		{l.Job("stuck"), data, zk.WorldACL(zk.PermAll)},
		{l.Fires("stuck"), nil, zk.WorldACL(zk.PermRead)},
	} {
		if _, err := h.conn.Create(n.path, n.data, 0, n.acl); err != nil && n.path != l.Jobs() {
			t.Fatalf("create %s: %v", n.path, err)
		}
		if n.path == l.Job("stuck") { // signed by a submitter: the master would fire it
			testutil.SignNode(t, h.conn, n.path, task.JobDomain, n.data, h.keys.Signer(coordinator.RoleSubmitter))
		}
	}

	h.login("viewer")
	h.waitReload("stuck shown in error in the list", "/jobs", `table.jobs`, func() bool {
		r := row(h.rows(""), "stuck")
		return len(r) > 2 && strings.HasSuffix(r[2], "error")
	})
	h.open("/jobs/stuck", jobTitle)
	if got := h.text(`.job-fault h2`); got != "In error: not fired" {
		t.Errorf("the job page's error heading %q", got)
	}
	if got := h.text(`.job-fault .fault-reason`); !strings.Contains(got, "/jobs/stuck/fires/") || !strings.Contains(got, "not authenticated") {
		t.Errorf("the reason shown %q: want the fire's path and the servers' refusal", got)
	}
	if b := h.pageHasButton(`form.clear-error button`); len(b) > 0 {
		t.Errorf("the viewer sees %q", b)
	}
	h.screenshot("1_job_in_error")

	// The operator mends it (the directory goes: the master makes its own) and clears.
	h.login("operator")
	h.open("/jobs/stuck", `.job-fault`)
	if err := h.conn.Delete(l.Fires("stuck"), -1); err != nil {
		t.Fatal(err)
	}
	if resp := h.navigate("clear the error", chromedp.Click(chromedp.CSS(`form.clear-error button`))); resp.Status != 200 {
		t.Fatalf("clear the error: status %d", resp.Status)
	}
	if got := h.text(flash); got != "cleared the error of stuck: the master tries it again now" {
		t.Errorf("flash %q after clear", got)
	}
	h.waitReload("stuck fires once cleared", "/jobs/stuck", jobTitle, func() bool {
		fired := false
		for _, r := range h.rows("Run history") {
			fired = fired || len(r) == 4 && r[1] == "started"
		}
		return fired && len(h.pageHasButton(`.job-fault`)) == 0
	})
	h.screenshot("2_cleared_and_fired")
	h.open("/jobs", `table.jobs`)
	if r := row(h.rows(""), "stuck"); len(r) < 3 || r[2] != "enabled" {
		t.Errorf("stuck's row once it fires: %q", r)
	}
}
