package replicator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/replicator/apply"
)

// The admin's errors say the step and the task once and leave the package's name to
// whoever prints them (paddock replicator task prefixes its own): these sentinels carry
// no "replicator:" prefix.
var (
	// ErrNoTask says there is no task of that name.
	ErrNoTask = errors.New("no such task")
	// ErrTaskExists says a task of that name exists already.
	ErrTaskExists = errors.New("task exists")
	// ErrEnabled says the task must be disabled first (to delete it).
	ErrEnabled = errors.New("task is enabled: disable it first")
	// ErrSameServer says a task's source and target are one server (apply.SameServer).
	ErrSameServer = apply.ErrSameServer
)

// Admin creates, changes and reads task definitions. It is safe for concurrent use.
type Admin struct {
	s *coordinator.Session
	l Layout
}

// NewAdmin returns the admin of the tasks laid out as l.
func NewAdmin(s *coordinator.Session, l Layout) *Admin { return &Admin{s: s, l: l} }

// TaskView is a task as an operator sees it: its definition (passwords masked), its
// instances, its last committed position and its status.
type TaskView struct {
	Name       string         `json:"name"`
	Def        TaskDef        `json:"definition"`
	Instances  []InstanceView `json:"instances"`
	LastCommit *LastCommit    `json:"last_commit,omitempty"`
	Status     *Status        `json:"status,omitempty"`
	// StatusModified is the status node's mtime, by the coordination server's clock.
	StatusModified time.Time `json:"status_modified,omitzero"`
	// Health is the verdict on the task as of the read (Judge).
	Health *Health `json:"health,omitempty"`
}

// InstanceView is one instance node: lowest first, so the first runs.
type InstanceView struct {
	Node string `json:"node"`
	// Created is the node's ctime, by the coordination server's clock.
	Created time.Time `json:"created"`
	InstanceInfo
}

// Create validates d and creates the task; nothing is created if d is invalid, or if
// its source and target are one server (ErrSameServer: by address, and by identity
// when both answer; apply.SameServer).
func (a *Admin) Create(ctx context.Context, name string, d TaskDef) error {
	now := time.Now().UTC()
	d.Created, d.Updated = now, now
	if err := d.Validate(name); err != nil {
		return err
	}
	if err := apply.SameServer(ctx, d.Source, d.Target); err != nil {
		return fmt.Errorf("replicator: create %s: %w", name, err)
	}
	if err := a.s.MakeDirs(ctx, a.l.Tasks()); err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	conn := a.s.Conn()
	ops := []any{
		&zk.CreateRequest{Path: a.l.Task(name), Data: mustJSON(d), Acl: a.s.ACLFor(a.l.Task(name))},
		&zk.CreateRequest{Path: a.l.Instances(name), Acl: a.s.ACLFor(a.l.Instances(name))},
	}
	for {
		err := multiErr(conn.Multi(ops...))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("%w: %s", ErrTaskExists, name)
		case coordinator.IsConnLoss(err) && !coordinator.WriteNotSent(err):
			// Applied or not: a second try tells (it finds the task, ours or not).
			if _, _, gerr := conn.Get(a.l.Task(name)); gerr == nil {
				return nil
			}
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
	}
}

// Update applies change to the task's definition and stores it if it is still valid,
// with a version check (a concurrent update makes it read and apply again). A change
// of the source or target is refused when they would be one server (ErrSameServer).
func (a *Admin) Update(ctx context.Context, name string, change func(*TaskDef) error) (TaskDef, error) {
	conn := a.s.Conn()
	for {
		var d TaskDef
		data, st, err := conn.Get(a.l.Task(name))
		if err == nil {
			err = json.Unmarshal(data, &d)
		}
		if errors.Is(err, zk.ErrNoNode) {
			return TaskDef{}, fmt.Errorf("%w: %s", ErrNoTask, name)
		}
		if err == nil {
			src, tgt := d.Source, d.Target
			if err := change(&d); err != nil {
				return TaskDef{}, err
			}
			d.Updated = time.Now().UTC()
			if err := d.Validate(name); err != nil {
				return TaskDef{}, err
			}
			if d.Source != src || d.Target != tgt {
				if err := apply.SameServer(ctx, d.Source, d.Target); err != nil {
					return TaskDef{}, fmt.Errorf("replicator: update %s: %w", name, err)
				}
			}
			_, err = conn.Set(a.l.Task(name), mustJSON(d), st.Version)
			if err == nil {
				return d.Redacted(), nil
			}
			if errors.Is(err, zk.ErrBadVersion) {
				continue
			}
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return TaskDef{}, fmt.Errorf("update %s: %w", name, err)
		}
	}
}

