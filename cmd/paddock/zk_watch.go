package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"
)

func (z *zkCLI) watchCmd() *cobra.Command {
	return z.subcommand(&cobra.Command{
		Use:   "watch PATH",
		Short: "Print the node's events, one per line, until interrupted",
		Long: `Print one line per event on the node until interrupted (SIGINT, SIGTERM):

    NodeCreated PATH
    NodeDeleted PATH
    NodeDataChanged PATH
    NodeChildrenChanged PATH

The node need not exist. Watches fire once and are set again after each event, so
changes made in quick succession may show as one event, as with any ZooKeeper watch.
The watch survives reconnections; if the session expires, a new one takes over and the
changes made in between are reported as the events that explain them. "watching PATH"
on stderr says the watch is in place.`,
	}, cobra.ExactArgs(1), func(ctx context.Context, c *zkClient, cmd *cobra.Command, args []string) error {
		w := &watcher{c: c, path: args[0], out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr()}
		return w.run(ctx)
	})
}

// watcher prints the events on one node: a data or existence watch (ExistsW) and, while
// the node exists, a child watch (ChildrenW), each set again after it fires.
type watcher struct {
	c           *zkClient
	path        string
	out, errOut io.Writer

	known     nodeState // the node as last read, updated by the events printed since
	session   int64     // the session the watches in place were set in
	announced bool      // "watching PATH" went to stderr
	// created: the last event was NodeCreated, and the watches set again after it have
	// yet to compare the node with a new one (version 0, no children): a change made
	// before they were set would otherwise go unreported.
	createdData, createdChildren bool
}

// nodeState is what the watcher knows of the node.
type nodeState struct {
	exists              bool
	czxid, mzxid, pzxid int64 // 0: unknown
}

func stateOf(exists bool, s *zk.Stat) nodeState {
	if !exists || s == nil {
		return nodeState{}
	}
	return nodeState{exists: true, czxid: s.Czxid, mzxid: s.Mzxid, pzxid: s.Pzxid}
}

type existsResult struct {
	exists bool
	stat   *zk.Stat
	ch     <-chan zk.Event
}

type childrenResult struct {
	stat *zk.Stat
	ch   <-chan zk.Event
}

// run prints events until ctx ends. A watch that stops (EventNotWatching: the session
// expired) is set again once a session is up, and the difference between the node then
// and as last known is reported (resync).
func (w *watcher) run(ctx context.Context) error {
	var dataCh, childCh <-chan zk.Event
	first, resync := true, false
	for ctx.Err() == nil {
		if dataCh == nil {
			r, err := within(ctx, w.c.timeout, func() (existsResult, error) {
				ok, stat, ch, err := w.c.conn.ExistsW(w.path)
				return existsResult{ok, stat, ch}, err
			})
			if err != nil {
				if err = w.retryable(ctx, err); err != nil {
					return err
				}
				continue
			}
			now := stateOf(r.exists, r.stat)
			if sid := w.c.conn.SessionID(); sid != w.session {
				// A new session (the old one expired while the watch was being set
				// again): the other watch died with the old session, and what changed
				// in between is known only by comparing.
				if !first {
					resync = true
				}
				childCh, w.session = nil, sid
			}
			if !first {
				w.reportMissed(now, resync)
			}
			if w.createdData && r.exists && r.stat.Version > 0 {
				w.print(zk.EventNodeDataChanged)
			}
			w.createdData = false
			w.known, dataCh, first, resync = now, r.ch, false, false
		}
		if childCh == nil && w.known.exists {
			r, err := within(ctx, w.c.timeout, func() (childrenResult, error) {
				_, stat, ch, err := w.c.conn.ChildrenW(w.path)
				return childrenResult{stat, ch}, err
			})
			switch {
			case errors.Is(err, zk.ErrNoNode): // deleted meanwhile: the data watch says so
			case err != nil:
				if err = w.retryable(ctx, err); err != nil {
					return err
				}
				continue
			default:
				childCh, w.known.pzxid = r.ch, r.stat.Pzxid
				if w.createdChildren && r.stat.Cversion > 0 {
					w.print(zk.EventNodeChildrenChanged)
				}
			}
			w.createdChildren = false
		}
		if !w.announced {
			fmt.Fprintf(w.errOut, "watching %s\n", w.path)
			w.announced = true
		}
		var ev zk.Event
		fromData := false
		select {
		case <-ctx.Done():
			continue
		case ev = <-dataCh:
			dataCh, fromData = nil, true
		case ev = <-childCh:
			childCh = nil
		}
		switch {
		case ev.Type == zk.EventNotWatching:
			dataCh, childCh, resync = nil, nil, true
			fmt.Fprintf(w.errOut, "paddock zk: watch on %s stopped (%s); setting it again\n", w.path, zkWords(ev.Err))
		case fromData:
			w.apply(ev.Type)
		case ev.Type == zk.EventNodeChildrenChanged:
			w.print(ev.Type)
		} // a child watch's NodeDeleted: the data watch reports it
	}
	return nil
}

// apply prints a data or existence watch's event and notes what it says.
func (w *watcher) apply(t zk.EventType) {
	switch t {
	case zk.EventNodeCreated:
		w.known = nodeState{exists: true} // the next read fills in the zxids
		w.createdData, w.createdChildren = true, true
	case zk.EventNodeDeleted:
		w.known = nodeState{}
	case zk.EventNodeDataChanged:
		w.known.mzxid = 0
	}
	w.print(t)
}

// reportMissed prints the events that explain how the node changed from w.known to now
// between a watch firing (or stopping) and its being set again. Existence is always
// compared; data and children only after a resync, as otherwise the event that made the
// watch fire has already said so.
func (w *watcher) reportMissed(now nodeState, resync bool) {
	was := w.known
	switch {
	case was.exists && !now.exists:
		w.print(zk.EventNodeDeleted)
	case !was.exists && now.exists:
		w.print(zk.EventNodeCreated)
	case was.exists && was.czxid != 0 && was.czxid != now.czxid:
		w.print(zk.EventNodeDeleted)
		w.print(zk.EventNodeCreated)
	case was.exists && resync:
		if was.mzxid != now.mzxid {
			w.print(zk.EventNodeDataChanged)
		}
		if was.pzxid != now.pzxid {
			w.print(zk.EventNodeChildrenChanged)
		}
	}
}

var eventWords = map[zk.EventType]string{
	zk.EventNodeCreated:         "NodeCreated",
	zk.EventNodeDeleted:         "NodeDeleted",
	zk.EventNodeDataChanged:     "NodeDataChanged",
	zk.EventNodeChildrenChanged: "NodeChildrenChanged",
}

func (w *watcher) print(t zk.EventType) { fmt.Fprintf(w.out, "%s %s\n", eventWords[t], w.path) }

// retryable returns nil after waiting for a session when err is one a reconnection
// cures, else err: the end of the watch.
func (w *watcher) retryable(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return nil
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrSessionMoved),
		errors.Is(err, context.DeadlineExceeded):
	default:
		return w.c.fail(w.path, -1, err)
	}
	if err := w.c.s.WaitConnected(ctx); err != nil {
		return nil // ctx ended (or the session closed, which only we do)
	}
	t := time.NewTimer(100 * time.Millisecond) // not a hot loop while the state lags
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// lock.
