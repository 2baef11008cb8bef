package coordinator

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/backoff"
)

// memberPrefix starts every member node's name: dir/m-<token>-<sequence>. The token,
// random per Member, lets a Member find the node it created when the reply to its create
// was lost with the connection (Curator's protected mode), instead of leaving a ghost
// member behind.
const memberPrefix = "m-"

// Member is this process's membership of a group: an ephemeral sequential node under
// the group's directory (Curator's GroupMember). When the session expires the node goes
// with it; the Member then joins again under the new session, with a new name, by itself.
// If someone deletes the node while the session lives, the Member joins again too. While
// the Session is suspended the membership may or may not still stand; once it is lost,
// the member is gone until the new session re-joins.
//
// A Member is safe for concurrent use.
//
//	m, err := coordinator.JoinGroup(ctx, s, "/app/workers", []byte("10.0.0.7:7000"))
//	if err != nil {
//		return err
//	}
//	defer m.Leave(context.Background())
//	for members := range coordinator.WatchMembers(ctx, s, "/app/workers") {
//		rebalance(members)
//	}
type Member struct {
	s     *Session
	dir   string
	data  []byte
	token string // in the name of every node this Member creates

	mu   sync.Mutex
	name string // the current node's name; guarded by mu

	stop      chan struct{} // closed by Leave
	done      chan struct{} // closed when keep returns
	leaveOnce sync.Once
}

// MemberInfo is one member of a group: its node's name and data.
type MemberInfo struct {
	Name string
	Data []byte
}

// JoinGroup joins the group at dir (created if missing) with data, and keeps the
// membership until Leave or until the Session closes.
func JoinGroup(ctx context.Context, s *Session, dir string, data []byte) (*Member, error) {
	if err := checkPath(dir); err != nil {
		return nil, err
	}
	var token [8]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, fmt.Errorf("coordinator: join %s: %w", dir, err)
	}
	m := &Member{s: s, dir: dir, data: data, token: hex.EncodeToString(token[:]),
		stop: make(chan struct{}), done: make(chan struct{})}
	name, err := m.join(ctx)
	if err != nil {
		return nil, err
	}
	m.name = name
	go m.keep()
	return m, nil
}

// Name returns the name of the member's current node (it changes when the member
// re-joins after a session expiry).
func (m *Member) Name() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.name
}

// Leave stops keeping the membership and deletes the member's node. It is idempotent;
// after the Session closed it has nothing to delete and returns nil.
func (m *Member) Leave(ctx context.Context) error {
	m.leaveOnce.Do(func() { close(m.stop) })
	<-m.done
	p := childPath(m.dir, m.Name())
	for {
		ok, stat, err := m.s.Conn().Exists(p)
		if err == nil {
			if !ok || stat.EphemeralOwner != m.s.Conn().SessionID() {
				return nil
			}
			err = m.s.Conn().Delete(p, stat.Version)
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				return nil
			}
		}
		if err := m.s.WaitToRetry(ctx, err); err != nil {
			if errors.Is(err, ErrClosed) {
				return nil // the node went with the session
			}
			return fmt.Errorf("coordinator: leave %s: %w", p, err)
		}
	}
}

// join creates a member node and returns its name, waiting out connection losses until
// ctx ends.
func (m *Member) join(ctx context.Context) (string, error) {
	prefix := memberPrefix + m.token + "-"
	for {
		created, err := m.s.Conn().Create(childPath(m.dir, prefix), m.data, zk.FlagEphemeral|zk.FlagSequence, m.s.ACLFor(childPath(m.dir, prefix)))
		switch {
		case err == nil:
			return baseName(created), nil
		case errors.Is(err, zk.ErrNoNode):
			err = m.s.MakeDirs(ctx, m.dir)
		case errors.Is(err, zk.ErrConnectionClosed):
			// The node may have been created before the connection went.
			if err := m.s.WaitToRetry(ctx, err); err != nil {
				return "", fmt.Errorf("coordinator: join %s: %w", m.dir, err)
			}
			var name string
			name, err = m.findOwn(prefix)
			if err == nil && name != "" {
				return name, nil
			}
		}
		if err == nil {
			continue
		}
		if err := m.s.WaitToRetry(ctx, err); err != nil {
			return "", fmt.Errorf("coordinator: join %s: %w", m.dir, err)
		}
	}
}

// findOwn returns the name of a child of dir starting with prefix that this session
// owns, or "".
func (m *Member) findOwn(prefix string) (string, error) {
	names, _, err := m.s.Conn().Children(m.dir)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return "", err
	}
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		ok, stat, err := m.s.Conn().Exists(childPath(m.dir, name))
		if err != nil {
			return "", err
		}
		if ok && stat.EphemeralOwner == m.s.Conn().SessionID() {
			return name, nil
		}
	}
	return "", nil
}

