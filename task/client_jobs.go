package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/robfig/cron/v3"

	"github.com/paddock/paddock/coordinator"
)

// The job errors, like the task ones, come wrapped in the step and the job ("update job
// nightly: changed since it was read: …").
var (
	// ErrJobNotFound says there is no job of that name.
	ErrJobNotFound = errors.New("no such job")
	// ErrJobExists says a job of that name exists already.
	ErrJobExists = errors.New("already exists")
	// ErrJobChanged says the job was written by someone else between the read an
	// update was based on and its write: read it again and redo the change.
	ErrJobChanged = errors.New("changed since it was read")
)

// What a JobView holds.
const (
	// JobViewFires is how many fire records a JobView holds, the newest.
	JobViewFires = 20
	// JobViewNext is how many of the next scheduled times a JobView gives.
	JobViewNext = 5
)

// JobView is a job as a client sees it: its definition, its latest fire records and
// when it fires next.
type JobView struct {
	Job Job `json:"job"`
	// Version is the data version of /jobs/<job> that Job was read at: UpdateJobAt
	// replaces the definition only if it is still that one.
	Version int32 `json:"version"`
	// Fires are the newest fire records (at most JobViewFires), newest first;
	// FireCount is how many the master keeps in all.
	Fires     []FireView `json:"fires"`
	FireCount int        `json:"fire_count"`
	// Next are the next scheduled times after now (at most JobViewNext), by the
	// reader's clock: none when the job is disabled, has no schedule or is past its End.
	Next []time.Time `json:"next,omitempty"`
	// Active are the tasks started by the fires in Fires that have not ended (pending,
	// assigned or running), oldest first. Runs started with RunNow, and runs of older
	// fires, are not looked for.
	Active []string `json:"active,omitempty"`
	// Fault, if the master has the job in error, says why and when it tries again: the
	// job is not fired meanwhile (ClearJobFault tries it at once).
	Fault *Fault `json:"fault,omitempty"`
	// Error says what of the job this client could not read (its ACL is its
	// submitter's choice): a view holds what could be read, and ListJobs lists a job it
	// cannot read at all with its name, this and its Fault.
	Error string `json:"error,omitempty"`
}

// FireView is one fire record of a job.
type FireView struct {
	// Name is the record's node name, fire-<yyyymmddThhmmssZ>.
	Name string `json:"name"`
	Fire
	// Error says why the record could not be read as a Fire (its fields are then zero).
	Error string `json:"error,omitempty"`
}

// CheckJob reports every problem of a job as a client writes it: Validate's, and any
// of the task's fields that are set for each run (submitted, token, job, scheduled).
// CreateJob and UpdateJob return its error as it is, without a step.
func CheckJob(j *Job) error {
	var errs []error
	if err := j.Validate(); err != nil {
		errs = append(errs, err)
	}
	check := func(where string, t *Spec) {
		perRun := func(field string, set bool) {
			if set {
				errs = append(errs, fmt.Errorf("job: %s: %s: set for each run of the job: leave it out", where, field))
			}
		}
		perRun("submitted", !t.Submitted.IsZero())
		perRun("token", t.Token != "")
		perRun("job", t.Job != "")
		perRun("scheduled", !t.Scheduled.IsZero())
		perRun("shard", t.Shard != nil)
		perRun("dag", t.DAG != "" || t.Name != "" || len(t.After) > 0)
	}
	check("task", &j.Task)
	for i := range j.DAG {
		check("dag "+j.DAG[i].Name, &j.DAG[i].Spec)
	}
	return errors.Join(errs...)
}

