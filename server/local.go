package server

import (
	"strings"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/watch"
	"github.com/paddock/paddock/server/wire"
)

// execLocal answers a request that does not go through the log: reads, watch
// management, auth, ping, sync, and requests refused at decoding. The caller holds the
// tree lock (read or write), so the answer and any watch it sets see one state.
func (c *conn) execLocal(r *request) {
	s := c.s
	zxid := s.tree.LastZxid()
	switch {
	case r.op == wire.OpAuth || r.op == wire.OpSASL:
		zxid = 0 // ZooKeeper answers auth and sasl with zxid 0
	case r.err == wire.ErrUnimplemented:
		zxid = -1 // and an unknown opcode with zxid -1, as it never reached the pipeline
	}
	code, body := r.err, wire.Record(nil)
	if code == wire.OK {
		var err error
		body, err = c.read(r)
		code = s.codeFor(err, r.op)
	}
	if code == wire.ErrMarshallingError && r.op == wire.OpMultiRead {
		// ZooKeeper follows a refused multiRead's error header with an empty result list.
		c.send(func(e *wire.Encoder) {
			h := wire.ReplyHeader{Xid: r.xid, Zxid: zxid, Err: code}
			h.Encode(e)
			(&wire.MultiResponse{}).Encode(e)
		})
	} else {
		c.reply(r.xid, zxid, code, body)
	}
	c.responded(r, zxid)
	if r.close {
		c.closeAfterFlush()
	}
}

// read executes one local request against the tree and returns the reply body.
func (c *conn) read(r *request) (wire.Record, error) {
	s := c.s
	switch r.op {
	case wire.OpPing, wire.OpAuth:
		return nil, nil
	case wire.OpSASL:
		// Without SASL configured ZooKeeper answers with an empty (null) token and goes on.
		return &wire.SASLRequest{}, nil
	case wire.OpSync:
		return &wire.PathRecord{Path: r.rec.(*wire.PathRecord).Path}, nil
	case wire.OpReconfig:
		n := s.tree.Get(datatree.ConfigPath)
		return &wire.GetDataResponse{Data: n.Data, Stat: n.Stat()}, nil
	case wire.OpExists:
		req := r.rec.(*wire.PathWatchRequest)
		if strings.IndexByte(req.Path, 0) >= 0 {
			return nil, datatree.ErrBadArguments
		}
		n := s.tree.Get(req.Path)
		if req.Watch {
			s.watches.Add(watch.Data, req.Path, c, watch.Standard) // an exists watch is set on a missing node too
		}
		if n == nil {
			return nil, datatree.ErrNoNode
		}
		return &wire.StatResponse{Stat: n.Stat()}, nil
	case wire.OpGetData:
		req := r.rec.(*wire.PathWatchRequest)
		n, err := c.readable(req.Path, r.ids, wire.PermRead)
		if err != nil {
			return nil, err
		}
		if req.Watch {
			s.watches.Add(watch.Data, req.Path, c, watch.Standard)
		}
		return &wire.GetDataResponse{Data: n.Data, Stat: n.Stat()}, nil
	case wire.OpGetChildren, wire.OpGetChildren2:
		req := r.rec.(*wire.PathWatchRequest)
		n, err := c.readable(req.Path, r.ids, wire.PermRead)
		if err != nil {
			return nil, err
		}
		if req.Watch {
			s.watches.Add(watch.Child, req.Path, c, watch.Standard)
		}
		return &wire.ChildrenResponse{WithStat: r.op == wire.OpGetChildren2, Children: s.tree.Children(req.Path), Stat: n.Stat()}, nil
	case wire.OpGetACL:
		return c.getACL(r.rec.(*wire.PathRecord).Path, r.ids)
	case wire.OpGetAllChildrenNumber:
		path := r.rec.(*wire.PathRecord).Path
		if _, err := c.readable(path, r.ids, wire.PermRead); err != nil {
			return nil, err
		}
		return &wire.IntResponse{Value: int32(s.tree.CountDescendants(path))}, nil
	case wire.OpGetEphemerals:
		return &wire.ChildrenResponse{Children: c.ephemerals(r.rec.(*wire.PathRecord).Path)}, nil
	case wire.OpWhoAmI:
		return &wire.WhoAmIResponse{Clients: clientInfo(r.ids)}, nil
	case wire.OpMultiRead:
		return c.multiRead(r.rec.(*wire.MultiRequest), r.ids), nil
	case wire.OpSetWatches, wire.OpSetWatches2:
		c.setWatches(r.rec.(*wire.SetWatches))
		return nil, nil
	case wire.OpAddWatch:
		req := r.rec.(*wire.PathTypeRequest)
		switch wire.AddWatchMode(req.Type) {
		case wire.AddWatchPersistent, wire.AddWatchPersistentRecursive:
		default:
			return nil, wire.ErrMarshallingError // AddWatchMode.fromZooDef throws
		}
		s.watches.AddWatch(req.Path, c, wire.AddWatchMode(req.Type) == wire.AddWatchPersistentRecursive)
		return &wire.IntResponse{}, nil
	case wire.OpCheckWatches, wire.OpRemoveWatches:
		req := r.rec.(*wire.PathTypeRequest)
		if !watch.ValidType(wire.WatcherType(req.Type)) {
			return nil, wire.ErrMarshallingError // WatcherType.fromInt throws
		}
		found := false
		if r.op == wire.OpCheckWatches {
			found = s.watches.Has(req.Path, c, wire.WatcherType(req.Type))
		} else {
			found = s.watches.Remove(req.Path, c, wire.WatcherType(req.Type))
		}
		if !found {
			return nil, wire.ErrNoWatcher
		}
		return nil, nil
	}
	return nil, wire.ErrUnimplemented
}

