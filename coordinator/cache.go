package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/backoff"
)

// TreeCache keeps a local copy of a subtree current: the data, stat and children of
// root and of every node below it, through a data watch (GetW) and a children watch
// (ChildrenW) on every node it holds (Curator's TreeCache). When root does not exist the
// cache is empty and an exists watch waits for it.
//
// After every reconnection and after a session expiry it re-reads the whole subtree and
// compares each node's creation zxid, so a node deleted and re-created while the client
// was cut off is replaced (the gap Curator's TreeCache has, CURATOR-391), and watches
// lost with an expired session are armed again. While the Session is suspended or lost
// the cache keeps its last contents, which may be stale; it is current again shortly
// after the next StateConnected.
//
// A TreeCache is safe for concurrent use. Its contents change from one moment to the
// next: two calls may see different states. Returned slices must not be modified.
//
//	tc, err := coordinator.NewTreeCache(ctx, s, "/services")
//	if err != nil {
//		return err
//	}
//	defer tc.Close()
//	for {
//		for _, p := range tc.Paths() {
//			data, _, _ := tc.Get(p)
//			fmt.Println(p, string(data))
//		}
//		select {
//		case <-tc.Changes():
//		case <-tc.Done():
//			return nil
//		}
//	}
type TreeCache struct {
	s        *Session
	root     string
	maxDepth int // levels below root that are kept; <0 for all

	mu    sync.RWMutex
	nodes map[string]*treeNode // guarded by mu; written only by the run goroutine

	// changes holds a token after each batch of updates (capacity 1, so signals
	// coalesce: a reader learns "something changed", then reads the cache).
	changes chan struct{}
	// fired carries fired watches from their forwarders to run.
	fired *queue[firedWatch]

	// Owned by the goroutine that builds and then runs the cache; no lock.
	armed     map[watchKey]uint64 // watches believed armed, by token
	nextToken uint64
	dirty     map[string]refresh // nodes to re-read, and what of them

	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when run returns
	closeOnce sync.Once
}

type treeNode struct {
	data     []byte
	stat     zk.Stat
	children map[string]struct{} // names of the children held in the cache
}

// refresh says what of a node to re-read.
type refresh uint8

const (
	refreshData     refresh = 1 << iota // its data and stat
	refreshChildren                     // its children list
	refreshDeep                         // every node below it too
	refreshLoad                         // load it even if it is not held yet (its parent lists it)

	refreshAll = refreshData | refreshChildren | refreshDeep
)

type watchKind uint8

const (
	dataWatch watchKind = iota
	childWatch
	existWatch
)

type watchKey struct {
	path string
	kind watchKind
}

type firedWatch struct {
	key   watchKey
	token uint64
	ev    zk.Event
}

// NewTreeCache reads the subtree at root and returns once the first full read is done,
// or fails when ctx ends or the Session closes first. ctx bounds the initial read only:
// the cache stays current until Close or until the Session closes.
func NewTreeCache(ctx context.Context, s *Session, root string) (*TreeCache, error) {
	return newTreeCache(ctx, s, root, -1)
}

