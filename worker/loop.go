package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// Why a job's context is cancelled: its run is abandoned and records nothing.
var (
	errStopping    = errors.New("worker: stopping")
	errSessionLost = errors.New("worker: session lost")
)

// relistPause is how long the loop waits to list the assignments again after a
// listing failed.
const relistPause = time.Second

// loop is the worker at work: one goroutine (run) watches the assignment directory and
// the session, claims assignments and starts a goroutine per job; the jobs report back
// on ended. Every field but wg is owned by run's goroutine.
type loop struct {
	w      *Worker
	sess   *coordinator.Session
	conn   *zk.Conn
	logger *slog.Logger
	dir    string // the worker's assignment directory

	jobs  map[string]*job  // claimed and not over, by task id
	ended chan *job        // a job's goroutine sends its job when it is over
	noted map[string]int64 // assignments left alone, by name: the czxid of the one logged
	watch <-chan zk.Event  // fires when the assignment directory's children change
	dirty bool             // the assignments must be listed again
	retry <-chan time.Time // fires when a failed listing is to be tried again

	wg sync.WaitGroup // the job goroutines and their helpers
}

func newLoop(w *Worker, sess *coordinator.Session) *loop {
	return &loop{
		w:      w,
		sess:   sess,
		conn:   sess.Conn(),
		logger: w.logger,
		dir:    w.layout.AssignDir(w.cfg.ID),
		jobs:   make(map[string]*job),
		ended:  make(chan *job),
		noted:  make(map[string]int64),
	}
}

// run claims and starts assignments as they come and slots free, and follows the
// session, until ctx ends (nil) or the session is closed under it.
func (l *loop) run(ctx context.Context) error {
	events, unsubscribe := l.sess.Subscribe() // its first event, connected, lists
	defer unsubscribe()
	for {
		if l.dirty && ctx.Err() == nil {
			l.dirty = false
			if !l.scan(ctx) && l.retry == nil {
				l.retry = time.After(relistPause)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok || ev.State == coordinator.StateClosed {
				return errors.New("worker: session closed while running")
			}
			l.onSession(ev)
		case <-l.watch:
			l.watch, l.dirty = nil, true
		case j := <-l.ended:
			delete(l.jobs, j.id)
			l.dirty = true
		case <-l.retry:
			l.retry, l.dirty = nil, true
		}
	}
}

// onSession follows the session: a lost session's tasks are killed at once (they will
// be given to another worker); after a reconnection, the assignments are listed again.
func (l *loop) onSession(ev coordinator.Event) {
	switch ev.State {
	case coordinator.StateConnected:
		if ev.NewSession {
			l.logger.Info("new session: listing assignments again", "session_id", hexID(ev.SessionID))
			l.abandon(errSessionLost, func(j *job) bool { return j.session != ev.SessionID })
		}
		l.dirty = true
	case coordinator.StateSuspended:
		l.logger.Info("disconnected: tasks keep running", "running", len(l.jobs))
	case coordinator.StateLost:
		l.logger.Warn("session lost: killing running tasks", "running", len(l.jobs))
		l.abandon(errSessionLost, func(*job) bool { return true })
	}
}

// abandon cancels the jobs that match with cause: they record nothing.
func (l *loop) abandon(cause error, match func(*job) bool) {
	for _, j := range l.jobs {
		if match(j) {
			j.cancel(cause)
		}
	}
}

// stopJobs abandons every job, waits for them to end, and for their helpers.
func (l *loop) stopJobs() {
	if len(l.jobs) > 0 {
		l.logger.Info("stopping running tasks", "running", len(l.jobs))
	}
	l.abandon(errStopping, func(*job) bool { return true })
	for len(l.jobs) > 0 {
		j := <-l.ended
		delete(l.jobs, j.id)
	}
	l.wg.Wait()
}

// scan lists the assignments, re-arming the watch, and claims those this worker should
// run, oldest first, while it has free slots. It returns false if it could not finish
// (the connection is down, the directory is missing), for run to try again.
func (l *loop) scan(ctx context.Context) bool {
	names, _, watch, err := l.conn.ChildrenW(l.dir)
	if err != nil {
		l.listFailed(err)
		return false
	}
	l.watch = watch
	slices.Sort(names)
	for name := range l.noted {
		if !slices.Contains(names, name) {
			delete(l.noted, name)
		}
	}
	for _, name := range names {
		if len(l.jobs) >= l.w.cfg.Capacity {
			return true // the rest waits for a slot: a job's end lists again
		}
		if _, ok := l.jobs[name]; ok {
			continue
		}
		j, err := l.claim(name)
		if err != nil {
			l.logger.Warn("cannot claim assignment", "task", name, "err", err)
			return false
		}
		if j != nil {
			l.start(ctx, j)
		}
	}
	return true
}

// listFailed logs why the assignments could not be listed; a missing directory
// (deleted by hand) is made again.
func (l *loop) listFailed(err error) {
	if coordinator.IsConnLoss(err) || errors.Is(err, zk.ErrClosing) {
		l.logger.Debug("cannot list assignments", "err", err)
		return
	}
	l.logger.Warn("cannot list assignments", "dir", l.dir, "err", err)
	if errors.Is(err, zk.ErrNoNode) {
		if _, err := l.conn.Create(l.dir, nil, 0, l.sess.ACLFor(l.dir)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			l.logger.Warn("cannot create assignment directory", "dir", l.dir, "err", err)
		}
	}
}

// claim reads assignment name and, if this session is to run it, reads its task's spec
// and marks it started. It returns nil and no error for an assignment to leave alone:
// gone, given to another session, malformed, of a task that has ended or does not
// exist, or changed under it (listed again); an error if the servers could not be asked.
func (l *loop) claim(name string) (*job, error) {
	if err := task.CheckID(name); err != nil {
		l.note(name, 0, "ignoring a node that names no task", "err", err)
		return nil, nil
	}
	path := l.w.layout.Assignment(l.w.cfg.ID, name)
	data, stat, err := l.conn.Get(path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var a task.Assignment
	if err := json.Unmarshal(data, &a); err != nil {
		l.note(name, stat.Czxid, "ignoring a malformed assignment", "err", err)
		return nil, nil
	}
	// The client's own id changes first when a new session starts: checking both closes
	// the window before the Session hears of it.
	if session := l.sess.SessionID(); a.Session != session || a.Session != l.conn.SessionID() {
		l.note(name, stat.Czxid, "leaving an assignment given to another session to the master",
			"assigned_session", hexID(a.Session), "session_id", hexID(session))
		return nil, nil
	}
	ended, _, err := l.conn.Exists(l.w.layout.Status(name))
	if err != nil {
		return nil, fmt.Errorf("read status: %w", err)
	}
	if ended {
		l.note(name, stat.Czxid, "leaving the assignment of an ended task to the master")
		return nil, nil
	}
	spec, specErr, err := l.readSpec(name)
	if err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			l.note(name, stat.Czxid, "ignoring an assignment of a task that does not exist")
			return nil, nil
		}
		return nil, err
	}
	return l.markStarted(name, path, a, stat.Version, spec, specErr)
}

