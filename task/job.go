package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // a job's time zone must load on a machine without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// A Job runs its task on a schedule: the active master records each scheduled time once,
// as a fire under the job (/jobs/<job>/fires/<time>), and starts a task for it, a task like
// any other (retries, timeout, cancel, output and the exactly-once status apply). The
// fire is recorded in the same multi that creates the task, fenced by the master's
// epoch, and named for its scheduled time, so neither a failover nor two masters can
// skip or double one (docs/tasks.md "Jobs").
type Job struct {
	// Name is the job's node name under /jobs; set from the path when read.
	Name string `json:"name,omitempty"`
	// Task is what each fire runs. Its Submitted and Token are set per fire.
	Task Spec `json:"task"`
	// Schedule is a cron expression: five fields (minute hour day-of-month month
	// day-of-week) or six with seconds first, or a descriptor (@hourly, @every 30s).
	// Empty: the job runs only when asked (run-now).
	Schedule string `json:"schedule,omitempty"`
	// TimeZone is the IANA zone the schedule is read in ("Europe/Paris"); empty is UTC.
	TimeZone string `json:"time_zone,omitempty"`
	// Start and End bound the scheduled times fired; zero is unbounded.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// Misfire says what to do with scheduled times that passed while no master could
	// fire them (more than MisfireThreshold late): run_once (the latest of them runs,
	// the others are recorded skipped) or skip (all recorded skipped).
	Misfire string `json:"misfire,omitempty"`
	// MisfireThreshold is how late a fire may be and still run as scheduled.
	MisfireThreshold Duration `json:"misfire_threshold,omitempty"`
	// Concurrency says what a fire does while an earlier run of the job has not ended:
	// skip (recorded skipped), queue (recorded queued, its task started when the runs
	// before it have ended) or allow (runs alongside).
	Concurrency string `json:"concurrency,omitempty"`
	// Enabled: a disabled job is not fired (run-now still runs it). EnabledSince is when
	// it was last enabled: times before it are never fired or recorded.
	Enabled      bool      `json:"enabled"`
	EnabledSince time.Time `json:"enabled_since,omitzero"`
	// History is how many fire records the master keeps (the oldest are deleted).
	History int `json:"history,omitempty"`
	// Shards splits each run into that many items, each a task of its own, spread over
	// the live workers balanced and sticky (items stay where they ran unless the balance
	// needs them moved); ShardParams[i], if given, is item i's parameter. Each item's
	// task has Spec.Shard and the environment PADDOCK_SHARD_ITEM (from 0),
	// PADDOCK_SHARD_TOTAL and PADDOCK_SHARD_PARAM. 0: not sharded.
	Shards      int      `json:"shards,omitempty"`
	ShardParams []string `json:"shard_params,omitempty"`
	// DAG, in place of Task, makes each run a DAG of tasks (DAGNode, as
	// Client.SubmitDAG takes): its tasks are submitted together, each waits for those it
	// names, and a failure fails or skips those after it (docs/tasks.md "DAGs").
	DAG []DAGNode `json:"dag,omitempty"`
	// Created and Updated are when a client wrote the job.
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
}

// Misfire and concurrency policies.
const (
	MisfireRunOnce = "run_once"
	MisfireSkip    = "skip"

	ConcurrencySkip  = "skip"
	ConcurrencyQueue = "queue"
	ConcurrencyAllow = "allow"
)

// Job defaults and bounds.
const (
	DefaultMisfireThreshold = 5 * time.Second
	DefaultHistory          = 1000
	MaxHistory              = 100_000
	// MaxShards bounds a sharded job's items: a fire creates its tasks in one multi.
	MaxShards = 100
	// MaxQueued bounds a job's queued fires (concurrency queue): past it a fire is
	// recorded skipped.
	MaxQueued = 100
	// MaxBacklog bounds the fire records one round writes for a job: scheduled times
	// missed beyond it (a per-second job after an hour without a master) are covered
	// by one record that says how many it stands for.
	MaxBacklog = 100
)

var jobNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckJobName reports whether name can name a job: 1 to 128 letters, digits, '.', '_'
// or '-', starting with a letter or digit.
func CheckJobName(name string) error {
	if !jobNamePattern.MatchString(name) {
		return fmt.Errorf("job name %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// cronParser reads five fields, or six with seconds first, and descriptors.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month |
	cron.Dow | cron.Descriptor)

// ParseSchedule parses a cron expression read in the time zone tz (empty: UTC).
func ParseSchedule(expr, tz string) (cron.Schedule, error) {
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return nil, fmt.Errorf("time_zone %q: %w", tz, err)
		}
	}
	if strings.Contains(expr, "TZ=") {
		return nil, fmt.Errorf("schedule %q: give the zone in time_zone, not in the expression", expr)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", expr, err)
	}
	if spec, ok := s.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	return s, nil
}

// WithDefaults returns the job with its empty policies set to the defaults.
func (j Job) WithDefaults() Job {
	if j.Misfire == "" {
		j.Misfire = MisfireRunOnce
	}
	if j.Concurrency == "" {
		j.Concurrency = ConcurrencySkip
	}
	if j.MisfireThreshold == 0 {
		j.MisfireThreshold = Duration(DefaultMisfireThreshold)
	}
	if j.History == 0 {
		j.History = DefaultHistory
	}
	return j
}

// Validate reports every problem of the job, each naming its field.
func (j *Job) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("job: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if err := CheckJobName(j.Name); err != nil {
		bad("name", "%v", err)
	}
	if j.Schedule != "" {
		if _, err := ParseSchedule(j.Schedule, j.TimeZone); err != nil {
			bad("schedule", "%v", err)
		}
	} else if j.TimeZone != "" {
		if _, err := time.LoadLocation(j.TimeZone); err != nil {
			bad("time_zone", "%v", err)
		}
	}
	if !j.Start.IsZero() && !j.End.IsZero() && !j.End.After(j.Start) {
		bad("end", "%v is not after start %v", j.End, j.Start)
	}
	switch j.Misfire {
	case "", MisfireRunOnce, MisfireSkip:
	default:
		bad("misfire", "%q: want %s or %s", j.Misfire, MisfireRunOnce, MisfireSkip)
	}
	switch j.Concurrency {
	case "", ConcurrencySkip, ConcurrencyQueue, ConcurrencyAllow:
	default:
		bad("concurrency", "%q: want %s, %s or %s", j.Concurrency, ConcurrencySkip, ConcurrencyQueue, ConcurrencyAllow)
	}
	if j.MisfireThreshold < 0 {
		bad("misfire_threshold", "%v is negative", j.MisfireThreshold)
	}
	if j.Shards < 0 || j.Shards > MaxShards {
		bad("shards", "%d: want 0 (not sharded) to %d", j.Shards, MaxShards)
	}
	if len(j.ShardParams) > max(j.Shards, 0) {
		bad("shard_params", "%d parameters for %d shards", len(j.ShardParams), j.Shards)
	}
	if j.History < 0 || j.History > MaxHistory {
		bad("history", "%d: want 0 (the default, %d) to %d", j.History, DefaultHistory, MaxHistory)
	}
	if len(j.DAG) > 0 {
		// A run of the job is a DAG: its tasks, not Task.
		if !reflect.ValueOf(j.Task).IsZero() {
			bad("task", "give a task or a dag, not both")
		}
		if j.Shards > 0 {
			bad("shards", "a DAG job cannot be sharded")
		}
		if len(j.DAG) > MaxDAGSize-2 {
			bad("dag", "%d tasks: at most %d in a job's run", len(j.DAG), MaxDAGSize-2)
		} else if _, err := CheckDAG(j.DAG); err != nil {
			errs = append(errs, fmt.Errorf("job: %w", err))
		}
	} else {
		t := j.Task
		if err := t.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("job: task: %w", err))
		}
	}
	if len(errs) == 0 {
		if b, _ := json.Marshal(j); len(b) > MaxSpecSize {
			bad("size", "%d bytes of JSON: at most %d", len(b), MaxSpecSize)
		}
	}
	return errors.Join(errs...)
}

