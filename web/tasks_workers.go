package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// WorkerView is a live worker with the count of its assignments.
type WorkerView struct {
	ID   string          `json:"id"`
	Info task.WorkerInfo `json:"info"`
	// State is what the worker says of itself (active for a worker that says nothing);
	// Drain its drain request, if any.
	State task.WorkerState   `json:"state"`
	Drain *task.DrainRequest `json:"drain,omitempty"`
	// Assigned counts /assign/<id>'s children; Running those the worker marked started.
	Assigned int `json:"assigned"`
	Running  int `json:"running"`
	// Beat is the registration's mtime (the worker's last heartbeat, the servers'
	// clock); Stale says it is older than Info.StaleAfter: the master gives it nothing new.
	Beat  time.Time `json:"beat"`
	Stale bool      `json:"stale"`
	// Refused are the tasks the worker handed back because it could not read them or
	// record their outcome, until the master has ended them (task.Refusal).
	Refused []task.Refusal `json:"refused,omitempty"`
}

// ClusterView is the task cluster's master (nil when none is elected) and workers.
type ClusterView struct {
	Master  *task.MasterInfo `json:"master"`
	Workers []WorkerView     `json:"workers"`
	// DrainedAbsent lists the workers with a drain request that are not live: they
	// start drained.
	DrainedAbsent []string `json:"drained_absent,omitempty"`
}

