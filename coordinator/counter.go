package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"strconv"

	"github.com/go-zookeeper/zk"
)

// Counter is a shared 64-bit integer in one persistent node, holding the value in
// decimal ASCII ("42"); a missing node counts as 0 (Curator's DistributedAtomicLong,
// optimistic mode). Add is a compare-and-set loop on the node's version: read the value
// and version, write the sum with that version, and start again if someone wrote in
// between, so concurrent Adds from any number of Sessions all count. A Counter is safe
// for concurrent use.
//
// Reads and idempotent writes (Get, Set) ride out disconnections and expiry
// (StateSuspended, StateLost): they are retried once the Session is connected again.
// Add is not retried when the connection drops while its write is on its way, since it
// may have been applied: it fails with ErrOutcomeUnknown.
//
//	c := coordinator.NewCounter(s, "/stats/jobs_done")
//	n, err := c.Add(ctx, 1)
//	if err != nil {
//		return err
//	}
//	log.Info("job done", "total", n)
type Counter struct {
	s    *Session
	path string
}

// NewCounter returns the counter kept in the node at path. The node, and its parents,
// are created by the first Add or Set.
func NewCounter(s *Session, path string) *Counter { return &Counter{s: s, path: path} }

// Path returns the path of the counter's node.
func (c *Counter) Path() string { return c.path }

// Get returns the counter's value: 0 if the node does not exist.
func (c *Counter) Get(ctx context.Context) (int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("coordinator: get counter %s: %w", c.path, err)
		}
		data, _, err := c.s.conn.Get(c.path)
		switch {
		case err == nil:
			v, err := c.parse(data)
			if err != nil {
				return 0, fmt.Errorf("coordinator: get counter %s: %w", c.path, err)
			}
			return v, nil
		case errors.Is(err, zk.ErrNoNode):
			return 0, nil
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return 0, fmt.Errorf("coordinator: get counter %s: %w", c.path, err)
		}
	}
}

// Add adds delta to the counter and returns the new value. Adding past the range of
// int64 is an error, and leaves the counter as it was. A node that does not hold a
// decimal integer is an error that names the node and what it holds.
func (c *Counter) Add(ctx context.Context, delta int64) (int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("coordinator: add to counter %s: %w", c.path, err)
		}
		n, done, err := c.tryAdd(ctx, delta)
		switch {
		case err == nil && done:
			return n, nil
		case err == nil:
			continue // someone else wrote first: again
		case errors.Is(err, ErrOutcomeUnknown):
			return 0, fmt.Errorf("coordinator: add to counter %s: %w", c.path, err)
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return 0, fmt.Errorf("coordinator: add to counter %s: %w", c.path, err)
		}
	}
}

// tryAdd is one round of Add's compare-and-set: done is false when another write came
// first and the round must be run again.
func (c *Counter) tryAdd(ctx context.Context, delta int64) (n int64, done bool, err error) {
	data, stat, err := c.s.conn.Get(c.path)
	if errors.Is(err, zk.ErrNoNode) {
		created, err := c.create(ctx, delta)
		if err == nil {
			return delta, created, nil
		}
		return 0, false, c.writeError(err)
	}
	if err != nil {
		return 0, false, err
	}
	v, err := c.parse(data)
	if err != nil {
		return 0, false, err
	}
	if delta > 0 && v > math.MaxInt64-delta || delta < 0 && v < math.MinInt64-delta {
		return 0, false, fmt.Errorf("%d + %d overflows int64", v, delta)
	}
	n = v + delta
	_, err = c.s.conn.Set(c.path, []byte(strconv.FormatInt(n, 10)), stat.Version)
	switch {
	case err == nil:
		return n, true, nil
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return 0, false, nil
	}
	return 0, false, c.writeError(err)
}

// writeError says what to do about the error of Add's write: one that may have been
// applied is ErrOutcomeUnknown; one never sent is retried.
func (c *Counter) writeError(err error) error {
	if IsConnLoss(err) && !WriteNotSent(err) {
		return fmt.Errorf("write %s: %w: %w", c.path, ErrOutcomeUnknown, err)
	}
	return err
}

// Set sets the counter to v, whatever it was.
func (c *Counter) Set(ctx context.Context, v int64) error {
	data := []byte(strconv.FormatInt(v, 10))
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("coordinator: set counter %s: %w", c.path, err)
		}
		_, err := c.s.conn.Set(c.path, data, -1)
		if errors.Is(err, zk.ErrNoNode) {
			var created bool
			if created, err = c.create(ctx, v); created {
				return nil
			}
			if err == nil {
				continue // created by someone else in between: set it
			}
		}
		if err == nil {
			return nil
		}
		// Setting v again is harmless, so a write lost with the connection is retried.
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("coordinator: set counter %s: %w", c.path, err)
		}
	}
}

// create creates the counter's node holding v, and its missing parents. created is
// false if someone else created the node first.
func (c *Counter) create(ctx context.Context, v int64) (created bool, err error) {
	for {
		_, err := c.s.conn.Create(c.path, []byte(strconv.FormatInt(v, 10)), 0, c.s.ACLFor(c.path))
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zk.ErrNodeExists):
			return false, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := c.s.MakeDirs(ctx, path.Dir(c.path)); err != nil {
				return false, err
			}
			continue
		}
		return false, err
	}
}

// parse reads the counter's value off its node's data: decimal ASCII, or nothing for 0.
func (c *Counter) parse(data []byte) (int64, error) {
	if len(data) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("node holds %q, not a decimal integer", data)
	}
	return v, nil
}