// newTreeCache is NewTreeCache holding only maxDepth levels below root (<0: all). At
// depth 0 the cache holds the data of root alone and sets no children watches.
func newTreeCache(ctx context.Context, s *Session, root string, maxDepth int) (*TreeCache, error) {
	if err := checkPath(root); err != nil {
		return nil, err
	}
	tc := &TreeCache{
		s:        s,
		root:     root,
		maxDepth: maxDepth,
		nodes:    make(map[string]*treeNode),
		changes:  make(chan struct{}, 1),
		fired:    newQueue[firedWatch](),
		armed:    make(map[watchKey]uint64),
		dirty:    map[string]refresh{root: refreshAll | refreshLoad},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	events, cancel := s.Subscribe()
	<-events // the state as of now: the read below starts from it
	for {
		err := tc.process()
		if err == nil {
			break
		}
		if errors.Is(err, zk.ErrClosing) {
			err = ErrClosed
		}
		if !IsConnLoss(err) {
			cancel()
			close(tc.done)
			return nil, fmt.Errorf("coordinator: cache %s: %w", root, err)
		}
		if err := awaitConnected(ctx, s, events); err != nil {
			cancel()
			close(tc.done) // ends the forwarders of the watches armed so far
			return nil, fmt.Errorf("coordinator: cache %s: %w", root, err)
		}
	}
	go tc.run(events, cancel)
	return tc, nil
}

// Get returns the data and stat of path as last read, and whether the cache holds it.
func (tc *TreeCache) Get(path string) (data []byte, stat *zk.Stat, ok bool) {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	n := tc.nodes[path]
	if n == nil {
		return nil, nil, false
	}
	st := n.stat
	return n.data, &st, true
}

// Children returns the names of path's children, sorted; nil if the cache does not
// hold path.
func (tc *TreeCache) Children(path string) []string {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	n := tc.nodes[path]
	if n == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(n.children))
}

// Paths returns the path of every node the cache holds, sorted.
func (tc *TreeCache) Paths() []string {
	tc.mu.RLock()
	defer tc.mu.RUnlock()
	return slices.Sorted(maps.Keys(tc.nodes))
}

// Changes returns a channel that receives a value after each update of the cache.
// Signals coalesce: a reader that falls behind gets one, then finds the latest state.
// The channel is never closed; Done says when the cache has stopped.
func (tc *TreeCache) Changes() <-chan struct{} { return tc.changes }

// Done is closed when the cache stops: on Close, or when the Session closes.
func (tc *TreeCache) Done() <-chan struct{} { return tc.done }

// Close stops the cache and waits for its goroutines. It is idempotent; the contents
// stay readable, frozen.
func (tc *TreeCache) Close() {
	tc.closeOnce.Do(func() { close(tc.stop) })
	<-tc.done
}

// run applies fired watches and session changes until Close or the Session closes.
func (tc *TreeCache) run(events <-chan Event, cancel func()) {
	defer close(tc.done)
	defer cancel()
	var retryC <-chan time.Time
	var retry backoff.Retry // failed reads in a row
	for {
		select {
		case <-tc.stop:
			return
		case ev, ok := <-events:
			if !ok || ev.State == StateClosed {
				return
			}
			if ev.State != StateConnected {
				continue
			}
			// Reconnected, or a new session: re-read everything (watches may have fired
			// unseen, or, after an expiry, be gone).
			tc.dirty[tc.root] |= refreshAll | refreshLoad
		case <-tc.fired.ready():
			for _, fw := range tc.fired.drain() {
				tc.onFired(fw)
			}
		case <-retryC:
			retryC = nil
		}
		err := tc.process()
		switch {
		case err == nil:
			retry.Reset()
		case retryC == nil:
			// On a connection loss the next StateConnected triggers a full re-read;
			// the timer covers errors that come with the session still connected, put
			// off by the backoff of the failures in a row.
			wait := retry.Fail()
			if !IsConnLoss(err) {
				tc.s.Logger().Warn("cache read failed", "path", tc.root, "err", err, "retry_in", wait.Round(time.Millisecond))
			}
			retryC = time.After(wait)
		}
	}
}

// onFired notes that a watch fired and marks what it says changed for re-reading.
func (tc *TreeCache) onFired(fw firedWatch) {
	if tc.armed[fw.key] == fw.token {
		delete(tc.armed, fw.key)
	}
	what := refreshData
	switch {
	case fw.ev.Type == zk.EventNotWatching || fw.ev.Type == zk.EventNodeDeleted:
		what = refreshData | refreshChildren
	case fw.key.kind == childWatch:
		what = refreshChildren
	}
	if fw.key.path == tc.root {
		what |= refreshLoad
	}
	tc.dirty[fw.key.path] |= what
}