// readSpec reads the task's spec: err if it cannot be read (zk.ErrNoNode if there is no
// task), specErr if it is not a valid spec.
func (l *loop) readSpec(id string) (spec task.Spec, specErr, err error) {
	// With role ACLs, a task is run only if no one outside the platform's roles could
	// have written it: a submitter that made it writable by all would let anyone
	// change the command between submission and run.
	if p := l.sess.Policy(); p != nil {
		acl, _, err := l.conn.GetACL(l.w.layout.Task(id))
		if err != nil {
			return spec, nil, fmt.Errorf("read spec's acl: %w", err)
		}
		if err := p.CheckTrusted(acl); err != nil {
			return spec, fmt.Errorf("task node not protected, not run: %w", err), nil
		}
	}
	data, _, err := l.conn.Get(l.w.layout.Task(id))
	if err != nil {
		return spec, nil, fmt.Errorf("read spec: %w", err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return spec, fmt.Errorf("spec: %w", err), nil
	}
	return spec, spec.Validate(), nil
}

// markStarted sets the assignment's Started, at the version read, and returns the job.
func (l *loop) markStarted(id, path string, a task.Assignment, version int32, spec task.Spec, specErr error) (*job, error) {
	a.Started = time.Now().UTC()
	data, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("assignment: %w", err)
	}
	stat, err := l.conn.Set(path, data, version)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil
	case errors.Is(err, zk.ErrBadVersion):
		l.logger.Info("assignment changed while being claimed; listing again", "task", id)
		l.dirty = true
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("mark %s started: %w", path, err)
	}
	j := &job{id: id, path: path, a: a, version: stat.Version, spec: spec, specErr: specErr, session: a.Session}
	j.ctx, j.cancel = context.WithCancelCause(context.Background())
	return j, nil
}

// note logs, once per node, why an assignment is left alone.
func (l *loop) note(name string, czxid int64, msg string, args ...any) {
	if seen, ok := l.noted[name]; ok && seen == czxid {
		return
	}
	l.noted[name] = czxid
	l.logger.Info(msg, append([]any{"task", name}, args...)...)
}

// start runs j in a goroutine of its own, which reports on ended when it is over.
func (l *loop) start(ctx context.Context, j *job) {
	l.jobs[j.id] = j
	l.logger.Info("task claimed", "task", j.id, "attempt", j.a.Attempt)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { l.ended <- j }()
		defer j.cancel(nil)
		if o := l.execute(j); o != nil {
			l.record(ctx, j, o)
		}
	}()
}
