package master

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/robfig/cron/v3"

	"github.com/paddock/paddock/internal/balance"
	"github.com/paddock/paddock/task"
)

// The active master fires the jobs (task.Job): for each enabled job with a schedule it
// plans the scheduled times since the last one on record (task.Plan) and records each
// as a fire node named for it, in one fenced multi with the task the fire starts. A
// name already taken means the time is on record — an earlier try whose answer was lost,
// or another master's before this one's epoch — and nothing is done twice; a fire the
// epoch check refuses is planned again by whichever master holds the epoch. The fires
// are only ever written here, so the term's view of them, read when the job is first
// seen, stays current.

// jobState is a job as the term knows it.
type jobState struct {
	name  string
	job   task.Job // with defaults
	sched cron.Schedule
	// invalid says why the job is not fired: its definition does not validate, or is
	// not signed by a key trusted for jobs (verifyJob); failJob has recorded it.
	invalid error
	armed   bool // a data watch on the job's node is armed
	// sigArmed: a watch on the job's signature node is armed.
	sigArmed bool
	version  int32 // the data version of the job's node as read
	ctime    time.Time
	dir      bool      // the fires directory exists
	fires    []string  // fire names on record, oldest first
	last     time.Time // the latest scheduled time on record (or where planning starts)
	queued   []string  // fires recorded queued, oldest first
	// unlinked are started fires whose record names no task: the write that adds the
	// ids after the fire's multi did not go through (repairFires).
	unlinked []string
	next     time.Time      // the next scheduled time, zero if none
	plan     task.ShardPlan // a sharded job's items by worker, as on record
	planned  bool           // plan is on record (the shards node exists)
}

// queuedScan bounds how many of a job's newest fire records are read to find its queued
// ones: they are among the newest (at most task.MaxQueued, with skipped ones between).
const queuedScan = 4 * task.MaxQueued

// reloadJobs reads the list of jobs, arming a watch, and the jobs not yet known.
func (l *leader) reloadJobs(ctx context.Context) error {
	names, err := l.children(ctx, l.l.Jobs(), &l.jobsArmed, func(d *dirtySet) { d.jobs = true })
	if errors.Is(err, zk.ErrNoNode) {
		names, err = nil, nil
	}
	if err != nil {
		return err
	}
	present := make(map[string]bool, len(names))
	for _, name := range names {
		present[name] = true
		if _, known := l.jobs[name]; !known && !l.held(jobKey(name)) {
			if err := l.reloadJob(ctx, name, true); err != nil {
				return err
			}
		}
	}
	for name := range l.jobs {
		if !present[name] {
			delete(l.jobs, name)
		}
	}
	l.sweepFaults(task.FaultJob, func(name string) bool { return present[name] })
	return nil
}

// reloadJob reads a job's definition, arming a data watch, and its fire records the
// first time, or when fires is set. A job that cannot be read, or whose definition is
// not one to fire, is put in error (failJob). A job in error whose definition changed
// is tried again at once.
func (l *leader) reloadJob(ctx context.Context, name string, fires bool) error {
	if task.CheckJobName(name) != nil {
		return nil
	}
	err := l.readJob(ctx, name, fires)
	if own(err) {
		return err
	}
	if err != nil {
		l.failJob(name, stepRead, err)
	} else if j := l.jobs[name]; j != nil && j.invalid != nil {
		l.failJob(name, stepValidate, j.invalid)
	}
	return nil
}