// process re-reads every dirty node, shallowest first. On an error the nodes not yet
// re-read stay dirty (the failed one to be re-read whole).
func (tc *TreeCache) process() error {
	changed := false
	defer func() {
		if changed {
			select {
			case tc.changes <- struct{}{}:
			default:
			}
		}
	}()
	for len(tc.dirty) > 0 {
		batch := slices.SortedFunc(maps.Keys(tc.dirty), cmpDepthFirst)
		for _, p := range batch {
			what := tc.dirty[p]
			delete(tc.dirty, p)
			c, err := tc.refresh(p, what)
			changed = changed || c
			if err != nil {
				tc.dirty[p] |= what | refreshAll
				return err
			}
		}
	}
	return nil
}

// cmpDepthFirst orders paths by depth, then by name: parents before children.
func cmpDepthFirst(a, b string) int {
	if da, db := strings.Count(a, "/"), strings.Count(b, "/"); da != db {
		return da - db
	}
	return strings.Compare(a, b)
}

// refresh re-reads what of path says, and reports whether the cache changed.
func (tc *TreeCache) refresh(path string, what refresh) (changed bool, err error) {
	tc.mu.RLock()
	n := tc.nodes[path]
	tc.mu.RUnlock()
	if n == nil {
		if what&refreshLoad == 0 {
			// Gone from the cache since it was marked: its parent's listing decides
			// whether it comes back.
			return false, nil
		}
		what |= refreshAll
	}
	if what&refreshData != 0 {
		data, stat, err := tc.readData(path)
		if err != nil {
			return false, err
		}
		if stat == nil {
			return tc.remove(path), nil
		}
		if n == nil || n.stat.Czxid != stat.Czxid {
			what |= refreshAll // new, or deleted and re-created: read it whole
		}
		changed = tc.store(path, data, stat)
	}
	if what&refreshChildren == 0 || (tc.maxDepth >= 0 && tc.depth(path) >= tc.maxDepth) {
		return changed, nil
	}
	c, err := tc.refreshChildren(path, what)
	return changed || c, err
}

// refreshChildren re-reads the children of path (held in the cache), loads the new
// ones, drops the gone ones and, for refreshDeep, re-reads the others too.
func (tc *TreeCache) refreshChildren(path string, what refresh) (changed bool, err error) {
	names, stat, err := tc.readChildren(path)
	if err != nil {
		return false, err
	}
	tc.mu.Lock()
	n := tc.nodes[path]
	switch {
	case n == nil:
		tc.mu.Unlock()
		return false, nil
	case stat == nil || stat.Czxid != n.stat.Czxid:
		// Deleted, maybe re-created, since its data was read: start over.
		tc.mu.Unlock()
		tc.dirty[path] |= refreshAll
		if path == tc.root {
			tc.dirty[path] |= refreshLoad
		}
		return false, nil
	}
	// The listing's stat is current for the children; its data fields may be newer than
	// the data held, which is then re-read (its watch fires too).
	st := n.stat
	st.Cversion, st.NumChildren, st.Pzxid = stat.Cversion, stat.NumChildren, stat.Pzxid
	if st != n.stat {
		n.stat = st
		changed = true
	}
	if stat.Mzxid != n.stat.Mzxid {
		tc.dirty[path] |= refreshData
	}
	var gone []string
	for name := range n.children {
		if !slices.Contains(names, name) {
			gone = append(gone, name)
		}
	}
	have := maps.Clone(n.children)
	tc.mu.Unlock()
	for _, name := range gone {
		changed = tc.remove(childPath(path, name)) || changed
	}
	for _, name := range names {
		_, held := have[name]
		if held && what&refreshDeep == 0 {
			continue
		}
		c, err := tc.refresh(childPath(path, name), refreshAll|refreshLoad)
		changed = changed || c
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// readData reads path's data, arming a data watch unless one is armed. A nil stat says
// the node does not exist; for root an exists watch then waits for its creation.
func (tc *TreeCache) readData(path string) ([]byte, *zk.Stat, error) {
	conn := tc.s.Conn()
	var (
		data []byte
		stat *zk.Stat
		err  error
	)
	key := watchKey{path, dataWatch}
	if _, armed := tc.armed[key]; armed {
		data, stat, err = conn.Get(path)
	} else {
		var w <-chan zk.Event
		data, stat, w, err = conn.GetW(path)
		if err == nil {
			tc.arm(key, w)
		}
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		if path != tc.root {
			return nil, nil, nil
		}
		return tc.watchRootCreation()
	case err != nil:
		return nil, nil, err
	}
	return nonNil(data), stat, nil
}

// watchRootCreation arms an exists watch on the missing root. If root was created
// meanwhile, the watch armed is a data watch and root is read.
func (tc *TreeCache) watchRootCreation() ([]byte, *zk.Stat, error) {
	conn := tc.s.Conn()
	if _, armed := tc.armed[watchKey{tc.root, existWatch}]; armed {
		return nil, nil, nil
	}
	exists, _, w, err := conn.ExistsW(tc.root)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		tc.arm(watchKey{tc.root, existWatch}, w)
		return nil, nil, nil
	}
	tc.arm(watchKey{tc.root, dataWatch}, w)
	data, stat, err := conn.Get(tc.root)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil, nil // deleted again: the data watch fires
	}
	if err != nil {
		return nil, nil, err
	}
	return nonNil(data), stat, nil
}

