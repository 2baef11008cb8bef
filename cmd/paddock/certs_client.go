package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/server"
)

// paddock certs server and client: the certificates of the secure client port, the
// server's and its clients', whose subjects are their x509 identities.

// maxCommonName is the longest common name X.509 allows (RFC 5280's ub-common-name).
const maxCommonName = 64

func newCertsServerCmd() *cobra.Command {
	var dir, out string
	var hosts []string
	var validity time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Make DIR/server.pem, the secure client port's key store, signed by DIR/ca.pem and DIR/ca-key.pem",
		Long: `Make the PEM key store of a server's secure client port (secureClientPort,
secure_client_addr): a new private key, a certificate for the hosts clients dial (server
authentication only) and the CA's certificate. Clients trust DIR/ca.pem; the server
trusts the client certificates paddock certs client makes with the same CA.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCertsServer(cmd.OutOrStdout(), dir, out, hosts, validity, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "`directory` of ca.pem and ca-key.pem, where server.pem is written")
	f.StringVar(&out, "out", "", "`file` to write the key store to, in place of DIR/server.pem (one per server whose hosts differ)")
	f.StringSliceVar(&hosts, "host", nil, "a `host` name or IP address clients dial the server by (repeat, or separate with commas)")
	f.DurationVar(&validity, "validity", 365*24*time.Hour, "how long the certificate is valid (at most as long as the CA's)")
	f.BoolVar(&force, "force", false, "replace an existing file")
	for _, name := range []string{"dir", "host"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runCertsServer(w io.Writer, dir, out string, hosts []string, validity time.Duration, force bool) error {
	if out == "" {
		out = filepath.Join(dir, "server.pem")
	}
	if err := mayWrite(force, out); err != nil {
		return err
	}
	ca, err := loadCertsCA(dir)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{Hosts: hosts, Validity: validity,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return err
	}
	if err := writeNew(out, certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM()), 0o600, force); err != nil {
		return err
	}
	caPath := filepath.Join(dir, caCertFile)
	fmt.Fprintf(w, "wrote %s (mode 0600): the secure client port's key store: its private key, its certificate "+
		"(%s) and the CA's certificate\n", out, strings.Join(hosts, ", "))
	fmt.Fprintf(w, "copy it and %s to the server; its zoo.cfg then says, with the paths there "+
		"(clientPort left out: TLS only):\n", caPath)
	fmt.Fprintf(w, "  secureClientPort=2281\n  ssl.keyStore.location=%s\n  ssl.trustStore.location=%s\n  ssl.clientAuth=need\n",
		absPath(out), absPath(caPath))
	fmt.Fprintf(w, "or its YAML server section:\n  client_addr: \"\"\n  secure_client_addr: 0.0.0.0:2281\n"+
		"  client_tls_key_store: %s\n  client_tls_trust_store: %s\n  client_tls_auth: need\n",
		absPath(out), absPath(caPath))
	fmt.Fprintf(w, "clients trust %s and prove who they are with: paddock certs client --dir %s --name NAME\n", caPath, dir)
	return nil
}

func newCertsClientCmd() *cobra.Command {
	var dir, name string
	var validity time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Make a client certificate and key, whose subject CN=NAME is the client's x509 identity",
		Long: `Make a client's certificate (client authentication only), signed by DIR/ca.pem and
DIR/ca-key.pem: DIR/client-NAME.pem, the certificate; DIR/client-NAME-key.pem, its
private key; and DIR/client-NAME-store.pem, both and the CA's certificate in one PEM key
store, for zkCli.sh and other Java clients. On a secure client port that trusts the CA,
the client has the identity x509:CN=NAME, which the services' roles name.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCertsClient(cmd.OutOrStdout(), dir, name, validity, force)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "`directory` of ca.pem and ca-key.pem, where the client's files are written")
	f.StringVar(&name, "name", "", "the client's common `name`: its identity is x509:CN=NAME")
	f.DurationVar(&validity, "validity", 365*24*time.Hour, "how long the certificate is valid (at most as long as the CA's)")
	f.BoolVar(&force, "force", false, "replace existing files")
	for _, flag := range []string{"dir", "name"} {
		_ = cmd.MarkFlagRequired(flag)
	}
	return cmd
}

// clientFiles are the files paddock certs client writes.
type clientFiles struct{ cert, key, store string }

func clientFilesFor(dir, name string) clientFiles {
	base := filepath.Join(dir, "client-"+fileSafe(name))
	return clientFiles{cert: base + ".pem", key: base + "-key.pem", store: base + "-store.pem"}
}