func (l *leader) readJob(ctx context.Context, name string, fires bool) error {
	j := l.jobs[name]
	if j == nil {
		j = &jobState{name: name}
	}
	var data []byte
	var st *zk.Stat
	var err error
	if j.armed {
		data, st, err = l.conn.Get(l.l.Job(name))
	} else {
		var ev <-chan zk.Event
		data, st, ev, err = l.conn.GetW(l.l.Job(name))
		if err == nil {
			j.armed = true
			l.watch(ctx, ev, func(d *dirtySet) { d.markJob(name) })
		}
	}
	if errors.Is(err, zk.ErrNoNode) {
		delete(l.jobs, name)
		l.clearFault(jobKey(name))
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the definition: %w", err)
	}
	if f := l.faults[jobKey(name)]; f != nil && f.rec.Version != st.Version {
		l.retryNow(jobKey(name), f) // changed: whatever failed may not any more
		fires = true
	}
	j.version = st.Version
	var def task.Job
	j.invalid = json.Unmarshal(data, &def)
	def.Name = name
	if j.invalid == nil {
		j.invalid = def.Validate()
	}
	// A job is fired only if a key trusted for jobs signed this very definition: the
	// master signs its tasks in its own name (provenance.go). One that is not is in
	// error (reloadJob), as an invalid one is.
	sig, err := l.readJobSig(ctx, j)
	if err != nil {
		return err
	}
	if j.invalid == nil {
		j.invalid = l.verifyJob(st, data, sig)
	}
	j.job, j.sched, j.ctime = def.WithDefaults(), nil, time.UnixMilli(st.Ctime)
	if j.invalid == nil && def.Schedule != "" {
		j.sched, j.invalid = task.ParseSchedule(def.Schedule, def.TimeZone)
	}
	if _, known := l.jobs[name]; !known || fires {
		if err := l.readFires(j); err != nil {
			return err
		}
		l.jobs[name] = j
	}
	return nil
}

// readFires reads the names of a job's fire records, and the newest ones' data to find
// those queued.
func (l *leader) readFires(j *jobState) error {
	names, _, err := l.conn.Children(l.l.Fires(j.name))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("list the fires: %w", err)
	}
	j.dir = err == nil
	j.fires = j.fires[:0]
	for _, n := range names {
		if _, err := task.ParseFireName(n); err == nil {
			j.fires = append(j.fires, n)
		}
	}
	slices.Sort(j.fires)
	j.last, j.queued, j.unlinked = time.Time{}, nil, nil
	if len(j.fires) > 0 {
		j.last, _ = task.ParseFireName(j.fires[len(j.fires)-1])
	}
	for i := len(j.fires) - 1; i >= 0 && i >= len(j.fires)-queuedScan; i-- {
		data, _, err := l.conn.Get(l.l.Fire(j.name, j.fires[i]))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read fire %s: %w", j.fires[i], err)
		}
		var f task.Fire
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		switch {
		case f.Outcome == task.FireQueued:
			j.queued = append(j.queued, j.fires[i])
		case f.Outcome == task.FireStarted && f.Task == "" && len(f.Tasks) == 0:
			j.unlinked = append(j.unlinked, j.fires[i])
		}
	}
	slices.Sort(j.queued)
	return l.readShardPlan(j)
}

// readShardPlan reads where a sharded job's items are placed.
func (l *leader) readShardPlan(j *jobState) error {
	data, _, err := l.conn.Get(l.l.Shards(j.name))
	j.plan, j.planned = nil, err == nil
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the shard plan: %w", err)
	}
	if json.Unmarshal(data, &j.plan) != nil {
		j.plan = nil // replanned from scratch
	}
	return nil
}

// planShards places each sharded job's items on the workers that take work and match
// the job's selector, balanced and sticky (balance.Plan), and records the plan when it
// changed, so that the next master starts from it.
func (l *leader) planShards(free map[string]int) error {
	for _, j := range l.jobs {
		if j.invalid != nil || j.job.Shards == 0 || l.held(jobKey(j.name)) {
			continue
		}
		var members []string
		for w := range free {
			if j.job.Task.Selector.Matches(l.workers[w].info.Labels) {
				members = append(members, w)
			}
		}
		plan := task.ShardPlan(balance.Plan(j.plan, members, j.job.ShardItems()))
		if maps.EqualFunc(plan, j.plan, slices.Equal) && j.planned {
			continue
		}
		data, _ := json.Marshal(plan)
		op := any(&zk.SetDataRequest{Path: l.l.Shards(j.name), Data: data, Version: -1})
		if !j.planned {
			op = l.create(l.l.Shards(j.name), data)
		}
		err := l.multi(op)
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
			j.planned = !j.planned // an earlier try made it, or someone removed it: again next step
			continue
		}
		if own(err) {
			return err
		} else if err != nil {
			l.failJob(j.name, stepPlace, fmt.Errorf("write the shard plan: %w", err))
			continue
		}
		l.logger.Info("sharded job's items placed", "job", j.name, "plan", plan)
		j.plan, j.planned = plan, true
		l.passed(jobKey(j.name), stepPlace)
	}
	return nil
}

