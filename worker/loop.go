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
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/task"
)

// Why a job's context is cancelled: its run is abandoned and records nothing
// (errStopping, errSessionLost), or is handed back as a lost run (a handBack).
var (
	errStopping    = errors.New("worker: stopping")
	errSessionLost = errors.New("worker: session lost")
)

// handBack is the cause of a run ended by a drain's deadline or the end of the stop
// grace: its process is killed and the run recorded as lost, handed back.
type handBack struct{ reason string }

func (h *handBack) Error() string { return "handed back: " + h.reason }

// loop is the worker at work: one goroutine (run) watches the assignment directory and
// the session, claims assignments and starts a goroutine per job; the jobs report back
// on ended. Every field but wg is owned by run's goroutine.
type loop struct {
	w      *Worker
	sess   *coordinator.Session
	conn   *zk.Conn
	logger *slog.Logger
	dir    string // the worker's assignment directory
	reg    *coordinator.Ephemeral
	info   task.WorkerInfo // as registered; State is the state last published

	// life ends when the loop gives up for good: records in flight stop waiting for the
	// connection then.
	life    context.Context
	endLife context.CancelFunc

	drain      *task.DrainRequest // the drain request in force, nil if none
	drainWatch <-chan zk.Event    // fires when /drain/<id> changes
	drainDirty bool               // /drain/<id> must be read again
	deadline   *time.Timer        // the drain's deadline; nil if none
	stopping   bool               // Run's context ended: stop once nothing runs
	graceOver  <-chan time.Time   // the stop grace is over

	jobs  map[string]*job  // claimed and not over, by task id
	ended chan *job        // a job's goroutine sends its job when it is over
	noted map[string]int64 // assignments left alone, by name: the czxid of the one logged
	watch <-chan zk.Event  // fires when the assignment directory's children change
	dirty bool             // the assignments must be listed again
	retry <-chan time.Time // fires when a failed read or a held assignment is to be tried again
	// relist is the backoff of failed passes (a listing, the drain request, the state);
	// holds are the assignments put off after an error, refused the tasks this worker
	// refused (refuse.go), by name.
	relist  backoff.Retry
	holds   map[string]*hold
	refused map[string]bool

	wg sync.WaitGroup // the job goroutines and their helpers
}

func newLoop(w *Worker, sess *coordinator.Session, reg *coordinator.Ephemeral, info task.WorkerInfo) *loop {
	life, endLife := context.WithCancel(context.Background())
	return &loop{
		w:          w,
		sess:       sess,
		conn:       sess.Conn(),
		logger:     w.logger,
		dir:        w.layout.AssignDir(w.cfg.ID),
		reg:        reg,
		info:       info,
		life:       life,
		endLife:    endLife,
		drainDirty: true,
		jobs:       make(map[string]*job),
		ended:      make(chan *job),
		noted:      make(map[string]int64),
		relist:     backoff.Retry{Rand: w.rand},
		holds:      make(map[string]*hold),
		refused:    make(map[string]bool),
	}
}

// run claims and starts assignments as they come and slots free, follows the session
// and the worker's drain request; once ctx ends, it stops taking work and returns
// (nil) when nothing runs any more, handing back what still runs when the stop grace
// is over. It returns an error if the session is closed under it.
func (l *loop) run(ctx context.Context) error {
	events, unsubscribe := l.sess.Subscribe() // its first event, connected, lists
	defer unsubscribe()
	defer l.stopDeadline()
	stop := ctx.Done()
	beat := time.NewTicker(l.w.cfg.HeartbeatInterval)
	defer beat.Stop()
	for {
		l.pass()
		if l.stopping && len(l.jobs) == 0 {
			return nil
		}
		select {
		case <-stop:
			stop = nil
			l.beginStop()
		case ev, ok := <-events:
			if !ok || ev.State == coordinator.StateClosed {
				return errors.New("worker: session closed while running")
			}
			l.onSession(ev)
		case <-l.watch:
			l.watch, l.dirty = nil, true
		case <-l.drainWatch:
			l.drainWatch, l.drainDirty = nil, true
		case j := <-l.ended:
			delete(l.jobs, j.id)
			if j.refused {
				l.refused[j.id] = true
				l.w.metrics.refusedNow.Set(float64(len(l.refused)))
			}
			l.dirty = true
		case <-l.retry:
			l.retry, l.dirty, l.drainDirty = nil, true, l.drainWatch == nil
		case <-l.deadlineC():
			l.deadline = nil
			l.handBackAll("the drain's deadline passed")
		case <-beat.C:
			l.heartbeat()
		case <-l.graceOver:
			l.graceOver = nil
			l.handBackAll(fmt.Sprintf("the worker stopped and its stop grace (%v) is over", l.w.cfg.StopGrace))
		}
	}
}

