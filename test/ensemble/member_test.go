package ensemble

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// What member.mode reports besides srvr's "Mode:" values (leader, follower, observer).
const (
	modeDown       = "down"        // nothing answers on the client port
	modeNotServing = "not serving" // the member has no leader, or has not caught up with it
)

// notServing is srvr's whole answer while a member does not serve (ZooKeeper's words).
const notServing = "This ZooKeeper instance is not currently serving requests"

// errPortTaken says that another socket took one of a member's ports while it was down.
var errPortTaken = errors.New("port taken by another socket")

// member is one `paddock server --zoo-cfg` process of an ensemble. Its ports, zoo.cfg
// and data directory are fixed by newCluster, and kill and start keep them, as a
// ZooKeeper server restarted by its supervisor keeps its own. It is used from the test's
// goroutine and the nemesis's, one at a time.
type member struct {
	id      int    // myid, from 1
	dir     string // dataDir: myid and the Raft log
	logDir  string // one log file per process
	cfgPath string // zoo.cfg
	client  int    // client port on 127.0.0.1
	peer    int    // peer port on 127.0.0.1, where the member listens for the others
	binary  string
	env     []string   // PADDOCK_SERVER_* settings
	tb      testing.TB // whose cleanup kills the processes; safe for concurrent use

	child *testutil.Child   // the current process; nil before the first start
	lives []*testutil.Child // every process that came up, for checkLogs
}

// addr is the member's client address.
func (m *member) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.client)) }

// peerAddr is where the member listens for the other members.
func (m *member) peerAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.peer)) }

func (m *member) String() string { return "member " + strconv.Itoa(m.id) }

// start starts the member's process and waits until it answers srvr, serving or not.
// A port of the member may have been taken while it was down (a client's outgoing
// connection can be given any free port), so it tries a few times before giving up.
func (m *member) start() error {
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if err = m.startOnce(len(m.lives) + 1); !errors.Is(err, errPortTaken) {
			return err
		}
		time.Sleep(time.Duration(attempt) * 200 * time.Millisecond) // for the other socket to go
	}
	return err
}

func (m *member) startOnce(life int) error {
	log := filepath.Join(m.logDir, fmt.Sprintf("member-%d.%d.log", m.id, life))
	c, err := testutil.StartChild(m.tb, log, m.env, m.binary, "server", "--zoo-cfg", m.cfgPath)
	if err != nil {
		return fmt.Errorf("%s: %w", m, err)
	}
	m.child = c
	deadline := time.Now().Add(testutil.DefaultProcessStartTimeout)
	for {
		select {
		case <-c.Exited():
			tail := c.LogTail(30)
			if testutil.PortTakenAtStart(tail) {
				return fmt.Errorf("%s: %w: %s", m, errPortTaken, tail)
			}
			return fmt.Errorf("%s exited during start-up (%v); log tail:\n%s", m, c.ExitErr(), tail)
		default:
		}
		if m.mode() != modeDown {
			m.lives = append(m.lives, c)
			return nil
		}
		if time.Now().After(deadline) {
			c.Kill()
			return fmt.Errorf("%s did not answer srvr within %v; log tail:\n%s",
				m, testutil.DefaultProcessStartTimeout, c.LogTail(50))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// kill sends the process SIGKILL and waits until it is gone.
func (m *member) kill() {
	if m.child != nil {
		m.child.Kill()
	}
}

// running reports whether the member's process is alive.
func (m *member) running() bool {
	if m.child == nil {
		return false
	}
	select {
	case <-m.child.Exited():
		return false
	default:
		return true
	}
}

// mode asks srvr what the member is: leader, follower, observer, modeNotServing or
// modeDown.
func (m *member) mode() string {
	out, err := testutil.FourLetterWord(m.addr(), "srvr", time.Second)
	switch {
	case err != nil || out == "":
		return modeDown
	case strings.Contains(out, notServing):
		return modeNotServing
	}
	for line := range strings.SplitSeq(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode)
		}
	}
	return fmt.Sprintf("srvr without a Mode line: %q", out)
}

// serving reports whether the member serves clients, as leader or follower.
func (m *member) serving() bool {
	mode := m.mode()
	return mode == "leader" || mode == "follower"
}

// selfExit returns why a process of the member ended other than by SIGKILL (the tests'
// kills and the final cleanup's), or nil.
func selfExit(c *testutil.Child) error {
	select {
	case <-c.Exited():
	default:
		return nil
	}
	var exit *exec.ExitError
	if errors.As(c.ExitErr(), &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return nil
		}
	}
	return fmt.Errorf("exited on its own: %v", c.ExitErr())
}
