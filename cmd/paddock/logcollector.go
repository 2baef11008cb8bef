package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/logcollector"
)

func newLogCollectorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logcollector",
		Short: "Run a log collector (which also stands for election as the rebalancer), or manage sources",
		Long: `Run a log collector: it tails the files of the sources the rebalancer assigns to it and
ships every line, with its source, file, offset, host and time, to its sink; it records
offsets only once the sink has the lines. Every collector also stands for election as
the rebalancer, which divides the sources among the live collectors, balanced and
sticky. A source is collected only by a collector on its host (--host, default the host
name). Manage sources with paddock logcollector source, collectors with paddock
logcollector collector (ls, drain, undrain, rm).

Configuration, in increasing precedence: defaults, the logcollector section of --config
FILE, PADDOCK_LOGCOLLECTOR_* environment variables, then the flags below.`,
		Args: cobra.NoArgs,
		RunE: runLogCollector,
	}
	def := logcollector.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration `file`")
	addServiceAccessFlags(f)
	f.StringSlice("zk", def.Servers, "`host:port`[,host:port...] of the coordination servers")
	f.String("id", def.ID, "the collector's `id`, stable across restarts (default the host)")
	f.String("host", def.Host, "the `host` this collector runs on: it reads only that host's sources (default the host name)")
	f.String("sink", def.Sink, "`directory` of the JSON-lines files, one per source, or - for stdout")
	f.String("root", def.Root, "`path` /logs lives under")
	f.Duration("session-timeout", def.SessionTimeout, "ZooKeeper session timeout")
	f.Duration("grace", def.Grace, "a collector silent this long is lost and its sources move")
	f.Duration("status-interval", def.StatusInterval, "how often the collector reports its offsets")
	f.Duration("poll-interval", def.PollInterval, "how often files are checked for new lines")
	cmd.AddCommand(newSourceCmd(), newCollectorCmd())
	return cmd
}

func runLogCollector(cmd *cobra.Command, _ []string) error {
	logger, err := newLogger(cmd)
	if err != nil {
		return err
	}
	file, _ := cmd.Flags().GetString("config")
	cfg, err := configs.LoadLogCollector(configs.Options{File: file, Flags: cmd.Flags(), Logger: logger})
	if err != nil {
		return err
	}
	s, err := logcollector.New(cfg, logger)
	if err != nil {
		return err
	}
	logger.Info("log collector starting", "id", cfg.ID, "host", cfg.Host, "sink", cfg.Sink, "zk", cfg.Servers)
	return s.Run(cmd.Context())
}

type sourceCLI struct{ serviceCLI }

func newSourceCmd() *cobra.Command {
	t := &sourceCLI{serviceCLI{zkCLI: zkCLI{exit: os.Exit, name: "paddock logcollector source"}}}
	cmd := &cobra.Command{
		Use:   "source",
		Short: "Add, remove and list log sources",
		Long: `Add, remove and list log sources: the files matching a glob on a host. The exit status
is 0 on success, 1 when the operation fails, 2 on bad usage.`,
	}
	return t.setup(cmd, "`path` /logs lives under", "timeout", "add, rm or ls", t.addCmd(), t.rmCmd(), t.lsCmd())
}

type sourceAction func(ctx context.Context, a *logcollector.Admin, cmd *cobra.Command, args []string) error

func (t *sourceCLI) subcommand(cmd *cobra.Command, args cobra.PositionalArgs, run sourceAction) *cobra.Command {
	return t.zkCLI.subcommand(cmd, args, func(ctx context.Context, c *zkClient, cmd *cobra.Command, a []string) error {
		layout, err := logcollector.NewLayout(t.root)
		if err != nil {
			return usageError("--root: %w", err)
		}
		return run(ctx, logcollector.NewAdmin(c.s, layout), cmd, a)
	})
}

func (t *sourceCLI) addCmd() *cobra.Command {
	var host, path string
	cmd := &cobra.Command{Use: "add ID --host HOST --path GLOB", Short: "Add a source"}
	cmd.Flags().StringVar(&host, "host", "", "the `host` the files are on")
	cmd.Flags().StringVar(&path, "path", "", "absolute path or `glob` of the files")
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *logcollector.Admin, _ *cobra.Command, args []string) error {
		if host == "" || path == "" {
			return usageError("--host and --path are required")
		}
		return a.AddSource(ctx, args[0], host, path)
	})
}

