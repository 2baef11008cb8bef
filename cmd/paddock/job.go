package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/paddock/paddock/task"
)

// paddock job: create, change, run and inspect the task-scheduling cluster's jobs (a
// task on a cron schedule), on task.Client. It connects as paddock task does, with the
// same flags and exit statuses.

type jobCLI struct{ taskCLI }

func newJobCmd() *cobra.Command {
	j := &jobCLI{taskCLI{serviceCLI{zkCLI: zkCLI{exit: os.Exit, name: "paddock job"}}}}
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Create, change, run and inspect jobs: tasks on a cron schedule",
		Long: `Create, change, run and inspect the jobs of the task-scheduling cluster: a task run on a
cron schedule by the active master (paddock master), which records each scheduled time
as a fire under /jobs/<name>/fires and submits the task for it.

A schedule is five cron fields (minute hour day-of-month month day-of-week), six with
seconds first, or a descriptor (@hourly, @every 30s), read in --time-zone (UTC by
default). A disabled job is not fired, and enabling it fires no time that passed
while it was disabled; run-now runs it at once either way.

The exit status is 0 on success, 1 when the operation fails, 2 on bad usage.`,
	}
	return j.setup(cmd, "`path` the cluster's nodes live under", "timeout-connect",
		"create, update, enable, disable, delete, run-now, get or list",
		j.createCmd(), j.updateCmd(), j.enableCmd(true), j.enableCmd(false), j.deleteCmd(), j.runNowCmd(),
		j.getCmd(), j.listCmd())
}

// jobFlags are the flags that give a job: its own and its task's, or --file.
type jobFlags struct {
	file                           string
	schedule, timeZone, start, end string
	misfire, concurrency           string
	misfireThreshold               time.Duration
	history                        int
	disabled                       bool
	retries, priority              int
	retryDelay, timeout            time.Duration
	env                            []string
	dir                            string
	selector                       string
	shards                         int
	shardParams                    []string
}

// definitionFlags are the flags that give a job's fields, which --file excludes.
var definitionFlags = []string{"schedule", "time-zone", "start", "end", "misfire", "misfire-threshold",
	"concurrency", "history", "disabled", "retries", "retry-delay", "timeout", "priority", "env", "dir",
	"selector", "shards", "shard-param"}

func (f *jobFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "file", "", "read the job from this JSON `file` (- for stdin) instead of the flags and command")
	fs.StringVar(&f.schedule, "schedule", "", `cron expression: "0 3 * * *", six fields with seconds first, or @hourly, @every 30s (empty: only run-now runs it)`)
	fs.StringVar(&f.timeZone, "time-zone", "", "IANA `zone` the schedule is read in, such as Europe/Paris (default UTC)")
	fs.StringVar(&f.start, "start", "", "fire no time before this RFC 3339 `time`")
	fs.StringVar(&f.end, "end", "", "fire no time after this RFC 3339 `time`")
	fs.StringVar(&f.misfire, "misfire", "", "times missed while no master could fire them: run_once (the latest runs) or skip (default run_once)")
	fs.DurationVar(&f.misfireThreshold, "misfire-threshold", 0, "how late a fire may be and still run as scheduled (0: the default, 5s)")
	fs.StringVar(&f.concurrency, "concurrency", "", "a fire while an earlier run has not ended: skip, queue or allow (default skip)")
	fs.IntVar(&f.history, "history", 0, fmt.Sprintf("fire records kept (0: the default, %d)", task.DefaultHistory))
	fs.BoolVar(&f.disabled, "disabled", false, "create it disabled (update: --disabled=false enables it)")
	fs.IntVar(&f.retries, "retries", 0, "times a failed run is tried again")
	fs.DurationVar(&f.retryDelay, "retry-delay", task.DefaultRetryDelay, "pause before a retry")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill a run that takes longer (0: no limit)")
	fs.IntVar(&f.priority, "priority", 0, "higher runs first")
	fs.StringArrayVar(&f.env, "env", nil, "`K=V` added to the task's environment (repeatable; update: replaces the environment)")
	fs.StringVar(&f.dir, "dir", "", "working `directory` on the worker")
	fs.StringVar(&f.selector, "selector", "", "labels a worker must have to run it, `k=v,k=v` (empty: any worker)")
	fs.IntVar(&f.shards, "shards", 0, fmt.Sprintf("split each run into this many items, spread over the workers (0: not sharded; at most %d)", task.MaxShards))
	fs.StringArrayVar(&f.shardParams, "shard-param", nil, "an item's `parameter`, in item order (repeatable: the first is item 0's)")
}

