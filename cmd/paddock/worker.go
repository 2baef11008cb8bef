package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/task"
	"github.com/paddock/paddock/worker"
)

func newWorkerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker of the task-scheduling cluster",
		Long: `Run a worker of the task-scheduling cluster: it registers in /workers/<id>, runs the
tasks the active master assigns to it, at most --capacity at once, and records how
each ended. Its id must stay the same across restarts.

Configuration, in increasing precedence: defaults, the worker section of --config FILE,
PADDOCK_WORKER_* environment variables (PADDOCK_WORKER_ZK), then the flags below.

Tasks run as --run-as (run_as): a worker running as root refuses to start without it,
unless --allow-root. Each task runs under a supervisor process: when the task's first
process exits, or the worker dies (even by SIGKILL), every process the task started is
killed; a restarted worker kills what its previous life left before it claims a task.

SIGTERM (or Ctrl-C) stops it gracefully: it takes nothing new, lets running tasks end
within --stop-grace, then kills those left and hands them back as lost runs (which do
not count against their retries). A second signal ends it at once.

The subcommands drain, undrain and list take a worker out of service and back, and
show the workers with their state.`,
		Args: cobra.NoArgs,
		RunE: runWorker,
	}
	def := worker.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration `file`")
	addServiceAccessFlags(f)
	f.StringSlice("zk", def.Servers, "`host:port`[,host:port...] of the coordination servers")
	f.String("id", def.ID, "the worker's name in /workers and /assign (required)")
	f.Int("capacity", def.Capacity, "tasks run at once")
	f.StringSlice("labels", def.Labels, "`k=v`[,k=v...] describing the worker")
	f.String("root", def.Root, "`path` the cluster's nodes live under")
	f.Duration("session-timeout", def.SessionTimeout, "ZooKeeper session timeout: cut off longer, the worker kills its tasks")
	f.String("output-dir", def.OutputDir, "`directory` for the tasks' whole output (default data/worker-<id>/output)")
	f.String("metrics-addr", def.MetricsAddr, "`host:port` to serve /metrics on; empty for none")
	f.String("addr", def.Addr, "address advertised in /workers/<id> (informational)")
	f.Duration("kill-grace", def.KillGrace, "time between SIGTERM and SIGKILL when a task is stopped")
	f.Duration("stop-grace", def.StopGrace, "on SIGTERM, time running tasks have to end before they are killed and handed back")
	f.String("run-as", def.RunAs, "`user` (a name, or uid[:gid]) tasks run as; a worker running as root needs it, or --allow-root")
	f.Bool("allow-root", def.AllowRoot, "let a worker running as root run tasks as root")
	f.Bool("use-cgroup", def.UseCgroup, "put each run in a cgroup v2 of its own where the worker can make one, and kill through it")
	f.Duration("heartbeat-interval", def.HeartbeatInterval, "how often the worker's loop rewrites its registration; readers call it stale after 3x this (at least 10s) by the servers' clock")
	cmd.AddCommand(newWorkerAdminCmds()...)
	return cmd
}

// newWorkerAdminCmds returns paddock worker's drain, undrain and list, on
// task.Client; each has the connection flags of paddock task (--zk, --root, --auth…).
func newWorkerAdminCmds() []*cobra.Command {
	t := &taskCLI{serviceCLI{zkCLI: zkCLI{exit: os.Exit, name: "paddock worker"}}}
	var deadline string
	drain := &cobra.Command{
		Use:   "drain ID [--deadline D]",
		Short: "Take a worker out of service: it takes no new tasks and finishes those it runs",
		Long: `Take a worker out of service by writing /drain/<id>: the master gives it nothing new, it
hands back assignments it has not started and finishes what it runs, then says
"drained". With --deadline (a duration such as 10m, or an RFC 3339 time), what still
runs then is killed and handed back as lost runs, which do not count against retries.
Needs the admin or console role where role ACLs are in force.`,
	}
	drain.Flags().StringVar(&deadline, "deadline", "", "kill and hand back what still runs after this `duration` (10m) or at this RFC 3339 time")
	checkDrain := func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(1)(cmd, args); err != nil {
			return err
		}
		if deadline == "" {
			return nil
		}
		if _, err := parseDeadline(deadline, time.Now()); err != nil {
			return fmt.Errorf("--deadline %q: %w", deadline, err)
		}
		return nil
	}
	t.subcommand(drain, checkDrain, func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		req := task.DrainRequest{Requested: time.Now().UTC(), By: "cli"}
		if deadline != "" {
			d, err := parseDeadline(deadline, req.Requested)
			if err != nil {
				return usageError("--deadline %q: %w", deadline, err)
			}
			req.Deadline = d
		}
		if err := c.Drain(ctx, args[0], req); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s drained\n", args[0])
		return nil
	})
	undrain := &cobra.Command{Use: "undrain ID", Short: "Put a drained worker back in service"}
	t.subcommand(undrain, cobra.ExactArgs(1), func(ctx context.Context, c *task.Client, cmd *cobra.Command, args []string) error {
		err := c.Undrain(ctx, args[0])
		if errors.Is(err, task.ErrNotDrained) {
			return fmt.Errorf("%s is not drained", args[0])
		}
		if err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "%s undrained\n", args[0])
		}
		return err
	})
	list := &cobra.Command{Use: "list", Short: "List the live workers with their state and drain request"}
	t.subcommand(list, cobra.NoArgs, func(ctx context.Context, c *task.Client, cmd *cobra.Command, _ []string) error {
		ws, err := c.Workers(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATE\tCAPACITY\tHOST\tPID\tDRAIN")
		for _, v := range ws {
			drain := "-"
			if v.Drain != nil {
				drain = "requested " + v.Drain.Requested.Format(time.RFC3339)
				if !v.Drain.Deadline.IsZero() {
					drain += ", deadline " + v.Drain.Deadline.Format(time.RFC3339)
				}
			}
			state := v.Info.State
			if state == "" {
				state = task.WorkerActive
			}
			if v.Stale {
				state += " (stale)" // its heartbeat stopped: it gets nothing new
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\t%s\n", v.ID, state, v.Info.Capacity, v.Info.Host, v.Info.PID, drain)
		}
		return w.Flush()
	})
	cmds := []*cobra.Command{drain, undrain, list}
	for _, c := range cmds {
		t.addFlags(c)
	}
	return cmds
}

// parseDeadline reads a drain deadline: a duration from now, or an RFC 3339 time.
func parseDeadline(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, errors.New("want a positive duration")
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errors.New("want a duration such as 10m, or an RFC 3339 time")
	}
	return t.UTC(), nil
}

func runWorker(cmd *cobra.Command, _ []string) error {
	logger, err := newLogger(cmd)
	if err != nil {
		return err
	}
	file, _ := cmd.Flags().GetString("config")
	cfg, err := configs.LoadWorker(configs.Options{File: file, Flags: cmd.Flags(), Logger: logger})
	if err != nil {
		return err
	}
	w, err := worker.New(cfg, logger)
	if err != nil {
		return err
	}
	logger.Info("worker starting", "id", cfg.ID, "capacity", cfg.Capacity, "zk", cfg.Servers, "run_as", cfg.RunAs, "allow_root", cfg.AllowRoot)
	return w.Run(cmd.Context())
}
