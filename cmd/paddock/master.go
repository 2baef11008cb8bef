package main

import (
	"github.com/spf13/cobra"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/master"
)

func newMasterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "master",
		Short: "Run a master of the task-scheduling cluster (one of them is elected active)",
		Long: `Run a master of the task-scheduling cluster. Masters stand for election on /master;
the active one assigns pending tasks to live workers, retries failed tasks, and
re-queues the tasks of workers that die. Run two or more for failover.

Configuration, in increasing precedence: defaults, the master section of --config FILE,
PADDOCK_MASTER_* environment variables (PADDOCK_MASTER_ZK), then the flags below.`,
		Args: cobra.NoArgs,
		RunE: runMaster,
	}
	def := master.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration `file`")
	addServiceAccessFlags(f)
	f.StringSlice("zk", def.Servers, "`host:port`[,host:port...] of the coordination servers")
	f.String("id", def.ID, "name of this master in /master (default host-pid)")
	f.String("root", def.Root, "`path` the cluster's nodes live under")
	f.Duration("session-timeout", def.SessionTimeout, "ZooKeeper session timeout: a backup takes over about this long after the active master dies")
	f.String("metrics-addr", def.MetricsAddr, "`host:port` to serve /metrics on; empty for none")
	f.Duration("sign-grace", def.SignGrace, "how long a task may stay unsigned after its creation (by the servers' clock) before it is ended failed, unrun")
	return cmd
}

func runMaster(cmd *cobra.Command, _ []string) error {
	logger, err := newLogger(cmd)
	if err != nil {
		return err
	}
	file, _ := cmd.Flags().GetString("config")
	cfg, err := configs.LoadMaster(configs.Options{File: file, Flags: cmd.Flags(), Logger: logger})
	if err != nil {
		return err
	}
	m, err := master.New(cfg, logger)
	if err != nil {
		return err
	}
	logger.Info("master starting", "id", m.ID(), "zk", cfg.Servers, "metrics_addr", m.Addr())
	return m.Run(cmd.Context())
}
