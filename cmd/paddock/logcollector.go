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
sticky. Manage sources with paddock logcollector source.

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
	f.String("host", def.Host, "the collector's `id`, stable across restarts (default the host name)")
	f.String("sink", def.Sink, "`directory` of the JSON-lines files, one per source, or - for stdout")
	f.String("root", def.Root, "`path` /logs lives under")
	f.Duration("session-timeout", def.SessionTimeout, "ZooKeeper session timeout")
	f.Duration("grace", def.Grace, "a collector silent this long is lost and its sources move")
	f.Duration("status-interval", def.StatusInterval, "how often the collector reports its offsets")
	f.Duration("poll-interval", def.PollInterval, "how often files are checked for new lines")
	cmd.AddCommand(newSourceCmd())
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
	logger.Info("log collector starting", "host", cfg.Host, "sink", cfg.Sink, "zk", cfg.Servers)
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
		fmt.Fprintln(w, "ID\tHOST\tPATH\tCOLLECTOR\tLAG")
		for _, v := range views {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", v.ID, v.Host, v.Path, v.Collector, v.LagBytes)
		}
		return w.Flush()
	})
}
