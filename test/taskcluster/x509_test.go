package taskcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/provenance"
	"github.com/paddock/paddock/server/wire"
	"github.com/paddock/paddock/task"
	"github.com/paddock/paddock/test/conformance"
)

// x509Deployment is a task cluster whose every process proves who it is with a client
// certificate, made, with the server's key store, by paddock certs.
type x509Deployment struct {
	*cluster
	tlsDir   string
	roleList []string          // role=x509:CN=name, as paddock certs client printed them
	roles    string            // the roles file of them
	printed  map[string]string // what paddock certs client printed, by name
	server   *testutil.Child
}

// tlsArgs are the flags that connect as the client certificate of name, with the roles
// file.
func (d *x509Deployment) tlsArgs(name string) []string {
	return []string{"--tls-ca", filepath.Join(d.tlsDir, "ca.pem"),
		"--tls-cert", filepath.Join(d.tlsDir, "client-"+name+".pem"),
		"--tls-key", filepath.Join(d.tlsDir, "client-"+name+"-key.pem"), "--roles-file", d.roles}
}

// tlsRolesArgs are tlsArgs with the roles as --roles flags.
func (d *x509Deployment) tlsRolesArgs(name string) []string {
	args := d.tlsArgs(name)
	args = args[:len(args)-2]
	for _, r := range d.roleList {
		args = append(args, "--roles", r)
	}
	return args
}

// tlsConfig returns the TLS configuration of a client trusting the CA, with the
// certificate of name if it is not empty.
func (d *x509Deployment) tlsConfig(name string) *tls.Config {
	d.t.Helper()
	files := coordinator.TLSFiles{CA: filepath.Join(d.tlsDir, "ca.pem")}
	if name != "" {
		files.Cert, files.Key = filepath.Join(d.tlsDir, "client-"+name+".pem"), filepath.Join(d.tlsDir, "client-"+name+"-key.pem")
	}
	conf, err := files.Config()
	if err != nil {
		d.t.Fatal(err)
	}
	return conf
}

