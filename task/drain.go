package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrNotDrained says a worker has no drain request to withdraw.
var ErrNotDrained = errors.New("task: worker not drained")

// Drain asks worker to take no new assignments, by writing /drain/<worker> (the
// request replaces an earlier one: a new deadline). The worker need not be live: a
// worker started while its drain request stands starts drained. The caller needs the
// console or admin role where role ACLs are in force.
func (c *Client) Drain(ctx context.Context, worker string, req DrainRequest) error {
	if err := CheckWorkerID(worker); err != nil {
		return err
	}
	if req.Requested.IsZero() {
		req.Requested = time.Now().UTC()
	}
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("task: drain %s: %w", worker, err)
	}
	if err := c.s.MakeDirs(ctx, c.l.Drains()); err != nil {
		return fmt.Errorf("task: drain %s: %w", worker, err)
	}
	p := c.l.Drain(worker)
	conn := c.s.Conn()
	for {
		_, err := conn.Create(p, data, 0, c.s.ACLFor(p))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = conn.Set(p, data, -1)
		}
		if err == nil {
			return nil
		}
		// Writing the same request twice is harmless: retry whatever the outcome.
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("task: drain %s: %w", worker, err)
		}
	}
}

// Undrain withdraws worker's drain request: it takes assignments again. It returns an
// error wrapping ErrNotDrained if there is none.
func (c *Client) Undrain(ctx context.Context, worker string) error {
	if err := CheckWorkerID(worker); err != nil {
		return err
	}
	conn := c.s.Conn()
	for retried := false; ; retried = true {
		err := conn.Delete(c.l.Drain(worker), -1)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode) && retried:
			return nil // a delete whose reply was lost
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("task: undrain %s: %w", worker, ErrNotDrained)
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("task: undrain %s: %w", worker, err)
		}
	}
}

// DrainOf returns worker's drain request, nil if there is none.
func (c *Client) DrainOf(ctx context.Context, worker string) (*DrainRequest, error) {
	if err := CheckWorkerID(worker); err != nil {
		return nil, err
	}
	var req DrainRequest
	err := c.readJSON(ctx, c.l.Drain(worker), &req)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("task: drain of %s: %w", worker, err)
	}
	return &req, nil
}

// WorkerView is a registered worker and what stands against it.
type WorkerView struct {
	ID    string        `json:"id"`
	Info  WorkerInfo    `json:"info"`
	Drain *DrainRequest `json:"drain,omitempty"`
}

// Workers returns the registered workers, sorted by id, with their drain requests.
func (c *Client) Workers(ctx context.Context) ([]WorkerView, error) {
	conn := c.s.Conn()
	var ids []string
	err := c.retry(ctx, func() (err error) { ids, _, err = conn.Children(c.l.Workers()); return err })
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("task: workers: %w", err)
	}
	slices.Sort(ids)
	var out []WorkerView
	for _, id := range ids {
		v := WorkerView{ID: id}
		if err := c.readJSON(ctx, c.l.Worker(id), &v.Info); err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			return nil, fmt.Errorf("task: workers: %w", err)
		}
		if v.Drain, err = c.DrainOf(ctx, id); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
