package master

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

// maxLostRuns is how many runs a task may lose with their workers before the master
// fails it: lost runs do not count against its retries, but a task that takes its
// worker down each time must not go round for ever.
const maxLostRuns = 5

// errDeposed says this master no longer owns /master.
var errDeposed = errors.New("master: /master is no longer ours")

// leader is one term of the active master: the cluster's state as last read, kept
// current by watches, and the loop that acts on it. Only run's goroutine touches the
// state; watch goroutines only mark what changed.
type leader struct {
	m      *Master
	s      *coordinator.Session
	conn   *zk.Conn
	l      task.Layout
	hold   *coordinator.Hold
	logger *slog.Logger
	epoch  int32 // the data version of /assign this term set

	workers map[string]*workerState     // live workers, by id
	drained map[string]bool             // workers with a drain request, by id
	assign  map[string]map[string]*slot // assignment directory -> task -> its assignment
	tasks   map[string]*taskState       // tasks not ended, by id
	ended   map[string]task.State       // tasks known ended
	jobs    map[string]*jobState        // jobs, by name (schedule.go)
	dagIDs  map[string]string           // DAG tasks' ids, by dagKey (dag id and name)
	refused map[string]*refusal         // tasks their worker refused, by id (endWithoutRun ends them)

	// Items in error (fault.go), the step counter their clearing goes by, and the backoff
	// of a step that failed on the master's own directories: no step runs before
	// pausedUntil.
	faults      map[faultKey]*fault
	faultsArmed map[string]bool // a watch on the fault directory of a kind is armed
	round       uint64
	again       bool // an item in error held others back this step: step again at once
	stepRetry   backoff.Retry
	pausedUntil time.Time
	ctx         context.Context // the term's: its end ends the watch goroutines

	// Which watches are armed: a list is read with a new watch only when its last one
	// has fired, so that re-reading does not pile up watches.
	workersArmed, tasksArmed, drainArmed, jobsArmed bool
	assignArmed                                     map[string]bool
	workerArmed                                     map[string]bool // a data watch on /workers/<id>

	mu    sync.Mutex    // guards dirty
	dirty dirtySet      // what fired watches say changed
	wake  chan struct{} // a watch fired (buffered 1)
}

type workerState struct {
	info    task.WorkerInfo
	session int64     // the ephemeral owner of /workers/<id>
	beat    time.Time // the registration's mtime: the worker's last heartbeat
	stale   bool      // judged stale at the last assignment round (logged on change)
}

// slot is an assignment.
type slot struct {
	session int64
	attempt int
}

// refusal is a task a worker handed back (task.Refusal), with the node that says so.
type refusal struct {
	worker string
	rec    task.Refusal
}

type taskState struct {
	id       string
	spec     task.Spec
	kids     task.Children
	worker   string    // the assignment's directory, "" if none
	eligible time.Time // not before this (a retry's delay)
	armed    bool      // a children watch is armed
	lastRead int       // the attempt record whose finish time eligible is from
	invalid  error     // what is wrong with the spec: the task is failed at once
	// The spec node's czxid and creation time (the servers' clock), when the term first
	// saw it (this process's clock), and whether its signature verified; untrusted says
	// why it is not to run: a bad signature, or none within the grace (provenance.go).
	czxid     int64
	created   time.Time
	seen      time.Time
	signed    bool
	untrusted error
}

// dirtySet says what must be read again.
type dirtySet struct {
	all     bool
	workers bool
	drains  bool
	worker  map[string]bool // registrations whose data watch fired
	tasks   bool
	assign  map[string]bool
	task    map[string]bool
	jobs    bool            // the list of jobs
	job     map[string]bool // jobs whose data watch fired, or whose retry came due
	jobSig  map[string]bool // jobs whose signature's watch fired
	// jobFires: jobs to read with their fire records (a retry of a job in error).
	jobFires map[string]bool
	faults   map[string]bool // kinds of item whose fault directory changed
}

func (d *dirtySet) markFaults(kind string) {
	if d.faults == nil {
		d.faults = map[string]bool{}
	}
	d.faults[kind] = true
}

