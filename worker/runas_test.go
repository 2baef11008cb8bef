package worker

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
)

// TestParseRunAsBoundaries: every field of run_as at its limits.
func TestParseRunAsBoundaries(t *testing.T) {
	tests := []struct {
		in   string
		want runAsSpec
		ok   bool // parsed (set) without error
	}{
		{"0", runAsSpec{uid: 0}, true},
		{"1", runAsSpec{uid: 1}, true},
		{"65534", runAsSpec{uid: 65534}, true},
		{"2147483647", runAsSpec{uid: 1<<31 - 1}, true},
		{"2147483648", runAsSpec{uid: 1 << 31}, true},
		{"4294967294", runAsSpec{uid: 1<<32 - 2}, true},
		{"4294967295", runAsSpec{}, false}, // (uid_t)-1: "no change" to setuid
		{"4294967296", runAsSpec{}, false},
		{"99999999999999999999999", runAsSpec{}, false},
		{"0:0", runAsSpec{withGID: true}, true},
		{"65534:65534", runAsSpec{uid: 65534, gid: 65534, withGID: true}, true},
		{"1:4294967294", runAsSpec{uid: 1, gid: 1<<32 - 2, withGID: true}, true},
		{"1:4294967295", runAsSpec{}, false},
		{"1:", runAsSpec{}, false},
		{":1", runAsSpec{}, false},
		{":", runAsSpec{}, false},
		{"1:2:3", runAsSpec{}, false},
		{"-1", runAsSpec{}, false},
		{"+1", runAsSpec{}, false},
		{"1:-1", runAsSpec{}, false},
		{"1:a", runAsSpec{}, false},
		{"nobody", runAsSpec{name: "nobody"}, true},
		{"a", runAsSpec{name: "a"}, true},
		{"_x.y-z", runAsSpec{name: "_x.y-z"}, true},
		{"host$", runAsSpec{name: "host$"}, true},
		{"$", runAsSpec{}, false},
		{"0x1", runAsSpec{name: "0x1"}, true}, // a name, not hex: useradd takes it
		{strings.Repeat("a", maxRunAsName), runAsSpec{name: strings.Repeat("a", maxRunAsName)}, true},
		{strings.Repeat("a", maxRunAsName+1), runAsSpec{}, false},
		{"-nobody", runAsSpec{}, false},
		{"no body", runAsSpec{}, false},
		{"no$body", runAsSpec{}, false},
		{"nobody:nogroup", runAsSpec{}, false},
		{"root\x00", runAsSpec{}, false},
		{"ünïcode", runAsSpec{}, false},
		{"a/b", runAsSpec{}, false},
	}
	for _, tt := range tests {
		got, set, err := parseRunAs(tt.in)
		if tt.ok != (set && err == nil) || got != tt.want {
			t.Errorf("parseRunAs(%q) = %+v, %v, %v; want %+v, ok %v", tt.in, got, set, err, tt.want, tt.ok)
		}
		if !tt.ok && err == nil {
			t.Errorf("parseRunAs(%q): no error", tt.in)
		}
	}
	if spec, set, err := parseRunAs(""); set || err != nil || spec != (runAsSpec{}) {
		t.Errorf(`parseRunAs("") = %+v, %v, %v; want unset`, spec, set, err)
	}
}