// CreateJob checks j (CheckJob) and creates it, with its fires directory, in one multi,
// then signs it (sign.go). Created and Updated are set to now, and EnabledSince too if
// it is enabled (zero if not): the master fires no time before it. A job of the same
// name is an error wrapping ErrJobExists; a client without a signer creates nothing
// (ErrNoSigner). A create whose reply is lost to a disconnection finds out whether it
// was applied.
func (c *Client) CreateJob(ctx context.Context, j Job) error {
	if err := CheckJob(&j); err != nil {
		return err
	}
	step := "create job " + j.Name
	if c.s.Signer() == nil {
		return fmt.Errorf("%s: %w", step, ErrNoSigner)
	}
	now := time.Now().UTC()
	j.Created, j.Updated, j.EnabledSince = now, now, time.Time{}
	if j.Enabled {
		j.EnabledSince = now
	}
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	if err := c.s.MakeDirs(ctx, c.l.Jobs()); err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	p, fires := c.l.Job(j.Name), c.l.Fires(j.Name)
	ops := []any{
		&zk.CreateRequest{Path: p, Data: data, Acl: c.s.ACLFor(p)},
		&zk.CreateRequest{Path: fires, Acl: c.s.ACLFor(fires)},
	}
	conn := c.s.Conn()
	signed := func() error {
		if err := c.signCreated(ctx, JobDomain, []string{p}, [][]byte{data}); err != nil {
			return fmt.Errorf("%s: created and not signed (the master does not fire it; an update signs it): %w", step, err)
		}
		return nil
	}
	for {
		_, err := multiErr(conn.Multi(ops...))
		switch {
		case err == nil:
			return signed()
		case errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("%s: %w", step, ErrJobExists)
		case errors.Is(err, zk.ErrNoNode): // /jobs was deleted meanwhile
			if err := c.s.MakeDirs(ctx, c.l.Jobs()); err != nil {
				return fmt.Errorf("%s: %w", step, err)
			}
			continue
		}
		if !coordinator.IsConnLoss(err) || coordinator.WriteNotSent(err) {
			if err := c.s.WaitToRetry(ctx, err); err != nil {
				return fmt.Errorf("%s: %w", step, err)
			}
			continue
		}
		// Applied or not: the node, if there is one, says whose it is.
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		var got []byte
		err = c.retry(ctx, func() (err error) { got, _, err = conn.Get(p); return err })
		switch {
		case err == nil && bytes.Equal(got, data):
			return signed()
		case err == nil:
			return fmt.Errorf("%s: %w", step, ErrJobExists)
		case !errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("%s: %w", step, err)
		}
	}
}

// UpdateJob replaces the definition of job j.Name with j (checked by CheckJob), and its
// signature, in one multi at the version it reads: a write by someone else between
// that read and its own is an error wrapping ErrJobChanged. Created is kept, Updated set to now, and EnabledSince
// kept unless the update enables the job, when it becomes now.
func (c *Client) UpdateJob(ctx context.Context, j Job) error {
	return c.updateJob(ctx, j, -1)
}

// UpdateJobAt is UpdateJob at the version the caller read (JobView.Version): if the
// job has been written since, it is an error wrapping ErrJobChanged.
func (c *Client) UpdateJobAt(ctx context.Context, j Job, version int32) error {
	if version < 0 {
		return fmt.Errorf("update job %s: version %d: want the version read, 0 or more", j.Name, version)
	}
	return c.updateJob(ctx, j, version)
}

func (c *Client) updateJob(ctx context.Context, j Job, version int32) error {
	if err := CheckJob(&j); err != nil {
		return err
	}
	step := "update job " + j.Name
	var sent []byte // what a write whose reply was lost carried
	for {
		old, st, raw, err := c.readJob(ctx, j.Name)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%s: %w", step, ErrJobNotFound)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		if sent != nil && bytes.Equal(raw, sent) {
			return nil // the lost write was applied
		}
		at := version
		if at < 0 {
			at = st.Version
		}
		now := time.Now().UTC()
		j.Created, j.Updated, j.EnabledSince = old.Created, now, old.EnabledSince
		if j.Enabled && !old.Enabled {
			j.EnabledSince = now
		}
		data, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		err = c.setJob(j.Name, st.Czxid, data, at)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrNoSigner):
			return fmt.Errorf("%s: %w", step, err)
		case errors.Is(err, zk.ErrBadVersion):
			return fmt.Errorf("%s: %w: it was read at version %d and another update has been written since: "+
				"read it again and redo the change", step, ErrJobChanged, at)
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("%s: %w (deleted meanwhile)", step, ErrJobNotFound)
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		if sent == nil && version < 0 {
			version = at // a retry writes at the version read here, not a newer one
		}
		if coordinator.WriteNotSent(err) {
			continue
		}
		sent = data
	}
}

