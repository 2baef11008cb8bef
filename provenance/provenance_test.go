package provenance_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/provenance"
)

var roles = []string{"admin", "console", "master", "worker", "submitter"}

const domain = "paddock test v1"

// keyring is a signing key per role and the trust of a signers file listing them all.
type keyring struct {
	signers map[string]*provenance.Signer
	trust   *provenance.Trust
}

func newKeyring(t testing.TB) *keyring {
	t.Helper()
	k := &keyring{signers: map[string]*provenance.Signer{}}
	var lines []string
	for _, r := range roles {
		s, err := provenance.GenerateKey(filepath.Join(t.TempDir(), r+".key"))
		if err != nil {
			t.Fatal(err)
		}
		k.signers[r] = s
		lines = append(lines, r+"="+s.ID())
	}
	keys, err := provenance.ParseSigners(lines, roles)
	if err != nil {
		t.Fatal(err)
	}
	k.trust = provenance.NewTrust(keys, nil, nil)
	return k
}

func sign(t testing.TB, s *provenance.Signer, czxid int64, data []byte) []byte {
	t.Helper()
	rec, err := s.Sign(domain, czxid, data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestKeySignatures: a signature verifies for the role its key is listed under, and
// for nothing else: another role, czxid, domain, data or key.
func TestKeySignatures(t *testing.T) {
	k := newKeyring(t)
	data := []byte(`{"command":"true"}`)
	rec := sign(t, k.signers["submitter"], 42, data)
	got, err := k.trust.Verify(domain, 42, data, rec, "submitter", "console")
	if err != nil || got.Role != "submitter" || got.By != k.signers["submitter"].ID() {
		t.Fatalf("intact: %+v, %v", got, err)
	}
	if !k.signers["submitter"].Made(domain, 42, data, rec) || k.signers["console"].Made(domain, 42, data, rec) {
		t.Error("Made: a signer does not know its own record, or claims another's")
	}
	for _, tt := range []struct {
		name   string
		czxid  int64
		domain string
		data   []byte
		rec    []byte
		accept []string
		want   error
	}{
		{"role not accepted", 42, domain, data, rec, []string{"console", "admin"}, provenance.ErrUntrusted},
		{"worker key", 42, domain, data, sign(t, k.signers["worker"], 42, data), []string{"submitter"}, provenance.ErrUntrusted},
		{"czxid + 1", 43, domain, data, rec, []string{"submitter"}, provenance.ErrBadSignature},
		{"czxid - 1", 41, domain, data, rec, []string{"submitter"}, provenance.ErrBadSignature},
		{"another domain", 42, "paddock job v1", data, rec, []string{"submitter"}, provenance.ErrBadSignature},
		{"data changed", 42, domain, []byte(`{"command":"false"}`), rec, []string{"submitter"}, provenance.ErrBadSignature},
		{"data truncated", 42, domain, data[:len(data)-1], rec, []string{"submitter"}, provenance.ErrBadSignature},
		{"unsigned", 42, domain, data, nil, []string{"submitter"}, provenance.ErrUnsigned},
		{"garbage", 42, domain, data, []byte("{"), []string{"submitter"}, provenance.ErrMalformed},
		{"unknown key", 42, domain, data, sign(t, unlisted(t), 42, data), []string{"submitter"}, provenance.ErrUntrusted},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := k.trust.Verify(tt.domain, tt.czxid, tt.data, tt.rec, tt.accept...)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify = %+v, %v; want %v", got, err, tt.want)
			}
		})
	}
	var none *provenance.Trust
	if _, err := none.Verify(domain, 42, data, rec, "submitter"); !errors.Is(err, provenance.ErrUntrusted) {
		t.Errorf("a nil Trust: %v, want %v", err, provenance.ErrUntrusted)
	}
}

func unlisted(t testing.TB) *provenance.Signer {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return provenance.NewKeySigner(priv)
}

