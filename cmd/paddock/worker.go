package main

import (
	"github.com/spf13/cobra"

	"github.com/paddock/paddock/configs"
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
PADDOCK_WORKER_* environment variables (PADDOCK_WORKER_ZK), then the flags below.`,
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
	return cmd
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
	logger.Info("worker starting", "id", cfg.ID, "capacity", cfg.Capacity, "zk", cfg.Servers)
	return w.Run(cmd.Context())
}