// apply sets on j the flags given (every flag when all is set: a create) and, when
// command is not empty, the task's command and arguments.
func (f *jobFlags) apply(fs *pflag.FlagSet, j *task.Job, command []string, all bool) error {
	given := func(name string) bool { return all || fs.Changed(name) }
	var errs []error
	parseTime := func(flag, s string, to *time.Time) {
		if !given(flag) {
			return
		}
		if s == "" {
			*to = time.Time{}
			return
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", flag, s))
			return
		}
		*to = t.UTC()
	}
	setString := func(flag, v string, to *string) {
		if given(flag) {
			*to = v
		}
	}
	setString("schedule", f.schedule, &j.Schedule)
	setString("time-zone", f.timeZone, &j.TimeZone)
	parseTime("start", f.start, &j.Start)
	parseTime("end", f.end, &j.End)
	setString("misfire", f.misfire, &j.Misfire)
	setString("concurrency", f.concurrency, &j.Concurrency)
	setString("dir", f.dir, &j.Task.Dir)
	if given("misfire-threshold") {
		j.MisfireThreshold = task.Duration(f.misfireThreshold)
	}
	if given("history") {
		j.History = f.history
	}
	if given("disabled") {
		j.Enabled = !f.disabled
	}
	if given("retries") {
		j.Task.Retries = f.retries
	}
	if given("retry-delay") {
		j.Task.RetryDelay = task.Duration(f.retryDelay)
	}
	if given("timeout") {
		j.Task.Timeout = task.Duration(f.timeout)
	}
	if given("priority") {
		j.Task.Priority = f.priority
	}
	if given("env") {
		j.Task.Env = nil
		for _, kv := range f.env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				errs = append(errs, fmt.Errorf("--env %q: want K=V", kv))
				continue
			}
			if j.Task.Env == nil {
				j.Task.Env = map[string]string{}
			}
			j.Task.Env[k] = v
		}
	}
	if given("selector") {
		sel, err := task.ParseSelector(f.selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("--selector %q: %w", f.selector, err))
		}
		j.Task.Selector = sel
	}
	if given("shards") {
		j.Shards = f.shards
	}
	if given("shard-param") {
		j.ShardParams = f.shardParams
	}
	if len(command) > 0 {
		j.Task.Command, j.Task.Args = command[0], command[1:]
	}
	return errors.Join(errs...)
}

// fromFile reads the job of --file, its unknown fields refused, and names it: from
// NAME if the file names none, which must be the same if both do.
func (f *jobFlags) fromFile(cmd *cobra.Command, args []string) (task.Job, error) {
	var j task.Job
	for _, name := range definitionFlags {
		if cmd.Flags().Changed(name) {
			return j, usageError("--file and --%s: give the job in the file or with flags, not both", name)
		}
	}
	if len(args) > 1 {
		return j, usageError("--file and a command (%s): give the job in the file or with flags, not both", args[1])
	}
	var r io.Reader
	if f.file == "-" {
		r = cmd.InOrStdin()
	} else {
		fh, err := os.Open(f.file)
		if err != nil {
			return j, usageError("--file: %w", err)
		}
		defer fh.Close()
		r = fh
	}
	dec := json.NewDecoder(io.LimitReader(r, 4*task.MaxSpecSize))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return j, usageError("--file %s: want a JSON job {\"name\", \"schedule\", \"task\": {\"command\", …}, …}: %w", f.file, err)
	}
	switch {
	case len(args) == 1 && j.Name != "" && j.Name != args[0]:
		return j, usageError("--file %s names the job %q, the command line %q", f.file, j.Name, args[0])
	case len(args) == 1:
		j.Name = args[0]
	case j.Name == "":
		return j, usageError("no job name: give NAME, or \"name\" in --file")
	}
	return j, nil
}

// checkJob is task.CheckJob as a usage error, each problem on a line of its own
// without the "job: " the command's name already says.
func checkJob(j *task.Job) error {
	err := task.CheckJob(j)
	if err == nil {
		return nil
	}
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "job: ")
	}
	return usageError("%s", strings.Join(lines, "\n"))
}

func (j *jobCLI) createCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "create NAME [flags] -- COMMAND [ARGS...] | create [NAME] --file JOB.json",
		Short: "Create a job (enabled unless --disabled)",
		Long: `Create a job: its schedule and policies from the flags, its task from the command after
-- and the task flags (as paddock task submit takes them); or the whole job, as JSON,
from --file (the "job" of paddock job get --json). It is enabled unless --disabled:
the first time it fires is the first scheduled time after now.`,
	}
	f.add(cmd.Flags())
	return j.subcommand(cmd, cobra.ArbitraryArgs, func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		var job task.Job
		if f.file != "" {
			var err error
			if job, err = f.fromFile(cmd, args); err != nil {
				return err
			}
		} else {
			if len(args) < 2 {
				return usageError("want a job name and, after --, the command it runs")
			}
			job = task.Job{Name: args[0], Enabled: true}
			if err := f.apply(cmd.Flags(), &job, args[1:], true); err != nil {
				return usageError("%w", err)
			}
		}
		if err := checkJob(&job); err != nil {
			return err
		}
		if err := c.CreateJob(ctx, job); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s created\n", job.Name)
		return nil
	})
}