// shardOwner returns the worker a sharded job's item is placed on, "" if none.
func (l *leader) shardOwner(spec *task.Spec) string {
	j := l.jobs[spec.Job]
	if j == nil || spec.Shard == nil {
		return ""
	}
	item := strconv.Itoa(spec.Shard.Item)
	for w, items := range j.plan {
		if slices.Contains(items, item) {
			return w
		}
	}
	return ""
}

// runningJobs returns the jobs with a run that has not ended, from the tasks the term
// knows, once per round rather than a scan of the tasks per job. Only a signed task
// counts: one anybody wrote naming a job must not hold the job's fires back.
func (l *leader) runningJobs() map[string]bool {
	running := map[string]bool{}
	for _, t := range l.tasks {
		if t.signed && t.spec.Job != "" {
			running[t.spec.Job] = true
		}
	}
	return running
}

// fireJobs starts the queued fires whose turn came, and records what each job's
// scheduled times up to now call for. It returns the earliest next scheduled time. A
// job whose fire fails is put in error and the others go on; a job in error waits for
// its retry, and one that goes through is no longer in error.
func (l *leader) fireJobs(ctx context.Context) (time.Time, error) {
	var next time.Time
	now := time.Now()
	running := l.runningJobs() // the fires below add to it
	for _, j := range l.jobs {
		if l.held(jobKey(j.name)) {
			j.next = time.Time{}
			continue
		}
		err := l.fireJob(ctx, j, now, running)
		if own(err) {
			return time.Time{}, err
		}
		if errors.Is(err, zk.ErrShortBuffer) {
			err = fmt.Errorf("a request of the fire is larger than the servers' jute.maxbuffer (max_buffer %d): %w",
				l.s.MaxBuffer(), err)
		}
		if err != nil {
			l.failJob(j.name, stepFire, err)
			j.next = time.Time{}
			continue
		}
		if j.invalid == nil {
			l.passed(jobKey(j.name), stepRead, stepValidate, stepFire)
		}
		if !j.next.IsZero() && (next.IsZero() || j.next.Before(next)) {
			next = j.next
		}
	}
	return next, nil
}

// fireJob does for job j what fireJobs does for each, and sets j.next.
func (l *leader) fireJob(ctx context.Context, j *jobState, now time.Time, running map[string]bool) error {
	j.next = time.Time{}
	if j.invalid != nil || !j.job.Enabled {
		return nil
	}
	if err := l.repairFires(ctx, j, now); err != nil {
		return err
	}
	if len(j.queued) > 0 && !running[j.name] {
		if err := l.startQueued(ctx, j, now); err != nil {
			return err
		}
		running[j.name] = true
	}
	if j.sched == nil {
		return nil
	}
	after := j.last
	if after.IsZero() {
		after = j.ctime // a job never fired starts from its creation
	}
	if j.job.EnabledSince.After(after) {
		after = j.job.EnabledSince // times before it was enabled are never fired
	}
	decisions, n := task.Plan(j.job, j.sched, task.PlanState{After: after, Running: running[j.name],
		Queued: len(j.queued)}, now)
	for _, d := range decisions {
		if err := l.recordFire(ctx, j, d, now); err != nil {
			return err
		}
	}
	if err := l.pruneFires(j); err != nil {
		return err
	}
	j.next = n
	return nil
}

