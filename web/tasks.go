package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/task"
)

// defaultTaskPage is how many tasks a page of the task list shows.
const defaultTaskPage = 50

// addPages parses pages into set, each with the shared layout and the templates'
// functions.
func addPages(set pageSet, names ...string) error {
	funcs := template.FuncMap{"age": age, "lines": lines, "envLines": envLines,
		"hasPrefix": strings.HasPrefix, "inZone": inZone, "policies": policies, "dagHref": dagHref,
		"refusals": refusals}
	for _, name := range names {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return err
		}
		set[name] = t
	}
	return nil
}

// age renders how long ago t was, in whole seconds; "never" for the zero time.
func age(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}

// refusals counts the tasks the workers refused.
func refusals(ws []WorkerView) int {
	n := 0
	for _, w := range ws {
		n += len(w.Refused)
	}
	return n
}

// lines joins ss one per line, for a textarea.
func lines(ss []string) string { return strings.Join(ss, "\n") }

// envLines renders an environment as sorted K=V lines.
func envLines(env map[string]string) string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// serviceStatus maps the errors of the task, replicator and logcollector packages to
// an HTTP status and words; anything else is a ZooKeeper error (zkStatus).
func serviceStatus(err error) (int, string) {
	var re *requestError
	switch {
	case errors.As(err, &re):
		return http.StatusBadRequest, re.msg
	case errors.Is(err, task.ErrNotFound), errors.Is(err, task.ErrNotDrained), errors.Is(err, replicator.ErrNoTask), errors.Is(err, logcollector.ErrNoSource),
		errors.Is(err, task.ErrJobNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, task.ErrEnded), errors.Is(err, task.ErrJobExists), errors.Is(err, task.ErrJobChanged), errors.Is(err, replicator.ErrTaskExists),
		errors.Is(err, replicator.ErrEnabled), errors.Is(err, logcollector.ErrSourceExists):
		return http.StatusConflict, err.Error()
	}
	return zkStatus(err)
}

// serviceError answers err about target.
func (c *Console) serviceError(g *gin.Context, target string, err error) {
	status, msg := serviceStatus(err)
	if status == http.StatusInternalServerError {
		c.logger.Error("request failed", "target", target, "err", err)
	}
	if status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusConflict {
		apiError(g, status, msg)
		return
	}
	apiError(g, status, target+": "+msg)
}

// viewSnapshot is an audit snapshot of a service object: v (which must hold no
// secret) as JSON, at the version of the znode at path; v nil means it does not exist.
func (c *Console) viewSnapshot(path string, v any) *Snapshot {
	if v == nil {
		return snapshotOf(nil, nil)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return &Snapshot{Exists: true, Version: -1, Data: "unencodable: " + err.Error()}
	}
	st := &zk.Stat{Version: -1}
	if _, s, err := c.conn.Exists(path); err == nil && s != nil {
		st = s
	}
	return snapshotOf(b, st)
}

func (c *Console) taskLayout() task.Layout {
	l, err := task.NewLayout(c.cfg.Root)
	if err != nil { // Config.Validate checked the root
		return task.DefaultLayout
	}
	return l
}

func (c *Console) taskClient() *task.Client { return task.NewClient(c.session, c.taskLayout()) }

// TaskPage is one page of the task list, newest first.
type TaskPage struct {
	Tasks  []*task.Task `json:"tasks"`
	Total  int          `json:"total"`
	Offset int          `json:"offset"`
	// Next is the offset of the next page, absent on the last one.
	Next *int `json:"next,omitempty"`
}

// listTasks reads the ids of all tasks with one getChildren and the tasks of the
// page [offset, offset+limit) only, newest first (the workers, for why a pending one
// waits, once for the page).
func (c *Console) listTasks(ctx context.Context, offset, limit int) (TaskPage, error) {
	var ids []string
	err := c.read(ctx, func() (err error) {
		ids, _, err = c.conn.Children(c.taskLayout().Tasks())
		return err
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return TaskPage{}, err
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return task.CheckID(id) != nil })
	slices.Sort(ids)
	slices.Reverse(ids)
	p := TaskPage{Tasks: []*task.Task{}, Total: len(ids), Offset: offset}
	lo, hi := min(offset, len(ids)), min(offset+limit, len(ids))
	if hi < len(ids) {
		p.Next = &hi
	}
	tasks, err := c.taskClient().GetEach(ctx, ids[lo:hi])
	if err != nil {
		return TaskPage{}, err
	}
	for _, t := range tasks {
		p.Tasks = append(p.Tasks, maskTask(t))
	}
	return p, nil
}

// taskState is what the audit records of a task: where it stands, never its output.
type taskState struct {
	State           task.State `json:"state"`
	Worker          string     `json:"worker,omitempty"`
	CancelRequested bool       `json:"cancel_requested,omitempty"`
}