// TestSignatureMutations is the property: over generated data, czxids and records
// mutated at random (a byte changed, inserted or cut, the record truncated, fields
// swapped between records, the czxid off by one), only the intact triple verifies, and
// nothing panics. 3000 cases (1000 under the race detector); PADDOCK_PROVENANCE_SEED
// replays a run.
func TestSignatureMutations(t *testing.T) {
	k := newKeyring(t)
	rng := rand.New(rand.NewPCG(testutil.Seed(t, "PADDOCK_PROVENANCE_SEED"), 1))
	cases := 3000
	if testutil.RaceEnabled {
		cases = 1000
	}
	verified := 0
	for i := range cases {
		data := make([]byte, rng.IntN(300))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		czxid := rng.Int64()
		if i%10 == 0 {
			czxid = []int64{0, 1, -1, 1 << 62, -1 << 63, 1<<63 - 1}[rng.IntN(6)]
		}
		role := roles[rng.IntN(len(roles))]
		rec := sign(t, k.signers[role], czxid, data)
		d2, c2, r2 := mutate(rng, data, czxid, rec)
		intact := bytes.Equal(d2, data) && c2 == czxid && bytes.Equal(r2, rec)
		got, err := k.trust.Verify(domain, c2, d2, r2, role)
		if err == nil && !sameSignature(r2, rec) || err == nil && (!bytes.Equal(d2, data) || c2 != czxid) {
			t.Fatalf("case %d: a mutated triple verified (%+v): data %q→%q czxid %d→%d rec %s→%s", i, got, data, d2, czxid, c2, rec, r2)
		}
		if intact && err != nil {
			t.Fatalf("case %d: the intact triple does not verify: %v", i, err)
		}
		if err == nil {
			verified++
		}
	}
	t.Logf("%d cases, %d verified (intact or a record re-encoded with the same signature)", cases, verified)
}

// sameSignature says two records carry the same key and signature bytes (JSON that
// decodes alike: a mutation of whitespace is not one of the signed bytes).
func sameSignature(a, b []byte) bool {
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// mutate changes one of data, czxid or rec, or none (one case in eight).
func mutate(rng *rand.Rand, data []byte, czxid int64, rec []byte) ([]byte, int64, []byte) {
	data, rec = bytes.Clone(data), bytes.Clone(rec)
	flip := func(b []byte) []byte {
		if len(b) == 0 {
			return []byte{byte(rng.IntN(256))}
		}
		switch rng.IntN(4) {
		case 0:
			b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
		case 1:
			return b[:rng.IntN(len(b))]
		case 2:
			i := rng.IntN(len(b) + 1)
			return append(b[:i:i], append([]byte{byte(rng.IntN(256))}, b[i:]...)...)
		default:
			i := rng.IntN(len(b))
			return append(b[:i:i], b[i+1:]...)
		}
		return b
	}
	switch rng.IntN(8) {
	case 0:
		return data, czxid, rec
	case 1, 2:
		return flip(data), czxid, rec
	case 3:
		return data, czxid + []int64{1, -1}[rng.IntN(2)], rec
	default:
		return data, czxid, flip(rec)
	}
}

// FuzzVerify: whatever the record, data and czxid, Verify returns an error or a
// signature of a trusted key over exactly those bytes, and never panics.
func FuzzVerify(f *testing.F) {
	k := newKeyring(f)
	data := []byte(`{"command":"true"}`)
	f.Add(int64(7), data, sign(f, k.signers["submitter"], 7, data))
	f.Add(int64(7), data, []byte(`{"v":1,"cert":["AAAA"],"sig":"AAAA"}`))
	f.Add(int64(0), []byte{}, []byte(`{"v":1,"key":"ed25519:","sig":""}`))
	f.Fuzz(func(t *testing.T, czxid int64, data, rec []byte) {
		got, err := k.trust.Verify(domain, czxid, data, rec, roles...)
		if err != nil {
			return
		}
		s := k.signers[got.Role]
		if s == nil || s.ID() != got.By || !s.Made(domain, czxid, data, rec) {
			t.Fatalf("verified %+v, which no listed key signed", got)
		}
	})
}

// TestCertificateSignatures: a client certificate's key signs; the signature verifies
// when the chain verifies against the trusted CA for client use and the subject holds
// an accepted role, and not with another CA, a server-only certificate or a subject
// without the role.
func TestCertificateSignatures(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t)
	other := newCA(t)
	issue := func(ca *certs.CA, name string, usage ...x509.ExtKeyUsage) *provenance.Signer {
		certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{CommonName: name, Validity: time.Hour, ExtKeyUsage: usage})
		if err != nil {
			t.Fatal(err)
		}
		cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		if err := os.WriteFile(cf, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kf, keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := provenance.LoadCert(cf, kf)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate())
	trust := provenance.NewTrust(nil, roots, map[string][]string{"CN=alice": {"submitter"}, "CN=server": {"submitter"}, "CN=w": {"worker"}})
	data := []byte("spec")
	alice := issue(ca, "alice", x509.ExtKeyUsageClientAuth)
	if alice.ID() != "x509:CN=alice" {
		t.Errorf("ID = %q", alice.ID())
	}
	rec := sign(t, alice, 9, data)
	if got, err := trust.Verify(domain, 9, data, rec, "submitter"); err != nil || got.By != "x509:CN=alice" {
		t.Fatalf("alice's signature: %+v, %v", got, err)
	}
	if _, err := trust.Verify(domain, 10, data, rec, "submitter"); !errors.Is(err, provenance.ErrBadSignature) {
		t.Errorf("czxid + 1: %v", err)
	}
	for name, tt := range map[string]struct {
		s    *provenance.Signer
		want error
	}{
		"another CA":         {issue(other, "alice", x509.ExtKeyUsageClientAuth), provenance.ErrUntrusted},
		"server certificate": {issue(ca, "server", x509.ExtKeyUsageServerAuth), provenance.ErrUntrusted},
		"worker's":           {issue(ca, "w", x509.ExtKeyUsageClientAuth), provenance.ErrUntrusted},
		"no role":            {issue(ca, "mallory", x509.ExtKeyUsageClientAuth), provenance.ErrUntrusted},
	} {
		if got, err := trust.Verify(domain, 9, data, sign(t, tt.s, 9, data), "submitter"); !errors.Is(err, tt.want) {
			t.Errorf("%s: %+v, %v; want %v", name, got, err, tt.want)
		}
	}
	// A key trust without a CA does not take certificates.
	if _, err := provenance.NewTrust(nil, nil, nil).Verify(domain, 9, data, rec, "submitter"); !errors.Is(err, provenance.ErrUntrusted) {
		t.Errorf("no CA: %v", err)
	}
}

