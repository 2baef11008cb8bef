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

// Sources lists the sources by id, with their collectors and lag.
func (a *Admin) Sources(ctx context.Context) ([]SourceView, error) {
	conn := a.s.Conn()
	ids, _, err := conn.Children(a.l.Sources())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	owner, lag := a.owners()
	var out []SourceView
	for _, id := range slices.Sorted(slices.Values(ids)) {
		data, _, err := conn.Get(a.l.Source(id))
		if err != nil {
			continue
		}
		v := SourceView{ID: id, Collector: owner[id], LagBytes: lag[id]}
		if json.Unmarshal(data, &v.Source) == nil {
			out = append(out, v)
		}
	}
	return out, nil
}

// owners maps each assigned source to its collector and its lag there.
func (a *Admin) owners() (map[string]string, map[string]int64) {
	conn := a.s.Conn()
	owner, lag := map[string]string{}, map[string]int64{}
	cs, _, _ := conn.Children(a.l.Collectors())
	for _, c := range cs {
		var asg Assignment
		if data, _, err := conn.Get(a.l.Collector(c)); err == nil && json.Unmarshal(data, &asg) == nil {
			for _, s := range asg.Sources {
				owner[s] = c
			}
		}
		var st Status
		if data, _, err := conn.Get(a.l.Status(c)); err == nil && json.Unmarshal(data, &st) == nil {
			for s, ss := range st.Sources {
				if owner[s] == c {
					lag[s] = ss.LagBytes
				}
			}
		}
	}
	return owner, lag
}
