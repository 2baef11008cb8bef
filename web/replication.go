package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/paddock/paddock/replicator"
)

// Replication tasks are read and changed through replicator.Admin, which masks the
// DSNs' passwords of everything it returns; the console only ever shows, answers and
// audits those masked views, never a definition it read itself.

func (c *Console) replLayout() replicator.Layout {
	l, _ := replicator.NewLayout(c.cfg.Root) // Config.Validate checked the root
	return l
}

// replMonitorInterval is how often the console's replication monitor checks every
// task while it is the elected one.
const replMonitorInterval = 5 * time.Second

// monitorReplication runs a replicator.Monitor until ctx ends: it campaigns with the
// replicator processes', so that with none of them left the console logs that a task
// went unserved.
func (c *Console) monitorReplication(ctx context.Context) {
	host, _ := os.Hostname()
	replicator.NewMonitor(c.session, c.replLayout(), c.logger.With("component", "replication_monitor"),
		replMonitorInterval, "console@"+host).Run(ctx)
}

func (c *Console) replAdmin() *replicator.Admin {
	return replicator.NewAdmin(c.session, c.replLayout())
}

// replSnapshot is the audit snapshot of a replication task: its masked definition.
func (c *Console) replSnapshot(ctx context.Context, name string) *Snapshot {
	v, err := c.replGet(ctx, name)
	if err != nil {
		return snapshotOf(nil, nil)
	}
	return c.viewSnapshot(c.replLayout().Task(name), v.Def)
}

// replRequest creates (every field) or changes (the fields given) a task.
type replRequest struct {
	Name     string    `json:"name"`
	Source   *string   `json:"source"`
	Target   *string   `json:"target"`
	Include  *[]string `json:"include"`
	Exclude  *[]string `json:"exclude"`
	ServerID *uint32   `json:"server_id"`
	Enabled  *bool     `json:"enabled"`
}

// apply sets the fields given on d.
func (r replRequest) apply(d *replicator.TaskDef) {
	set := func(to *string, from *string) {
		if from != nil {
			*to = *from
		}
	}
	set(&d.Source, r.Source)
	set(&d.Target, r.Target)
	if r.Include != nil {
		d.Include = *r.Include
	}
	if r.Exclude != nil {
		d.Exclude = *r.Exclude
	}
	if r.ServerID != nil {
		d.ServerID = *r.ServerID
	}
	if r.Enabled != nil {
		d.Enabled = *r.Enabled
	}
}

func (c *Console) doReplCreate(g *gin.Context, r replRequest) error {
	var d replicator.TaskDef
	r.apply(&d)
	if d.ServerID == 0 {
		d.ServerID = replicator.DefaultServerID(r.Name)
	}
	if err := d.Validate(r.Name); err != nil { // never shows a password
		return badRequest("%v", err)
	}
	ctx := g.Request.Context()
	if err := c.replAdmin().Create(ctx, r.Name, d); err != nil {
		return sameServerRequest(err)
	}
	c.audit(g, AuditRecord{Action: "replication.create", Target: r.Name,
		Before: snapshotOf(nil, nil), After: c.replSnapshot(ctx, r.Name)})
	return nil
}

func (c *Console) doReplUpdate(g *gin.Context, name string, r replRequest) (replicator.TaskDef, error) {
	if err := replicator.CheckTaskName(name); err != nil {
		return replicator.TaskDef{}, badRequest("%v", err)
	}
	ctx := g.Request.Context()
	before := c.replSnapshot(ctx, name)
	d, err := c.replAdmin().Update(ctx, name, func(d *replicator.TaskDef) error {
		r.apply(d)
		if err := d.Validate(name); err != nil {
			return badRequest("%v", err)
		}
		return nil
	})
	if err != nil {
		return d, sameServerRequest(err)
	}
	c.audit(g, AuditRecord{Action: "replication.update", Target: name, Before: before, After: c.replSnapshot(ctx, name)})
	return d, nil
}

// sameServerRequest makes a refusal of a task whose source and target are one server
// a bad request (400) naming why; other errors pass.
func sameServerRequest(err error) error {
	if errors.Is(err, replicator.ErrSameServer) {
		return badRequest("%v", err)
	}
	return err
}

func (c *Console) doReplEnable(g *gin.Context, name string, enabled bool) error {
	if err := replicator.CheckTaskName(name); err != nil {
		return badRequest("%v", err)
	}
	ctx := g.Request.Context()
	before := c.replSnapshot(ctx, name)
	if err := c.replAdmin().SetEnabled(ctx, name, enabled); err != nil {
		return err
	}
	action := "replication.disable"
	if enabled {
		action = "replication.enable"
	}
	c.audit(g, AuditRecord{Action: action, Target: name, Before: before, After: c.replSnapshot(ctx, name)})
	return nil
}

