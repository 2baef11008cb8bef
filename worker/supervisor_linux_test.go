package worker

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

func validSpec() *supervisorSpec {
	return &supervisorSpec{
		Path: "/bin/sh", Args: []string{"sh", "-c", "true"}, Dir: "/tmp", Env: []string{"A=1", "B="},
		Cred: &credSpec{UID: 65534, GID: 65534, Groups: []uint32{65534}}, Cgroup: "/sys/fs/cgroup/x", Parent: 1,
	}
}

func frameOf(body string) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestReadSpec: a spec goes through the control pipe as sent; every malformed frame
// and field is refused with an error naming it.
func TestReadSpec(t *testing.T) {
	var buf bytes.Buffer
	if err := writeSpec(&buf, validSpec()); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("TK") // commands follow the frame, unread
	got, err := readSpec(&buf)
	if err != nil || !reflect.DeepEqual(got, validSpec()) || buf.String() != "TK" {
		t.Fatalf("readSpec = %+v, %v, rest %q; want the spec sent, TK left", got, err, buf.String())
	}
	change := func(f func(*supervisorSpec)) []byte {
		s := validSpec()
		f(s)
		var b bytes.Buffer
		writeSpec(&b, s)
		return b.Bytes()
	}
	tests := []struct {
		name  string
		frame []byte
		want  string
	}{
		{"empty", nil, "spec length: EOF"},
		{"short length", []byte{0, 0}, "spec length: unexpected EOF"},
		{"length past the cap", binary.BigEndian.AppendUint32(nil, maxSpecFrame+1), "more than"},
		{"length of 2^32-1", []byte{0xff, 0xff, 0xff, 0xff}, "more than"},
		{"short body", append(binary.BigEndian.AppendUint32(nil, 100), "{}"...), "spec: 2 of 100 bytes"},
		{"not JSON", frameOf("nope"), "spec: invalid character"},
		{"unknown field", frameOf(`{"path":"/x","args":["x"],"parent":1,"shell":true}`), `unknown field "shell"`},
		{"two objects", frameOf(`{"path":"/x","args":["x"],"parent":1}{}`), "more after the object"},
		{"no path", change(func(s *supervisorSpec) { s.Path = "" }), "spec: path"},
		{"NUL in path", change(func(s *supervisorSpec) { s.Path = "/bin/\x00sh" }), "spec: path"},
		{"no args", change(func(s *supervisorSpec) { s.Args = nil }), "spec: args"},
		{"NUL in an arg", change(func(s *supervisorSpec) { s.Args = append(s.Args, "a\x00") }), "spec: args[3]"},
		{"NUL in dir", change(func(s *supervisorSpec) { s.Dir = "/t\x00" }), "spec: dir"},
		{"relative cgroup", change(func(s *supervisorSpec) { s.Cgroup = "sys/fs" }), "spec: cgroup"},
		{"no parent", change(func(s *supervisorSpec) { s.Parent = 0 }), "spec: parent 0"},
		{"negative parent", change(func(s *supervisorSpec) { s.Parent = -1 }), "spec: parent -1"},
		{"uid -1", change(func(s *supervisorSpec) { s.Cred.UID = 1<<32 - 1 }), "spec: cred"},
		{"gid -1", change(func(s *supervisorSpec) { s.Cred.GID = 1<<32 - 1 }), "spec: cred"},
		{"too many groups", change(func(s *supervisorSpec) { s.Cred.Groups = make([]uint32, maxGroups+1) }), "spec: cred"},
		{"env without =", change(func(s *supervisorSpec) { s.Env = append(s.Env, "PATH") }), `spec: env[2] "PATH"`},
		{"env without a name", change(func(s *supervisorSpec) { s.Env = append(s.Env, "=x") }), "spec: env[2]"},
		{"NUL in env", change(func(s *supervisorSpec) { s.Env = append(s.Env, "A=\x00") }), "spec: env[2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readSpec(bytes.NewReader(tt.frame))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("readSpec = %v; want an error with %q", err, tt.want)
			}
		})
	}
	// The limits themselves are taken.
	edge := validSpec()
	edge.Cred = &credSpec{UID: 1<<32 - 2, GID: 0, Groups: make([]uint32, maxGroups)}
	var b bytes.Buffer
	writeSpec(&b, edge)
	if got, err := readSpec(&b); err != nil || !reflect.DeepEqual(got, edge) {
		t.Errorf("uid 2^32-2, gid 0, %d groups: %v", maxGroups, err)
	}
}

