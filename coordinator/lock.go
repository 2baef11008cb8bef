package coordinator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Lock is a distributed mutual-exclusion lock: the ZooKeeper lock recipe. Each Acquire
// creates an ephemeral-sequential "lock-" node under the lock's directory; the lowest
// node holds the lock, and every other waiter watches only the node just before its
// own, so a release wakes one waiter (no herd). Waiters are served in arrival order.
//
// A Lock is safe for concurrent use and is not re-entrant: each Acquire queues a node of
// its own, so a second Acquire by the holder waits for the first hold's Release. The
// hold follows Hold's rules: it may be lost while held (Lost closes on suspension, on
// expiry, or if the node is deleted), and nothing is re-acquired after a new session.
// The directory and its parents are created when missing. The nodes are those of
// go-zk's zk.Lock and Curator's InterProcessMutex, which can share the directory.
//
//	lock := coordinator.NewLock(s, "/locks/jobs")
//	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
//	defer cancel()
//	h, err := lock.Acquire(ctx) // context.DeadlineExceeded if it is not ours in 5 s
//	if err != nil {
//		return err
//	}
//	defer h.Release(context.Background())
type Lock struct {
	s   *Session
	dir string
}

// NewLock returns the lock whose nodes live under dir. It does not touch the servers.
func NewLock(s *Session, dir string) *Lock { return &Lock{s: s, dir: dir} }

// Acquire waits until the lock is held and returns the hold. When ctx ends first, its
// node is deleted and the ctx error is returned (wrapped), so an acquire with a timeout
// is an Acquire with a deadline. Disconnections are waited out; after an expiry the
// waiter queues again under the new session. It fails with ErrClosed once the Session
// is closed.
func (l *Lock) Acquire(ctx context.Context) (*Hold, error) {
	return l.contender().acquire(ctx, true)
}

// TryAcquire takes the lock if nobody holds it or waits for it, without waiting: ok is
// false, and nothing is left behind, if someone does.
func (l *Lock) TryAcquire(ctx context.Context) (h *Hold, ok bool, err error) {
	h, err = l.contender().acquire(ctx, false)
	return h, h != nil, err
}

func (l *Lock) contender() *seqContender {
	return &seqContender{s: l.s, dir: l.dir, what: "lock", kind: seqKindLock,
		kinds: []string{seqKindLock}, blocker: blockedByPredecessor}
}

// The kinds of sequential nodes: what goes before the sequence number in their names.
const (
	seqKindLock      = "lock-"
	seqKindRead      = "read-"
	seqKindWrite     = "write-"
	seqKindCandidate = "candidate-"
)

// seqGUIDPrefix starts a protected node's name: "_c_", 32 hex digits and "-", then the
// kind and the sequence number (go-zk's and Curator's protected mode). The random part
// lets a client find its node again when the reply to its create was lost.
const seqGUIDPrefix = "_c_"

// seqEntry is one child of a queue directory, an ephemeral-sequential node.
type seqEntry struct {
	name string // the child's name
	kind string // such as seqKindLock
	seq  int64  // the sequence number the server appended
}

// parseSeqEntry parses a child's name: a ten-digit sequence number after one of kinds,
// itself alone or after a protected prefix ending in "-" ("_c_" and a random id, in
// go-zk's hex form or Curator's UUID form).
func parseSeqEntry(name string, kinds []string) (seqEntry, bool) {
	if len(name) < 10 {
		return seqEntry{}, false
	}
	seq, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return seqEntry{}, false
	}
	head := name[:len(name)-10]
	for _, kind := range kinds {
		if head == kind || strings.HasPrefix(head, seqGUIDPrefix) && strings.HasSuffix(head, "-"+kind) {
			return seqEntry{name: name, kind: kind, seq: seq}, true
		}
	}
	return seqEntry{}, false
}

