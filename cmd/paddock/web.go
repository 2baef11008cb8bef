package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/configs"
	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/web"
)

func newWebCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "web",
		Short: "Run the web console",
		Long: `Run the web console: login with users and roles, the overview of the server, the znode
browser, sessions, the task cluster's tasks and workers, replication tasks, log sources
and the audit log, each also under the JSON API /api/v1.

Configuration, in increasing precedence: defaults, the web section of --config FILE
(users are listed there as name:role:bcrypt-hash; paddock web passwd makes a hash),
PADDOCK_WEB_* environment variables, then the flags below.`,
		Args: cobra.NoArgs,
		RunE: runWeb,
	}
	def := web.DefaultConfig()
	f := cmd.Flags()
	f.String("config", "", "YAML configuration `file`")
	addServiceAccessFlags(f)
	f.StringSlice("zk", def.Servers, "`host:port`[,host:port...] of the coordination servers")
	f.String("listen", def.Listen, "`host:port` the console serves on")
	f.String("admin-addr", def.AdminAddr, "the paddock server's admin `host:port`, for the sessions page and the server figures")
	f.StringSlice("admin-addrs", nil, "`ID=host:port`[,...] of the ensemble members' admin ports, for the overview's p99 latencies (others are probed with srvr)")
	f.String("https-cert", def.TLSCert, "PEM `file` of the console's certificate chain: with --https-key, the console serves HTTPS")
	f.String("https-key", def.TLSKey, "PEM `file` of the console's private key")
	cmd.AddCommand(newWebPasswdCmd())
	return cmd
}

func runWeb(cmd *cobra.Command, _ []string) error {
	logger, err := newLogger(cmd)
	if err != nil {
		return err
	}
	file, _ := cmd.Flags().GetString("config")
	cfg, err := configs.LoadWeb(configs.Options{File: file, Flags: cmd.Flags(), Logger: logger})
	if err != nil {
		return err
	}
	cc, err := cfg.Access.Config(cfg.Servers, cfg.SessionTimeout, logger, cfg.ACLRules())
	if err != nil {
		return err
	}
	cc.MaxBuffer = cfg.MaxBuffer // the servers' jute.maxbuffer: requests past it are refused before sending
	if cc.MaxBuffer == 0 {
		cc.MaxBuffer = coordinator.DefaultMaxBuffer
	}
	s, err := coordinator.Connect(cmd.Context(), cc)
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := web.New(cfg, s, logger)
	if err != nil {
		return err
	}
	if err := c.Listen(); err != nil {
		return err
	}
	logger.Info("console serving", "url", "http://"+c.Addr().String())
	return c.Run(cmd.Context())
}

func newWebPasswdCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "passwd",
		Short: "Read a password on stdin and print its bcrypt hash, for the web section's users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.ErrOrStderr(), "password: ")
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			pw := strings.TrimRight(line, "\r\n")
			if pw == "" {
				if err != nil {
					return fmt.Errorf("no password on stdin: %w", err)
				}
				return fmt.Errorf("empty password")
			}
			h, err := web.HashPassword(pw)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), h)
			return nil
		},
	}
}