// pass reads what must be read — the drain request, the assignments — and publishes
// the worker's state. A pass that fails is tried again after the backoff of the failed
// passes in a row; a held assignment, when it comes due.
func (l *loop) pass() {
	ok := true
	if l.drainDirty {
		l.drainDirty = false
		ok = l.readDrain()
	}
	ok = l.publish() && ok
	if l.dirty {
		l.dirty = false
		ok = l.scan() && ok
	}
	if ok {
		l.relist.Reset()
	}
	switch next := l.nextHold(); {
	case l.retry != nil:
	case !ok:
		l.retry = time.After(l.relist.Fail())
	case !next.IsZero():
		l.retry = time.After(time.Until(next))
	}
}

// beginStop starts a graceful stop: nothing new is taken, and the running tasks have
// the stop grace to end.
func (l *loop) beginStop() {
	l.stopping, l.dirty = true, true
	if len(l.jobs) == 0 {
		return
	}
	l.logger.Info("stopping: running tasks have the stop grace to end", "running", len(l.jobs), "stop_grace", l.w.cfg.StopGrace)
	l.graceOver = time.After(l.w.cfg.StopGrace)
}

// handBackAll ends every running task and hands it back as a lost run.
func (l *loop) handBackAll(reason string) {
	if len(l.jobs) > 0 {
		l.logger.Info("handing back running tasks", "running", len(l.jobs), "reason", reason)
	}
	cause := &handBack{reason: reason}
	l.abandon(cause, func(*job) bool { return true })
}

// state is what the worker says of itself.
func (l *loop) state() task.WorkerState {
	switch {
	case l.stopping:
		return task.WorkerStopping
	case l.drain != nil && len(l.jobs) > 0:
		return task.WorkerDraining
	case l.drain != nil:
		return task.WorkerDrained
	}
	return task.WorkerActive
}

// taking says whether the worker takes new assignments.
func (l *loop) taking() bool { return !l.stopping && l.drain == nil }

// heartbeat rewrites the registration from the main loop, so that its mtime (the
// servers' clock) says the loop still turns; a stuck loop stops beating.
func (l *loop) heartbeat() {
	data, err := json.Marshal(l.info)
	if err == nil {
		err = l.reg.Set(l.life, data)
	}
	if err != nil {
		l.logger.Debug("cannot write heartbeat", "err", err)
	}
}

// publish writes the worker's state into its registration when it changed; false if
// it could not (it is tried again).
func (l *loop) publish() bool {
	st := l.state()
	if st == l.info.State {
		return true
	}
	info := l.info
	info.State = st
	data, err := json.Marshal(info)
	if err == nil {
		err = l.reg.Set(l.life, data)
	}
	if err != nil {
		l.logger.Debug("cannot publish state", "state", st, "err", err)
		return false
	}
	l.info = info
	l.logger.Info("worker state", "state", st)
	return true
}

// readDrain reads /drain/<id> and watches it; false if it could not.
func (l *loop) readDrain() bool {
	p := l.w.layout.Drain(l.w.cfg.ID)
	data, _, watch, err := l.conn.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		var ok bool
		ok, _, watch, err = l.conn.ExistsW(p)
		if err == nil && ok {
			return false // created meanwhile: read it again
		}
		data = nil
	}
	if err != nil {
		l.logger.Debug("cannot read drain request", "path", p, "err", err)
		return false
	}
	l.drainWatch = watch
	var req *task.DrainRequest
	if data != nil {
		req = &task.DrainRequest{}
		if err := json.Unmarshal(data, req); err != nil {
			l.logger.Warn("unreadable drain request: draining without a deadline", "path", p, "err", err)
			req = &task.DrainRequest{}
		}
	}
	was := l.drain
	l.drain = req
	l.stopDeadline()
	switch {
	case req == nil && was != nil:
		l.logger.Info("undrained: taking assignments again")
		l.dirty = true
	case req != nil && was == nil:
		l.logger.Info("drained: taking no new assignments", "running", len(l.jobs), "deadline", req.Deadline)
		l.dirty = true
	}
	if req != nil && !req.Deadline.IsZero() {
		l.deadline = time.NewTimer(time.Until(req.Deadline))
	}
	return true
}

func (l *loop) stopDeadline() {
	if l.deadline != nil {
		l.deadline.Stop()
		l.deadline = nil
	}
}

func (l *loop) deadlineC() <-chan time.Time {
	if l.deadline == nil {
		return nil
	}
	return l.deadline.C
}

