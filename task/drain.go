package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
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
	// Beat is when the registration was last written (its mtime, the servers' clock);
	// Stale says it is older than Info.StaleAfter against the servers' now.
	Beat  time.Time `json:"beat"`
	Stale bool      `json:"stale,omitempty"`
}

// ServerNow returns the servers' time: it writes the clock node and reads its mtime.
func (c *Client) ServerNow() (time.Time, error) {
	return ServerNow(c.s, c.l)
}

// ServerNow writes l's clock node through s and returns its mtime: the servers' time.
func ServerNow(s *coordinator.Session, l Layout) (time.Time, error) {
	conn := s.Conn()
	p := l.Clock()
	st, err := conn.Set(p, nil, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if _, err = conn.Create(p, nil, 0, s.ACLFor(p)); err == nil || errors.Is(err, zk.ErrNodeExists) {
			st, err = conn.Set(p, nil, -1)
		}
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("task: servers' clock: %w", err)
	}
	return time.UnixMilli(st.Mtime).UTC(), nil
}

// Workers returns the registered workers, sorted by id, with their drain requests.
func (c *Client) Workers(ctx context.Context) ([]WorkerView, error) {
	conn := c.s.Conn()
	ids, err := c.children(ctx, c.l.Workers())
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("task: workers: %w", err)
	}
	slices.Sort(ids)
	now, nowErr := c.ServerNow() // without it (no write access), no one is judged stale
	var out []WorkerView
	for _, id := range ids {
		v := WorkerView{ID: id}
		var st *zk.Stat
		if err := c.retry(ctx, func() (err error) {
			var data []byte
			if data, st, err = conn.Get(c.l.Worker(id)); err == nil {
				if jerr := json.Unmarshal(data, &v.Info); jerr != nil {
					return fmt.Errorf("%s: %w", c.l.Worker(id), jerr)
				}
			}
			return err
		}); err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			return nil, fmt.Errorf("task: workers: %w", err)
		}
		v.Beat = time.UnixMilli(st.Mtime).UTC()
		if b := v.Info.StaleAfter(); b > 0 && nowErr == nil && now.Sub(v.Beat) > b {
			v.Stale = true
		}
		if v.Drain, err = c.DrainOf(ctx, id); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