func (j *jobCLI) updateCmd() *cobra.Command {
	var f jobFlags
	cmd := &cobra.Command{
		Use:   "update NAME [flags] [-- COMMAND [ARGS...]] | update [NAME] --file JOB.json",
		Short: "Change a job: the flags given, or the whole definition from --file",
		Long: `Change a job. With flags, only what they give changes (--env replaces the whole
environment; an empty --start, --end or --schedule clears it), and a command after --
replaces the task's command and arguments. With --file, the file's job replaces the
definition. Either way the change applies to the job as it was read: if someone
changes it in between, nothing is written and the command fails saying so.
Enabling it (--disabled=false) fires no time that passed while it was disabled.`,
	}
	f.add(cmd.Flags())
	return j.subcommand(cmd, cobra.ArbitraryArgs, func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		if f.file != "" {
			job, err := f.fromFile(cmd, args)
			if err != nil {
				return err
			}
			if err := checkJob(&job); err != nil {
				return err
			}
			if err := c.UpdateJob(ctx, job); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s updated\n", job.Name)
			return nil
		}
		if len(args) == 0 {
			return usageError("want the job's name")
		}
		if err := task.CheckJobName(args[0]); err != nil {
			return usageError("%w", err)
		}
		v, err := c.GetJob(ctx, args[0])
		if errors.Is(err, task.ErrJobNotFound) {
			return fmt.Errorf("update job %s: %w", args[0], task.ErrJobNotFound)
		}
		if err != nil {
			return err
		}
		job := v.Job
		if err := f.apply(cmd.Flags(), &job, args[1:], false); err != nil {
			return usageError("%w", err)
		}
		if err := checkJob(&job); err != nil {
			return err
		}
		if err := c.UpdateJobAt(ctx, job, v.Version); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s updated\n", job.Name)
		return nil
	})
}

func (j *jobCLI) enableCmd(enable bool) *cobra.Command {
	cmd := &cobra.Command{Use: "enable NAME", Short: "Enable a job: it fires from its next scheduled time on"}
	done := "enabled"
	if !enable {
		cmd = &cobra.Command{Use: "disable NAME", Short: "Disable a job: it is not fired (run-now still runs it)"}
		done = "disabled"
	}
	return j.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		if err := c.SetJobEnabled(ctx, args[0], enable); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", args[0], done)
		return nil
	})
}

func (j *jobCLI) deleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME", Short: "Delete a job and its fire records; the tasks it started are not touched"}
	return j.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		if err := c.DeleteJob(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s deleted\n", args[0])
		return nil
	})
}

func (j *jobCLI) runNowCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "run-now NAME", Short: "Submit a run of a job now, enabled or not; prints the task's id (one line per item of a sharded job)"}
	return j.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		ids, err := c.RunNow(ctx, args[0])
		if err != nil {
			return err
		}
		for _, id := range ids {
			fmt.Fprintln(cmd.OutOrStdout(), id)
		}
		return nil
	})
}

func (j *jobCLI) getCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "get NAME", Short: "Show a job: its definition, next times and newest fire records"}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the task.JobView as JSON")
	return j.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		v, err := c.GetJob(ctx, args[0])
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd, v)
		}
		return printJob(cmd.OutOrStdout(), v)
	})
}

func (j *jobCLI) listCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "list", Short: "List the jobs by name, with their next time and newest fire"}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of task.JobView")
	return j.subcommand(cmd, cobra.NoArgs, func(ctx context.Context, c *task.Client, cmd *cobra.Command, _ []string) error {
		vs, err := c.ListJobs(ctx)
		if err != nil {
			return err
		}
		if asJSON {
			if vs == nil {
				vs = []*task.JobView{}
			}
			return printJSON(cmd, vs)
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tENABLED\tSCHEDULE\tNEXT\tLAST FIRE\tACTIVE\tCOMMAND")
		for _, v := range vs {
			next, last := "-", "-"
			switch {
			case v.Fault != nil:
				next = "in error" // not fired until its retry
			case len(v.Next) > 0:
				next = v.Next[0].Format(time.RFC3339)
			}
			if len(v.Fires) > 0 {
				last = fireTime(v.Fires[0]) + " " + fireOutcome(v.Fires[0])
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", v.Job.Name, yesNo(v.Job.Enabled), schedule(v.Job), next, last,
				len(v.Active), commandLine(v.Job.Task))
		}
		return w.Flush()
	})
}