func (c *Console) doReplDelete(g *gin.Context, name string) error {
	if err := replicator.CheckTaskName(name); err != nil {
		return badRequest("%v", err)
	}
	ctx := g.Request.Context()
	before := c.replSnapshot(ctx, name)
	if err := c.replAdmin().Delete(ctx, name); err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "replication.delete", Target: name, Before: before, After: snapshotOf(nil, nil)})
	return nil
}

func (c *Console) apiReplTasks(g *gin.Context) {
	tasks, err := c.replList(g.Request.Context())
	if err != nil {
		c.serviceError(g, "replication", err)
		return
	}
	if tasks == nil {
		tasks = []*replicator.TaskView{}
	}
	g.JSON(http.StatusOK, gin.H{"tasks": tasks})
}

func (c *Console) apiReplTask(g *gin.Context) {
	name := g.Param("name")
	v, err := c.replGet(g.Request.Context(), name)
	if err != nil {
		if replicator.CheckTaskName(name) != nil {
			err = badRequest("%v", err)
		}
		c.serviceError(g, name, err)
		return
	}
	g.JSON(http.StatusOK, v)
}

func bindRepl(g *gin.Context) (replRequest, bool) {
	var r replRequest
	dec := json.NewDecoder(g.Request.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		apiError(g, http.StatusBadRequest, "want a JSON body {\"name\", \"source\", \"target\", \"include\", \"exclude\", \"server_id\", \"enabled\"}: "+err.Error())
		return r, false
	}
	return r, true
}

func (c *Console) apiReplCreate(g *gin.Context) {
	r, ok := bindRepl(g)
	if !ok {
		return
	}
	if err := c.doReplCreate(g, r); err != nil {
		c.serviceError(g, r.Name, err)
		return
	}
	v, err := c.replGet(g.Request.Context(), r.Name)
	if err != nil {
		g.JSON(http.StatusCreated, gin.H{"name": r.Name})
		return
	}
	g.JSON(http.StatusCreated, v)
}

func (c *Console) apiReplUpdate(g *gin.Context) {
	r, ok := bindRepl(g)
	if !ok {
		return
	}
	name := g.Param("name")
	if r.Name != "" && r.Name != name {
		apiError(g, http.StatusBadRequest, "name: a task cannot be renamed; leave it out or give "+name)
		return
	}
	d, err := c.doReplUpdate(g, name, r)
	if err != nil {
		c.serviceError(g, name, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"name": name, "definition": d}) // Update answers it masked
}

func (c *Console) apiReplEnable(enabled bool) gin.HandlerFunc {
	return func(g *gin.Context) {
		name := g.Param("name")
		if err := c.doReplEnable(g, name, enabled); err != nil {
			c.serviceError(g, name, err)
			return
		}
		g.JSON(http.StatusOK, gin.H{"name": name, "enabled": enabled})
	}
}

func (c *Console) apiReplDelete(g *gin.Context) {
	name := g.Param("name")
	if err := c.doReplDelete(g, name); err != nil {
		c.serviceError(g, name, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"name": name, "deleted": true})
}

// replRow is a task as the list page shows it.
type replRow struct {
	*replicator.TaskView
	Running  string // the running instance's node, if any
	Standbys int
}

// LagText renders the judged lag: "12.0 s", or "unknown" before anything was applied.
func (r replRow) LagText() string {
	if r.Health == nil || r.Health.LagSeconds == nil {
		return "unknown (nothing applied yet)"
	}
	return fmt.Sprintf("%.1f s", *r.Health.LagSeconds)
}

// ReportedText renders the age of the last status report by the server's clock.
func (r replRow) ReportedText() string {
	if r.Health == nil || r.Health.StatusAgeSeconds == nil {
		return "never reported"
	}
	return fmt.Sprintf("reported %.0f s ago", *r.Health.StatusAgeSeconds)
}

func replRows(tasks []*replicator.TaskView) []replRow {
	rows := make([]replRow, len(tasks))
	for i, t := range tasks {
		rows[i] = replRow{TaskView: t}
		if len(t.Instances) > 0 {
			rows[i].Running = t.Instances[0].Node
			rows[i].Standbys = len(t.Instances) - 1
		}
	}
	return rows
}

// replPage is the list (Detail nil) or one task's page (Detail its only row).
type replPage struct {
	Tasks   []replRow
	Detail  *replRow
	IsAdmin bool
}