func newLeader(m *Master, s *coordinator.Session, h *coordinator.Hold) *leader {
	return &leader{
		m: m, s: s, conn: s.Conn(), l: m.layout, hold: h, logger: m.logger,
		wake:    make(chan struct{}, 1),
		workers: map[string]*workerState{}, assign: map[string]map[string]*slot{},
		tasks: map[string]*taskState{}, ended: map[string]task.State{}, assignArmed: map[string]bool{},
		drained: map[string]bool{}, workerArmed: map[string]bool{}, jobs: map[string]*jobState{},
		dagIDs: map[string]string{}, refused: map[string]*refusal{},
		faults: map[faultKey]*fault{}, faultsArmed: map[string]bool{}, stepRetry: backoff.Retry{Rand: m.rand},
	}
}

// run leads until /master may be lost or ctx ends. It returns only for what is the
// master's own (fault.go): the hold lost, the session closed, ctx ended; never for an
// item, nor for a step that failed, which it tries again after the backoff.
func (l *leader) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the watch goroutines
	l.ctx = ctx
	if err := l.takeOfficeRetrying(ctx); err != nil {
		return err
	}
	l.logger.Info("active master", "epoch", l.epoch)
	resync := time.NewTicker(l.m.cfg.Resync)
	defer resync.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	l.markAll()
	next := time.Now()
	for {
		if !time.Now().Before(l.pausedUntil) {
			var err error
			if next, err = l.step(ctx); err != nil {
				return err
			}
		}
		retry.Reset(time.Until(next))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.hold.Lost():
			return errDeposed
		case <-l.wake:
		case <-resync.C:
			l.markAll()
		case <-retry.C:
		}
	}
}

