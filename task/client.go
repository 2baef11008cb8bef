package task

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// The Client's errors say the step and the task once, "cancel task-0000000003: already
// ended (cancelled)", and leave the package's name to the caller that prints them (the
// command line prefixes "paddock task:"): that is why these sentinels, always returned
// wrapped in a step, carry no "task:" prefix.
var (
	// ErrNotFound says there is no task of that id.
	ErrNotFound = errors.New("no such task")
	// ErrEnded says the task has already ended (a cancel came too late).
	ErrEnded = errors.New("already ended")
)

// Task is a task as a client sees it: its spec and where it stands.
type Task struct {
	ID    string `json:"id"`
	State State  `json:"state"`
	Spec  Spec   `json:"spec"`
	// Worker runs it (assigned, running) or ended it.
	Worker     string      `json:"worker,omitempty"`
	Assignment *Assignment `json:"assignment,omitempty"`
	Status     *Status     `json:"status,omitempty"`
	// CancelRequested: a cancel was asked for and the task has not ended yet.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// History holds the runs that did not end it, in order.
	History []Attempt `json:"history,omitempty"`
	// Waiting says, of a pending task, why it has not been given to a worker, as far
	// as the client can tell from the live workers' registrations and the task's
	// retry delay: "no live worker has labels gpu=true (live: w1 os=linux)". Empty when
	// a live worker that takes tasks matches it: it waits for a free slot, or for the
	// master.
	Waiting string `json:"waiting,omitempty"`
	// Fault, if the master has the task in error (it cannot read it, end it or take it
	// back), says why and when it tries again; the task is not assigned meanwhile.
	Fault *Fault `json:"fault,omitempty"`
}

// Client submits and follows tasks through a Session. It is safe for concurrent use.
type Client struct {
	s *coordinator.Session
	l Layout
}

// NewClient returns a client of the cluster laid out as l on s.
func NewClient(s *coordinator.Session, l Layout) *Client { return &Client{s: s, l: l} }

// Submit checks spec and, if it is valid, creates the task, signs it with the
// Session's signer (see sign.go) and returns its id. An invalid spec, or a client
// without a signer (ErrNoSigner), creates nothing. Submitted and Token are filled in
// when empty. A submit whose reply is lost to a disconnection finds out whether its
// create was applied (by its token), does not create the task twice, and signs the task
// it finds. A task created and not signed (the signing failed) is returned with the
// error: the master ends it failed once its grace for the signature is over.
func (c *Client) Submit(ctx context.Context, spec Spec) (string, error) {
	if err := spec.Validate(); err != nil {
		return "", err
	}
	if c.s.Signer() == nil {
		return "", fmt.Errorf("submit: %w", ErrNoSigner)
	}
	if spec.Submitted.IsZero() {
		spec.Submitted = time.Now().UTC()
	}
	if spec.Token == "" {
		spec.Token = newToken()
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("submit: %w", err)
	}
	conn := c.s.Conn()
	if err := c.s.MakeDirs(ctx, c.l.Tasks()); err != nil {
		return "", fmt.Errorf("submit: %w", err)
	}
	for {
		// A sequential node's number is its parent's cversion when it is created: a
		// create lost in flight landed at or after the cversion read here.
		var from int32
		err := c.retry(ctx, func() error {
			_, st, err := conn.Exists(c.l.Tasks())
			from = st.Cversion
			return err
		})
		if err != nil {
			return "", fmt.Errorf("submit: %w", err)
		}
		p, err := conn.Create(c.l.Task(taskPrefix), data, zk.FlagSequence, c.s.ACLFor(c.l.Task(taskPrefix)))
		if err == nil {
			return c.signSubmitted(ctx, []string{path.Base(p)}, [][]byte{data})
		}
		if !coordinator.IsConnLoss(err) || coordinator.WriteNotSent(err) {
			if err := c.s.WaitToRetry(ctx, err); err != nil {
				return "", fmt.Errorf("submit: %w", err)
			}
			continue
		}
		id, err := c.findSubmitted(ctx, int64(from), spec.Token)
		if err != nil {
			return "", err
		}
		if id != "" {
			return c.signSubmitted(ctx, []string{id}, [][]byte{data})
		}
	}
}