// seqLine returns the children of the kinds given, in queue order.
func seqLine(children []string, kinds []string) []seqEntry {
	line := make([]seqEntry, 0, len(children))
	for _, name := range children {
		if e, ok := parseSeqEntry(name, kinds); ok {
			line = append(line, e)
		}
	}
	slices.SortFunc(line, func(a, b seqEntry) int {
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return line
}

// blockedByPredecessor: a node waits for the one just before it (locks, write locks,
// sequential elections).
func blockedByPredecessor(line []seqEntry, me int) (seqEntry, bool) {
	if me == 0 {
		return seqEntry{}, false
	}
	return line[me-1], true
}

// seqContender queues one ephemeral-sequential node in a directory and waits for its
// turn: the ZooKeeper lock recipe that Lock, RWLock and SequentialElection share. It
// serves one acquire.
type seqContender struct {
	s     *Session
	dir   string
	what  string // what is acquired, for errors: "lock", "read lock", "election"
	kind  string // the kind of node created
	kinds []string
	data  []byte
	// blocker returns the node that line[me] must see go before it may proceed, or
	// false if it may proceed now.
	blocker func(line []seqEntry, me int) (seqEntry, bool)
	// onWatch, if set, is called with the name of each node waited on (tests).
	onWatch func(name string)
	// onList, if set, is called on each listing of the directory (tests).
	onList func()
}

// acquire queues a node and, if wait, waits for its turn; if not, it gives up and
// returns nil, nil when the node would have to wait.
func (c *seqContender) acquire(ctx context.Context, wait bool) (*Hold, error) {
	guid := newSeqGUID()
	var (
		mine   string // our node's name, once known
		owner  int64  // the session that created it
		unsure bool   // a create may have been applied without our hearing of it
	)
	fail := func(err error) (*Hold, error) {
		c.abandon(guid, mine, unsure)
		return nil, fmt.Errorf("coordinator: %s %s: %w", c.what, c.dir, err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if mine == "" {
			name, err := c.enqueue(ctx, guid, unsure)
			if err != nil {
				unsure = unsure || errors.Is(err, zk.ErrConnectionClosed)
				if err := c.s.WaitToRetry(ctx, err); err != nil {
					return fail(err)
				}
				continue
			}
			mine, owner, unsure = name, c.s.conn.SessionID(), false
		}
		if c.onList != nil {
			c.onList()
		}
		children, _, err := c.s.conn.Children(c.dir)
		if err != nil {
			if err := c.s.WaitToRetry(ctx, err); err != nil {
				return fail(err)
			}
			continue
		}
		line := seqLine(children, c.kinds)
		me := slices.IndexFunc(line, func(e seqEntry) bool { return e.name == mine })
		if me < 0 {
			// Our node is gone: the session expired, or someone deleted it. Nothing
			// was held yet, so queue again.
			c.s.logger.Info("queued node gone, queueing again", "dir", c.dir, "node", mine)
			mine = ""
			continue
		}
		block, blocked := c.blocker(line, me)
		if !blocked {
			return newHold(c.s, c.dir+"/"+mine, owner), nil
		}
		if !wait {
			c.abandon(guid, mine, false)
			return nil, nil
		}
		if err := c.waitGone(ctx, block.name); err != nil {
			if err := c.s.WaitToRetry(ctx, err); err != nil {
				return fail(err)
			}
		}
	}
}

// waitGone waits until the node name is deleted, something else happens to it, or
// ctx ends (nil: look again).
func (c *seqContender) waitGone(ctx context.Context, name string) error {
	exists, _, watch, err := c.s.conn.ExistsW(c.dir + "/" + name)
	if err != nil || !exists {
		return err
	}
	if c.onWatch != nil {
		c.onWatch(name)
	}
	select {
	case <-watch:
	case <-ctx.Done():
	case <-c.s.Closed():
	}
	return nil
}

// enqueue creates our node, or finds it if an earlier create may have been applied,
// and returns its name.
func (c *seqContender) enqueue(ctx context.Context, guid string, unsure bool) (string, error) {
	if unsure {
		name, err := c.findGUID(guid)
		if err != nil || name != "" {
			return name, err
		}
	}
	prefix := c.dir + "/" + seqGUIDPrefix + guid + "-" + c.kind
	for {
		path, err := c.s.conn.Create(prefix, c.data, zk.FlagEphemeral|zk.FlagSequence, c.s.ACLFor(prefix))
		if errors.Is(err, zk.ErrNoNode) {
			if err := c.s.MakeDirs(ctx, c.dir); err != nil {
				return "", err
			}
			continue
		}
		if err != nil {
			return "", err
		}
		return path[strings.LastIndexByte(path, '/')+1:], nil
	}
}

// findGUID returns the name of our node, "" if there is none.
func (c *seqContender) findGUID(guid string) (string, error) {
	children, _, err := c.s.conn.Children(c.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, name := range children {
		if strings.HasPrefix(name, seqGUIDPrefix+guid+"-") {
			return name, nil
		}
	}
	return "", nil
}

// abandon deletes our node: mine if known, else the one with our guid if a create may
// have been applied. When the connection is down it does so in the background.
func (c *seqContender) abandon(guid, mine string, unsure bool) {
	if mine == "" && !unsure {
		return
	}
	del := func() error {
		name := mine
		if name == "" {
			found, err := c.findGUID(guid)
			if err != nil || found == "" {
				return err
			}
			name = found
		}
		// The guid makes the node ours whatever its version: no one else knows it.
		if err := c.s.conn.Delete(c.dir+"/"+name, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	err := del()
	switch {
	case err == nil, errors.Is(err, zk.ErrClosing):
	case IsConnLoss(err):
		deleteInBackground(c.s, c.dir, del)
	default:
		c.s.logger.Warn("cannot delete queued node", "dir", c.dir, "node", mine, "err", err)
	}
}

// newSeqGUID returns 32 random hex digits.
func newSeqGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
