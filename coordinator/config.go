package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"
)

// ConfigNode is a piece of configuration held in one node: read it, write it, or watch
// it change. (The Session's own connection settings are Config.)
//
// Watch re-arms its watch after every notification and re-reads the node after every
// reconnection and session expiry, so the last value is never missed; while the Session
// is suspended or lost, the last value sent may be stale. A ConfigNode is safe for
// concurrent use.
//
//	cn := coordinator.NewConfigNode(s, "/app/config")
//	for data := range cn.Watch(ctx) {
//		if data == nil {
//			continue // no config yet
//		}
//		apply(data)
//	}
type ConfigNode struct {
	s    *Session
	path string
}

// NewConfigNode returns the configuration node at path.
func NewConfigNode(s *Session, path string) *ConfigNode { return &ConfigNode{s: s, path: path} }

// Path returns the node's path.
func (c *ConfigNode) Path() string { return c.path }

// Get returns the node's data, or nil if the node does not exist (an existing node's
// data is never nil). It waits out connection losses until ctx ends.
func (c *ConfigNode) Get(ctx context.Context) ([]byte, error) {
	for {
		data, _, err := c.s.Conn().Get(c.path)
		switch {
		case err == nil:
			return nonNil(data), nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, nil
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return nil, fmt.Errorf("coordinator: get %s: %w", c.path, err)
		}
	}
}

// Set writes data to the node, creating it and its parents if missing. It waits out
// connection losses until ctx ends.
func (c *ConfigNode) Set(ctx context.Context, data []byte) error {
	for {
		err := putNode(ctx, c.s, c.path, data)
		if err == nil {
			return nil
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("coordinator: set %s: %w", c.path, err)
		}
	}
}

// Watch sends the node's current value (nil while the node does not exist), then each
// new value. A reader that falls behind misses intermediate values, never the latest:
// only the newest one waits to be received. The channel is closed when ctx ends or the
// Session closes.
func (c *ConfigNode) Watch(ctx context.Context) <-chan []byte {
	return followTree(ctx, c.s, c.path, 0, func(tc *TreeCache) []byte {
		data, _, _ := tc.Get(c.path)
		return data
	}, sameValue)
}

// sameValue compares node values, telling "no node" (nil) from empty data.
func sameValue(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// putNode sets path's data, creating the node and its parents if missing.
func putNode(ctx context.Context, s *Session, path string, data []byte) error {
	for {
		_, err := s.Conn().Set(path, data, -1)
		if !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		if err := s.MakeDirs(ctx, parentPath(path)); err != nil {
			return err
		}
		_, err = s.Conn().Create(path, data, 0, s.ACLFor(path))
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		// Created meanwhile by someone else: set it.
	}
}

// ConfigReadyKey is the name of the ready flag under a ConfigSet's directory; it cannot
// be used as a key.
const ConfigReadyKey = "ready"

// ConfigSet is a configuration spread over several nodes, dir/<key>, updated together
// with the ZooKeeper recipe's ready flag, dir/ready: a writer deletes the flag, writes the
// keys, then creates the flag again; a reader reads only while the flag stands, and
// starts over if it was deleted or re-created meanwhile (its creation zxid changed), so
// a reader never returns a half-written configuration.
//
// Writers must be serialised by the caller, for instance with a Lock: two writers at
// once may interleave their keys. (Write detects some of this and fails, not all.)
//
// A ConfigSet is safe for concurrent use. Read and Write wait out connection losses
// until their ctx ends. While a writer is between its steps, Read waits.
//
//	cs := coordinator.NewConfigSet(s, "/app/db")
//	// the writer, holding the config lock:
//	err := cs.Write(ctx, map[string][]byte{"primary": []byte("db1:3306"), "replica": []byte("db2:3306")})
//	// any reader:
//	values, err := cs.Read(ctx)
type ConfigSet struct {
	s   *Session
	dir string

	mu sync.Mutex
	// ready is the watch armed on dir/ready by the last Read that armed one, shared by
	// the Reads after it until it fires, so reads in a loop do not pile up watches
	// (the client cannot remove one). Guarded by mu.
	ready <-chan zk.Event
}

// NewConfigSet returns the configuration set under dir.
func NewConfigSet(s *Session, dir string) *ConfigSet { return &ConfigSet{s: s, dir: dir} }

// Write replaces the values of the given keys (other keys are left as they are): it
// deletes the ready flag, writes every key (creating dir and the nodes as needed), then
// creates the flag. Keys must be node names other than ConfigReadyKey.
func (cs *ConfigSet) Write(ctx context.Context, values map[string][]byte) error {
	keys := slices.Sorted(maps.Keys(values))
	for _, k := range keys {
		if err := checkConfigKey(k); err != nil {
			return fmt.Errorf("coordinator: write %s: %w", cs.dir, err)
		}
	}
	ready := childPath(cs.dir, ConfigReadyKey)
	if err := cs.retry(ctx, "delete "+ready, func() error {
		err := cs.s.Conn().Delete(ready, -1)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("coordinator: write %s: %w", cs.dir, err)
		}
		p := childPath(cs.dir, k)
		if err := cs.retry(ctx, "write "+p, func() error { return putNode(ctx, cs.s, p, values[k]) }); err != nil {
			return err
		}
	}
	retried := false
	return cs.retry(ctx, "create "+ready, func() error {
		_, err := cs.s.Conn().Create(ready, nil, 0, cs.s.ACLFor(ready))
		switch {
		case errors.Is(err, zk.ErrNodeExists) && retried:
			return nil // our create before the connection loss went through
		case errors.Is(err, zk.ErrNodeExists):
			return fmt.Errorf("%w: another writer at the same time: writers must be serialised", err)
		}
		retried = true
		return err
	})
}

// retry runs step until it succeeds, waiting out connection losses.
func (cs *ConfigSet) retry(ctx context.Context, what string, step func() error) error {
	for {
		err := step()
		if err == nil {
			return nil
		}
		if err := cs.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("coordinator: %s: %w", what, err)
		}
	}
}