func newCA(t *testing.T) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA("provenance test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// TestKeyFiles: a signing key is read back from the file GenerateKey wrote (0600), never
// from a file others may read, and GenerateKey never overwrites a key.
func TestKeyFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "submitter.key")
	s, err := provenance.GenerateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi.Mode(), err)
	}
	back, err := provenance.LoadKey(path)
	if err != nil || back.ID() != s.ID() {
		t.Fatalf("LoadKey: %v, %v", back, err)
	}
	if _, err := provenance.GenerateKey(path); err == nil {
		t.Error("GenerateKey over an existing key: no error")
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := provenance.LoadKey(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("LoadKey of a key readable by others: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(junk, []byte("secret-looking text"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := provenance.LoadKey(junk); err == nil || strings.Contains(err.Error(), "secret-looking") {
		t.Errorf("LoadKey of a non-key: %v", err)
	}
}

// TestParseSigners: every line is role=ed25519:<32 bytes in base64>; a bad one is named.
func TestParseSigners(t *testing.T) {
	k := newKeyring(t)
	id := k.signers["admin"].ID()
	keys, err := provenance.ParseSigners([]string{"admin=" + id, "console=" + id, "admin=" + id}, roles)
	if err != nil || len(keys) != 1 || strings.Join(keys[id], ",") != "admin,console" {
		t.Fatalf("ParseSigners = %v, %v", keys, err)
	}
	for _, bad := range []string{"boss=" + id, "admin", "admin=" + strings.TrimPrefix(id, "ed25519:"), "admin=ed25519:AAAA", "admin=rsa:" + id[8:]} {
		if _, err := provenance.ParseSigners([]string{bad}, roles); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("ParseSigners(%q) = %v, want an error naming line 1", bad, err)
		}
	}
}