// SetEnabled enables or disables the task: its running instance starts or stops.
func (a *Admin) SetEnabled(ctx context.Context, name string, enabled bool) error {
	_, err := a.Update(ctx, name, func(d *TaskDef) error { d.Enabled = enabled; return nil })
	return err
}

// Delete removes a disabled task and what hangs under it.
func (a *Admin) Delete(ctx context.Context, name string) error {
	v, err := a.Get(ctx, name)
	if err != nil {
		return err
	}
	if v.Def.Enabled {
		return fmt.Errorf("%w: %s", ErrEnabled, name)
	}
	conn := a.s.Conn()
	var ops []any
	for _, in := range v.Instances {
		ops = append(ops, &zk.DeleteRequest{Path: a.l.Instance(name, in.Node), Version: -1})
	}
	ops = append(ops, &zk.DeleteRequest{Path: a.l.Instances(name), Version: -1})
	for _, p := range []string{a.l.LastCommit(name), a.l.Status(name)} {
		if ok, _, _ := conn.Exists(p); ok {
			ops = append(ops, &zk.DeleteRequest{Path: p, Version: -1})
		}
	}
	ops = append(ops, &zk.DeleteRequest{Path: a.l.Task(name), Version: -1})
	if err := multiErr(conn.Multi(ops...)); err != nil {
		return fmt.Errorf("delete %s: %w (try again)", name, err)
	}
	return nil
}

// Get returns the task, its passwords masked, judged (Judge) as of the coordination
// server's now.
func (a *Admin) Get(ctx context.Context, name string) (*TaskView, error) {
	if err := CheckTaskName(name); err != nil {
		return nil, err
	}
	now, clock := a.ServerNow(ctx)
	return a.get(ctx, name, now, clock)
}

func (a *Admin) get(ctx context.Context, name string, now time.Time, clock string) (*TaskView, error) {
	v := &TaskView{Name: name}
	if _, err := a.readJSON(ctx, a.l.Task(name), &v.Def); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("%w: %s", ErrNoTask, name)
		}
		return nil, err
	}
	v.Def = v.Def.Redacted()
	nodes, err := a.children(ctx, a.l.Instances(name))
	if err != nil {
		return nil, err
	}
	for _, n := range sortInstances(nodes) {
		var in InstanceView
		if st, err := a.readJSON(ctx, a.l.Instance(name, n), &in.InstanceInfo); err == nil {
			in.Node, in.Created = n, time.UnixMilli(st.Ctime).UTC()
			v.Instances = append(v.Instances, in)
		}
	}
	var lc LastCommit
	if _, err := a.readJSON(ctx, a.l.LastCommit(name), &lc); err == nil {
		v.LastCommit = &lc
	}
	var st Status
	if zst, err := a.readJSON(ctx, a.l.Status(name), &st); err == nil {
		v.Status, v.StatusModified = &st, time.UnixMilli(zst.Mtime).UTC()
	}
	h := Judge(v, now)
	h.Clock = clock
	v.Health = &h
	return v, nil
}

// Resnapshot makes a disabled task copy the source's rows afresh when it is next
// enabled: it clears the task's checkpoint in the target. It is the remedy for a
// position the source has purged, and is needed after changing what the task
// includes.
func (a *Admin) Resnapshot(ctx context.Context, name string) error {
	var d TaskDef
	if _, err := a.readJSON(ctx, a.l.Task(name), &d); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: %s", ErrNoTask, name)
		}
		return err
	}
	if d.Enabled {
		return fmt.Errorf("%w: %s", ErrEnabled, name)
	}
	cp, found, err := apply.ReadCheckpoint(ctx, d.Target, name)
	if err != nil || !found {
		return err
	}
	return apply.ResetCheckpoint(ctx, d.Target, name, cp.OwnerEpoch)
}

// List returns every task, by name.
func (a *Admin) List(ctx context.Context) ([]*TaskView, error) {
	names, err := a.children(ctx, a.l.Tasks())
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	now, clock := a.ServerNow(ctx)
	var out []*TaskView
	for _, n := range names {
		v, err := a.get(ctx, n, now, clock)
		if errors.Is(err, ErrNoTask) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (a *Admin) children(ctx context.Context, p string) ([]string, error) {
	for {
		names, _, err := a.s.Conn().Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err == nil {
			return names, nil
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return nil, err
		}
	}
}

func (a *Admin) readJSON(ctx context.Context, p string, v any) (*zk.Stat, error) {
	for {
		data, st, err := a.s.Conn().Get(p)
		if err == nil {
			return st, json.Unmarshal(data, v)
		}
		if errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return nil, err
		}
	}
}

// multiErr returns the error of a multi: the call's, or the first failed op's.
func multiErr(res []zk.MultiResponse, err error) error {
	for _, r := range res {
		if r.Error != nil {
			return r.Error
		}
	}
	return err
}