// FuzzSupervisorSpec: no frame makes readSpec panic or allocate past what was sent,
// and a spec it takes goes through writeSpec and back unchanged.
func FuzzSupervisorSpec(f *testing.F) {
	var b bytes.Buffer
	writeSpec(&b, validSpec())
	f.Add(b.Bytes())
	f.Add(frameOf(`{"path":"/x","args":["x"],"parent":1}`))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := readSpec(bytes.NewReader(data))
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := writeSpec(&again, spec); err != nil {
			t.Fatal(err)
		}
		back, err := readSpec(&again)
		if err != nil || !reflect.DeepEqual(back, spec) {
			t.Fatalf("%+v came back as %+v, %v", spec, back, err)
		}
	})
}

// TestParseStat: the parent and state follow the last ')', whatever the command name
// holds.
func TestParseStat(t *testing.T) {
	for _, comm := range []string{"sh", "a b", "x) S 1 (", ")", "((", "tab\tname", ") 99 "} {
		line := "4242 (" + comm + ") S 17 4242 4242 0 -1 4194560 rest"
		st, err := parseStat([]byte(line))
		if err != nil || st.ppid != 17 || st.state != 'S' {
			t.Errorf("parseStat(%q) = %+v, %v; want ppid 17, state S", line, st, err)
		}
	}
	for _, bad := range []string{"", "1 (x)", "1 (x) S", "1 (x) S x", "1 (x) S -2", "1 (x)S 1", "no parens S 1"} {
		if st, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %+v; want an error", bad, st)
		}
	}
	if st, err := parseStat([]byte("7 (z) Z 1 7")); err != nil || !st.gone() {
		t.Errorf("a zombie: %+v, %v; want gone", st, err)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1"), "comm")
	f.Fuzz(func(t *testing.T, data []byte, comm string) {
		parseStat(data) // never panics
		if strings.ContainsAny(comm, "\x00\n") {
			return
		}
		st, err := parseStat([]byte("5 (" + comm + ") R 3 5 5"))
		if err != nil || st.ppid != 3 || st.state != 'R' {
			t.Fatalf("comm %q: %+v, %v", comm, st, err)
		}
	})
}

// TestCgroupFiles reads the kernel's descriptions of mounts and of a process's cgroup.
func TestCgroupFiles(t *testing.T) {
	hybrid := `25 30 0:23 / /sys rw,nosuid - sysfs sysfs rw
33 25 0:28 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
35 33 0:30 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
36 33 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
`
	if m, root, ok := parseCgroup2Mount([]byte(hybrid)); !ok || m != "/sys/fs/cgroup/unified" || root != "/" {
		t.Errorf("hybrid: %q %q %v", m, root, ok)
	}
	bind := `40 1 0:30 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw
`
	if m, root, ok := parseCgroup2Mount([]byte(bind)); !ok || m != "/sys/fs/cgroup" || root != "/docker/abc" {
		t.Errorf("bind mount: %q %q %v", m, root, ok)
	}
	if _, _, ok := parseCgroup2Mount([]byte("36 33 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n")); ok {
		t.Error("v1 only: found a cgroup2 mount")
	}
	if m, _, _ := parseCgroup2Mount([]byte(`1 1 0:1 / /a\040b\134c rw - cgroup2 none rw`)); m != `/a b\c` {
		t.Errorf("escaped mount point read as %q", m)
	}
	if got := unescapeMount(`x\04`); got != `x\04` {
		t.Errorf("a cut escape read as %q", got)
	}
	if p, ok := parseOwnCgroup([]byte("9:name=systemd:/\n4:memory:/x\n0::/user.slice/a b\n")); !ok || p != "/user.slice/a b" {
		t.Errorf("own cgroup %q %v", p, ok)
	}
	if _, ok := parseOwnCgroup([]byte("4:memory:/x\n")); ok {
		t.Error("v1 only: found a v2 cgroup")
	}
}
