package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroup is the directory of a cgroup v2. A worker that can make cgroups puts each
// run in one of its own, <base>/<run>, beneath its base
// <mount>/<its own cgroup>/paddock-worker-<key>, which the run's supervisor makes (and
// the base with it, if missing) and removes: the kernel then kills every process
// of a run at once (cgroup.kill, Linux 5.14), forks in flight included, and a process
// cannot leave it without write access to another cgroup, so a restarted worker finds
// all that an earlier life left in its base whatever happened to its supervisors.
type cgroup string

// cgroupDrain bounds the wait for a killed cgroup to empty: a process in
// uninterruptible sleep (a hung NFS read) dies only when it wakes.
const cgroupDrain = 10 * time.Second

// cgroupBase returns the directory the worker keyed key makes its runs' cgroups in,
// and the same path as its own /proc/<pid>/cgroup would read inside it; an error says
// why there is none: no cgroup2 hierarchy mounted, or the worker's cgroup outside it.
func cgroupBase(key string) (dir cgroup, rel string, err error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	mount, root, ok := parseCgroup2Mount(mountinfo)
	if !ok {
		return "", "", errors.New("no cgroup2 hierarchy is mounted")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	own, ok := parseOwnCgroup(self)
	if !ok {
		return "", "", errors.New("/proc/self/cgroup names no cgroup v2")
	}
	inMount, ok := strings.CutPrefix(own, strings.TrimSuffix(root, "/"))
	if !ok || inMount != "" && !strings.HasPrefix(inMount, "/") {
		return "", "", fmt.Errorf("the worker's cgroup %s is outside the cgroup2 mount at %s (of %s)", own, mount, root)
	}
	name := "paddock-worker-" + key
	return cgroup(filepath.Join(mount, inMount, name)), filepath.Join(own, name), nil
}

// parseCgroup2Mount finds the first cgroup2 mount in /proc/self/mountinfo: its mount
// point and the cgroup its root is.
func parseCgroup2Mount(mountinfo []byte) (mount, root string, ok bool) {
	for line := range bytes.SplitSeq(mountinfo, []byte{'\n'}) {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		pre, post, found := bytes.Cut(line, []byte(" - "))
		fields, fs := strings.Fields(string(pre)), strings.Fields(string(post))
		if !found || len(fields) < 5 || len(fs) < 1 || fs[0] != "cgroup2" {
			continue
		}
		return unescapeMount(fields[4]), unescapeMount(fields[3]), true
	}
	return "", "", false
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseOwnCgroup reads the cgroup v2 line, "0::<path>", of /proc/<pid>/cgroup.
func parseOwnCgroup(data []byte) (string, bool) {
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		if p, ok := bytes.CutPrefix(line, []byte("0::")); ok && len(p) > 0 && p[0] == '/' {
			return string(p), true
		}
	}
	return "", false
}

// child is the cgroup of run name beneath c.
func (c cgroup) child(name string) cgroup { return cgroup(filepath.Join(string(c), name)) }

// make creates c, and its parent if missing; one left by an earlier run of the same
// name is emptied first.
func (c cgroup) make() error {
	if err := os.MkdirAll(filepath.Dir(string(c)), 0o755); err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	err := os.Mkdir(string(c), 0o755)
	if errors.Is(err, os.ErrExist) {
		if _, err := c.remove(); err != nil {
			return err
		}
		err = os.Mkdir(string(c), 0o755)
	}
	if err != nil {
		return fmt.Errorf("cgroup: %w", err)
	}
	return nil
}

// kill kills every process in c and its descendants, at once.
func (c cgroup) kill() error {
	return os.WriteFile(filepath.Join(string(c), "cgroup.kill"), []byte("1"), 0)
}

// procs counts the processes in c itself.
func (c cgroup) procs() int {
	data, _ := os.ReadFile(filepath.Join(string(c), "cgroup.procs"))
	return len(bytes.Fields(data))
}

// remove kills what is in c, waits for it to empty (for at most cgroupDrain) and
// removes it, and the cgroups beneath it. It returns how many processes it killed; a
// cgroup already gone is not an error.
func (c cgroup) remove() (int, error) {
	subs, _ := os.ReadDir(string(c))
	killed := 0
	for _, e := range subs {
		if e.IsDir() {
			n, err := c.child(e.Name()).remove()
			killed += n
			if err != nil {
				return killed, err
			}
		}
	}
	n := c.procs()
	if err := c.kill(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("cgroup %s: %w", c, err)
	}
	deadline := time.Now().Add(cgroupDrain)
	for {
		err := os.Remove(string(c))
		switch {
		case err == nil || errors.Is(err, os.ErrNotExist):
			return killed + n, nil
		case !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline):
			return killed + n, fmt.Errorf("cgroup %s: %w", c, err)
		}
		time.Sleep(5 * time.Millisecond) // the kernel is ending the killed processes
	}
}