func (c *Console) taskSnapshot(ctx context.Context, id string) *Snapshot {
	t, err := c.taskClient().Get(ctx, id)
	if err != nil {
		return snapshotOf(nil, nil)
	}
	return c.viewSnapshot(c.taskLayout().Task(id), taskState{t.State, t.Worker, t.CancelRequested})
}

// doSubmit checks spec and submits it; a bad spec is a requestError naming the field.
func (c *Console) doSubmit(g *gin.Context, spec task.Spec, note string) (string, error) {
	if err := spec.Validate(); err != nil {
		return "", badRequest("%v", err)
	}
	id, err := c.taskClient().Submit(g.Request.Context(), spec)
	if err != nil {
		return "", err
	}
	c.audit(g, AuditRecord{Action: "task.submit", Target: id, Note: note,
		Before: snapshotOf(nil, nil), After: c.getForAudit(c.taskLayout().Task(id))})
	return id, nil
}

func (c *Console) doCancel(g *gin.Context, id string) error {
	if err := task.CheckID(id); err != nil {
		return badRequest("%v", err)
	}
	ctx := g.Request.Context()
	before := c.taskSnapshot(ctx, id)
	if err := c.taskClient().Cancel(ctx, id); err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "task.cancel", Target: id, Before: before, After: c.taskSnapshot(ctx, id)})
	return nil
}

// doRetry submits the spec of an ended task again, as a new task.
func (c *Console) doRetry(g *gin.Context, id string) (string, error) {
	if err := task.CheckID(id); err != nil {
		return "", badRequest("%v", err)
	}
	t, err := c.taskClient().Get(g.Request.Context(), id)
	if err != nil {
		return "", err
	}
	if !t.State.Ended() {
		return "", fmt.Errorf("%w: %s is %s: cancel it or let it end before retrying", errNotEnded, id, t.State)
	}
	// The console signs the new task: it must not vouch for a spec no trusted key signed.
	spec, err := c.taskClient().SignedSpec(g.Request.Context(), id)
	if err != nil {
		return "", badRequest("retry of %s refused: %v", id, err)
	}
	spec.Submitted, spec.Token = time.Time{}, "" // a new submission
	return c.doSubmit(g, spec, "retry of "+id)
}

// errNotEnded says a task cannot be retried yet.
var errNotEnded = errors.New("web: task has not ended")

func (c *Console) apiTasks(g *gin.Context) {
	offset, err1 := queryInt(g, "offset", 0)
	limit, err2 := queryInt(g, "limit", defaultTaskPage)
	if err1 != nil || err2 != nil || offset < 0 || limit < 1 || limit > maxPageSize {
		apiError(g, http.StatusBadRequest, fmt.Sprintf("offset: want 0 or more; limit: want 1 to %d", maxPageSize))
		return
	}
	p, err := c.listTasks(g.Request.Context(), offset, limit)
	if err != nil {
		c.serviceError(g, "tasks", err)
		return
	}
	g.JSON(http.StatusOK, p)
}

func (c *Console) apiTask(g *gin.Context) {
	id := g.Param("id")
	if err := task.CheckID(id); err != nil {
		apiError(g, http.StatusBadRequest, err.Error())
		return
	}
	t, err := c.taskClient().Get(g.Request.Context(), id)
	if err != nil {
		c.serviceError(g, id, err)
		return
	}
	g.JSON(http.StatusOK, maskTask(t))
}

func (c *Console) apiSubmitTask(g *gin.Context) {
	var spec task.Spec
	dec := json.NewDecoder(g.Request.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		apiError(g, http.StatusBadRequest, "want a JSON task spec {\"command\", \"args\", \"env\", \"timeout\", \"selector\", …}: "+err.Error())
		return
	}
	id, err := c.doSubmit(g, spec, "")
	if err != nil {
		c.serviceError(g, "tasks", err)
		return
	}
	g.JSON(http.StatusCreated, gin.H{"id": id})
}

func (c *Console) apiCancelTask(g *gin.Context) {
	id := g.Param("id")
	if err := c.doCancel(g, id); err != nil {
		c.serviceError(g, id, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"id": id, "cancel_requested": true})
}

func (c *Console) apiRetryTask(g *gin.Context) {
	id := g.Param("id")
	newID, err := c.doRetry(g, id)
	if errors.Is(err, errNotEnded) {
		apiError(g, http.StatusConflict, strings.TrimPrefix(err.Error(), errNotEnded.Error()+": "))
		return
	}
	if err != nil {
		c.serviceError(g, id, err)
		return
	}
	g.JSON(http.StatusCreated, gin.H{"id": newID, "retry_of": id})
}

