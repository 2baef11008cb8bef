package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/replicator"
)

func newReplicatorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replicator",
		Short: "Run a MySQL binlog replicator process, or manage replication tasks (replicator task)",
		Long: `Run a replicator process: in hot mode it stands for the tasks of --tasks (the lowest
instance of a task runs it, the others are hot standbys); in cold mode it claims the
enabled tasks that no process serves. Manage the tasks with paddock replicator task.

Configuration, in increasing precedence: defaults, the replicator section of --config
FILE, PADDOCK_REPLICATOR_* environment variables, then the flags below.`,
		Args: cobra.NoArgs,
		RunE: runReplicator,
	}
	def := replicator.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration `file`")
	addServiceAccessFlags(f)
	f.StringSlice("zk", def.Servers, "`host:port`[,host:port...] of the coordination servers")
	f.StringSlice("tasks", def.Tasks, "`task`[,task...] to serve (cold mode: to claim; all when empty)")
	f.String("mode", def.Mode, "hot or cold")
	f.String("host", def.Host, "name of this process's instance nodes (default the host name)")
	f.String("root", def.Root, "`path` /mysql_replicator lives under")
	f.Duration("session-timeout", def.SessionTimeout, "ZooKeeper session timeout: a standby takes over about this long after the running instance dies")
	f.String("metrics-addr", def.MetricsAddr, "`host:port` to serve /metrics on; empty for none")
	f.Duration("lag-threshold", def.LagThreshold, "a task further behind its source is flagged as lagging")
	f.Duration("monitor-interval", def.MonitorInterval, "how often the monitor elected among replicators logs and exports every task's health (the verdicts shown are made when read)")
	cmd.AddCommand(newReplicatorTaskCmd())
	return cmd
}

func runReplicator(cmd *cobra.Command, _ []string) error {
	logger, err := newLogger(cmd)
	if err != nil {
		return err
	}
	file, _ := cmd.Flags().GetString("config")
	cfg, err := configs.LoadReplicator(configs.Options{File: file, Flags: cmd.Flags(), Logger: logger})
	if err != nil {
		return err
	}
	r, err := replicator.New(cfg, logger)
	if err != nil {
		return err
	}
	logger.Info("replicator starting", "mode", cfg.Mode, "tasks", cfg.Tasks, "zk", cfg.Servers, "metrics_addr", r.Addr())
	return r.Run(cmd.Context())
}

// replicatorTaskCLI is paddock replicator task.
type replicatorTaskCLI struct{ serviceCLI }

func newReplicatorTaskCmd() *cobra.Command {
	t := &replicatorTaskCLI{serviceCLI{zkCLI: zkCLI{exit: os.Exit, name: "paddock replicator task"}}}
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Create, change, enable, disable, delete and show replication tasks",
		Long: `Create, change, enable, disable, delete and show replication tasks. Passwords in the
DSNs are stored and never printed back. The exit status is 0 on success, 1 when the
operation fails, 2 on bad usage.`,
	}
	return t.setup(cmd, "`path` /mysql_replicator lives under", "timeout",
		"create, update, enable, disable, delete, resnapshot, get or list",
		t.defineCmd("create"), t.defineCmd("update"), t.enableCmd(true), t.enableCmd(false),
		t.deleteCmd(), t.resnapshotCmd(), t.getCmd(), t.listCmd())
}

type replicatorAction func(ctx context.Context, a *replicator.Admin, cmd *cobra.Command, args []string) error

func (t *replicatorTaskCLI) subcommand(cmd *cobra.Command, args cobra.PositionalArgs, run replicatorAction) *cobra.Command {
	return t.zkCLI.subcommand(cmd, args, func(ctx context.Context, c *zkClient, cmd *cobra.Command, a []string) error {
		layout, err := replicator.NewLayout(t.root)
		if err != nil {
			return usageError("--root: %w", err)
		}
		return run(ctx, replicator.NewAdmin(c.s, layout), cmd, a)
	})
}