// Fire is the record of one scheduled time of a job, /jobs/<job>/fires/<name>, written
// by the active master.
type Fire struct {
	Scheduled time.Time `json:"scheduled"`
	// Recorded is when the master wrote the record (its clock).
	Recorded time.Time `json:"recorded"`
	// Outcome is started (a task was submitted), queued (its task waits for the job's
	// earlier runs to end) or skipped.
	Outcome string `json:"outcome"`
	// Reason says why a fire was skipped or queued, or that it ran late.
	Reason string `json:"reason,omitempty"`
	// Covers, when more than 1, says the record stands for that many scheduled times,
	// from First to Scheduled, all skipped as misfires (MaxBacklog).
	Covers int       `json:"covers,omitempty"`
	First  time.Time `json:"first,omitzero"`
	// Task is the task started for it (once started); Tasks, when a run is several, a
	// sharded job's items or a DAG job's tasks.
	Task  string   `json:"task,omitempty"`
	Tasks []string `json:"tasks,omitempty"`
	Epoch int32    `json:"epoch"`
}

// Fire outcomes.
const (
	FireStarted = "started"
	FireQueued  = "queued"
	FireSkipped = "skipped"
)

// Reasons a fire gives.
const (
	ReasonMisfire = "misfire: no master could fire it on time"
	ReasonLate    = "late: the latest of the times missed while no master could fire them (misfire run_once)"
	ReasonRunning = "an earlier run of the job has not ended (concurrency skip)"
	ReasonQueued  = "waits for the job's earlier runs to end (concurrency queue)"
	ReasonQueue   = "the job's queue is full (concurrency queue)"
)

// fireLayout is the name format of a fire: its scheduled time in UTC, to the second,
// so that names sort in time order.
const fireLayout = "20060102T150405Z"

// ShardsNode is the name of the node under a job where the master keeps where its
// items are placed (a ShardPlan).
const ShardsNode = "shards"

// ShardPlan maps each worker to the items of a sharded job it runs ("0", "1", ...).
type ShardPlan map[string][]string