// redirectWith sends the browser to target with a flash or error message.
func redirectWith(g *gin.Context, target, key, msg string) {
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	g.Redirect(http.StatusSeeOther, target+sep+url.Values{key: {msg}}.Encode())
}

// formFailed sends the browser back to target with err in words.
func formFailed(g *gin.Context, target string, err error) {
	_, msg := serviceStatus(err)
	if errors.Is(err, errNotEnded) {
		msg = strings.TrimPrefix(err.Error(), errNotEnded.Error()+": ")
	}
	redirectWith(g, target, "error", msg)
}

// serviceAPIRoutes registers the API of the task, worker, replication and log
// collection parts on the /api/v1 group.
func (c *Console) serviceAPIRoutes(r *gin.RouterGroup, operator, admin gin.HandlerFunc) {
	r.GET("/tasks", c.apiTasks)
	r.GET("/tasks/:id", c.apiTask)
	r.POST("/tasks", operator, c.apiSubmitTask)
	r.POST("/tasks/:id/cancel", operator, c.apiCancelTask)
	r.POST("/tasks/:id/retry", operator, c.apiRetryTask)
	r.GET("/jobs", c.apiJobs)
	r.GET("/jobs/:name", c.apiJob)
	r.POST("/jobs", operator, c.apiCreateJob)
	r.PUT("/jobs/:name", operator, c.apiUpdateJob)
	r.POST("/jobs/:name/enable", operator, c.apiEnableJob(true))
	r.POST("/jobs/:name/disable", operator, c.apiEnableJob(false))
	r.POST("/jobs/:name/run", operator, c.apiRunJob)
	r.POST("/jobs/:name/clear-error", operator, c.apiClearJobFault)
	r.DELETE("/jobs/:name", operator, c.apiDeleteJob)
	r.GET("/workers", c.apiWorkers)
	r.POST("/workers/:id/drain", operator, c.apiDrain(true))
	r.POST("/workers/:id/undrain", operator, c.apiDrain(false))
	r.GET("/replication", c.apiReplTasks)
	r.GET("/replication/:name", c.apiReplTask)
	r.POST("/replication", admin, c.apiReplCreate)
	r.PUT("/replication/:name", admin, c.apiReplUpdate)
	r.POST("/replication/:name/enable", operator, c.apiReplEnable(true))
	r.POST("/replication/:name/disable", operator, c.apiReplEnable(false))
	r.DELETE("/replication/:name", admin, c.apiReplDelete)
	r.GET("/logs", c.apiLogs)
	r.POST("/logs/sources", operator, c.apiAddSource)
	r.DELETE("/logs/sources/:id", operator, c.apiRemoveSource)
	c.logsCollectorAPIRoutes(r, operator)
}

// servicePageRoutes registers the pages and forms of the task, worker, replication and
// log collection parts.
func (c *Console) servicePageRoutes(r *gin.RouterGroup, operator, admin gin.HandlerFunc) {
	r.GET("/tasks", c.tasksPage)
	r.GET("/tasks/:id", c.taskPage)
	r.POST("/tasks", operator, c.submitForm)
	r.POST("/tasks/:id/cancel", operator, c.cancelForm)
	r.POST("/tasks/:id/retry", operator, c.retryForm)
	r.GET("/jobs", c.jobsPage)
	r.GET("/jobs/:name", c.jobPage)
	r.POST("/jobs", operator, c.jobCreateForm)
	r.POST("/jobs/:name/enable", operator, c.jobEnableForm(true))
	r.POST("/jobs/:name/disable", operator, c.jobEnableForm(false))
	r.POST("/jobs/:name/run", operator, c.jobRunForm)
	r.POST("/jobs/:name/clear-error", operator, c.jobClearFaultForm)
	r.POST("/jobs/:name/delete", operator, c.jobDeleteForm)
	r.GET("/dags/*dag", c.dagPage)
	r.GET("/workers", c.workersPage)
	r.POST("/workers/:id/drain", operator, c.drainForm(true))
	r.POST("/workers/:id/undrain", operator, c.drainForm(false))
	r.GET("/replication", c.replicationPage)
	r.GET("/replication/:name", c.replTaskPage)
	r.POST("/replication", admin, c.replCreateForm)
	r.POST("/replication/:name/enable", operator, c.replEnableForm(true))
	r.POST("/replication/:name/disable", operator, c.replEnableForm(false))
	r.POST("/replication/:name/delete", admin, c.replDeleteForm)
	r.POST("/replication/:name/edit", admin, c.replEditForm)
	r.GET("/logs", c.logsPage)
	r.POST("/logs/sources", operator, c.addSourceForm)
	r.POST("/logs/sources/:id/delete", operator, c.removeSourceForm)
	c.logsCollectorFormRoutes(r, operator)
}