// TestParseRunAsGenerated: 20,000 generated run_as values a seed picks — uids and gids
// from the whole 32-bit range and its edges, names of every allowed character, and
// strings of arbitrary bytes. A value is accepted exactly when it follows the rule,
// and an accepted one reads back as what was written.
func TestParseRunAsGenerated(t *testing.T) {
	rng := rand.New(rand.NewPCG(testutil.Seed(t, "PADDOCK_RUNAS_SEED"), 0))
	const nameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	id := func() uint64 {
		switch rng.IntN(4) {
		case 0:
			return uint64(rng.IntN(3)) // 0, 1, 2
		case 1:
			return 1<<32 - 3 + uint64(rng.IntN(5)) // up to 2^32+1
		default:
			return rng.Uint64N(1 << 33)
		}
	}
	for range 20000 {
		switch rng.IntN(4) {
		case 0: // uid
			u := id()
			spec, set, err := parseRunAs(strconv.FormatUint(u, 10))
			if valid := u < 1<<32-1; valid != (set && err == nil) || valid && spec != (runAsSpec{uid: uint32(u)}) {
				t.Fatalf("uid %d: %+v, %v, %v", u, spec, set, err)
			}
		case 1: // uid:gid
			u, g := id(), id()
			spec, set, err := parseRunAs(strconv.FormatUint(u, 10) + ":" + strconv.FormatUint(g, 10))
			valid := u < 1<<32-1 && g < 1<<32-1
			if valid != (set && err == nil) || valid && spec != (runAsSpec{uid: uint32(u), gid: uint32(g), withGID: true}) {
				t.Fatalf("uid:gid %d:%d: %+v, %v, %v", u, g, spec, set, err)
			}
		case 2: // a name
			b := make([]byte, 1+rng.IntN(40))
			for i := range b {
				b[i] = nameChars[rng.IntN(len(nameChars))]
			}
			name := string(b)
			if allDigits(name) { // a uid, not a name
				checkRunAsRule(t, name)
				continue
			}
			spec, set, err := parseRunAs(name)
			valid := name[0] != '-'
			if valid != (set && err == nil) || valid && spec != (runAsSpec{name: name}) {
				t.Fatalf("name %q: %+v, %v, %v", name, spec, set, err)
			}
		default: // any bytes
			b := make([]byte, rng.IntN(12))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			checkRunAsRule(t, string(b))
		}
	}
}

// checkRunAsRule checks parseRunAs(s) against the rule, written out another way.
func checkRunAsRule(t *testing.T, s string) {
	t.Helper()
	spec, set, err := parseRunAs(s)
	if s == "" {
		if set || err != nil {
			t.Fatalf("%q: %+v, %v, %v", s, spec, set, err)
		}
		return
	}
	id := func(p string) bool {
		n, err := strconv.ParseUint(p, 10, 64)
		return err == nil && !strings.ContainsAny(p, "+-") && n < 1<<32-1
	}
	u, g, colon := strings.Cut(s, ":")
	numeric := u != "" && strings.Trim(u, "0123456789") == ""
	var valid bool
	switch {
	case numeric:
		valid = id(u) && (!colon || id(g))
	default:
		valid = len(s) <= maxRunAsName && s[0] != '-' && s[0] != '$' && strings.Trim(strings.TrimSuffix(s, "$"),
			"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == ""
	}
	if valid != (set && err == nil) {
		t.Fatalf("parseRunAs(%q) = %+v, %v, %v; the rule says valid = %v", s, spec, set, err, valid)
	}
	if !valid && (err == nil || err != errRunAsSyntax) {
		t.Fatalf("parseRunAs(%q): error %v, want %v", s, err, errRunAsSyntax)
	}
}

func FuzzParseRunAs(f *testing.F) {
	for _, s := range []string{"", "0", "nobody", "65534:65534", "4294967295", "1:", "host$", "-x", "a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkRunAsRule(t, s) })
}

// TestCheckIdentity: who may run tasks as whom, for a worker running as root and as
// another user.
func TestCheckIdentity(t *testing.T) {
	nobody := identity{set: true, uid: 65534, gid: 65534, name: "nobody"}
	root := identity{set: true, uid: 0, gid: 0, name: "root"}
	self := identity{set: true, uid: 1000, gid: 1000, name: "me"}
	tests := []struct {
		name       string
		id         identity
		runAs      string
		allowRoot  bool
		euid, egid int
		want       identity
		err        string // the error contains it; "" for none
	}{
		{"root, no run_as", identity{}, "", false, 0, 0, identity{}, "running as root with no run_as"},
		{"root, no run_as, allow_root", identity{}, "", true, 0, 0, identity{}, ""},
		{"root, run_as nobody", nobody, "nobody", false, 0, 0, nobody, ""},
		{"root, run_as root", root, "root", false, 0, 0, root, "run_as = root is uid 0"},
		{"root, run_as 0:0, allow_root", root, "0:0", true, 0, 0, root, ""},
		{"user, no run_as", identity{}, "", false, 1000, 1000, identity{}, ""},
		{"user, run_as itself", self, "me", false, 1000, 1000, identity{}, ""},
		{"user, run_as nobody", nobody, "nobody", false, 1000, 1000, identity{}, "not root: it can run tasks only as itself"},
		{"user, run_as nobody, allow_root", nobody, "nobody", true, 1000, 1000, identity{}, "not root"},
		{"user, run_as itself, another gid", identity{set: true, uid: 1000, gid: 5}, "1000:5", false, 1000, 1000, identity{}, "not root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := checkIdentity(tt.id, tt.runAs, tt.allowRoot, tt.euid, tt.egid)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v; want one with %q", err, tt.err)
			case err == nil && (got.set != tt.want.set || got.uid != tt.want.uid):
				t.Fatalf("identity %v; want %v", got, tt.want)
			}
		})
	}
	// The error of a root worker with neither key names both.
	_, err := checkIdentity(identity{}, "", false, 0, 0)
	if err == nil || !strings.Contains(err.Error(), "run_as") || !strings.Contains(err.Error(), "allow_root") {
		t.Errorf("error %v: want both keys named", err)
	}
}