// SetJobEnabled enables or disables the job, signing the changed definition. Enabling
// sets EnabledSince to now: the master never fires the times before it, those that
// passed while it was disabled. Setting the state it is in changes nothing; a job
// whose definition no trusted key signed is not changed (an error).
func (c *Client) SetJobEnabled(ctx context.Context, name string, enabled bool) error {
	if err := CheckJobName(name); err != nil {
		return err
	}
	step := "disable job " + name
	if enabled {
		step = "enable job " + name
	}
	for {
		j, st, raw, err := c.readJob(ctx, name)
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%s: %w", step, ErrJobNotFound)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		if j.Enabled == enabled {
			return nil // already, or a write whose reply was lost was applied
		}
		// The change is signed with this client's key: it must not vouch for a
		// definition no trusted key signed.
		if err := c.verifyJob(ctx, name, st.Czxid, raw); err != nil {
			return fmt.Errorf("%s: %w (an update with the whole definition signs it anew)", step, err)
		}
		now := time.Now().UTC()
		j.Enabled, j.Updated = enabled, now
		if enabled {
			j.EnabledSince = now
		}
		data, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		err = c.setJob(name, st.Czxid, data, st.Version)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrNoSigner):
			return fmt.Errorf("%s: %w", step, err)
		case errors.Is(err, zk.ErrBadVersion):
			continue // another change: apply this one to it
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("%s: %w (deleted meanwhile)", step, ErrJobNotFound)
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
	}
}

// setJob writes data, signed, as the definition of job name (its node's czxid given) at
// version: the definition and its signature in one multi. It returns the error of the
// definition's write (zk.ErrBadVersion, zk.ErrNoNode...), or ErrNoSigner.
func (c *Client) setJob(name string, czxid int64, data []byte, version int32) error {
	signer := c.s.Signer()
	if signer == nil {
		return ErrNoSigner
	}
	rec, err := signer.Sign(JobDomain, czxid, data)
	if err != nil {
		return err
	}
	sp := c.l.JobSig(name)
	set := &zk.SetDataRequest{Path: c.l.Job(name), Data: data, Version: version}
	conn := c.s.Conn()
	sigOps := []any{&zk.SetDataRequest{Path: sp, Data: rec, Version: -1}, &zk.CreateRequest{Path: sp, Data: rec, Acl: c.s.ACLFor(sp)}}
	for try := 0; ; try++ {
		i, err := multiErr(conn.Multi(set, sigOps[try%2]))
		// A job signed by nothing yet has no sig node, or it came meanwhile: the other op.
		if i == 1 && (errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNodeExists)) && try < 4 {
			continue
		}
		return err
	}
}

// verifyJob checks that data, the definition of job name read from its node of czxid,
// is signed by a key trusted for jobs.
func (c *Client) verifyJob(ctx context.Context, name string, czxid int64, data []byte) error {
	return c.verifyNode(ctx, c.l.JobSig(name), czxid, data, VerifyJob)
}

// deleteBatch is how many fire records one multi of DeleteJob deletes.
const deleteBatch = 200

// DeleteJob deletes the job: its fire records, oldest first, then the newest with the
// fires directory, any other node the master keeps under the job (a leaf, such as a
// sharded job's plan) and the job in one multi, so that a master never sees the job
// with fewer records than it wrote (it fires the times after the newest). If the
// master records a fire meanwhile, the deletion goes on from there. Tasks the job
// started are not touched. No job of that name is an error wrapping ErrJobNotFound.
func (c *Client) DeleteJob(ctx context.Context, name string) error {
	if err := CheckJobName(name); err != nil {
		return err
	}
	step := "delete job " + name
	conn := c.s.Conn()
	tried := false // a final multi was sent: a job gone since is ours to have deleted
	for {
		kids, err := c.children(ctx, c.l.Job(name))
		switch {
		case errors.Is(err, zk.ErrNoNode) && tried:
			return nil
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("%s: %w", step, ErrJobNotFound)
		case err != nil:
			return fmt.Errorf("%s: %w", step, err)
		}
		var fires []string
		if slices.Contains(kids, firesName) {
			if fires, _, err = c.fireNames(ctx, name); err != nil {
				return fmt.Errorf("%s: %w", step, err)
			}
		}
		var paths []string // deleted by the final multi, in order
		if len(fires) > 0 {
			if err := c.deleteFires(ctx, name, fires[:len(fires)-1]); err != nil {
				return fmt.Errorf("%s: %w", step, err)
			}
			paths = append(paths, c.l.Fire(name, fires[len(fires)-1]))
		}
		slices.Sort(kids)
		for _, k := range kids {
			paths = append(paths, c.l.join("jobs", name, k))
		}
		paths = append(paths, c.l.Job(name))
		ops := make([]any, len(paths))
		for i, p := range paths {
			ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
		}
		tried = true
		i, err := multiErr(conn.Multi(ops...))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNotEmpty) && i >= 0 && path.Base(paths[i]) != firesName && paths[i] != c.l.Job(name):
			return fmt.Errorf("%s: %s has children, which the client does not know how to delete", step, paths[i])
		case errors.Is(err, zk.ErrNotEmpty), errors.Is(err, zk.ErrNoNode):
			continue // the master recorded a fire, or trimmed one, or added a node: look again
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
	}
}