// recordFire records decision d of job j, with the task it starts, in one fenced multi.
func (l *leader) recordFire(ctx context.Context, j *jobState, d task.Decision, now time.Time) error {
	name := task.FireName(d.Scheduled)
	rec := task.Fire{Scheduled: d.Scheduled.UTC(), Recorded: now.UTC(), Outcome: d.Outcome, Reason: d.Reason,
		Covers: d.Covers, First: d.First.UTC(), Epoch: l.epoch}
	if d.Covers <= 1 {
		rec.First = time.Time{}
	}
	data, _ := json.Marshal(rec)
	var ops []any
	if !j.dir {
		ops = append(ops, l.create(l.l.Fires(j.name), nil))
	}
	ops = append(ops, l.create(l.l.Fire(j.name, name), data))
	started := d.Outcome == task.FireStarted
	var created []any
	if started {
		created = l.jobTasks(j, d.Scheduled, name, now)
		ops = append(ops, created...)
	}
	res, err := l.multiResults(ops...)
	var oe *opError
	errors.As(err, &oe)
	switch {
	case oe != nil && errors.Is(err, zk.ErrNodeExists) && oe.path == l.l.Fires(j.name):
		j.dir = true // made by an earlier try: again, without it
		return l.recordFire(ctx, j, d, now)
	case oe != nil && errors.Is(err, zk.ErrNodeExists) && oe.path == l.l.Fire(j.name, name):
		// On record already: an earlier try whose answer was lost.
		l.logger.Debug("fire already on record", "job", j.name, "fire", name)
	case err != nil:
		return err
	default:
		j.dir = true
		l.m.metrics.fires.WithLabelValues(d.Outcome).Inc()
		level := slog.LevelInfo // what did not go as scheduled is worth a line
		if d.Outcome == task.FireStarted && d.Reason == "" {
			level = slog.LevelDebug
		}
		l.logger.Log(ctx, level, "job fired", "job", j.name, "scheduled", d.Scheduled.UTC(), "outcome", d.Outcome,
			"reason", d.Reason, "covers", d.Covers)
		if started {
			if err := l.noteFireTasks(ctx, j, name, rec, created, res[len(res)-len(created):]); err != nil {
				return err
			}
		}
		if d.Outcome == task.FireQueued {
			j.queued = append(j.queued, name)
		}
	}
	j.fires = append(j.fires, name)
	if d.Scheduled.After(j.last) {
		j.last = d.Scheduled
	}
	return nil
}

// jobTasks are the creates of the tasks a fire of job j at scheduled starts (Job.Runs).
func (l *leader) jobTasks(j *jobState, scheduled time.Time, fire string, now time.Time) []any {
	specs := j.job.Runs(scheduled, now, j.name+"/"+fire)
	ops := make([]any, len(specs))
	for i, spec := range specs {
		ops[i] = l.taskCreate(spec)
	}
	return ops
}

func (l *leader) taskCreate(spec task.Spec) *zk.CreateRequest {
	data, _ := json.Marshal(spec)
	c := l.create(l.l.Task("task-"), data)
	c.Flags = zk.FlagSequence
	return c
}