// TestResolveRunAs looks real users up: root and nobody are in every Debian's passwd.
func TestResolveRunAs(t *testing.T) {
	tests := []struct {
		in       string
		uid, gid uint32
		groups   int    // how many groups, -1 for any
		err      string // the error contains it
	}{
		{"nobody", 65534, 65534, -1, ""},
		{"root", 0, 0, -1, ""},
		{"65534", 65534, 65534, -1, ""},
		{"65534:100", 65534, 100, 0, ""},
		{"4000000000:4000000001", 4000000000, 4000000001, 0, ""},
		{"4000000000", 0, 0, 0, "no user has uid 4000000000: give uid:gid"},
		{"paddock-no-such-user", 0, 0, 0, "no such user"},
	}
	for _, tt := range tests {
		id, err := resolveRunAs(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("resolveRunAs(%q) = %v, %v; want an error with %q", tt.in, id, err, tt.err)
			}
		case err != nil || !id.set || id.uid != tt.uid || id.gid != tt.gid || tt.groups >= 0 && len(id.groups) != tt.groups:
			t.Errorf("resolveRunAs(%q) = %+v, %v; want uid %d gid %d, %d groups", tt.in, id, err, tt.uid, tt.gid, tt.groups)
		}
	}
	if id, _ := resolveRunAs("nobody"); id.String() != "nobody (uid 65534, gid 65534)" {
		t.Errorf("nobody reads %q", id)
	}
}

// TestNewChecksRunAs: New applies checkIdentity to the worker's own user, and names
// run_as in its errors.
func TestNewChecksRunAs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ID, cfg.OutputDir, cfg.SignersFile = "w1", t.TempDir(), testutil.NewKeys(t).SignersFile
	_, err := New(cfg, nil)
	if _, want := checkIdentity(identity{}, "", false, os.Geteuid(), os.Getegid()); (err == nil) != (want == nil) {
		t.Errorf("New with no run_as as uid %d: %v; want %v", os.Geteuid(), err, want)
	}
	cfg.RunAs = "paddock-no-such-user"
	if _, err := New(cfg, nil); err == nil || !strings.HasPrefix(err.Error(), "worker: run_as = paddock-no-such-user: no such user") {
		t.Errorf("New with an unknown user: %v", err)
	}
}