// deleteFires deletes the fire records of job named, in multis of deleteBatch; a
// batch refused because a record has gone (the master trims its history) is deleted
// one by one.
func (c *Client) deleteFires(ctx context.Context, job string, names []string) error {
	conn := c.s.Conn()
	for len(names) > 0 {
		batch := names[:min(deleteBatch, len(names))]
		names = names[len(batch):]
		ops := make([]any, len(batch))
		for i, n := range batch {
			ops[i] = &zk.DeleteRequest{Path: c.l.Fire(job, n), Version: -1}
		}
		_, err := multiErr(conn.Multi(ops...))
		if err == nil {
			continue
		}
		if !errors.Is(err, zk.ErrNoNode) && !coordinator.IsConnLoss(err) {
			return err
		}
		for _, n := range batch {
			// Deleting twice is harmless: retry whatever the outcome.
			err := c.retry(ctx, func() error { return conn.Delete(c.l.Fire(job, n), -1) })
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
	return nil
}

// RunNow submits a run of the job now, whether it is enabled or not: its task, with
// Spec.Job naming it and no scheduled time, signed with this client's key, if the
// job's definition is signed by a key trusted for jobs. It returns the task's id. The master's
// concurrency policy does not apply to it.
func (c *Client) RunNow(ctx context.Context, name string) ([]string, error) {
	if err := CheckJobName(name); err != nil {
		return nil, err
	}
	step := "run job " + name
	j, st, raw, err := c.readJob(ctx, name)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%s: %w", step, ErrJobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	// Its runs are signed with this client's key: only a definition a trusted key
	// signed may be run.
	if err := c.verifyJob(ctx, name, st.Czxid, raw); err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	j.Name = name
	specs := j.Runs(time.Time{}, time.Now(), newToken())
	if len(specs) == 1 {
		id, err := c.Submit(ctx, specs[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", step, err)
		}
		return []string{id}, nil
	}
	// A sharded job's items: all of them or none. The master places each on the worker
	// the job's plan gives it.
	ids, err := c.submitAll(ctx, specs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	return ids, nil
}

// GetJob returns the job with its newest fire records and next scheduled times, or an
// error wrapping ErrJobNotFound.
func (c *Client) GetJob(ctx context.Context, name string) (*JobView, error) {
	if err := CheckJobName(name); err != nil {
		return nil, err
	}
	v, err := c.jobView(ctx, name, time.Now())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("get job %s: %w", name, ErrJobNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job %s: %w", name, err)
	}
	return v, nil
}

// ListJobs returns every job, by name, as GetJob does.
func (c *Client) ListJobs(ctx context.Context) ([]*JobView, error) {
	names, err := c.children(ctx, c.l.Jobs())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return CheckJobName(n) != nil })
	slices.Sort(names)
	now := time.Now()
	out := make([]*JobView, 0, len(names))
	for _, name := range names {
		v, err := c.jobView(ctx, name, now)
		if errors.Is(err, zk.ErrNoNode) {
			continue // deleted meanwhile
		}
		if coordinator.IsConnLoss(err) || errors.Is(err, zk.ErrClosing) || ctx.Err() != nil {
			return nil, fmt.Errorf("list jobs: %s: %w", name, err)
		}
		if err != nil {
			v = &JobView{Job: Job{Name: name}, Fires: []FireView{}, Error: "cannot read the job: " + err.Error(),
				Fault: c.faultOf(ctx, c.l.JobFault(name))}
		}
		out = append(out, v)
	}
	return out, nil
}

// readJob reads the job's node: the Job (its Name from the path), its stat and data.
func (c *Client) readJob(ctx context.Context, name string) (Job, *zk.Stat, []byte, error) {
	var (
		data []byte
		st   *zk.Stat
		j    Job
	)
	conn := c.s.Conn()
	if err := c.retry(ctx, func() (err error) { data, st, err = conn.Get(c.l.Job(name)); return err }); err != nil {
		return j, nil, nil, err
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return j, nil, nil, fmt.Errorf("%s: %w", c.l.Job(name), err)
	}
	j.Name = name
	return j, st, data, nil
}

// fireNames returns the names of the job's fire records, oldest first, and whether
// its fires directory exists.
func (c *Client) fireNames(ctx context.Context, job string) ([]string, bool, error) {
	names, err := c.children(ctx, c.l.Fires(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	names = slices.DeleteFunc(names, func(n string) bool { _, err := ParseFireName(n); return err != nil })
	slices.Sort(names) // the names sort in time order
	return names, true, nil
}

// jobView reads the job, its newest fire records and the state of their tasks; an
// error wrapping zk.ErrNoNode if the job does not exist.
func (c *Client) jobView(ctx context.Context, name string, now time.Time) (*JobView, error) {
	j, st, _, err := c.readJob(ctx, name)
	if err != nil {
		return nil, err
	}
	v := &JobView{Job: j, Version: st.Version, Fires: []FireView{}}
	names, _, err := c.fireNames(ctx, name)
	if err != nil && !coordinator.IsConnLoss(err) && ctx.Err() == nil {
		v.Error, names = "cannot list its fire records: "+err.Error(), nil
	} else if err != nil {
		return nil, err
	}
	v.FireCount = len(names)
	conn := c.s.Conn()
	for i := len(names) - 1; i >= 0 && len(v.Fires) < JobViewFires; i-- {
		f := FireView{Name: names[i]}
		var data []byte
		err := c.retry(ctx, func() (err error) { data, _, err = conn.Get(c.l.Fire(name, names[i])); return err })
		if errors.Is(err, zk.ErrNoNode) {
			continue // trimmed by the master meanwhile
		}
		if coordinator.IsConnLoss(err) || ctx.Err() != nil {
			return nil, err
		}
		if err != nil {
			f.Error = "unreadable: " + err.Error()
		} else if err := json.Unmarshal(data, &f.Fire); err != nil {
			f.Fire, f.Error = Fire{}, "not a fire record: "+err.Error()
		}
		v.Fires = append(v.Fires, f)
	}
	var started []string // oldest first: a fire's task, or a sharded fire's items
	for i := len(v.Fires) - 1; i >= 0; i-- {
		started = append(append(started, v.Fires[i].Task), v.Fires[i].Tasks...)
	}
	for _, id := range started {
		if CheckID(id) != nil || slices.Contains(v.Active, id) {
			continue
		}
		var ok, ended bool
		if err := c.retry(ctx, func() (err error) { ok, _, err = conn.Exists(c.l.Task(id)); return err }); err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := c.retry(ctx, func() (err error) { ended, _, err = conn.Exists(c.l.Status(id)); return err }); err != nil {
			return nil, err
		}
		if !ended {
			v.Active = append(v.Active, id)
		}
	}
	var last time.Time
	if len(v.Fires) > 0 {
		last = v.Fires[0].Scheduled
		if t, err := ParseFireName(v.Fires[0].Name); err == nil && t.After(last) {
			last = t
		}
	}
	v.Next = NextFires(j, last, now, JobViewNext)
	v.Fault = c.faultOf(ctx, c.l.JobFault(name))
	return v, nil
}

// NextFires returns the next n scheduled times of j after now: none if it is disabled
// or has no schedule, and none past its End. last is the newest fire recorded (zero if
// none). The first is what Plan gives the master as next, from the newest record or
// EnabledSince (an @every schedule counts from there).
func NextFires(j Job, last, now time.Time, n int) []time.Time {
	if !j.Enabled || j.Schedule == "" || n <= 0 {
		return nil
	}
	sched, err := ParseSchedule(j.Schedule, j.TimeZone)
	if err != nil {
		return nil
	}
	after := last
	if j.EnabledSince.After(after) {
		after = j.EnabledSince
	}
	every, isEvery := sched.(cron.ConstantDelaySchedule)
	switch {
	case isEvery && every.Delay > 0 && !after.IsZero() && after.Before(now):
		// The times are after (to the second) + k×Delay: start from the last at or
		// before now rather than count them all.
		after = after.Truncate(time.Second)
		after = after.Add(now.Sub(after) / every.Delay * every.Delay)
	case after.IsZero() || !isEvery && after.Before(now):
		after = now // a cron schedule's times do not depend on where one counts from
	}
	_, next := Plan(j, sched, PlanState{After: after}, now)
	var out []time.Time
	for t := next; !t.IsZero() && len(out) < n; t = sched.Next(t) {
		if !j.End.IsZero() && t.After(j.End) {
			break
		}
		if t.After(now) {
			out = append(out, t.UTC())
		}
	}
	return out
}

// multiErr returns the index of the op that failed a multi and its error; -1 and the
// request's error (nil when applied) if no op failed.
func multiErr(res []zk.MultiResponse, err error) (int, error) {
	for i, r := range res {
		if r.Error != nil {
			return i, r.Error
		}
	}
	return -1, err
}
