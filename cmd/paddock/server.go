package main

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/server"
)

func newServerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the ZooKeeper-compatible coordination server",
		Long: `Run the ZooKeeper-compatible coordination server, standalone.

Configuration, in increasing precedence: defaults, the server section of --config FILE
(YAML; see configs/server.yaml) or an Apache ZooKeeper --zoo-cfg FILE, PADDOCK_SERVER_*
environment variables (PADDOCK_SERVER_CLIENT_ADDR), then the flags below.`,
		Args: cobra.NoArgs,
		RunE: runServer,
	}
	def := server.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration `file`")
	f.String("zoo-cfg", "", "Apache ZooKeeper zoo.cfg `file`, read in place of the YAML server section")
	// Named like their keys (client_addr), which is how configs binds them.
	f.String("client-addr", def.ClientAddr, "`host:port` clients connect to in plain TCP; empty with --secure-client-addr for TLS only")
	f.String("secure-client-addr", def.SecureClientAddr, "`host:port` clients connect to over TLS (needs server.client_tls_key_store; docs/security.md)")
	f.String("data-dir", def.DataDir, "`directory` for snapshots and the write-ahead log")
	f.String("admin-addr", def.AdminAddr, "`host:port` of the admin HTTP server; empty disables it; if taken, a warning, and the server runs without it")
	f.Bool("join", def.Join, "a new member of a running ensemble: wait for a reconfig to add it (docs/ensemble.md)")
	return cmd
}

func runServer(cmd *cobra.Command, _ []string) error {
	logger, err := newLogger(cmd)
	if err != nil {
		return err
	}
	file, _ := cmd.Flags().GetString("config")
	zooCfg, _ := cmd.Flags().GetString("zoo-cfg")
	cfg, err := configs.LoadServer(configs.Options{File: file, ZooCfg: zooCfg, Flags: cmd.Flags(), Logger: logger})
	if err != nil {
		return err
	}
	logger.Info("scheduler threads", "gomaxprocs", server.SetProcs(cfg.Procs), "cores", runtime.NumCPU())
	srv, err := server.New(cfg, logger)
	if err != nil {
		return err
	}
	return srv.Run(cmd.Context())
}