// printJob writes v for a person: the definition (the task's environment by its
// names only: values may be secrets), the next times and the fire records.
func printJob(out io.Writer, v *task.JobView) error {
	j, d := v.Job, v.Job.WithDefaults()
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	field := func(k, format string, a ...any) { fmt.Fprintf(w, "%s:\t%s\n", k, fmt.Sprintf(format, a...)) }
	field("Name", "%s", j.Name)
	enabled := yesNo(j.Enabled)
	if j.Enabled && !j.EnabledSince.IsZero() {
		enabled += " (since " + j.EnabledSince.Format(time.RFC3339) + ")"
	}
	field("Enabled", "%s", enabled)
	field("Schedule", "%s", schedule(j))
	if !j.Start.IsZero() || !j.End.IsZero() {
		field("Window", "%s to %s", timeOr(j.Start, "the start"), timeOr(j.End, "no end"))
	}
	field("Misfire", "%s (threshold %v)", d.Misfire, d.MisfireThreshold)
	field("Concurrency", "%s", d.Concurrency)
	field("History", "%d records kept, %d now", d.History, v.FireCount)
	field("Command", "%s", commandLine(j.Task))
	if len(j.Task.Env) > 0 {
		field("Env", "%s", strings.Join(slices.Sorted(maps.Keys(j.Task.Env)), ", "))
	}
	if j.Task.Dir != "" {
		field("Dir", "%s", j.Task.Dir)
	}
	field("Task", "timeout %s, retries %d (delay %v), priority %d", durationOr(j.Task.Timeout, "none"), j.Task.Retries,
		j.Task.RetryDelay, j.Task.Priority)
	field("Created", "%s", timeOr(j.Created, "-"))
	field("Updated", "%s", timeOr(j.Updated, "-"))
	if f := v.Fault; f != nil {
		field("Error", "the master cannot %s it: %s (%d tries since %s; next %s, or at once when the job changes or "+
			"the error is cleared in the console)", f.Step, f.Error, f.Tries, f.Since.Format(time.RFC3339), f.Next.Format(time.RFC3339))
	}
	if v.Error != "" {
		field("Unreadable", "%s", v.Error)
	}
	if len(v.Active) > 0 {
		field("Active", "%s", strings.Join(v.Active, ", "))
	}
	loc, _ := time.LoadLocation(j.TimeZone) // UTC when empty, nil when bad
	for i, t := range v.Next {
		k := ""
		if i == 0 {
			k = "Next:"
		}
		local := ""
		if j.TimeZone != "" && loc != nil {
			local = " (" + t.In(loc).Format(time.RFC3339) + " " + j.TimeZone + ")"
		}
		fmt.Fprintf(w, "%s\t%s%s\n", k, t.Format(time.RFC3339), local)
	}
	if len(v.Next) == 0 {
		field("Next", "none")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(v.Fires) == 0 {
		_, err := fmt.Fprintln(out, "\nNo fire records.")
		return err
	}
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SCHEDULED\tOUTCOME\tTASK\tRECORDED\tREASON")
	for _, f := range v.Fires {
		reason := f.Reason
		if f.Error != "" {
			reason = f.Error
		}
		recorded := "-"
		if !f.Recorded.IsZero() {
			recorded = f.Recorded.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", fireTime(f), fireOutcome(f), orDash(f.Task), recorded, orDash(reason))
	}
	return w.Flush()
}

func fireTime(f task.FireView) string {
	t, err := task.ParseFireName(f.Name)
	if err != nil {
		return f.Name
	}
	return t.Format(time.RFC3339)
}

// fireOutcome says what a fire did; a record standing for several times says how many.
func fireOutcome(f task.FireView) string {
	switch {
	case f.Error != "":
		return "unreadable"
	case f.Covers > 1:
		return fmt.Sprintf("%s (%d times from %s)", f.Outcome, f.Covers, f.First.Format(time.RFC3339))
	}
	return f.Outcome
}

func schedule(j task.Job) string {
	if j.Schedule == "" {
		return "none (run-now only)"
	}
	tz := j.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return j.Schedule + " (" + tz + ")"
}

func commandLine(s task.Spec) string {
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func timeOr(t time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	return t.Format(time.RFC3339)
}

func durationOr(d task.Duration, zero string) string {
	if d == 0 {
		return zero
	}
	return d.String()
}