// noteFireTasks signs the tasks a fire started and writes their ids into its record, in
// one fenced multi, and takes the tasks into the term's view at once, so that the job
// counts as running. created are the fire's multi's task creates, res their results.
func (l *leader) noteFireTasks(ctx context.Context, j *jobState, fire string, rec task.Fire, created []any, res []zk.MultiResponse) error {
	var ids []string
	for _, r := range res {
		ids = append(ids, path.Base(r.String))
	}
	if len(ids) == 1 {
		rec.Task = ids[0]
	} else {
		rec.Tasks = ids // a sharded job's items, or a DAG job's tasks
	}
	sigs, err := l.signFireTasks(created, res)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(rec)
	if err := l.multi(append([]any{&zk.SetDataRequest{Path: l.l.Fire(j.name, fire), Data: data, Version: -1}}, sigs...)...); err != nil &&
		!errors.Is(err, zk.ErrNoNode) {
		return err
	}
	for _, id := range ids {
		if err := l.reloadTask(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// startQueued starts the oldest queued fire of j: its record says started, in the multi
// that creates its task.
func (l *leader) startQueued(ctx context.Context, j *jobState, now time.Time) error {
	name := j.queued[0]
	scheduled, _ := task.ParseFireName(name)
	data, _, err := l.conn.Get(l.l.Fire(j.name, name))
	var rec task.Fire
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if errors.Is(err, zk.ErrNoNode) || (err == nil && rec.Outcome != task.FireQueued) {
		j.queued = j.queued[1:] // pruned, or started already
		return nil
	}
	if err != nil {
		return err
	}
	rec.Outcome, rec.Reason, rec.Recorded, rec.Epoch = task.FireStarted, "started once the job's earlier runs ended (queued)", now.UTC(), l.epoch
	data, _ = json.Marshal(rec)
	created := l.jobTasks(j, scheduled, name, now)
	res, err := l.multiResults(append([]any{&zk.SetDataRequest{Path: l.l.Fire(j.name, name), Data: data, Version: -1}},
		created...)...)
	if err != nil {
		return err
	}
	j.queued = j.queued[1:]
	l.m.metrics.fires.WithLabelValues("dequeued").Inc()
	l.logger.Info("queued job fire started", "job", j.name, "scheduled", scheduled)
	return l.noteFireTasks(ctx, j, name, rec, created, res[len(res)-len(created):])
}

// pruneFires deletes j's oldest fire records past its History, never a queued one nor
// the newest (it says where planning resumes).
func (l *leader) pruneFires(j *jobState) error {
	excess := len(j.fires) - max(j.job.History, 1)
	if excess <= 0 {
		return nil
	}
	var ops []any
	var gone []string
	for _, name := range j.fires[:excess] {
		if slices.Contains(j.queued, name) {
			break
		}
		ops = append(ops, &zk.DeleteRequest{Path: l.l.Fire(j.name, name), Version: -1})
		gone = append(gone, name)
		if len(ops) == maxOpsPerMulti {
			break
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if err := l.multi(ops...); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	j.fires = j.fires[len(gone):]
	return nil
}

// repairFires finishes each started fire whose record names no task: the write that
// follows a fire's multi — the tasks' ids into the record, and their signatures — can be
// lost to a disconnection or to the master's death, and its tasks, never signed, never
// run. The master makes the fire's tasks again, from the job's verified definition, in a
// multi that rewrites the record (so that two masters do not both), and links and signs
// them as a fire's (noteFireTasks); the tasks left unsigned are ended failed after the
// grace, unrun, so the fire runs once. It signs nothing it did not make itself: a task
// that only claims to be a fire's — its token, even made in one multi with a record —
// is anyone's. Called only for a job that verifies and is enabled.
func (l *leader) repairFires(ctx context.Context, j *jobState, now time.Time) error {
	for len(j.unlinked) > 0 {
		name := j.unlinked[0]
		j.unlinked = j.unlinked[1:]
		data, st, err := l.conn.Get(l.l.Fire(j.name, name))
		var rec task.Fire
		if errors.Is(err, zk.ErrNoNode) || (err == nil && (json.Unmarshal(data, &rec) != nil ||
			rec.Outcome != task.FireStarted || rec.Task != "" || len(rec.Tasks) > 0)) {
			continue // pruned, linked meanwhile, or not a record to finish
		}
		if err != nil {
			return err
		}
		rec.Recorded, rec.Epoch = now.UTC(), l.epoch
		data, _ = json.Marshal(rec)
		created := l.jobTasks(j, rec.Scheduled, name, now)
		res, err := l.multiResults(append([]any{&zk.SetDataRequest{Path: l.l.Fire(j.name, name), Data: data,
			Version: st.Version}}, created...)...)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue // another master finished it, or it was pruned
		}
		if err != nil {
			return err
		}
		l.logger.Info("fire finished: its tasks made again", "job", j.name, "fire", name)
		if err := l.noteFireTasks(ctx, j, name, rec, created, res[1:]); err != nil {
			return err
		}
	}
	return nil
}