// defineCmd is create or update: the same flags; update changes only those given.
func (t *replicatorTaskCLI) defineCmd(verb string) *cobra.Command {
	var (
		d        replicator.TaskDef
		serverID uint32
		disabled bool
	)
	cmd := &cobra.Command{Use: verb + " NAME --source DSN --target DSN [flags]"}
	if verb == "create" {
		cmd.Short = "Create a task (enabled unless --disabled)"
	} else {
		cmd.Short = "Change a task's definition: the flags given replace those values"
	}
	f := cmd.Flags()
	f.StringVar(&d.Source, "source", "", "source `DSN`, user:password@tcp(host:port)/")
	f.StringVar(&d.Target, "target", "", "target `DSN`")
	f.StringArrayVar(&d.Include, "include", nil, "`db.table` glob to replicate (repeatable; default all)")
	f.StringArrayVar(&d.Exclude, "exclude", nil, "`db.table` glob not to replicate (repeatable)")
	f.Uint32Var(&serverID, "server-id", 0, "replica server `id` on the source, unique among its replicas (create: default from the name)")
	if verb == "create" {
		f.BoolVar(&disabled, "disabled", false, "create it disabled")
	}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *replicator.Admin, cmd *cobra.Command, args []string) error {
		name := args[0]
		if verb == "create" {
			d.ServerID, d.Enabled = serverID, !disabled
			if d.ServerID == 0 {
				d.ServerID = replicator.DefaultServerID(name)
			}
			if err := d.Validate(name); err != nil {
				return usageError("%w", err)
			}
			return a.Create(ctx, name, d)
		}
		changed := cmd.Flags().Changed
		v, err := a.Update(ctx, name, func(cur *replicator.TaskDef) error {
			if changed("source") {
				cur.Source = d.Source
			}
			if changed("target") {
				cur.Target = d.Target
			}
			if changed("include") {
				cur.Include = d.Include
			}
			if changed("exclude") {
				cur.Exclude = d.Exclude
			}
			if changed("server-id") {
				cur.ServerID = serverID
			}
			return nil
		})
		if err != nil {
			return err
		}
		return printJSON(cmd, v)
	})
}

func (t *replicatorTaskCLI) enableCmd(enable bool) *cobra.Command {
	verb := map[bool]string{true: "enable", false: "disable"}[enable]
	cmd := &cobra.Command{Use: verb + " NAME", Short: strings.ToUpper(verb[:1]) + verb[1:] + " a task"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *replicator.Admin, _ *cobra.Command, args []string) error {
		return a.SetEnabled(ctx, args[0], enable)
	})
}

func (t *replicatorTaskCLI) deleteCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "delete NAME", Short: "Delete a disabled task (its checkpoint in the target stays)"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *replicator.Admin, _ *cobra.Command, args []string) error {
		return a.Delete(ctx, args[0])
	})
}

func (t *replicatorTaskCLI) resnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "resnapshot NAME",
		Short: "Make a disabled task copy the source's rows afresh when enabled (after a purged position, or new includes)"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *replicator.Admin, _ *cobra.Command, args []string) error {
		return a.Resnapshot(ctx, args[0])
	})
}

func (t *replicatorTaskCLI) getCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "get NAME", Short: "Print a task as JSON: definition, instances, last_commit, status, health (judged now)"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *replicator.Admin, cmd *cobra.Command, args []string) error {
		v, err := a.Get(ctx, args[0])
		if err != nil {
			return err
		}
		return printJSON(cmd, v)
	})
}

func (t *replicatorTaskCLI) listCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List the tasks, judged now by the coordination server's clock",
		Long: `List the tasks. HEALTH is judged as the list is read, from the status node's age by the
coordination server's clock (the mtime of /mysql_replicator/clock, which it sets): a task
with no instance is unserved, one whose status is older than 5 s stale. STATE is what the
running instance last reported, REPORTED how long ago; LAG is the reported lag plus that
age, so it grows while nothing applies; - when the task has applied nothing yet.`}
	return t.subcommand(cmd, cobra.NoArgs, func(ctx context.Context, a *replicator.Admin, cmd *cobra.Command, _ []string) error {
		views, err := a.List(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tENABLED\tHEALTH\tSTATE\tREPORTED\tRUNNING\tSTANDBY\tLAG\tLAST ERROR")
		for _, v := range views {
			state, reported, lag, lastErr, running, health := "-", "-", "-", "", "-", "-"
			if h := v.Health; h != nil {
				health = h.State
				if h.LagSeconds != nil {
					lag = fmt.Sprintf("%.1fs", *h.LagSeconds)
				}
				if h.StatusAgeSeconds != nil {
					reported = fmt.Sprintf("%.0fs ago", *h.StatusAgeSeconds)
				}
			}
			if v.Status != nil {
				state, lastErr = v.Status.State, v.Status.LastError
			}
			if len(v.Instances) > 0 {
				running = v.Instances[0].Host
			}
			fmt.Fprintf(w, "%s\t%v\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", v.Name, v.Def.Enabled, health, state, reported, running,
				max(len(v.Instances)-1, 0), lag, lastErr)
		}
		return w.Flush()
	})
}