// signSubmitted signs the tasks ids, just created with datas, and returns the first id;
// on an error, the id and the error, which names the tasks left unsigned.
func (c *Client) signSubmitted(ctx context.Context, ids []string, datas [][]byte) (string, error) {
	paths := make([]string, len(ids))
	for i, id := range ids {
		paths[i] = c.l.Task(id)
	}
	if err := c.signCreated(ctx, SpecDomain, paths, datas); err != nil {
		return ids[0], fmt.Errorf("submit: %v created and not signed (the master ends them failed): %w", ids, err)
	}
	return ids[0], nil
}

// children lists the children of p, riding out disconnections.
func (c *Client) children(ctx context.Context, p string) ([]string, error) {
	var names []string
	err := c.retry(ctx, func() (err error) { names, _, err = c.s.Conn().Children(p); return err })
	return names, err
}

// findSubmitted looks for the task of a token among those numbered from on, after a
// create whose outcome is unknown; "" if there is none.
func (c *Client) findSubmitted(ctx context.Context, from int64, token string) (string, error) {
	ids, err := c.idsByToken(ctx, map[string]int{token: 0}, from)
	if err != nil {
		return "", fmt.Errorf("submit: %w", err)
	}
	if ids == nil {
		return "", nil
	}
	return ids[0], nil
}

func newToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Get returns the task, or an error wrapping ErrNotFound.
func (c *Client) Get(ctx context.Context, id string) (*Task, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	t, err := c.lookup(ctx, id, &workerSnapshot{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", id, err)
	}
	return t, nil
}

// GetEach returns the tasks of ids, in that order, leaving out those that do not
// exist: as Get for each, with one read of the workers for all.
func (c *Client) GetEach(ctx context.Context, ids []string) ([]*Task, error) {
	for _, id := range ids {
		if err := CheckID(id); err != nil {
			return nil, err
		}
	}
	dirs, err := c.assignDirs(ctx)
	if err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	ws := &workerSnapshot{}
	out := make([]*Task, 0, len(ids))
	for _, id := range ids {
		t, err := c.get(ctx, id, func() (string, error) { return c.findAssignment(ctx, id, dirs) }, ws)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", id, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// lookup returns task id, its errors not yet saying the step; ws, if not nil, serves
// the reason it waits.
func (c *Client) lookup(ctx context.Context, id string, ws *workerSnapshot) (*Task, error) {
	workers, err := c.assignDirs(ctx)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, id, func() (string, error) { return c.findAssignment(ctx, id, workers) }, ws)
}

// List returns every task, oldest first.
func (c *Client) List(ctx context.Context) ([]*Task, error) {
	ids, err := c.children(ctx, c.l.Tasks())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return seqOf(id) < 0 })
	slices.Sort(ids)
	assigned, err := c.assignments(ctx)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	out := make([]*Task, 0, len(ids))
	ws := &workerSnapshot{}
	for _, id := range ids {
		t, err := c.get(ctx, id, func() (string, error) { return assigned[id], nil }, ws)
		if errors.Is(err, ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("list: %s: %w", id, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// get reads task id; worker says which worker holds its assignment, if any; ws, if not
// nil, is the workers read for the reason a pending task waits.
func (c *Client) get(ctx context.Context, id string, worker func() (string, error), ws *workerSnapshot) (*Task, error) {
	t := &Task{ID: id}
	if err := c.readJSON(ctx, c.l.Task(id), &t.Spec); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	names, err := c.children(ctx, c.l.Task(id))
	if err != nil {
		return nil, err
	}
	kids := ParseChildren(names)
	for _, n := range kids.Failures {
		if err := c.addHistory(ctx, t, c.l.Attempt(id, n)); err != nil {
			return nil, err
		}
	}
	for _, n := range kids.Lost {
		if err := c.addHistory(ctx, t, c.l.Lost(id, n)); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(t.History, func(a, b Attempt) int { return a.N - b.N })
	if kids.Status {
		return t, c.readStatus(ctx, t)
	}
	w, err := worker()
	if err != nil {
		return nil, err
	}
	if w != "" {
		var a Assignment
		err := c.readJSON(ctx, c.l.Assignment(w, id), &a)
		switch {
		case err == nil:
			t.Worker, t.Assignment, t.State = w, &a, Assigned
			if !a.Started.IsZero() {
				t.State = Running
			}
		case !errors.Is(err, zk.ErrNoNode):
			return nil, err
		}
	}
	if t.State == "" {
		// No assignment: pending, unless the run ended between the two reads (a
		// worker deletes the assignment and creates the status in one multi).
		if err := c.readStatus(ctx, t); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		if t.Status == nil {
			t.State = Pending
		}
	}
	if !t.State.Ended() {
		t.CancelRequested = kids.Cancel
	}
	if t.State == Pending && ws != nil {
		t.Waiting = ws.waiting(ctx, c, t)
	}
	if !t.State.Ended() {
		t.Fault = c.faultOf(ctx, c.l.TaskFault(id))
	}
	return t, nil
}

func (c *Client) readStatus(ctx context.Context, t *Task) error {
	var st Status
	if err := c.readJSON(ctx, c.l.Status(t.ID), &st); err != nil {
		return err
	}
	t.Status, t.State, t.Worker = &st, st.State, st.Worker
	return nil
}

func (c *Client) addHistory(ctx context.Context, t *Task, p string) error {
	var a Attempt
	err := c.readJSON(ctx, p, &a)
	if err == nil {
		t.History = append(t.History, a)
	}
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// assignDirs lists the workers that have an assignment directory.
func (c *Client) assignDirs(ctx context.Context) ([]string, error) {
	workers, err := c.children(ctx, c.l.Assign())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return workers, err
}

func (c *Client) findAssignment(ctx context.Context, id string, workers []string) (string, error) {
	conn := c.s.Conn()
	for _, w := range workers {
		var ok bool
		if err := c.retry(ctx, func() (err error) { ok, _, err = conn.Exists(c.l.Assignment(w, id)); return err }); err != nil {
			return "", err
		}
		if ok {
			return w, nil
		}
	}
	return "", nil
}

// assignments maps each assigned task to its worker.
func (c *Client) assignments(ctx context.Context) (map[string]string, error) {
	workers, err := c.assignDirs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for _, w := range workers {
		ids, err := c.children(ctx, c.l.AssignDir(w))
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		for _, id := range ids {
			out[id] = w
		}
	}
	return out, nil
}

// Cancel asks for the task to be cancelled: a pending task ends at once (the master
// records it), a running one's process is killed by its worker. It returns an error
// wrapping ErrEnded if the task has already ended, and ErrNotFound if there is none.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	t, err := c.lookup(ctx, id, nil)
	if err != nil {
		return fmt.Errorf("cancel %s: %w", id, err)
	}
	if t.State.Ended() {
		return fmt.Errorf("cancel %s: %w (%s)", id, ErrEnded, t.State)
	}
	conn := c.s.Conn()
	for {
		_, err := conn.Create(c.l.Cancel(id), nil, 0, c.s.ACLFor(c.l.Cancel(id)))
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("cancel %s: %w", id, ErrNotFound)
		}
		// Creating the cancel node twice is harmless: retry whatever the outcome.
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("cancel %s: %w", id, err)
		}
	}
}

// Wait blocks until the task has ended and returns it, or until ctx ends.
func (c *Client) Wait(ctx context.Context, id string) (*Task, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	conn := c.s.Conn()
	for {
		ok, _, ev, err := conn.ExistsW(c.l.Status(id))
		if err != nil {
			if err := c.s.WaitToRetry(ctx, err); err != nil {
				return nil, fmt.Errorf("wait %s: %w", id, err)
			}
			continue
		}
		if ok {
			return c.Get(ctx, id)
		}
		if ok, _, err := conn.Exists(c.l.Task(id)); err == nil && !ok {
			return nil, fmt.Errorf("wait %s: %w", id, ErrNotFound)
		}
		select {
		case <-ev:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait %s: %w", id, ctx.Err())
		}
	}
}

// readJSON reads the node at p into v, riding out disconnections.
func (c *Client) readJSON(ctx context.Context, p string, v any) error {
	var data []byte
	conn := c.s.Conn()
	if err := c.retry(ctx, func() (err error) { data, _, err = conn.Get(p); return err }); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// retry runs a read until it succeeds or fails for a reason other than the
// connection.
func (c *Client) retry(ctx context.Context, read func() error) error {
	for {
		err := read()
		if err == nil {
			return nil
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return err
		}
	}
}