// errConfigChanged says a Read saw the configuration change under it and must start over.
var errConfigChanged = errors.New("coordinator: config changed during the read")

// Read returns every key and its value, as one writer wrote them. It waits until the
// ready flag exists, reads the keys, then checks that the flag's watch has not fired and
// that the flag is still the one it saw (same creation zxid); if anything changed it
// starts over. It fails when ctx ends or the Session closes.
func (cs *ConfigSet) Read(ctx context.Context) (map[string][]byte, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("coordinator: read %s: %w", cs.dir, err)
		}
		values, err := cs.tryRead(ctx)
		switch {
		case err == nil:
			return values, nil
		case errors.Is(err, errConfigChanged):
			continue
		}
		if err := cs.s.WaitToRetry(ctx, err); err != nil {
			return nil, fmt.Errorf("coordinator: read %s: %w", cs.dir, err)
		}
	}
}

// tryRead is one attempt of Read; errConfigChanged means try again.
func (cs *ConfigSet) tryRead(ctx context.Context) (map[string][]byte, error) {
	conn := cs.s.Conn()
	watch, stat, err := cs.watchReady()
	if err != nil {
		return nil, err
	}
	if stat == nil {
		// Not ready (being written, or never written): wait for the flag.
		select {
		case <-watch:
			return nil, errConfigChanged
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-cs.s.Closed():
			return nil, ErrClosed
		}
	}
	names, _, err := conn.Children(cs.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, errConfigChanged
	}
	if err != nil {
		return nil, err
	}
	values := make(map[string][]byte, len(names))
	for _, k := range names {
		if k == ConfigReadyKey {
			continue
		}
		data, _, err := conn.Get(childPath(cs.dir, k))
		if errors.Is(err, zk.ErrNoNode) {
			return nil, errConfigChanged
		}
		if err != nil {
			return nil, err
		}
		values[k] = nonNil(data)
	}
	if fired(watch) {
		return nil, errConfigChanged
	}
	ok, now, err := conn.Exists(childPath(cs.dir, ConfigReadyKey))
	if err != nil {
		return nil, err
	}
	if !ok || now.Czxid != stat.Czxid || fired(watch) {
		return nil, errConfigChanged
	}
	return values, nil
}

// watchReady returns a watch on the ready flag that has not fired, armed before the
// returned stat was read, and the flag's stat (nil if it does not exist).
func (cs *ConfigSet) watchReady() (<-chan zk.Event, *zk.Stat, error) {
	conn := cs.s.Conn()
	ready := childPath(cs.dir, ConfigReadyKey)
	cs.mu.Lock()
	w := cs.ready
	cs.mu.Unlock()
	if w != nil && !fired(w) {
		ok, stat, err := conn.Exists(ready)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			stat = nil
		}
		return w, stat, nil
	}
	ok, stat, w, err := conn.ExistsW(ready)
	if err != nil {
		return nil, nil, err
	}
	cs.mu.Lock()
	cs.ready = w
	cs.mu.Unlock()
	if !ok {
		stat = nil
	}
	return w, stat, nil
}

// fired says a watch has fired. The client sends a watch's one event and then closes
// its channel, so every caller sees it fired, not only the one receiving the event.
func fired(w <-chan zk.Event) bool {
	select {
	case <-w:
		return true
	default:
		return false
	}
}

func checkConfigKey(k string) error {
	if k == ConfigReadyKey {
		return fmt.Errorf("key %q is reserved for the ready flag", k)
	}
	if err := checkNodeName(k); err != nil {
		return fmt.Errorf("key %q: %w", k, err)
	}
	return nil
}