func runCertsClient(w io.Writer, dir, name string, validity time.Duration, force bool) error {
	if err := checkCommonName(name); err != nil {
		return err
	}
	files := clientFilesFor(dir, name)
	if err := mayWrite(force, files.cert, files.key, files.store); err != nil {
		return err
	}
	ca, err := loadCertsCA(dir)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{CommonName: name, Validity: validity,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return err
	}
	b, _ := pem.Decode(certPEM)
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return fmt.Errorf("certs: parse the new certificate: %w", err)
	}
	subject, err := server.SubjectDN(leaf.RawSubject)
	if err != nil {
		return fmt.Errorf("--name %q: the server would not read the subject: %w", name, err)
	}
	// The key first: a certificate without its key is no use, a key without its certificate harmless.
	if err := writeNew(files.key, keyPEM, 0o600, force); err != nil {
		return err
	}
	if err := writeNew(files.store, certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM()), 0o600, force); err != nil {
		return err
	}
	if err := writeNew(files.cert, certPEM, 0o644, force); err != nil {
		return err
	}
	printClientConfig(w, "x509:"+subject, leaf.NotAfter, files, filepath.Join(dir, caCertFile))
	return nil
}

// printClientConfig tells what the client's files are and how clients use them.
func printClientConfig(w io.Writer, id string, notAfter time.Time, files clientFiles, caPath string) {
	cert, key, store, ca := absPath(files.cert), absPath(files.key), absPath(files.store), absPath(caPath)
	fmt.Fprintf(w, "wrote %s: the certificate of %s (client authentication only, valid until %s)\n",
		files.cert, id, notAfter.UTC().Format(time.DateOnly))
	fmt.Fprintf(w, "wrote %s (mode 0600): its private key: keep it secret, on the client only\n", files.key)
	fmt.Fprintf(w, "wrote %s (mode 0600): key, certificate and CA certificate in one key store, for zkCli.sh and Java clients\n", files.store)
	role := coordinator.RoleWorker
	if i := slices.Index(coordinator.KnownRoles, strings.TrimPrefix(id, "x509:CN=")); i >= 0 {
		role = coordinator.KnownRoles[i]
	}
	fmt.Fprintf(w, "on a secure client port that trusts %s it proves the identity\n  %s\n", caPath, id)
	fmt.Fprintf(w, "give it a role in every service's roles, as in (YAML, a roles_file line, a flag):\n"+
		"  roles: [%q]\n  %s=%s\n  --roles %s\n", role+"="+id, role, id, shellQuote(role+"="+id))
	fmt.Fprintf(w, "connect with (YAML tls_ca, tls_cert, tls_key):\n  --tls-ca %s --tls-cert %s --tls-key %s\n", ca, cert, key)
	fmt.Fprintf(w, "kazoo: KazooClient(hosts, use_ssl=True, ca=%q, certfile=%q, keyfile=%q)\n", ca, cert, key)
	fmt.Fprintf(w, "zkCli.sh: -Dzookeeper.client.secure=true -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty "+
		"-Dzookeeper.ssl.keyStore.location=%s -Dzookeeper.ssl.trustStore.location=%s\n", store, ca)
}

// checkCommonName refuses a name that is empty, longer than X.509 allows, not UTF-8,
// or holds control characters, which no one could type in a roles line.
func checkCommonName(name string) error {
	switch {
	case name == "":
		return errors.New("--name is empty: want the client's common name, as in worker-1")
	case utf8.RuneCountInString(name) > maxCommonName:
		return fmt.Errorf("--name: %d characters, want at most %d (X.509's limit on a common name)",
			utf8.RuneCountInString(name), maxCommonName)
	case !utf8.ValidString(name):
		return fmt.Errorf("--name %q: not UTF-8", name)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("--name %q: control characters are not allowed", name)
	}
	return nil
}

// fileSafe returns name with every character but letters, digits, '.', '-' and '_'
// made '_', for a file name.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, name)
}

// shellQuote returns s quoted for a POSIX shell where it needs to be.
func shellQuote(s string) string {
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("=:,._-/@+", r)))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// loadCertsCA loads the CA paddock certs ca made in dir.
func loadCertsCA(dir string) (*certs.CA, error) {
	ca, err := certs.LoadCA(filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, fmt.Errorf("%w (make the CA first: paddock certs ca --dir %s)", err, dir)
	}
	return ca, nil
}

// absPath returns p made absolute, or p where it cannot be.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
