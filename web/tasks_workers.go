package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// WorkerView is a live worker with the count of its assignments.
type WorkerView struct {
	ID   string          `json:"id"`
	Info task.WorkerInfo `json:"info"`
	// Assigned counts /assign/<id>'s children; Running those the worker marked started.
	Assigned int `json:"assigned"`
	Running  int `json:"running"`
}

// ClusterView is the task cluster's master (nil when none is elected) and workers.
type ClusterView struct {
	Master  *task.MasterInfo `json:"master"`
	Workers []WorkerView     `json:"workers"`
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
	for _, id := range ids {
		w := WorkerView{ID: id}
		if err := c.readJSON(ctx, l.Worker(id), &w.Info); errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile
		}
		assigned, err := c.childrenOf(ctx, l.AssignDir(id))
		if err != nil {
			return v, err
		}
		w.Assigned = len(assigned)
		for _, t := range assigned {
			var a task.Assignment
			if c.readJSON(ctx, l.Assignment(id, t), &a) == nil && !a.Started.IsZero() {
				w.Running++
			}
		}
		v.Workers = append(v.Workers, w)
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