// onSession follows the session: a lost session's tasks are killed at once (they will
// be given to another worker); after a reconnection, the assignments are listed again.
func (l *loop) onSession(ev coordinator.Event) {
	switch ev.State {
	case coordinator.StateConnected:
		if ev.NewSession {
			l.logger.Info("new session: listing assignments again", "session_id", hexID(ev.SessionID))
			l.abandon(errSessionLost, func(j *job) bool { return j.session != ev.SessionID })
			l.drainWatch, l.drainDirty = nil, true // the old session's watches are gone
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
// run, oldest first, while it has free slots; a worker that takes no new work hands
// back those it has not started instead. An assignment that fails for a reason other
// than the connection is held (holdBack) and the others go on; a refused task is not
// claimed again. It returns false if it could not finish (the connection is down, the
// directory is missing), for run to try again.
func (l *loop) scan() bool {
	names, _, watch, err := l.conn.ChildrenW(l.dir)
	if err != nil {
		l.listFailed(err)
		return false
	}
	l.watch = watch
	slices.Sort(names)
	listed, refusals := make(map[string]bool, len(names)), map[string]bool{}
	for _, name := range names {
		if id, ok := task.RefusedTask(name); ok {
			refusals[id] = true
		} else {
			listed[name] = true
		}
	}
	for name := range l.noted {
		if !listed[name] {
			delete(l.noted, name)
		}
	}
	l.forget(listed, refusals)
	for _, name := range names {
		if !listed[name] || l.holding(name) {
			continue
		}
		if l.refused[name] || refusals[name] {
			l.note(name, 0, "leaving the assignment of a task this worker refused to the master")
			continue
		}
		if _, ok := l.jobs[name]; !ok && !l.taking() {
			if err := l.handBackUnstarted(name); err != nil {
				if !l.claimFailed(name, fmt.Errorf("hand back: %w", err)) {
					return false
				}
			}
			continue
		}
		if len(l.jobs) >= l.w.cfg.Capacity {
			return true // the rest waits for a slot: a job's end lists again
		}
		if _, ok := l.jobs[name]; ok {
			continue
		}
		j, err := l.claim(name)
		if err != nil {
			if !l.claimFailed(name, err) {
				return false
			}
			continue
		}
		delete(l.holds, name)
		if j != nil {
			l.start(j)
		}
	}
	return true
}

// claimFailed handles an assignment that could not be claimed or handed back: false if
// it was the connection (the scan stops, to be tried again), else the assignment is
// held and the scan goes on.
func (l *loop) claimFailed(name string, err error) bool {
	if coordinator.IsConnLoss(err) || errors.Is(err, zk.ErrClosing) {
		l.logger.Debug("cannot claim assignment", "task", name, "err", err)
		return false
	}
	l.holdBack(name, err)
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
	switch {
	case errors.Is(err, zk.ErrNoNode):
		l.note(name, stat.Czxid, "ignoring an assignment of a task that does not exist")
		return nil, nil
	case err != nil && !coordinator.IsConnLoss(err) && !errors.Is(err, zk.ErrClosing):
		// The task is there and this worker cannot read it: it is not run here. A hand
		// back cut off by the connection is tried again with the next scan.
		r := refusal{id: name, path: path, version: stat.Version, attempt: a.Attempt, why: err}
		if err := l.handBack(r); err != nil {
			return nil, err
		}
		l.refusing(r)
		l.refused[name] = true
		l.w.metrics.refusedNow.Set(float64(len(l.refused)))
		return nil, nil
	case err != nil:
		return nil, err
	}
	return l.markStarted(name, path, a, stat.Version, spec, specErr)
}

// readSpec reads the task's spec: err if it cannot be read (zk.ErrNoNode if there is no
// task), specErr if it is not a valid spec or not signed by a key trusted for
// submitting (task.VerifySpec). What runs is decoded from the very bytes verified.
func (l *loop) readSpec(id string) (spec task.Spec, specErr, err error) {
	data, st, err := l.conn.Get(l.w.layout.Task(id))
	if err != nil {
		return spec, nil, fmt.Errorf("read spec: %w", err)
	}
	sig, err := task.ReadSig(l.conn, l.w.layout.TaskSig(id))
	if err != nil {
		return spec, nil, fmt.Errorf("read spec's signature: %w", err)
	}
	if _, err := task.VerifySpec(l.sess.Trust(), st.Czxid, data, sig); err != nil {
		return spec, err, nil
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

// handBackUnstarted deletes an assignment given to this session that has not been
// started, so that the master gives it to another worker: no run is recorded.
func (l *loop) handBackUnstarted(name string) error {
	if task.CheckID(name) != nil {
		return nil
	}
	path := l.w.layout.Assignment(l.w.cfg.ID, name)
	data, stat, err := l.conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	var a task.Assignment
	if json.Unmarshal(data, &a) != nil || a.Session != l.sess.SessionID() || !a.Started.IsZero() {
		return nil // the master's to take back
	}
	err = l.conn.Delete(path, stat.Version)
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		return err
	}
	l.logger.Info("handed back an assignment not started", "task", name, "state", l.state())
	return nil
}

// start runs j in a goroutine of its own, which reports on ended when it is over.
func (l *loop) start(j *job) {
	l.jobs[j.id] = j
	l.logger.Info("task claimed", "task", j.id, "attempt", j.a.Attempt)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer func() { l.ended <- j }()
		defer j.cancel(nil)
		if o := l.execute(j); o != nil {
			l.record(l.life, j, o)
		}
	}()
}