// certsCmd runs paddock certs with args and returns what it printed.
func certsCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(paddock.Path(t), append([]string{"certs"}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("paddock certs %s: %v, stderr %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// newX509Deployment makes a CA, the server's key store and the clients' certificates
// with paddock certs, writes the roles file from the identities it printed, and starts
// paddock server with a secure client port only (client_tls_auth need) configured with
// the zoo.cfg lines paddock certs server printed.
func newX509Deployment(t *testing.T) *x509Deployment {
	dir := t.TempDir()
	d := &x509Deployment{tlsDir: filepath.Join(dir, "tls"), roles: filepath.Join(dir, "roles"), printed: map[string]string{}}
	certsCmd(t, "ca", "--dir", d.tlsDir)
	out := certsCmd(t, "server", "--dir", d.tlsDir, "--host", "127.0.0.1", "--host", "localhost")
	sslLines := regexp.MustCompile(`(?m)^  (ssl\.\S+=\S+)$`).FindAllStringSubmatch(out, -1)
	if len(sslLines) != 3 {
		t.Fatalf("paddock certs server printed %d ssl.* lines, want 3:\n%s", len(sslLines), out)
	}
	for _, name := range []string{"admin", "master", "worker", "submitter"} {
		out := certsCmd(t, "client", "--dir", d.tlsDir, "--name", name)
		d.printed[name] = out
		line := regexp.MustCompile(`(?m)^  (` + name + `=x509:\S+)$`).FindStringSubmatch(out)
		if line == nil || line[1] != name+"=x509:CN="+name {
			t.Fatalf("paddock certs client --name %s printed no roles line %s=x509:CN=%s:\n%s", name, name, name, out)
		}
		d.roleList = append(d.roleList, line[1])
	}
	certsCmd(t, "client", "--dir", d.tlsDir, "--name", "mallory") // same CA, no role
	if err := os.WriteFile(d.roles, []byte(strings.Join(d.roleList, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	port, err := testutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("dataDir=%s\nsecureClientPort=%d\nsecureClientPortAddress=127.0.0.1\ntickTime=100\n"+
		"admin.enableServer=false\nX509AuthenticationProvider.superUser=CN=admin\n", filepath.Join(dir, "data"), port)
	for _, l := range sslLines {
		cfg += l[1] + "\n"
	}
	zooCfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(zooCfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d.server, err = testutil.StartChild(t, filepath.Join(dir, "server.log"), nil, paddock.Path(t),
		"server", "--zoo-cfg", zooCfg, "--log-level", "debug")
	if err != nil {
		t.Fatal(err)
	}
	d.cluster = &cluster{t: t, addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, layout: task.DefaultLayout,
		masters: map[string]*testutil.Child{}, workers: map[string]*testutil.Child{}}
	t.Cleanup(d.checkLogs)

	// The test watches as admin, the x509 super user.
	access := coordinator.Access{TLSCA: filepath.Join(d.tlsDir, "ca.pem"), TLSCert: filepath.Join(d.tlsDir, "client-admin.pem"),
		TLSKey: filepath.Join(d.tlsDir, "client-admin-key.pem"), RolesFile: d.roles}
	cc, err := access.Config([]string{d.addr}, 4*time.Second, nil, platformRules())
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		d.s, err = coordinator.Connect(ctx, cc)
		return err == nil
	}, "paddock server serves TLS on %s:\n%s", d.addr, d.server.LogTail(20))
	t.Cleanup(func() { d.s.Close() })
	d.client = task.NewClient(d.s, d.layout)
	return d
}

// platformRules are the ACL rules of the task cluster's nodes.
func platformRules() []coordinator.Rule { return task.DefaultLayout.ACLRules() }

// TestX509Deployment: a task cluster over TLS with x509 identities only, every file
// made by paddock certs: paddock server with a secure client port alone, a master and
// a worker each with its certificate and the roles as x509 ids (flags, a file), and a task submitted
// with paddock task and a submitter's certificate runs and succeeds. A client with a
// certificate of the same CA but no role cannot submit or assign; a TLS client without
// a certificate, one with the server's certificate, and a plain TCP client get no
// session.
func TestX509Deployment(t *testing.T) {
	d := newX509Deployment(t)
	d.masters["m1"] = d.start("master-m1", append([]string{"master", "--id", "m1"}, d.tlsRolesArgs("master")...)...)
	d.workers["w1"] = d.start("worker-w1", append([]string{"worker", "--id", "w1", "--capacity", "2",
		"--output-dir", filepath.Join(d.dir, "output-w1"), "--kill-grace", "1s", "--allow-root"}, d.tlsArgs("worker")...)...)
	testutil.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		ws, _, err := d.s.Conn().Children(d.layout.Workers())
		return err == nil && slices.Contains(ws, "w1") && d.activeMaster() == "m1"
	}, "the worker registers and the master leads:\n%s", d.logTails())

	id := d.submitCLI(append(d.tlsArgs("submitter"), "--", "sh", "-c", "echo over tls")...)
	if out, errOut, code := d.taskCmd(append(d.tlsArgs("submitter"), "wait", id)...); code != 0 {
		t.Fatalf("paddock task wait %s: exit %d, %s %s\n%s", id, code, out, errOut, d.logTails())
	}
	if tk := d.waitAll([]string{id}, 30*time.Second)[id]; tk.State != task.Done || tk.Status.OutputTail != "over tls\n" {
		t.Fatalf("%s: %s, output %q, error %q", id, tk.State, tk.Status.OutputTail, tk.Status.Error)
	}
	acl, _, err := d.s.Conn().GetACL(d.layout.Task(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acl {
		if a.Scheme != "x509" {
			t.Errorf("task %s's ACL %v: an entry %s:%s is not an x509 identity", id, acl, a.Scheme, a.ID)
		}
	}
	if !slices.Contains(acl, zk.ACL{Perms: zk.PermCreate | zk.PermRead, Scheme: "x509", ID: "CN=submitter"}) {
		t.Errorf("task %s's ACL %v: want x509:CN=submitter with cr", id, acl)
	}

	t.Run("certificates without a submitting role", d.untrustedSigners)
	t.Run("mallory", func(t *testing.T) { d.mallory(t, id) })
	t.Run("no session", d.noSession)
	t.Run("kazoo", func(t *testing.T) { d.kazoo(t, id) })

	for name, p := range d.all() {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", name, err, p.LogTail(20))
		}
	}
}

// untrustedSigners: a task signed with the key of a certificate of the platform's CA
// whose subject holds no role (mallory) or only the worker's is never run, though its
// node is open to all (written by the admin, the superuser): the worker fails it, not
// signed by a trusted submitter.
func (d *x509Deployment) untrustedSigners(t *testing.T) {
	marker := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"mallory", "worker"} {
		signer, err := provenance.LoadCert(filepath.Join(d.tlsDir, "client-"+name+".pem"), filepath.Join(d.tlsDir, "client-"+name+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := json.Marshal(task.Spec{Command: "touch", Args: []string{filepath.Join(marker, name)}})
		p, err := d.s.Conn().Create(d.layout.Task("task-"), spec, zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		testutil.SignNode(t, d.s.Conn(), p, task.SpecDomain, spec, signer)
		tk, err := d.client.Wait(ctx, filepath.Base(p))
		if err != nil || tk.State != task.Failed || !strings.Contains(tk.Status.Error, "not signed by a trusted submitter") ||
			!strings.Contains(tk.Status.Error, "x509:CN="+name) {
			t.Errorf("a task signed by %s's certificate: %+v, %v; want failed, not signed by a trusted submitter", name, tk, err)
		}
		if _, err := os.Stat(filepath.Join(marker, name)); err == nil {
			t.Errorf("the task signed by %s's certificate ran", name)
		}
	}
}

// mallory holds a certificate of the platform's CA but no role: the server admits her,
// the ACLs refuse her everything the attacker wanted.
func (d *x509Deployment) mallory(t *testing.T, id string) {
	conn, events, err := zk.Connect([]string{d.addr}, 4*time.Second,
		zk.WithDialer(coordinator.TLSDialer(d.tlsConfig("mallory"), nil)), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	l := d.layout
	spec := []byte(`{"command":"sh","args":["-c","touch /tmp/pwned"]}`)
	if _, err := conn.Create(l.Task("task-"), spec, zk.FlagSequence, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("mallory's create under %s: %v, want %v", l.Tasks(), err, zk.ErrNoAuth)
	}
	if _, _, err := conn.Children(l.Tasks()); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("mallory's list of %s: %v, want %v", l.Tasks(), err, zk.ErrNoAuth)
	}
	if _, err := conn.Set(l.Task(id), spec, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("mallory's set of %s: %v, want %v", l.Task(id), err, zk.ErrNoAuth)
	}
	if _, err := conn.Create(l.AssignDir("w1")+"/"+id, nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("mallory's assignment to w1: %v, want %v", err, zk.ErrNoAuth)
	}
}

// noSession: the secure port serves only clients with a certificate of its CA made for
// a client.
func (d *x509Deployment) noSession(t *testing.T) {
	serverCert, err := certs.LoadKeyStore(filepath.Join(d.tlsDir, "server.pem"), "", "")
	if err != nil {
		t.Fatal(err)
	}
	asServer := d.tlsConfig("")
	asServer.Certificates = []tls.Certificate{serverCert}
	for name, conf := range map[string]*tls.Config{"without a certificate": d.tlsConfig(""), "with the server's certificate": asServer} {
		c, err := conformance.DialTLS(d.addr, conf, 5*time.Second)
		if err == nil {
			// TLS 1.3: the server's verdict on the client's certificate comes after the client's handshake.
			err = c.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, wire.PasswordLen)})
			if err == nil {
				_, _, err = c.ReadConnectResponse(5 * time.Second)
			}
			c.Close()
		}
		if err == nil {
			t.Errorf("a TLS client %s got a session", name)
		}
	}
	plain, err := conformance.Dial(d.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, wire.PasswordLen)}); err != nil {
		t.Fatal(err)
	}
	if f, err := plain.ReadFrame(5 * time.Second); !conformance.IsClosed(err) {
		t.Errorf("a plain TCP client on the secure port: read %v, %v; want the connection closed", f, err)
	}
}

// systemPython is Debian's interpreter, which python3-kazoo (test/deps.sh) installs into.
const systemPython = "/usr/bin/python3"

// kazoo runs the kazoo line paddock certs client printed for the submitter, which lists
// the tasks.
func (d *x509Deployment) kazoo(t *testing.T, id string) {
	m := regexp.MustCompile(`(?m)^kazoo: (KazooClient\(hosts, .*\))$`).FindStringSubmatch(d.printed["submitter"])
	if m == nil {
		t.Fatalf("paddock certs client printed no kazoo line:\n%s", d.printed["submitter"])
	}
	script := "import sys\nfrom kazoo.client import KazooClient\nhosts = sys.argv[1]\nzk = " + m[1] +
		"\nzk.start(timeout=20)\nprint(' '.join(zk.get_children(sys.argv[2])))\nzk.stop()\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, systemPython, "-c", script, d.addr, d.layout.Tasks()).CombinedOutput()
	if err != nil || !slices.Contains(strings.Fields(string(out)), id) {
		t.Errorf("kazoo as the submitter, with the files paddock certs made, listing %s: %v, want %s in\n%s",
			d.layout.Tasks(), err, id, out)
	}
}

// checkLogs adds the server's log to the cluster's check.
func (d *x509Deployment) checkLogs() {
	d.cluster.checkLogs()
	if problems, err := d.server.LogProblems(); err != nil || len(problems) > 0 {
		d.t.Errorf("the server's log: %v\n%s", err, strings.Join(problems, "\n"))
	}
}
