package worker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// procStat is what /proc/<pid>/stat says of a process that the worker needs.
type procStat struct {
	ppid  int
	state byte // R, S, D, Z, X, T...
}

// gone says the process has ended: a zombie not yet reaped (an orphan whose init does
// not reap stays one) or dead.
func (s procStat) gone() bool { return s.state == 'Z' || s.state == 'X' }

// parseStat reads /proc/<pid>/stat: "pid (comm) state ppid ...". comm may hold spaces
// and parentheses: the state follows the last ')'.
func parseStat(data []byte) (procStat, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+4 > len(data) || data[i+1] != ' ' || data[i+3] != ' ' {
		return procStat{}, errors.New("stat: no state after the command name")
	}
	rest := data[i+4:]
	if j := bytes.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	ppid, err := strconv.Atoi(string(rest))
	if err != nil || ppid < 0 {
		return procStat{}, fmt.Errorf("stat: parent %q: not a process id", rest)
	}
	return procStat{ppid: ppid, state: data[i+2]}, nil
}

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(data)
}

// listPIDs returns the processes in /proc.
func listPIDs() ([]int, error) {
	f, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// descendants returns the live processes below root, by the parents /proc gives,
// parents before their children.
func descendants(root int) []int {
	pids, _ := listPIDs()
	children := make(map[int][]int)
	for _, pid := range pids {
		if st, err := readStat(pid); err == nil && !st.gone() {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	var below []int
	seen := map[int]bool{root: true}
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if !seen[c] {
				seen[c] = true
				below = append(below, c)
				queue = append(queue, c)
			}
		}
	}
	return below
}

// signalChecked sends sig to pid if check, asked after pid is pinned, says it is one
// to signal. The pin is a pidfd: check reads /proc/<pid> of the process the pidfd
// holds, or, if that one has ended and its pid gone to another since, of the other —
// which the signal, sent through the pidfd, then misses. So a pid reused between the
// listing and the signal is never hit. Where the kernel has no pidfds (before 5.3) it
// falls back to kill(2) after check, with that small window. It returns whether it
// signalled a live process.
func signalChecked(pid int, sig syscall.Signal, check func(pid int) bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, syscall.ENOSYS) {
		return check(pid) && syscall.Kill(pid, sig) == nil
	}
	if err != nil {
		return false // gone
	}
	defer unix.Close(fd)
	if !check(pid) {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// alive reports whether pid is a process that has not ended.
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && !st.gone()
}

// environHas reports whether process pid's environment holds an entry starting with
// prefix. Reading another user's needs root (or CAP_SYS_PTRACE): a worker not running
// as root reads only its own user's, which its tasks are.
func environHas(pid int, prefix string) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(data, []byte{0}) {
		if bytes.HasPrefix(kv, []byte(prefix)) {
			return true
		}
	}
	return false
}

// cmdline returns process pid's arguments.
func cmdline(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(data) == 0 {
		return nil
	}
	var args []string
	for a := range bytes.SplitSeq(bytes.TrimSuffix(data, []byte{0}), []byte{0}) {
		args = append(args, string(a))
	}
	return args
}