// readJSON reads path's data into v, retrying across connection loss.
func (c *Console) readJSON(ctx context.Context, path string, v any) error {
	var data []byte
	err := c.read(ctx, func() (err error) {
		data, _, err = c.conn.Get(path)
		return err
	})
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// childrenOf lists path's children, sorted; none if path does not exist.
func (c *Console) childrenOf(ctx context.Context, path string) ([]string, error) {
	var names []string
	err := c.read(ctx, func() (err error) {
		names, _, err = c.conn.Children(path)
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(names)
	return names, err
}

func (c *Console) cluster(ctx context.Context) (ClusterView, error) {
	l := c.taskLayout()
	v := ClusterView{Workers: []WorkerView{}}
	var m task.MasterInfo
	switch err := c.readJSON(ctx, l.Master(), &m); {
	case err == nil:
		v.Master = &m
	case !errors.Is(err, zk.ErrNoNode):
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if !errors.As(err, &se) && !errors.As(err, &te) { // unreadable data: shown as no master
			return v, err
		}
	}
	ids, err := c.childrenOf(ctx, l.Workers())
	if err != nil {
		return v, err
	}
	now, nowErr := task.ServerNow(c.session, l) // without it, no worker is judged stale
	for _, id := range ids {
		w := WorkerView{ID: id}
		if err := c.readJSON(ctx, l.Worker(id), &w.Info); errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile
		}
		if ok, st, err := c.conn.Exists(l.Worker(id)); err == nil && ok {
			w.Beat = time.UnixMilli(st.Mtime).UTC()
			b := w.Info.StaleAfter()
			w.Stale = nowErr == nil && b > 0 && now.Sub(w.Beat) > b
		}
		names, err := c.childrenOf(ctx, l.AssignDir(id))
		if err != nil {
			return v, err
		}
		var assigned []string
		for _, n := range names {
			if t, ok := task.RefusedTask(n); ok {
				r := task.Refusal{Task: t, Worker: id}
				if err := c.readJSON(ctx, l.Refusal(id, t), &r); errors.Is(err, zk.ErrNoNode) {
					continue // the master ended the task meanwhile
				} else if err != nil {
					r.Error = "unreadable refusal: " + err.Error()
				}
				w.Refused = append(w.Refused, r)
			} else if task.CheckID(n) == nil {
				assigned = append(assigned, n)
			}
		}
		w.Assigned = len(assigned)
		if w.State = w.Info.State; w.State == "" {
			w.State = task.WorkerActive
		}
		var req task.DrainRequest
		switch err := c.readJSON(ctx, l.Drain(id), &req); {
		case err == nil:
			w.Drain = &req
		case errors.Is(err, zk.ErrNoNode):
		default:
			var se *json.SyntaxError
			if !errors.As(err, &se) {
				return v, err
			}
			w.Drain = &task.DrainRequest{} // unreadable: the worker drains without a deadline
		}
		for _, t := range assigned {
			var a task.Assignment
			if c.readJSON(ctx, l.Assignment(id, t), &a) == nil && !a.Started.IsZero() {
				w.Running++
			}
		}
		v.Workers = append(v.Workers, w)
	}
	drained, err := c.childrenOf(ctx, l.Drains())
	if err != nil {
		return v, err
	}
	for _, id := range drained {
		if !slices.ContainsFunc(v.Workers, func(w WorkerView) bool { return w.ID == id }) {
			v.DrainedAbsent = append(v.DrainedAbsent, id)
		}
	}
	return v, nil
}

func (c *Console) apiWorkers(g *gin.Context) {
	v, err := c.cluster(g.Request.Context())
	if err != nil {
		c.serviceError(g, "workers", err)
		return
	}
	g.JSON(http.StatusOK, v)
}

func (c *Console) workersPage(g *gin.Context) {
	v, err := c.cluster(g.Request.Context())
	if err != nil {
		_, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
	}
	c.render(g, http.StatusOK, "workers", "Workers", v)
}

// drainSnapshot is what the audit log keeps of a worker's drain request.
func (c *Console) drainSnapshot(id string) *Snapshot {
	data, st, err := c.conn.Get(c.taskLayout().Drain(id))
	if err != nil {
		return snapshotOf(nil, nil)
	}
	return snapshotOf(data, st)
}

// doDrain drains worker id (undrains it if drain is false), recorded in the audit log.
// deadline, if positive, is how long what runs may go on.
func (c *Console) doDrain(g *gin.Context, id string, drain bool, deadline time.Duration) error {
	if err := task.CheckWorkerID(id); err != nil {
		return badRequest("%v", err)
	}
	ctx := g.Request.Context()
	before := c.drainSnapshot(id)
	action := "worker.undrain"
	var err error
	if drain {
		action = "worker.drain"
		req := task.DrainRequest{Requested: time.Now().UTC(), By: "console:" + sessionOf(g).user}
		if deadline > 0 {
			req.Deadline = req.Requested.Add(deadline)
		}
		err = c.taskClient().Drain(ctx, id, req)
	} else if err = c.taskClient().Undrain(ctx, id); errors.Is(err, task.ErrNotDrained) {
		return badRequest("%s is not drained", id)
	}
	if err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: action, Target: id, Before: before, After: c.drainSnapshot(id)})
	return nil
}

// drainDeadline reads the optional deadline parameter: a duration such as 10m.
func drainDeadline(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > 30*24*time.Hour {
		return 0, badRequest("deadline %q: want a duration such as 10m, up to 720h, or nothing", s)
	}
	return d, nil
}

func (c *Console) apiDrain(drain bool) gin.HandlerFunc {
	return func(g *gin.Context) {
		id := g.Param("id")
		d, err := drainDeadline(g.Query("deadline"))
		if err == nil {
			err = c.doDrain(g, id, drain, d)
		}
		if err != nil {
			c.serviceError(g, id, err)
			return
		}
		g.JSON(http.StatusOK, gin.H{"id": id, "drained": drain})
	}
}

func (c *Console) drainForm(drain bool) gin.HandlerFunc {
	return func(g *gin.Context) {
		id := g.Param("id")
		d, err := drainDeadline(strings.TrimSpace(g.PostForm("deadline")))
		if err == nil {
			err = c.doDrain(g, id, drain, d)
		}
		if err != nil {
			formFailed(g, "/workers", err)
			return
		}
		msg := id + " drained: it takes no new tasks"
		if !drain {
			msg = id + " undrained: it takes tasks again"
		}
		redirectWith(g, "/workers", "flash", msg)
	}
}
