package configs

import (
	"slices"
	"strings"
	"testing"
)

// TestServiceAccessKeys: every service's section has the connection keys of
// coordinator.Access (auth, auth_file, tls_*, roles, roles_file, signing_key,
// signers_file), from the file and
// the environment, and a bad auth value is never shown back.
func TestServiceAccessKeys(t *testing.T) {
	clearPaddockEnv(t)
	file := writeFile(t, "paddock.yaml", `
master:
  auth_file: /etc/paddock/master.auth
  tls_ca: /etc/paddock/ca.pem
  tls_cert: /etc/paddock/master.pem
  tls_key: /etc/paddock/master.key
  roles: ["master=digest:master:Hk3=", "worker=x509:CN=worker"]
  signing_key: /etc/paddock/master-sign.key
  signers_file: /etc/paddock/signers
worker:
  id: w1
  signers_file: /etc/paddock/signers
  tls_cert: /etc/paddock/worker.pem
  tls_key: /etc/paddock/worker.key
  roles_file: /etc/paddock/roles
replicator:
  mode: cold
  auth: ["digest:replicator:pw"]
logcollector:
  auth_file: /etc/paddock/lc.auth
`)
	m, err := LoadMaster(Options{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if m.AuthFile != "/etc/paddock/master.auth" || m.TLSCA != "/etc/paddock/ca.pem" || m.TLSKey != "/etc/paddock/master.key" ||
		m.SigningKey != "/etc/paddock/master-sign.key" || m.SignersFile != "/etc/paddock/signers" ||
		!slices.Equal(m.Roles, []string{"master=digest:master:Hk3=", "worker=x509:CN=worker"}) {
		t.Errorf("master: %+v", m.Access)
	}
	t.Setenv("PADDOCK_WORKER_AUTH_FILE", "/run/secrets/worker")
	w, err := LoadWorker(Options{File: file})
	if err != nil || w.AuthFile != "/run/secrets/worker" || w.RolesFile != "/etc/paddock/roles" || w.SignersFile != "/etc/paddock/signers" {
		t.Errorf("worker: %+v, %v", w.Access, err)
	}
	r, err := LoadReplicator(Options{File: file})
	if err != nil || !slices.Equal(r.Auth, []string{"digest:replicator:pw"}) {
		t.Errorf("replicator: %+v, %v", r.Access, err)
	}
	l, err := LoadLogCollector(Options{File: file})
	if err != nil || l.AuthFile != "/etc/paddock/lc.auth" {
		t.Errorf("logcollector: %+v, %v", l.Access, err)
	}

	bad := writeFile(t, "bad.yaml", "replicator:\n  mode: cold\n  auth: [s3cretnocolon]\n  roles: [wizard=digest:a:b]\n  tls_cert: c.pem\n")
	_, err = LoadReplicator(Options{File: bad})
	wantErr(t, err, "auth", "roles", "wizard", "tls_key")
	if err != nil && strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the credentials: %v", err)
	}
}