// readChildren lists path's children, arming a children watch unless one is armed. A
// nil stat says the node does not exist.
func (tc *TreeCache) readChildren(path string) ([]string, *zk.Stat, error) {
	conn := tc.s.Conn()
	var (
		names []string
		stat  *zk.Stat
		err   error
	)
	key := watchKey{path, childWatch}
	if _, armed := tc.armed[key]; armed {
		names, stat, err = conn.Children(path)
	} else {
		var w <-chan zk.Event
		names, stat, w, err = conn.ChildrenW(path)
		if err == nil {
			tc.arm(key, w)
		}
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	}
	return names, stat, nil
}

// arm records a watch and starts its forwarder, which hands the watch's one event to
// run, or ends with the cache.
func (tc *TreeCache) arm(key watchKey, w <-chan zk.Event) {
	tc.nextToken++
	token := tc.nextToken
	tc.armed[key] = token
	go func() {
		select {
		case ev := <-w:
			tc.fired.push(firedWatch{key: key, token: token, ev: ev})
		case <-tc.done:
		}
	}()
}

// store sets path's data and stat, adding the node (under its parent) if it is new.
func (tc *TreeCache) store(path string, data []byte, stat *zk.Stat) bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	n := tc.nodes[path]
	if n == nil {
		if path != tc.root {
			parent := tc.nodes[parentPath(path)]
			if parent == nil {
				return false // its parent went meanwhile: so did it, or it comes back with it
			}
			parent.children[baseName(path)] = struct{}{}
		}
		tc.nodes[path] = &treeNode{data: data, stat: *stat, children: make(map[string]struct{})}
		return true
	}
	if n.stat == *stat && bytes.Equal(n.data, data) {
		return false
	}
	n.data, n.stat = data, *stat
	return true
}

// remove drops path and everything below it from the cache.
func (tc *TreeCache) remove(path string) bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.nodes[path] == nil {
		return false
	}
	tc.removeLocked(path)
	if path != tc.root {
		if parent := tc.nodes[parentPath(path)]; parent != nil {
			delete(parent.children, baseName(path))
		}
	}
	return true
}

func (tc *TreeCache) removeLocked(path string) {
	n := tc.nodes[path]
	if n == nil {
		return
	}
	for name := range n.children {
		tc.removeLocked(childPath(path, name))
	}
	delete(tc.nodes, path)
}