func (c *Console) replicationPage(g *gin.Context) {
	tasks, err := c.replList(g.Request.Context())
	if err != nil {
		_, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
	}
	c.render(g, http.StatusOK, "replication", "Replication", replPage{Tasks: replRows(tasks),
		IsAdmin: sessionOf(g).role >= roleAdmin})
}

func (c *Console) replTaskPage(g *gin.Context) {
	name := g.Param("name")
	v, err := c.replGet(g.Request.Context(), name)
	if err != nil {
		status, msg := serviceStatus(err)
		if replicator.CheckTaskName(name) != nil {
			status = http.StatusBadRequest
		}
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
		c.render(g, status, "replication", name, replPage{})
		return
	}
	rows := replRows([]*replicator.TaskView{v})
	c.render(g, http.StatusOK, "replication", name, replPage{Tasks: rows, Detail: &rows[0],
		IsAdmin: sessionOf(g).role >= roleAdmin})
}

func (c *Console) replCreateForm(g *gin.Context) {
	r := replRequest{Name: strings.TrimSpace(g.PostForm("name"))}
	src, tgt := g.PostForm("source"), g.PostForm("target")
	inc, exc := formLines(g.PostForm("include")), formLines(g.PostForm("exclude"))
	enabled := g.PostForm("enabled") == "true"
	r.Source, r.Target, r.Include, r.Exclude, r.Enabled = &src, &tgt, &inc, &exc, &enabled
	if s := strings.TrimSpace(g.PostForm("server_id")); s != "" {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			formFailed(g, "/replication", badRequest("server_id %q: want a number, or empty to derive one", s))
			return
		}
		id := uint32(n)
		r.ServerID = &id
	}
	if err := c.doReplCreate(g, r); err != nil {
		formFailed(g, "/replication", err)
		return
	}
	redirectWith(g, "/replication/"+url.PathEscape(r.Name), "flash", "created "+r.Name)
}

// replEditForm changes a task from its page's form: an empty DSN field keeps the DSN
// (the page never shows it whole), include and exclude are replaced, an empty server
// id keeps it.
func (c *Console) replEditForm(g *gin.Context) {
	name := g.Param("name")
	back := "/replication/" + url.PathEscape(name)
	var r replRequest
	if src := strings.TrimSpace(g.PostForm("source")); src != "" {
		r.Source = &src
	}
	if tgt := strings.TrimSpace(g.PostForm("target")); tgt != "" {
		r.Target = &tgt
	}
	inc, exc := formLines(g.PostForm("include")), formLines(g.PostForm("exclude"))
	r.Include, r.Exclude = &inc, &exc
	if s := strings.TrimSpace(g.PostForm("server_id")); s != "" {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			formFailed(g, back, badRequest("server_id %q: want a number", s))
			return
		}
		id := uint32(n)
		r.ServerID = &id
	}
	if _, err := c.doReplUpdate(g, name, r); err != nil {
		formFailed(g, back, err)
		return
	}
	redirectWith(g, back, "flash", "saved "+name)
}

func (c *Console) replEnableForm(enabled bool) gin.HandlerFunc {
	return func(g *gin.Context) {
		name := g.Param("name")
		back := "/replication/" + url.PathEscape(name)
		if err := c.doReplEnable(g, name, enabled); err != nil {
			formFailed(g, back, err)
			return
		}
		msg := "disabled " + name
		if enabled {
			msg = "enabled " + name
		}
		redirectWith(g, back, "flash", msg)
	}
}

func (c *Console) replDeleteForm(g *gin.Context) {
	name := g.Param("name")
	if err := c.doReplDelete(g, name); err != nil {
		formFailed(g, "/replication/"+url.PathEscape(name), err)
		return
	}
	redirectWith(g, "/replication", "flash", "deleted "+name)
}

// replGet is replicator.Admin.Get with the task's error texts masked too: the
// definition comes masked, but an error a replicator wrote may quote a DSN.
func (c *Console) replGet(ctx context.Context, name string) (*replicator.TaskView, error) {
	v, err := c.replAdmin().Get(ctx, name)
	return maskReplView(v), err
}

// replList is replicator.Admin.List with the error texts masked (replGet).
func (c *Console) replList(ctx context.Context) ([]*replicator.TaskView, error) {
	vs, err := c.replAdmin().List(ctx)
	for _, v := range vs {
		maskReplView(v)
	}
	return vs, err
}

func maskReplView(v *replicator.TaskView) *replicator.TaskView {
	if v == nil {
		return nil
	}
	if v.Status != nil {
		v.Status.LastError = string(maskSecrets([]byte(v.Status.LastError)))
	}
	if v.Health != nil {
		v.Health.Detail = string(maskSecrets([]byte(v.Health.Detail)))
	}
	return v
}
