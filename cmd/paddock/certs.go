package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/internal/certs"
)

// paddock certs: a small CA for the member link's mutual TLS (sslQuorum) and the secure
// client port (secureClientPort, x509 identities), for recipes, tests and small deployments. Nothing it writes needs a password; the files holding
// private keys are 0600, and nothing secret is printed.

const (
	caCertFile = "ca.pem"
	caKeyFile  = "ca-key.pem"
)

func newCertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Make a CA, and certificates for the TLS member link and the secure client port",
		Long: `Make the files TLS needs: a small CA (ca), then, signed by it, a PEM key store for
each ensemble member's mutual TLS member link (member, sslQuorum), a key store for a
server's secure client port (server, secureClientPort), and a certificate and key for
each client (client), whose subject is its x509 identity. Members and servers get
ca.pem, the trust store, and their own key store; ca-key.pem stays where certificates
are made. The files work for Apache ZooKeeper's PEM stores and clients too.`,
	}
	cmd.AddCommand(newCertsCACmd(), newCertsMemberCmd(), newCertsServerCmd(), newCertsClientCmd())
	return cmd
}

func newCertsCACmd() *cobra.Command {
	var dir, name string
	var validity time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Make a CA: DIR/ca.pem (its certificate, the trust store) and DIR/ca-key.pem (its key)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCertsCA(cmd.OutOrStdout(), dir, name, validity, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "`directory` to write ca.pem and ca-key.pem in (made if missing)")
	f.StringVar(&name, "name", "paddock ensemble CA", "the CA certificate's common `name`")
	f.DurationVar(&validity, "validity", 365*24*time.Hour, "how long the CA certificate is valid")
	f.BoolVar(&force, "force", false, "replace existing files")
	_ = cmd.MarkFlagRequired("dir") // fails only for a flag that does not exist
	return cmd
}

func runCertsCA(out io.Writer, dir, name string, validity time.Duration, force bool) error {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	if err := mayWrite(force, certPath, keyPath); err != nil {
		return err
	}
	_, err := os.Stat(certPath)
	replaced := err == nil
	ca, err := certs.NewCA(name, validity)
	if err != nil {
		return err
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeNew(keyPath, keyPEM, 0o600, force); err != nil {
		return err
	}
	if err := writeNew(certPath, ca.CertPEM(), 0o644, force); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: the CA's certificate (valid until %s), every member's trust store\n",
		certPath, ca.Certificate().NotAfter.UTC().Format(time.DateOnly))
	fmt.Fprintf(out, "wrote %s (mode 0600): the CA's private key, which signs member certificates: "+
		"keep it secret, and off the members\n", keyPath)
	if replaced {
		fmt.Fprintln(out, "a new CA: the certificates of the old one no longer verify, so make every member's again")
	}
	fmt.Fprintf(out, "next, for each member: paddock certs member --dir %s --id N --host HOST\n", dir)
	fmt.Fprintf(out, "for a secure client port: paddock certs server --dir %s --host HOST, and for each client: "+
		"paddock certs client --dir %s --name NAME\n", dir, dir)
	return nil
}

func newCertsMemberCmd() *cobra.Command {
	var dir string
	var id uint64
	var hosts []string
	var validity time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "member",
		Short: "Make DIR/member-N.pem, member N's key store, signed by DIR/ca.pem and DIR/ca-key.pem",
		Long: `Make DIR/member-N.pem, the PEM key store of ensemble member N: a new private key, a
certificate for it that names the member (urn:paddock:member:N, which proves its server
id when it connects) and the hosts of its server.N line, and the CA's certificate. The
CA is DIR/ca.pem and DIR/ca-key.pem, made by paddock certs ca.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCertsMember(cmd.OutOrStdout(), dir, id, hosts, validity, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "`directory` of ca.pem and ca-key.pem, where member-N.pem is written")
	f.Uint64Var(&id, "id", 0, "the member's server `id` (myid, server_id), 1 to 254")
	f.StringSliceVar(&hosts, "host", nil, "a `host` name or IP address of the member's server.N line (repeat, or separate with commas)")
	f.DurationVar(&validity, "validity", 365*24*time.Hour, "how long the certificate is valid (at most as long as the CA's)")
	f.BoolVar(&force, "force", false, "replace an existing file")
	for _, name := range []string{"dir", "id", "host"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runCertsMember(out io.Writer, dir string, id uint64, hosts []string, validity time.Duration, force bool) error {
	if id < 1 || id > 254 {
		return fmt.Errorf("--id %d: want a server id in [1, 254], as server_id and myid", id)
	}
	path := filepath.Join(dir, fmt.Sprintf("member-%d.pem", id))
	if err := mayWrite(force, path); err != nil {
		return err
	}
	ca, err := loadCertsCA(dir)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{Hosts: hosts, MemberID: id, Validity: validity})
	if err != nil {
		return err
	}
	if err := writeNew(path, certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM()), 0o600, force); err != nil {
		return err
	}
	printMemberConfig(out, id, hosts, path, filepath.Join(dir, caCertFile))
	return nil
}

// printMemberConfig tells what member-N.pem holds and how to configure member id with it.
func printMemberConfig(out io.Writer, id uint64, hosts []string, keyStore, trustStore string) {
	abs := absPath
	fmt.Fprintf(out, "wrote %s (mode 0600): member %d's key store: its private key, its certificate "+
		"(urn:paddock:member:%d, %s) and the CA's certificate\n", keyStore, id, id, strings.Join(hosts, ", "))
	fmt.Fprintf(out, "copy it and %s to member %d; its zoo.cfg then says, with the paths there:\n", trustStore, id)
	fmt.Fprintf(out, "  sslQuorum=true\n  ssl.quorum.keyStore.location=%s\n  ssl.quorum.trustStore.location=%s\n",
		abs(keyStore), abs(trustStore))
	fmt.Fprintf(out, "or its YAML server section:\n  quorum_tls: true\n  quorum_key_store: %s\n  quorum_trust_store: %s\n",
		abs(keyStore), abs(trustStore))
}

// mayWrite checks that none of paths exists, unless force.
func mayWrite(force bool, paths ...string) error {
	if force {
		return nil
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s exists: keep it, or replace it with --force", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// writeNew writes data to a new file at path with mode perm; with force, a file already
// there is removed first, so that the new one gets perm whatever the old one had.
func writeNew(path string, data []byte, perm fs.FileMode, force bool) error {
	if force {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path) // a partial key store would only mislead
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