// keep watches the member's node and joins again whenever it is gone while the Session
// is connected: after an expiry, or a delete by someone else.
func (m *Member) keep() {
	defer close(m.done)
	events, cancel := m.s.Subscribe()
	defer cancel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-m.stop:
			stop()
		case <-ctx.Done():
		}
	}()
	var watch <-chan zk.Event  // armed on the current node, until it fires
	var failures backoff.Retry // checks and re-joins that failed in a row
	for {
		retry := false // try again in a while, without waiting for an event
		gone, w, err := m.check(watch)
		if w != nil {
			watch = w
		}
		switch {
		case errors.Is(err, zk.ErrClosing):
			return
		case err != nil:
			if !IsConnLoss(err) {
				m.s.Logger().Warn("cannot watch group member", "dir", m.dir, "member", m.Name(), "err", err)
			}
			retry = true
		case gone:
			name, err := m.join(ctx)
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			if err != nil {
				m.s.Logger().Warn("cannot re-join group", "dir", m.dir, "err", err)
				retry = true
				break
			}
			m.mu.Lock()
			m.name = name
			m.mu.Unlock()
			watch = nil
			m.s.Logger().Info("re-joined group", "dir", m.dir, "member", name)
			continue
		}
		var after <-chan time.Time
		if retry {
			after = time.After(failures.Fail())
		} else {
			failures.Reset()
		}
		select {
		case <-m.stop:
			return
		case <-watch:
			watch = nil
		case ev, ok := <-events:
			if !ok || ev.State == StateClosed {
				return
			}
		case <-after:
		}
	}
}

// check reports whether the member's node is gone (or held by another session), arming
// a watch on it if watch is nil or has fired; w is the new watch, if one was armed.
func (m *Member) check(watch <-chan zk.Event) (gone bool, w <-chan zk.Event, err error) {
	p := childPath(m.dir, m.Name())
	var (
		ok   bool
		stat *zk.Stat
	)
	if watch != nil && !fired(watch) {
		ok, stat, err = m.s.Conn().Exists(p)
	} else {
		ok, stat, w, err = m.s.Conn().ExistsW(p)
	}
	if err != nil {
		return false, nil, err
	}
	return !ok || stat.EphemeralOwner != m.s.Conn().SessionID(), w, nil
}

// Members returns the members of the group at dir, in the order they joined (by their
// nodes' sequence numbers); none if dir does not exist.
func Members(ctx context.Context, s *Session, dir string) ([]MemberInfo, error) {
	for {
		members, err := readMembers(s, dir)
		if err == nil {
			return members, nil
		}
		if err := s.WaitToRetry(ctx, err); err != nil {
			return nil, fmt.Errorf("coordinator: members of %s: %w", dir, err)
		}
	}
}

func readMembers(s *Session, dir string) ([]MemberInfo, error) {
	names, _, err := s.Conn().Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	members := make([]MemberInfo, 0, len(names))
	for _, name := range names {
		if !isMemberName(name) {
			continue
		}
		data, _, err := s.Conn().Get(childPath(dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, err
		}
		members = append(members, MemberInfo{Name: name, Data: nonNil(data)})
	}
	sortMembers(members)
	return members, nil
}

// WatchMembers sends the group's members (as Members returns them), then the members
// after each change: a member joining or leaving, or changing its data. A reader that
// falls behind misses intermediate lists, never the latest: only the newest waits to be
// received. The channel is closed when ctx ends or the Session closes.
func WatchMembers(ctx context.Context, s *Session, dir string) <-chan []MemberInfo {
	return followTree(ctx, s, dir, 1, func(tc *TreeCache) []MemberInfo {
		var members []MemberInfo
		for _, name := range tc.Children(dir) {
			if data, _, ok := tc.Get(childPath(dir, name)); ok && isMemberName(name) {
				members = append(members, MemberInfo{Name: name, Data: data})
			}
		}
		sortMembers(members)
		return members
	}, func(a, b []MemberInfo) bool {
		return slices.EqualFunc(a, b, func(x, y MemberInfo) bool {
			return x.Name == y.Name && bytes.Equal(x.Data, y.Data)
		})
	})
}

// isMemberName says name is a member node's: "m-", then anything, then a sequence
// number of 10 digits.
func isMemberName(name string) bool {
	_, ok := memberSequence(name)
	return ok && strings.HasPrefix(name, memberPrefix)
}

func memberSequence(name string) (int64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	return n, err == nil && n >= 0
}

func sortMembers(members []MemberInfo) {
	slices.SortFunc(members, func(a, b MemberInfo) int {
		sa, _ := memberSequence(a.Name)
		sb, _ := memberSequence(b.Name)
		if c := cmp.Compare(sa, sb); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