// readable returns the node at path if it exists and ids hold perm on it.
func (c *conn) readable(path string, ids []wire.Identity, perm wire.Perm) (*datatree.Node, error) {
	n := c.s.tree.Get(path)
	if n == nil {
		return nil, datatree.ErrNoNode
	}
	if !c.s.cfg.SkipACL && !datatree.Allowed(n.ACL(), perm, ids) {
		return nil, datatree.ErrNoAuth
	}
	return n, nil
}

// getACL needs READ or ADMIN; without ADMIN, digest ids come back masked as "user:x",
// as FinalRequestProcessor does.
func (c *conn) getACL(path string, ids []wire.Identity) (wire.Record, error) {
	n, err := c.readable(path, ids, wire.PermRead|wire.PermAdmin)
	if err != nil {
		return nil, err
	}
	acl := n.ACL()
	if !c.s.cfg.SkipACL && !datatree.Allowed(n.ACL(), wire.PermAdmin, ids) {
		acl = make([]wire.ACL, len(n.ACL()))
		for i, a := range n.ACL() {
			if a.Scheme == datatree.SchemeDigest {
				user, _, _ := strings.Cut(a.ID, ":")
				a.ID = user + ":x"
			}
			acl[i] = a
		}
	}
	return &wire.GetACLResponse{ACL: acl, Stat: n.Stat()}, nil
}

// ephemerals lists the session's ephemeral paths under a plain string prefix;
// an empty prefix or "/" means all.
func (c *conn) ephemerals(prefix string) []string {
	all := c.s.tree.Ephemerals(c.sessionID.Load())
	if prefix == "" || prefix == "/" {
		return all
	}
	out := all[:0:0]
	for _, p := range all {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// clientInfo turns identities into whoAmI entries: the user part for digest, the
// address for ip, "" for super.
func clientInfo(ids []wire.Identity) []wire.Identity {
	out := make([]wire.Identity, len(ids))
	for i, id := range ids {
		user := id.ID
		if id.Scheme == datatree.SchemeDigest {
			user, _, _ = strings.Cut(id.ID, ":")
		}
		out[i] = wire.Identity{Scheme: id.Scheme, ID: user}
	}
	return out
}

// multiRead answers each op on its own: multiRead is not atomic and a failed op does
// not stop the others.
func (c *conn) multiRead(m *wire.MultiRequest, ids []wire.Identity) *wire.MultiResponse {
	out := &wire.MultiResponse{Results: make([]wire.MultiResult, len(m.Ops))}
	for i, op := range m.Ops {
		req := op.Req.(*wire.PathWatchRequest)
		n, err := c.readable(req.Path, ids, wire.PermRead)
		if err != nil {
			out.Results[i] = wire.MultiResult{Op: wire.OpError, Err: codeOf(err)}
			continue
		}
		if op.Op == wire.OpGetData {
			if req.Watch {
				c.s.watches.Add(watch.Data, req.Path, c, watch.Standard)
			}
			out.Results[i] = wire.MultiResult{Op: wire.OpGetData, Data: n.Data, Stat: n.Stat()}
			continue
		}
		if req.Watch {
			c.s.watches.Add(watch.Child, req.Path, c, watch.Standard)
		}
		out.Results[i] = wire.MultiResult{Op: wire.OpGetChildren, Children: c.s.tree.Children(req.Path)}
	}
	return out
}

// setWatches re-registers a reconnecting client's watches. A watch whose node changed
// since the client's last zxid fires at once instead (DataTree.setWatches).
func (c *conn) setWatches(w *wire.SetWatches) {
	s := c.s
	mzxid := func(n *datatree.Node) int64 { return n.Mzxid }
	pzxid := func(n *datatree.Node) int64 { return n.Pzxid }
	for _, p := range w.Data {
		c.rearm(p, watch.Data, w.RelativeZxid, mzxid, wire.EventNodeDataChanged)
	}
	for _, p := range w.Exist {
		if s.tree.Get(p) != nil {
			c.notify(wire.EventNodeCreated, p, -1)
		} else {
			s.watches.Add(watch.Data, p, c, watch.Standard)
		}
	}
	for _, p := range w.Child {
		c.rearm(p, watch.Child, w.RelativeZxid, pzxid, wire.EventNodeChildrenChanged)
	}
	for _, p := range w.Persistent {
		s.watches.AddWatch(p, c, false)
	}
	for _, p := range w.PersistentRecursive {
		s.watches.AddWatch(p, c, true)
	}
}

// rearm re-registers one data or child watch, or fires it at once: NodeDeleted if the
// node is gone, changed if its zxid (mzxid or pzxid) is past what the client has seen.
func (c *conn) rearm(path string, t watch.Table, seen int64, changedAt func(*datatree.Node) int64, changed wire.EventType) {
	switch n := c.s.tree.Get(path); {
	case n == nil:
		c.notify(wire.EventNodeDeleted, path, -1)
	case changedAt(n) > seen:
		c.notify(changed, path, -1)
	default:
		c.s.watches.Add(t, path, c, watch.Standard)
	}
}
