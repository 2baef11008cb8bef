package main

import (
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/web"
)

// serviceCLI is the command line of a service's admin commands (paddock task, paddock
// replicator task): paddock zk's connection handling and exit statuses, with --zk for
// the servers and --root for where the service's nodes live.
type serviceCLI struct {
	zkCLI
	root string
}

// setup completes cmd, the service's admin command: its persistent flags (the bound
// on connecting is timeoutFlag, as a subcommand may use --timeout for something else),
// usage errors with exit status 2, a usage error when no subcommand is given
// (missing names them), and the subcommands.
func (s *serviceCLI) setup(cmd *cobra.Command, rootHelp, timeoutFlag, missing string, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(c *cobra.Command, _ []string) error {
		return s.finish(c, usageError("missing command: %s", missing))
	}
	s.connectionFlags(cmd, cmd.PersistentFlags(), rootHelp, timeoutFlag)
	cmd.AddCommand(subs...)
	return cmd
}

// connectionFlags adds the connection flags to f, one of cmd's flag sets, and gives cmd
// usage errors with exit status 2.
func (s *serviceCLI) connectionFlags(cmd *cobra.Command, f *pflag.FlagSet, rootHelp, timeoutFlag string) {
	f.StringVar(&s.servers, "zk", "127.0.0.1:2181", serversHelp)
	f.StringVar(&s.root, "root", "/", rootHelp)
	addAccessFlags(f, &s.access)
	s.aclRoot = &s.root
	f.DurationVar(&s.timeout, timeoutFlag, 10*time.Second, "bound on connecting and on each operation")
	s.sessionTimeout = 15 * time.Second
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return s.finish(c, &exitError{code: 2, err: err, usage: true})
	})
}

// addFlags gives cmd, a subcommand of a command that has flags of its own under the
// same names (paddock worker drain), the connection flags setup gives as persistent
// flags, and its usage errors.
func (s *serviceCLI) addFlags(cmd *cobra.Command) {
	s.connectionFlags(cmd, cmd.Flags(), "`path` the cluster's nodes live under", "timeout-connect")
}

// serversHelp is the help of --zk, the one name every command gives the server list.
const serversHelp = "`host:port`[,host:port...] of the coordination servers"

// addServersFlag adds paddock zk's --zk, and --server, its name before --zk was every
// command's: hidden, and still accepted so that scripts keep working.
func addServersFlag(pf *pflag.FlagSet, servers *string) {
	pf.StringVar(servers, "zk", "127.0.0.1:2181", serversHelp)
	pf.StringVar(servers, "server", "127.0.0.1:2181", "the old name of --zk")
	_ = pf.MarkHidden("server") // only fails for a flag that does not exist
}

// addAccessFlags adds the flags of a: how a CLI authenticates and which ACLs the nodes
// it creates get (the keys of coordinator.Access, as flags).
func addAccessFlags(pf *pflag.FlagSet, a *coordinator.Access) {
	pf.StringArrayVar(&a.Auth, "auth", nil,
		"add `scheme:credentials` to the session, as in digest:user:password (repeatable)")
	pf.StringVar(&a.AuthFile, "auth-file", "", "`file` of scheme:credentials lines to add to the session (keeps the password off the command line)")
	pf.StringVar(&a.TLSCA, "tls-ca", "", "PEM `file` of the CA that signs the servers' certificates (connects with TLS)")
	pf.StringVar(&a.TLSCert, "tls-cert", "", "PEM `file` of the client certificate (TLS, x509 scheme)")
	pf.StringVar(&a.TLSKey, "tls-key", "", "PEM `file` of the client certificate's key")
	pf.StringArrayVar(&a.Roles, "roles", nil, "the platform's identities, `role=scheme:id` (repeatable): the nodes created get the role ACLs of docs/security.md")
	pf.StringVar(&a.RolesFile, "roles-file", "", "`file` of role=scheme:id lines, as --roles (paddock up writes <data-dir>/credentials/roles)")
	pf.StringVar(&a.SigningKey, "signing-key", "", "Ed25519 key `file` (PKCS#8 PEM, mode 0600) to sign the tasks and jobs created with (paddock up writes <data-dir>/credentials/<role>.key)")
	pf.StringVar(&a.SignersFile, "signers-file", "", "`file` of role=ed25519:<key> lines: whose signatures to trust (paddock up writes <data-dir>/credentials/signers)")
}

// platformRules returns the ACL rules of the root znode and the quotas (rootRules),
// every service's nodes under root, and the console's audit log at auditRoot.
func platformRules(root, auditRoot string) []coordinator.Rule {
	wc := web.DefaultConfig()
	wc.Root, wc.AuditRoot = root, auditRoot
	return append(slices.Clone(rootRules), wc.ACLRules()...)
}

// rootRules are the ACLs of the root znode and of /zookeeper/quota on a platform: every
// client may read the root and create top-level nodes (other applications share the
// servers, as on any ZooKeeper, and make their own), only the admin may delete a
// top-level node or change the root's ACL, so no one else can remove a service's root
// and make it again open; the quotas are readable by all and set by the admin only, so
// that no client raises its own (docs/security.md).
var rootRules = []coordinator.Rule{
	{Pattern: "/", World: zk.PermRead | zk.PermCreate},
	{Pattern: "/zookeeper/quota", World: zk.PermRead},
	{Pattern: "/zookeeper/quota/**", World: zk.PermRead},
}

// addServiceAccessFlags adds to a service's command the flags of the Access keys of
// its configuration section (auth, auth_file, tls_ca, tls_cert, tls_key, roles), which
// configs binds by name.
func addServiceAccessFlags(f *pflag.FlagSet) {
	f.StringArray("auth", nil, "add `scheme:credentials` to the session, as in digest:user:password (repeatable; prefer --auth-file)")
	f.String("auth-file", "", "`file` of scheme:credentials lines to add to the session")
	f.String("tls-ca", "", "PEM `file` of the CA that signs the servers' certificates (connects with TLS)")
	f.String("tls-cert", "", "PEM `file` of the client certificate (TLS, x509 scheme)")
	f.String("tls-key", "", "PEM `file` of the client certificate's key")
	f.StringArray("roles", nil, "the platform's identities, `role=scheme:id` (repeatable): the nodes created get the role ACLs of docs/security.md")
	f.String("roles-file", "", "`file` of role=scheme:id lines, as --roles")
	f.String("signing-key", "", "Ed25519 key `file` (PKCS#8 PEM, mode 0600) to sign the tasks and jobs this service creates")
	f.String("signers-file", "", "`file` of role=ed25519:<key> lines: whose signatures to trust")
}