// depth is how many levels path is below root.
func (tc *TreeCache) depth(path string) int {
	if path == tc.root {
		return 0
	}
	return strings.Count(path[len(strings.TrimSuffix(tc.root, "/")):], "/")
}

// NodeCache keeps the data and stat of one node current through a data watch, or an
// exists watch while the node is absent (Curator's NodeCache). It re-reads the node after
// every reconnection and after a session expiry, so it never keeps a value older than the
// last one it could have seen. While the Session is suspended or lost it keeps its last
// value, which may be stale. The stat is as of the node's last data change: children
// come and go without a re-read.
//
// A NodeCache is safe for concurrent use.
//
//	nc, err := coordinator.NewNodeCache(ctx, s, "/app/feature-flags")
//	if err != nil {
//		return err
//	}
//	defer nc.Close()
//	for {
//		data, _, ok := nc.Get()
//		apply(data, ok)
//		select {
//		case <-nc.Changes():
//		case <-nc.Done():
//			return nil
//		}
//	}
type NodeCache struct {
	tc *TreeCache
}

// NewNodeCache reads the node at path and returns once it has, or fails when ctx ends or
// the Session closes first. ctx bounds the initial read only: the cache stays current
// until Close or until the Session closes.
func NewNodeCache(ctx context.Context, s *Session, path string) (*NodeCache, error) {
	tc, err := newTreeCache(ctx, s, path, 0)
	if err != nil {
		return nil, err
	}
	return &NodeCache{tc: tc}, nil
}

// Get returns the node's data and stat as last read; ok is false while the node does
// not exist. The data must not be modified.
func (nc *NodeCache) Get() (data []byte, stat *zk.Stat, ok bool) { return nc.tc.Get(nc.tc.root) }

// Changes returns a channel that receives a value after each update (coalesced: a
// reader that falls behind gets one signal, then reads the latest value). It is never
// closed; Done says when the cache has stopped.
func (nc *NodeCache) Changes() <-chan struct{} { return nc.tc.Changes() }

// Done is closed when the cache stops: on Close, or when the Session closes.
func (nc *NodeCache) Done() <-chan struct{} { return nc.tc.Done() }

// Close stops the cache and waits for its goroutines. It is idempotent.
func (nc *NodeCache) Close() { nc.tc.Close() }

// followTree runs a cache of root (maxDepth levels) in the background and sends
// snap(cache) on the returned channel: first the state after the initial read, then the
// state after each change that snap tells apart (equal), keeping only the latest value
// pending for a slow reader. The channel is closed when ctx ends or the Session closes
// (or the initial read fails, which is logged).
func followTree[T any](ctx context.Context, s *Session, root string, maxDepth int,
	snap func(*TreeCache) T, equal func(a, b T) bool) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		tc, err := newTreeCache(ctx, s, root, maxDepth)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				s.Logger().Warn("cannot watch", "path", root, "err", err)
			}
			return
		}
		defer tc.Close()
		pending, have := snap(tc), true
		var last T
		sent := false // last is what the reader has
		for {
			var send chan<- T
			if have {
				send = out
			}
			select {
			case <-ctx.Done():
				return
			case <-tc.Done():
				return
			case <-tc.Changes():
				if v := snap(tc); !sent || !equal(v, last) {
					pending, have = v, true
				} else {
					have = false // back to what the reader has
				}
			case send <- pending:
				last, have, sent = pending, false, true
			}
		}
	}()
	return out
}

// awaitConnected waits a moment (the Session may not have noticed the loss yet), then
// until the Session is connected; events is a subscription whose events it consumes.
// It fails when ctx ends or the Session closes.
func awaitConnected(ctx context.Context, s *Session, events <-chan Event) error {
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.Closed():
		return ErrClosed
	case <-t.C:
	}
	for s.State() != StateConnected {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok || ev.State == StateClosed {
				return ErrClosed
			}
		}
	}
	return nil
}

// nonNil makes an existing node's empty data non-nil, so nil can mean "no node".
func nonNil(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}
