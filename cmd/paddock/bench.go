package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/bench"
)

func newBenchCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load a ZooKeeper-protocol server and measure throughput and latency",
		Long: `Load a ZooKeeper-protocol server (paddock, Apache ZooKeeper, any other) with one workload
and print the throughput, the latency percentiles and the errors.

Each session is one TCP connection that keeps --outstanding requests in flight (replies
are matched in order by xid); --sessions of them run at once. A workload prepares the
znodes it needs under its own root, ROOT/<workload>-<unique>, before the clock starts,
and removes them afterwards (unless --keep).

Workloads: create, set, get, exists, children (getChildren of znodes with 10 children),
delete (needs --ops), mixed (90% getData, 10% setData), churn (sessions that connect,
create --ephemerals ephemerals and close; one op is one such lifecycle) and fanout
(--watchers sessions watch one znode, one write, the time until all are notified; one op
is one round).

The exit status is 1 if any operation or session failed. Progress goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every, _ := cmd.Flags().GetDuration("progress"); every > 0 {
				cfg.Progress, cfg.ProgressEvery = cmd.ErrOrStderr(), every
			}
			res, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				err = res.WriteJSON(cmd.OutOrStdout())
			} else {
				err = res.WriteText(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			if !res.OK() {
				return fmt.Errorf("bench: %d operations failed, %d sessions failed", res.Errors, len(res.Failures))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "zk", cfg.Addr,
		"`host:port` of the server, or host:port,host:port,... of an ensemble's members (sessions connect round-robin)")
	f.StringVar(&cfg.Workload, "workload", cfg.Workload, "create, set, get, exists, children, delete, mixed, churn or fanout")
	f.IntVar(&cfg.Sessions, "sessions", cfg.Sessions, "concurrent sessions (TCP connections)")
	f.IntVar(&cfg.Outstanding, "outstanding", cfg.Outstanding, "requests in flight per session")
	f.IntVar(&cfg.ValueSize, "value-size", cfg.ValueSize, "bytes of data per created or set znode")
	f.Int64Var(&cfg.Ops, "ops", 0, "measure this many operations (0: measure for --duration)")
	f.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to measure, unless --ops")
	f.DurationVar(&cfg.Warmup, "warmup", 0, "run the workload this long, unmeasured, first")
	f.IntVar(&cfg.Watchers, "watchers", cfg.Watchers, "watching sessions of the fanout workload")
	f.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "znodes that set, get, exists, children and mixed cycle through")
	f.IntVar(&cfg.Ephemerals, "ephemerals", cfg.Ephemerals, "ephemeral znodes per churn session")
	f.StringVar(&cfg.Root, "root", cfg.Root, "znode under which each run makes its own root")
	f.BoolVar(&cfg.Keep, "keep", false, "leave the run's znodes in place")
	f.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "session timeout to ask for")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", cfg.RequestTimeout,
		"fail a session whose request has no reply for this long, and a fanout round not complete within it")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	f.Duration("progress", cfg.ProgressEvery, "print progress to stderr this often (0: never)")
	return cmd
}