// ShardItems returns the names of a job's items.
func (j *Job) ShardItems() []string {
	out := make([]string, j.Shards)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// Runs returns the specs of the tasks one run of the job is: its task, or one per item
// of a sharded job (with Shard and the PADDOCK_SHARD_* environment), each submitted at
// now with a token derived from token. scheduled is the fire's time (zero for a
// run-now).
func (j *Job) Runs(scheduled, now time.Time, token string) []Spec {
	if len(j.DAG) > 0 {
		return j.dagRuns(scheduled, now, token)
	}
	spec := j.Task
	spec.Submitted, spec.Job, spec.Token = now.UTC(), j.Name, token
	if !scheduled.IsZero() {
		spec.Scheduled = scheduled.UTC()
	}
	if j.Shards == 0 {
		return []Spec{spec}
	}
	out := make([]Spec, j.Shards)
	for i := range out {
		item := spec
		item.Shard = &Shard{Item: i, Total: j.Shards}
		if i < len(j.ShardParams) {
			item.Shard.Param = j.ShardParams[i]
		}
		item.Env = maps.Clone(spec.Env)
		if item.Env == nil {
			item.Env = map[string]string{}
		}
		item.Env["PADDOCK_SHARD_ITEM"] = strconv.Itoa(i)
		item.Env["PADDOCK_SHARD_TOTAL"] = strconv.Itoa(j.Shards)
		item.Env["PADDOCK_SHARD_PARAM"] = item.Shard.Param
		item.Token = fmt.Sprintf("%s/%d", token, i)
		out[i] = item
	}
	return out
}

// dagRuns are the specs of a run of a DAG job, in an order where each comes after those
// it waits for; the run's token is its DAG id.
func (j *Job) dagRuns(scheduled, now time.Time, token string) []Spec {
	order, err := CheckDAG(j.DAG)
	if err != nil {
		return nil // Validate refuses such a job
	}
	out := make([]Spec, 0, len(order))
	for _, i := range order {
		n := j.DAG[i]
		spec := n.Spec
		spec.Submitted, spec.Job, spec.Token = now.UTC(), j.Name, token+"/"+n.Name
		if !scheduled.IsZero() {
			spec.Scheduled = scheduled.UTC()
		}
		spec.DAG, spec.Name, spec.After, spec.OnParentFailure = token, n.Name, n.After, n.OnParentFailure
		out = append(out, spec)
	}
	return out
}

// FireName names the fire of a scheduled time.
func FireName(scheduled time.Time) string { return "fire-" + scheduled.UTC().Format(fireLayout) }

// ParseFireName returns the scheduled time a fire's name holds.
func ParseFireName(name string) (time.Time, error) {
	rest, ok := strings.CutPrefix(name, "fire-")
	if !ok {
		return time.Time{}, fmt.Errorf("fire name %q: want fire-<yyyymmddThhmmssZ>", name)
	}
	return time.Parse(fireLayout, rest)
}

// Decision is what the master records for one scheduled time (or, with Covers, a run
// of them).
type Decision struct {
	Scheduled time.Time
	Outcome   string
	Reason    string
	Covers    int
	First     time.Time
}

// PlanState is what the master knows of a job when it plans its fires.
type PlanState struct {
	// After is the last scheduled time already recorded (or the job's EnabledSince):
	// only later times are planned.
	After time.Time
	// Running says an earlier run of the job has not ended; Queued counts its queued
	// fires.
	Running bool
	Queued  int
}

// maxEnumerate bounds the scheduled times one plan looks at: past it (a per-second job
// after a day without a master) the plan skips ahead to the last MaxBacklog of them,
// and covers the rest with one record.
const maxEnumerate = 100_000

// Plan decides what to record for the scheduled times of job j (with defaults) in
// (st.After, now], at most MaxBacklog+1 decisions, in time order; next is the first
// scheduled time after now (zero when there is none). A pure function: the master
// records the decisions, each in its own fenced multi, and plans again at next.
func Plan(j Job, sched cron.Schedule, st PlanState, now time.Time) (out []Decision, next time.Time) {
	j = j.WithDefaults()
	from := st.After
	if !j.Start.IsZero() && j.Start.After(from) {
		// Start itself may be a scheduled time; an @every schedule counts from Start.
		from = j.Start.Add(-time.Second)
		if every, ok := sched.(cron.ConstantDelaySchedule); ok {
			from = j.Start.Add(-every.Delay)
		}
	}
	var due []time.Time
	t := sched.Next(from)
	for ; !t.IsZero() && !t.After(now) && len(due) < maxEnumerate; t = sched.Next(t) {
		if !j.End.IsZero() && t.After(j.End) {
			t = time.Time{}
			break
		}
		due = append(due, t)
	}
	next = t
	if !j.End.IsZero() && next.After(j.End) {
		next = time.Time{}
	}
	misfire := j.Misfire
	if len(due) == maxEnumerate && !next.IsZero() && !next.After(now) {
		// More than maxEnumerate due: the rest are planned next round, from here, and
		// only the last round runs the latest missed time (run_once).
		next, misfire = now, MisfireSkip
	}
	threshold := time.Duration(j.MisfireThreshold)
	var missed, onTime []time.Time
	for _, t := range due {
		if now.Sub(t) > threshold {
			missed = append(missed, t)
		} else {
			onTime = append(onTime, t)
		}
	}
	running, queued := st.Running, st.Queued
	start := func(t time.Time, reason string) {
		switch {
		case !running || j.Concurrency == ConcurrencyAllow:
			out = append(out, Decision{Scheduled: t, Outcome: FireStarted, Reason: reason})
			running = true
		case j.Concurrency == ConcurrencyQueue && queued < MaxQueued:
			out = append(out, Decision{Scheduled: t, Outcome: FireQueued, Reason: ReasonQueued})
			queued++
		case j.Concurrency == ConcurrencyQueue:
			out = append(out, Decision{Scheduled: t, Outcome: FireSkipped, Reason: ReasonQueue})
		default:
			out = append(out, Decision{Scheduled: t, Outcome: FireSkipped, Reason: ReasonRunning})
		}
	}
	if len(missed) > 0 {
		last := len(missed) - 1
		skipped := missed
		if misfire == MisfireRunOnce {
			skipped = missed[:last]
		}
		// The oldest skipped times beyond MaxBacklog share one record, at the last of them.
		if n := len(skipped) - MaxBacklog; n > 0 {
			out = append(out, Decision{Scheduled: skipped[n], Outcome: FireSkipped, Reason: ReasonMisfire,
				Covers: n + 1, First: skipped[0]})
			skipped = skipped[n+1:]
		}
		for _, t := range skipped {
			out = append(out, Decision{Scheduled: t, Outcome: FireSkipped, Reason: ReasonMisfire})
		}
		if misfire == MisfireRunOnce {
			start(missed[last], ReasonLate)
		}
	}
	for _, t := range onTime {
		start(t, "")
	}
	return out, next
}