// takeOfficeRetrying takes office, trying again after the backoff while what fails is
// not the master's own: the term keeps /master meanwhile.
func (l *leader) takeOfficeRetrying(ctx context.Context) error {
	for {
		err := l.takeOffice(ctx)
		if err == nil || own(err) {
			return err
		}
		select {
		case <-time.After(time.Until(l.stepFailed(fmt.Errorf("take office: %w", err)))):
		case <-l.hold.Lost():
			return errDeposed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// takeOffice creates the cluster's directories and starts a new epoch. The directories
// of the records of items in error are made if they can be: without them, items in
// error are only logged.
func (l *leader) takeOffice(ctx context.Context) error {
	for _, dir := range []string{l.l.Tasks(), l.l.Workers(), l.l.Assign(), l.l.Jobs()} {
		if err := l.s.MakeDirs(ctx, dir); err != nil {
			return err
		}
	}
	for _, dir := range []string{l.l.JobFaults(), l.l.TaskFaults()} {
		if err := l.s.MakeDirs(ctx, dir); err != nil {
			if own(err) {
				return err
			}
			l.logger.Warn("cannot make the directory of items in error: they are only logged", "dir", dir, "err", err)
		}
	}
	return l.newEpoch(ctx)
}

// newEpoch bumps /assign's version, then checks that /master is still ours: a master
// deposed before its bump went out finds that out here, before it acts; the master
// it may have fenced out by the bump bumps again when its next change fails.
func (l *leader) newEpoch(ctx context.Context) error {
	for {
		st, err := l.conn.Set(l.l.Assign(), nil, -1)
		if err == nil {
			l.epoch = st.Version
			if err = l.checkOwner(); err == nil {
				info, _ := json.Marshal(task.MasterInfo{ID: l.m.id, Addr: l.m.cfg.Addr, Since: time.Now().UTC(), Epoch: int64(l.epoch)})
				_, err = l.conn.Set(l.l.Master(), info, -1)
			}
		}
		if err == nil || !coordinator.IsConnLoss(err) {
			return err
		}
		if err := l.s.WaitToRetry(ctx, err); err != nil {
			return err
		}
	}
}

func (l *leader) checkOwner() error {
	ok, st, err := l.conn.Exists(l.l.Master())
	if err != nil {
		return err
	}
	if !ok || st.EphemeralOwner != l.hold.Session() || l.s.SessionID() != l.hold.Session() {
		return errDeposed
	}
	return nil
}

// watch marks what a watch event says changed once it fires.
func (l *leader) watch(ctx context.Context, ev <-chan zk.Event, mark func(*dirtySet)) {
	go func() {
		select {
		case <-ev:
		case <-ctx.Done():
			return
		}
		l.mu.Lock()
		mark(&l.dirty)
		l.mu.Unlock()
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}()
}

func (l *leader) markAll() {
	l.mu.Lock()
	l.dirty.all = true
	l.mu.Unlock()
}

// step reads what changed, then acts: takes back assignments of lost workers, ends
// cancelled pending tasks, assigns. It returns when it next has something to do by
// the clock (a retry delay ending, a job's next time, an item in error due again). An
// item's error puts the item in error and the step goes on; an error on the master's
// own directories puts the step off (pausedUntil); step returns only the errors that
// end the term.
func (l *leader) step(ctx context.Context) (time.Time, error) {
	l.round++
	l.mu.Lock()
	d := l.dirty
	l.dirty = dirtySet{}
	l.mu.Unlock()
	l.markDue(&d)
	l.again = false
	err := l.refresh(ctx, d)
	if err == nil {
		err = l.act(ctx)
	}
	var fire time.Time
	if err == nil {
		fire, err = l.fireJobs(ctx)
	}
	switch {
	case err == nil:
		l.stepRetry.Reset()
		l.updateGauges()
		next := l.nextRetry()
		if !fire.IsZero() && fire.Before(next) {
			next = fire
		}
		if due := l.nextDue(); !due.IsZero() && due.Before(next) {
			next = due
		}
		if l.again {
			next = time.Now() // an item in error held others back: they go now
		}
		return next, nil
	case errors.Is(err, errFenced):
		if err := l.newEpoch(ctx); own(err) {
			return time.Time{}, err
		} else if err != nil {
			l.pausedUntil = l.stepFailed(fmt.Errorf("take the epoch back: %w", err))
			return l.pausedUntil, nil
		}
		l.logger.Warn("epoch taken by another master, taken back", "epoch", l.epoch)
	case coordinator.IsConnLoss(err):
		if err := l.s.WaitToRetry(ctx, err); err != nil {
			return time.Time{}, err
		}
	case own(err):
		return time.Time{}, err
	default:
		l.pausedUntil = l.stepFailed(err)
		l.markAll()
		return l.pausedUntil, nil
	}
	l.markAll() // whatever happened, read everything again
	return time.Now(), nil
}

func (l *leader) refresh(ctx context.Context, d dirtySet) error {
	// A fired watch is no longer armed.
	l.workersArmed = l.workersArmed && !d.workers
	l.tasksArmed = l.tasksArmed && !d.tasks
	l.jobsArmed = l.jobsArmed && !d.jobs
	for name := range d.job {
		if j := l.jobs[name]; j != nil {
			j.armed = false
		}
	}
	for name := range d.jobSig {
		if j := l.jobs[name]; j != nil {
			j.sigArmed = false
		}
	}
	l.drainArmed = l.drainArmed && !d.drains
	for w := range d.worker {
		l.workerArmed[w] = false
	}
	for w := range d.assign {
		l.assignArmed[w] = false
	}
	for id := range d.task {
		if t := l.tasks[id]; t != nil {
			t.armed = false
		}
	}
	for kind := range d.faults {
		l.faultsArmed[kind] = false
	}
	// The fault records first: an operator's clear marks its item, to be read below.
	for kind := range l.faultDirs() {
		if d.all || d.faults[kind] {
			if err := l.readFaults(ctx, kind, &d); err != nil {
				return err
			}
		}
	}
	if d.all {
		return l.reloadAll(ctx)
	}
	if d.workers || len(d.worker) > 0 {
		if err := l.reloadWorkers(ctx); err != nil {
			return err
		}
	}
	if d.drains {
		if err := l.reloadDrains(ctx); err != nil {
			return err
		}
	}
	for w := range d.assign {
		if err := l.reloadAssignDir(ctx, w); err != nil {
			return err
		}
	}
	if d.tasks {
		if err := l.reloadTaskList(ctx); err != nil {
			return err
		}
	}
	for id := range d.task {
		if err := l.reloadTask(ctx, id); err != nil {
			return err
		}
	}
	if d.jobs {
		if err := l.reloadJobs(ctx); err != nil {
			return err
		}
	}
	for name := range d.job {
		if err := l.reloadJob(ctx, name, d.jobFires[name]); err != nil {
			return err
		}
	}
	for name := range d.jobSig {
		if err := l.reloadJob(ctx, name, false); err != nil && !d.job[name] {
			return err
		}
	}
	return nil
}

// children lists dir, arming a watch that marks the change unless one is armed.
func (l *leader) children(ctx context.Context, dir string, armed *bool, mark func(*dirtySet)) ([]string, error) {
	if *armed {
		ids, _, err := l.conn.Children(dir)
		return ids, err
	}
	ids, _, ev, err := l.conn.ChildrenW(dir)
	if err == nil {
		*armed = true
		l.watch(ctx, ev, mark)
	}
	return ids, err
}

// reloadAll reads the whole state again.
func (l *leader) reloadAll(ctx context.Context) error {
	if err := l.reloadWorkers(ctx); err != nil {
		return err
	}
	if err := l.reloadDrains(ctx); err != nil {
		return err
	}
	dirs, _, err := l.conn.Children(l.l.Assign())
	if err != nil {
		return err
	}
	for _, w := range dirs {
		if err := l.reloadAssignDir(ctx, w); err != nil {
			return err
		}
	}
	if err := l.reloadTaskList(ctx); err != nil {
		return err
	}
	for id := range l.tasks {
		if err := l.reloadTask(ctx, id); err != nil {
			return err
		}
	}
	// The jobs, and their fires again: a multi whose answer was lost may have recorded one.
	// A job in error waits for its retry.
	for name := range l.jobs {
		if l.held(jobKey(name)) {
			continue
		}
		if err := l.reloadJob(ctx, name, true); err != nil {
			return err
		}
	}
	return l.reloadJobs(ctx)
}

func (l *leader) reloadWorkers(ctx context.Context) error {
	ids, err := l.children(ctx, l.l.Workers(), &l.workersArmed, func(d *dirtySet) { d.workers = true })
	if err != nil {
		return err
	}
	live := make(map[string]*workerState, len(ids))
	for _, id := range ids {
		k := workerKey(id)
		var w *workerState
		if !l.heldAt(k, stepRead) {
			w, err = l.readWorker(ctx, id)
			if err := l.contain(k, stepRead, 0, err); err != nil {
				return err
			}
		}
		switch {
		case w != nil:
			live[id] = w
			l.passed(k, stepRead)
		case l.inError(k) && l.faults[k].rec.Step == stepRead:
			// Unreadable: kept as it was (its assignments stand; freeSlots gives it
			// nothing new) until its retry. A worker is judged gone only by its node.
			if old := l.workers[id]; old != nil {
				live[id] = old
			}
		}
	}
	l.workers = live
	for id, armed := range l.workerArmed {
		if !armed && live[id] == nil {
			delete(l.workerArmed, id) // a worker gone: its watch fired with the delete
		}
	}
	l.sweepFaults(kindWorker, func(id string) bool { return slices.Contains(ids, id) })
	return nil
}

// readWorker reads worker id's registration, and its assignments when its session is
// new to the term; nil if it is gone or its registration does not decode.
func (l *leader) readWorker(ctx context.Context, id string) (*workerState, error) {
	data, st, err := l.workerData(ctx, id)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	w := &workerState{session: st.EphemeralOwner, beat: time.UnixMilli(st.Mtime)}
	if old := l.workers[id]; old != nil {
		w.stale = old.stale
	}
	if err := json.Unmarshal(data, &w.info); err != nil || w.info.Capacity < 1 {
		l.logger.Warn("worker registration unreadable: not assigning to it", "worker", id, "err", err)
		return nil, nil
	}
	if old := l.workers[id]; old == nil || old.session != w.session {
		if err := l.reloadAssignDir(ctx, id); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// workerData reads a worker's registration, with a data watch unless one is armed:
// a worker says in it when it drains or stops.
func (l *leader) workerData(ctx context.Context, id string) ([]byte, *zk.Stat, error) {
	p := l.l.Worker(id)
	if l.workerArmed[id] {
		return l.conn.Get(p)
	}
	data, st, ev, err := l.conn.GetW(p)
	if err == nil {
		l.workerArmed[id] = true
		l.watch(ctx, ev, func(d *dirtySet) {
			if d.worker == nil {
				d.worker = map[string]bool{}
			}
			d.worker[id] = true
		})
	}
	return data, st, err
}

// reloadDrains reads which workers have a drain request. The master only reads
// /drain (the console and the admin write it): while it does not exist, its creation
// is watched for.
func (l *leader) reloadDrains(ctx context.Context) error {
	ids, err := l.children(ctx, l.l.Drains(), &l.drainArmed, func(d *dirtySet) { d.drains = true })
	if errors.Is(err, zk.ErrNoNode) && !l.drainArmed {
		ok, _, ev, err := l.conn.ExistsW(l.l.Drains())
		if err != nil {
			return err
		}
		l.drainArmed = true
		l.watch(ctx, ev, func(d *dirtySet) { d.drains = true })
		if ok {
			l.markAll()
		}
		ids = nil
	} else if errors.Is(err, zk.ErrNoNode) {
		ids = nil
	} else if err != nil {
		return err
	}
	drained := make(map[string]bool, len(ids))
	for _, id := range ids {
		drained[id] = true
	}
	l.drained = drained
	return nil
}

// accepts says whether worker id may be given new assignments: it is not drained and
// says it is not draining or stopping.
func (l *leader) accepts(id string, w *workerState) bool {
	return !l.drained[id] && w.info.State.Accepts()
}

// reloadAssignDir reads a worker's assignments and refusals. Those assignments that went
// away ended a run: their tasks are read again. A directory that cannot be read puts
// the worker in error; an assignment that cannot be read is taken back, as a malformed
// one is.
func (l *leader) reloadAssignDir(ctx context.Context, w string) error {
	if l.heldAt(workerKey(w), stepRead) {
		return nil
	}
	armed := l.assignArmed[w]
	names, err := l.children(ctx, l.l.AssignDir(w), &armed, func(d *dirtySet) { d.markAssign(w) })
	l.assignArmed[w] = armed
	if errors.Is(err, zk.ErrNoNode) {
		names = nil // the worker has not made it yet
	} else if err != nil {
		return l.contain(workerKey(w), stepRead, 0, err)
	}
	old := l.assign[w]
	cur := make(map[string]*slot, len(names))
	for _, name := range names {
		if id, ok := task.RefusedTask(name); ok {
			if err := l.readRefusal(w, id); err != nil {
				return err
			}
			continue
		}
		if s := old[name]; s != nil {
			cur[name] = s
			continue
		}
		var a task.Assignment
		data, _, err := l.conn.Get(l.l.Assignment(w, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err == nil {
			err = json.Unmarshal(data, &a)
		}
		if own(err) {
			return err
		} else if err != nil {
			l.logger.Warn("assignment unreadable: taking it back", "worker", w, "task", name, "err", err)
		}
		cur[name] = &slot{session: a.Session, attempt: a.Attempt}
		if t := l.tasks[name]; t != nil {
			t.worker = w
		}
	}
	for id := range old {
		if cur[id] == nil {
			if t := l.tasks[id]; t != nil && t.worker == w {
				t.worker = ""
			}
			if err := l.reloadTask(ctx, id); err != nil {
				return err
			}
		}
	}
	l.assign[w] = cur
	return nil
}

// readRefusal takes in worker w's refusal of task id, once: the task is ended by
// endWithoutRun. A refusal that cannot be read stands all the same, without its reason.
func (l *leader) readRefusal(w, id string) error {
	if r := l.refused[id]; r != nil && r.worker == w {
		return nil
	}
	r := &refusal{worker: w, rec: task.Refusal{Task: id, Worker: w}}
	data, _, err := l.conn.Get(l.l.Refusal(w, id))
	if errors.Is(err, zk.ErrNoNode) {
		return nil // handled meanwhile
	}
	if err == nil {
		err = json.Unmarshal(data, &r.rec)
	}
	if own(err) {
		return err
	} else if err != nil {
		r.rec.Error = "its refusal is unreadable: " + err.Error()
	}
	r.rec.Task, r.rec.Worker = id, w
	l.refused[id] = r
	l.logger.Warn("worker refused a task: ending it", "worker", w, "task", id, "ran", r.rec.Ran, "reason", r.rec.Error)
	return nil
}

func (d *dirtySet) markAssign(w string) {
	if d.assign == nil {
		d.assign = map[string]bool{}
	}
	d.assign[w] = true
}

func (d *dirtySet) markJob(name string) {
	if d.job == nil {
		d.job = map[string]bool{}
	}
	d.job[name] = true
}

func (d *dirtySet) markJobSig(name string) {
	if d.jobSig == nil {
		d.jobSig = map[string]bool{}
	}
	d.jobSig[name] = true
}

// markJobFires marks a job to read with its fire records.
func (d *dirtySet) markJobFires(name string) {
	d.markJob(name)
	if d.jobFires == nil {
		d.jobFires = map[string]bool{}
	}
	d.jobFires[name] = true
}

func (d *dirtySet) markTask(id string) {
	if d.task == nil {
		d.task = map[string]bool{}
	}
	d.task[id] = true
}

func (l *leader) reloadTaskList(ctx context.Context) error {
	ids, err := l.children(ctx, l.l.Tasks(), &l.tasksArmed, func(d *dirtySet) { d.tasks = true })
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(ids))
	for _, id := range ids {
		present[id] = true
		if _, known := l.tasks[id]; known || task.CheckID(id) != nil {
			continue
		}
		if _, ended := l.ended[id]; ended {
			continue
		}
		if err := l.reloadTask(ctx, id); err != nil {
			return err
		}
	}
	for id := range l.tasks {
		if !present[id] {
			delete(l.tasks, id) // deleted by someone
		}
	}
	l.sweepFaults(task.FaultTask, func(id string) bool { _, ended := l.ended[id]; return present[id] && !ended })
	return nil
}

// reloadTask reads a task's spec (once) and children. A task whose nodes cannot be read
// is put in error, and read again when its retry comes due.
func (l *leader) reloadTask(ctx context.Context, id string) error {
	if _, ended := l.ended[id]; ended {
		return nil
	}
	k := taskKey(id)
	if l.heldAt(k, stepRead) {
		return nil
	}
	err := l.readTask(ctx, id)
	if err == nil {
		l.passed(k, stepRead)
	}
	return l.contain(k, stepRead, 0, err)
}

func (l *leader) readTask(ctx context.Context, id string) error {
	t := l.tasks[id]
	var data []byte // the spec as read now, nil if it was read before
	if t == nil {
		var st *zk.Stat
		var err error
		data, st, err = l.conn.Get(l.l.Task(id))
		if errors.Is(err, zk.ErrNoNode) {
			l.clearFault(taskKey(id))
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the spec: %w", err)
		}
		t = &taskState{id: id, worker: l.assignedTo(id), czxid: st.Czxid, created: time.UnixMilli(st.Ctime), seen: time.Now()}
		l.tasks[id] = t
		l.parseSpec(t, data)
	}
	// The watch fires at the latest when the status is created: none is left behind.
	names, err := l.children(ctx, l.l.Task(id), &t.armed, func(d *dirtySet) { d.markTask(id) })
	if errors.Is(err, zk.ErrNoNode) {
		delete(l.tasks, id)
		l.clearFault(taskKey(id))
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the task's records: %w", err)
	}
	t.kids = task.ParseChildren(names)
	if t.kids.Status {
		return l.endedTask(id)
	}
	if t.kids.Sig && !t.signed && t.untrusted == nil && t.invalid == nil {
		if err := l.checkSig(t, data); err != nil {
			return err
		}
	}
	return l.readRetryDelay(t)
}

// parseSpec reads t's spec from data, and indexes it by DAG. The oldest task (the lowest
// sequence number) to claim a DAG name keeps it: a DAG's tasks are created in one multi,
// so a task claiming one of their names later (written by anyone, and never signed)
// cannot stand in for one of them.
func (l *leader) parseSpec(t *taskState, data []byte) {
	t.spec, t.invalid = task.Spec{}, nil
	if err := json.Unmarshal(data, &t.spec); err != nil {
		t.invalid = err
	} else if err := t.spec.Validate(); err != nil {
		t.invalid = err
	}
	older := func(id string) bool { return id == "" || t.id < id } // ids sort by sequence number
	if k := dagKey(t.spec.DAG, t.spec.Name); t.spec.DAG != "" && older(l.dagIDs[k]) {
		l.dagIDs[k] = t.id
	}
}

func (l *leader) assignedTo(id string) string {
	for w, slots := range l.assign {
		if slots[id] != nil {
			return w
		}
	}
	return ""
}

// endedTask records an ended task's state (for the metrics) and forgets the task. A
// status that cannot be read counts as failed: the task has ended all the same.
func (l *leader) endedTask(id string) error {
	var st task.Status
	data, _, err := l.conn.Get(l.l.Status(id))
	if own(err) {
		return err
	}
	if err == nil && json.Unmarshal(data, &st) != nil || err != nil && !errors.Is(err, zk.ErrNoNode) {
		st.State = task.Failed
	}
	l.ended[id] = st.State
	delete(l.tasks, id)
	l.clearFault(taskKey(id))
	return nil
}

// readRetryDelay sets when a task that failed may run again: its retry delay after
// the end of its last failed run.
func (l *leader) readRetryDelay(t *taskState) error {
	if len(t.kids.Failures) == 0 {
		return nil
	}
	last := slices.Max(t.kids.Failures)
	if last == t.lastRead {
		return nil
	}
	var a task.Attempt
	data, _, err := l.conn.Get(l.l.Attempt(t.id, last))
	if own(err) {
		return err
	}
	// A record that cannot be read (or decoded) gives no delay: the task is the one
	// that loses by it.
	if err == nil && json.Unmarshal(data, &a) == nil {
		t.eligible = a.Finished.Add(time.Duration(t.spec.RetryDelay))
	}
	t.lastRead = last
	return nil
}