func (t *sourceCLI) rmCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "rm ID", Short: "Remove a source"}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *logcollector.Admin, _ *cobra.Command, args []string) error {
		return a.RemoveSource(ctx, args[0])
	})
}

func (t *sourceCLI) lsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "ls", Short: "List the sources, with their collectors and lag"}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return t.subcommand(cmd, cobra.NoArgs, func(ctx context.Context, a *logcollector.Admin, cmd *cobra.Command, _ []string) error {
		views, err := a.Sources(ctx)
		if err != nil {
			return err
		}
		if asJSON {
			if views == nil {
				views = []logcollector.SourceView{}
			}
			return printJSON(cmd, views)
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tHOST\tPATH\tCOLLECTOR\tLAG\tPROBLEM")
		for _, v := range views {
			lag, problem, coll := fmt.Sprint(v.LagBytes), v.Problem, v.Collector
			if problem != "" {
				lag = "-"
			} else {
				problem = "-"
			}
			if coll == "" {
				coll = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", v.ID, v.Host, v.Path, coll, lag, problem)
		}
		return w.Flush()
	})
}

// collectorCLI is the collector command; its flags live in the sourceCLI it wraps.
type collectorCLI struct{ *sourceCLI }

func newCollectorCmd() *cobra.Command {
	t := &collectorCLI{&sourceCLI{serviceCLI{zkCLI: zkCLI{exit: os.Exit, name: "paddock logcollector collector"}}}}
	cmd := &cobra.Command{
		Use:   "collector",
		Short: "List, drain, undrain and remove log collectors",
		Long: `List the log collectors; drain one (its sources are handed over to the other collectors
of its host, the two-step way, and it gets no new ones) or undrain it; remove a dead
one's records. The exit status is 0 on success, 1 when the operation fails, 2 on bad
usage.`,
	}
	return t.setup(cmd, "`path` /logs lives under", "timeout", "ls, drain, undrain or rm",
		t.lsCmd(), t.drainCmd(true), t.drainCmd(false), t.rmCmd())
}

func (t *collectorCLI) lsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{Use: "ls", Short: "List the collectors: host, state, liveness, sources"}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return t.subcommand(cmd, cobra.NoArgs, func(ctx context.Context, a *logcollector.Admin, cmd *cobra.Command, _ []string) error {
		views, err := a.Collectors(ctx)
		if err != nil {
			return err
		}
		if asJSON {
			if views == nil {
				views = []logcollector.CollectorView{}
			}
			return printJSON(cmd, views)
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tHOST\tSTATE\tLIVE\tSOURCES")
		for _, v := range views {
			n := 0
			if v.Assignment != nil {
				n = len(v.Assignment.Sources)
			}
			host := v.Host
			if host == "" {
				host = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%d\n", v.ID, host, v.State, v.Live, n)
		}
		return w.Flush()
	})
}

func (t *collectorCLI) drainCmd(drain bool) *cobra.Command {
	cmd := &cobra.Command{Use: "drain ID", Short: "Drain a collector: its sources move to the other collectors of its host"}
	if !drain {
		cmd = &cobra.Command{Use: "undrain ID", Short: "Undrain a collector: it gets sources again"}
	}
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *logcollector.Admin, cmd *cobra.Command, args []string) error {
		if drain {
			if err := a.Drain(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s drained: its sources move to the other collectors of its host\n", args[0])
			return nil
		}
		if err := a.Undrain(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s undrained\n", args[0])
		return nil
	})
}

func (t *collectorCLI) rmCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{Use: "rm ID", Short: "Remove a dead collector's records (refused while it is live)"}
	cmd.Flags().BoolVar(&force, "force", false, "remove it even if it holds the last offsets of a source no one reads")
	return t.subcommand(cmd, cobra.ExactArgs(1), func(ctx context.Context, a *logcollector.Admin, _ *cobra.Command, args []string) error {
		return a.RemoveCollector(ctx, args[0], force)
	})
}
