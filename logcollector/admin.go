package logcollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// The admin's errors say the step and the source once and leave the package's name to
// whoever prints them (paddock logcollector source prefixes its own): these sentinels
// carry no "logcollector:" prefix.
var (
	// ErrNoSource says there is no source of that id.
	ErrNoSource = errors.New("no such source")
	// ErrSourceExists says a source of that id exists already.
	ErrSourceExists = errors.New("source exists")
)

// Admin adds, removes and lists log sources. It is safe for concurrent use.
type Admin struct {
	s *coordinator.Session
	l Layout
}

// NewAdmin returns the admin of the sources laid out as l.
func NewAdmin(s *coordinator.Session, l Layout) *Admin { return &Admin{s: s, l: l} }

// SourceView is a source with where it is collected.
type SourceView struct {
	ID        string `json:"id"`
	Source           // host, path
	Collector string `json:"collector,omitempty"` // the collector assigned it, if any
	LagBytes  int64  `json:"lag_bytes"`
	// Problem says why the source is not collected, or not wholly: "unplaced: no
	// collector on host X", or its collector's report such as "no file matches GLOB".
	// Empty when it is read.
	Problem string `json:"problem,omitempty"`
}

// AddSource defines a source: the files matching path (a glob) on host.
func (a *Admin) AddSource(ctx context.Context, id, host, path string) error {
	if err := CheckID("source", id); err != nil {
		return err
	}
	if strings.TrimSpace(host) == "" {
		return errors.New("source host: empty")
	}
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("source path %q: want an absolute path or glob", path)
	}
	if _, err := globValid(path); err != nil {
		return fmt.Errorf("source path %q: %w", path, err)
	}
	if err := a.s.MakeDirs(ctx, a.l.Sources()); err != nil {
		return err
	}
	data, _ := json.Marshal(Source{Host: host, Path: path, Added: time.Now().UTC()})
	for {
		_, err := a.s.Conn().Create(a.l.Source(id), data, 0, a.s.ACLFor(a.l.Source(id)))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("%w: %s", ErrSourceExists, id)
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("add source %s: %w", id, err)
		}
	}
}

// RemoveSource deletes a source; the rebalancer takes it from its collector.
func (a *Admin) RemoveSource(ctx context.Context, id string) error {
	for {
		err := a.s.Conn().Delete(a.l.Source(id), -1)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("%w: %s", ErrNoSource, id)
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("remove source %s: %w", id, err)
		}
	}
}

// Sources lists the sources by id, with their collectors, lag and problems.
func (a *Admin) Sources(ctx context.Context) ([]SourceView, error) {
	conn := a.s.Conn()
	ids, _, err := conn.Children(a.l.Sources())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	collectors, err := a.Collectors(ctx)
	if err != nil {
		return nil, err
	}
	owner := map[string]CollectorView{}
	hosts := map[string]bool{} // hosts with a collector that takes sources
	for _, c := range collectors {
		if c.Assignment != nil {
			for _, s := range c.Assignment.Sources {
				owner[s] = c
			}
		}
		if c.Live && !c.Drained && c.Host != "" {
			hosts[c.Host] = true
		}
	}
	var out []SourceView
	for _, id := range slices.Sorted(slices.Values(ids)) {
		data, _, err := conn.Get(a.l.Source(id))
		if err != nil {
			continue
		}
		v := SourceView{ID: id}
		if json.Unmarshal(data, &v.Source) != nil {
			continue
		}
		c, held := owner[id]
		if held {
			v.Collector = c.ID
			if c.Status != nil {
				ss := c.Status.Sources[id]
				v.LagBytes, v.Problem = ss.LagBytes, ss.Problem
			}
			if !c.Live {
				v.Problem = "its collector " + c.ID + " is " + c.State
			}
		} else if !hosts[v.Host] {
			v.Problem = "unplaced: no collector on host " + v.Host
		}
		out = append(out, v)
	}
	return out, nil
}
