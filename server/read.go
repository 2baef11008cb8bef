package server

import (
	"strings"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/watch"
	"github.com/paddock/paddock/server/wire"
)

// answerFromTree answers a request that does not go through the log: reads, watch
// management, auth, ping, sync, and requests refused at decoding. The caller holds the
// tree lock (read or write), so the answer and any watch it sets see one state.
func (c *conn) answerFromTree(r *request) {
	s := c.s
	zxid := s.tree.LastZxid()
	switch {
	case r.op == wire.OpAuth || r.op == wire.OpSASL || r.err == wire.ErrSessionClosedRequireSASL:
		zxid = 0 // ZooKeeper answers auth, sasl and a request enforce.auth refuses with zxid 0
	case r.err == wire.ErrUnimplemented:
		zxid = -1 // and an unknown opcode with zxid -1, as it never reached the pipeline
	}
	code, body := r.err, wire.Record(nil)
	if code == wire.OK {
		var err error
		body, err = c.read(r)
		code = s.codeFor(err, r.op)
	}
	if code != wire.OK && r.op == wire.OpSASL {
		// ZooKeeper follows a failed sasl's error header with a null token.
		c.send(func(e *wire.Encoder) {
			h := wire.ReplyHeader{Xid: r.xid, Zxid: zxid, Err: code}
			h.Encode(e)
			(&wire.SASLRequest{}).Encode(e)
		})
	} else if code == wire.ErrMarshallingError && r.op == wire.OpMultiRead {
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
	case wire.OpPing, wire.OpAuth, wire.OpCloseSession: // closeSession: a read-only session's (readOnlyRequest)
		return nil, nil
	case wire.OpSASL:
		return r.rec, nil // the token saslStep made
	case wire.OpSync:
		return &wire.PathRecord{Path: r.rec.(*wire.PathRecord).Path}, nil
	case wire.OpReconfig:
		data, st := s.tree.Get(datatree.ConfigPath).DataStat()
		return &wire.GetDataResponse{Data: data, Stat: st}, nil
	case wire.OpExists:
		req := r.rec.(*wire.PathWatchRequest)
		if strings.IndexByte(req.Path, 0) >= 0 {
			return nil, datatree.ErrBadArguments
		}
		n := s.tree.Get(req.Path)
		if req.Watch {
			s.watches.Add(watch.Data, req.Path, c, watch.Standard) // an exists watch is set on a missing node too
		}
		if !n.Exists() {
			return nil, datatree.ErrNoNode
		}
		return &wire.StatResponse{Stat: n.Stat()}, nil
	case wire.OpGetData:
		req := r.rec.(*wire.PathWatchRequest)
		n, err := c.readable(req.Path, r.ids, wire.PermRead)
		if err != nil {
			return nil, err
		}
		data, st := n.DataStat()
		if budget := s.replyBudget(); !budget.take(bufferLen(data) + statLen) {
			return nil, c.replyTooLarge(r.op, req.Path)
		}
		if req.Watch {
			s.watches.Add(watch.Data, req.Path, c, watch.Standard)
		}
		return &wire.GetDataResponse{Data: data, Stat: st}, nil
	case wire.OpGetChildren, wire.OpGetChildren2:
		return c.getChildren(r)
	case wire.OpGetACL:
		return c.getACL(r.rec.(*wire.PathRecord).Path, r.ids)
	case wire.OpGetAllChildrenNumber:
		path := r.rec.(*wire.PathRecord).Path
		if _, err := c.readable(path, r.ids, wire.PermRead); err != nil {
			return nil, err
		}
		return &wire.IntResponse{Value: int32(s.tree.CountDescendants(path))}, nil
	case wire.OpGetEphemerals:
		prefix := r.rec.(*wire.PathRecord).Path
		paths := c.ephemerals(prefix)
		if budget := s.replyBudget(); !budget.take(stringsLen(paths)) {
			return nil, c.replyTooLarge(r.op, prefix)
		}
		return &wire.ChildrenResponse{Children: paths}, nil
	case wire.OpWhoAmI:
		// In ZooKeeper's order, not the order the connection added them.
		clients := clientInfo(zooKeeperOrder(r.ids))
		if budget := s.replyBudget(); !budget.take(identitiesLen(clients)) {
			return nil, c.replyTooLarge(r.op, "")
		}
		return &wire.WhoAmIResponse{Clients: clients}, nil
	case wire.OpMultiRead:
		return c.multiRead(r.rec.(*wire.MultiRequest), r.ids)
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

// getChildren answers getChildren and getChildren2, if the list fits a reply.
func (c *conn) getChildren(r *request) (wire.Record, error) {
	req := r.rec.(*wire.PathWatchRequest)
	n, err := c.readable(req.Path, r.ids, wire.PermRead)
	if err != nil {
		return nil, err
	}
	budget := c.s.replyBudget()
	if r.op == wire.OpGetChildren2 {
		budget.take(statLen)
	}
	children, ok := c.children(req.Path, n, &budget)
	if !ok {
		return nil, c.replyTooLarge(r.op, req.Path)
	}
	if req.Watch {
		c.s.watches.Add(watch.Child, req.Path, c, watch.Standard)
	}
	return &wire.ChildrenResponse{WithStat: r.op == wire.OpGetChildren2, Children: children, Stat: n.Stat()}, nil
}

// children lists the children of n, at path, if the list fits in budget, and takes it
// from budget. A node with more children than could fit is refused before they are
// listed.
func (c *conn) children(path string, n datatree.Node, budget *replyBudget) ([]string, bool) {
	if !budget.fits(4 + n.NumChildren()*minChildLen) {
		return nil, false
	}
	children := c.s.tree.Children(path)
	return children, budget.take(stringsLen(children))
}

// readable returns the node at path if it exists and ids hold perm on it.
func (c *conn) readable(path string, ids []wire.Identity, perm wire.Perm) (datatree.Node, error) {
	n := c.s.tree.Get(path)
	if !n.Exists() {
		return datatree.Node{}, datatree.ErrNoNode
	}
	if !c.s.cfg.SkipACL && !datatree.Allowed(n.ACL(), perm, ids) {
		return datatree.Node{}, datatree.ErrNoAuth
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

// clientInfo turns identities into whoAmI entries as AuthUtil.getClientInfos does: the
// user part for digest, the id for the others, and "" for super, which no provider
// owns (an x509 super user's super identity has the subject as its id).
func clientInfo(ids []wire.Identity) []wire.Identity {
	out := make([]wire.Identity, len(ids))
	for i, id := range ids {
		user := id.ID
		switch id.Scheme {
		case datatree.SchemeDigest:
			user, _, _ = strings.Cut(id.ID, ":")
		case datatree.SchemeSuper:
			user = ""
		}
		out[i] = wire.Identity{Scheme: id.Scheme, ID: user}
	}
	return out
}

// multiRead answers each op on its own: multiRead is not atomic and a failed op does
// not stop the others. The reply is sized op by op, stopping at the first that does not
// fit, before anything is built or any watch set; it is then encoded straight from the
// tree (multiReadReply).
func (c *conn) multiRead(m *wire.MultiRequest, ids []wire.Identity) (wire.Record, error) {
	budget := c.s.replyBudget()
	budget.take(multiHeaderLen) // the header that ends the list
	for _, op := range m.Ops {
		req := op.Req.(*wire.PathWatchRequest)
		if !budget.take(multiHeaderLen) || !c.fitMultiRead(op.Op, req.Path, ids, &budget) {
			return nil, c.replyTooLarge(wire.OpMultiRead, req.Path)
		}
	}
	for _, op := range m.Ops {
		req := op.Req.(*wire.PathWatchRequest)
		if _, err := c.readable(req.Path, ids, wire.PermRead); err != nil || !req.Watch {
			continue
		}
		t := watch.Child
		if op.Op == wire.OpGetData {
			t = watch.Data
		}
		c.s.watches.Add(t, req.Path, c, watch.Standard)
	}
	return &multiReadReply{c: c, ops: m.Ops, ids: ids, size: int(c.s.replyBudget() - budget)}, nil
}

// fitMultiRead takes the size of one multiRead result from budget and reports whether
// it fitted.
func (c *conn) fitMultiRead(op wire.Op, path string, ids []wire.Identity, budget *replyBudget) bool {
	n, err := c.readable(path, ids, wire.PermRead)
	switch {
	case err != nil:
		return budget.take(4)
	case op == wire.OpGetData:
		return budget.take(bufferLen(n.Data()) + statLen)
	}
	_, ok := c.children(path, n, budget)
	return ok
}

// multiReadReply is a multiRead's result list, encoded straight from the tree: multiRead
// sized it and answerFromTree encodes it under one tree read lock, so both see one state and
// no result is built per op. A multiRead of thousands of ops costs its reply's bytes,
// not a result record each.
type multiReadReply struct {
	c    *conn
	ops  []wire.MultiOp
	ids  []wire.Identity
	size int // encoded length, from the sizing
}

// Encode writes what wire.MultiResponse would for the results of the ops.
func (m *multiReadReply) Encode(e *wire.Encoder) {
	for _, op := range m.ops {
		req := op.Req.(*wire.PathWatchRequest)
		n, err := m.c.readable(req.Path, m.ids, wire.PermRead)
		switch {
		case err != nil:
			code := codeOf(err)
			(&wire.MultiHeader{Type: wire.OpError, Err: code}).Encode(e)
			e.Int(int32(code))
		case op.Op == wire.OpGetData:
			(&wire.MultiHeader{Type: wire.OpGetData}).Encode(e)
			data, st := n.DataStat()
			e.Buffer(data)
			st.Encode(e)
		default:
			(&wire.MultiHeader{Type: wire.OpGetChildren}).Encode(e)
			e.Strings(m.c.s.tree.Children(req.Path))
		}
	}
	(&wire.MultiHeader{Type: wire.OpError, Done: true, Err: -1}).Encode(e)
}

// Decode is never called: the server only sends this record.
func (m *multiReadReply) Decode(*wire.Decoder) {}

// replyHeadroom is how far a reply may pass MaxBuffer (jute.maxbuffer): a getData reply
// carries the node's data with 88 bytes around it (reply header, length, stat), and data
// as large as a setData frame can carry must still be readable. 1 KiB covers that, and a
// multiRead of such a node, with room to spare.
const replyHeadroom = 1 << 10

// Encoded sizes of the parts of replies, in bytes.
const (
	frameLenBytes  = 4  // a frame's length prefix
	replyHeaderLen = 16 // ReplyHeader: xid, zxid, err
	statLen        = 68 // Stat
	multiHeaderLen = 9  // MultiHeader: type, done, err
	minChildLen    = 5  // a name in a list: its length and at least one byte
)

// replyBudget is what is left of the largest reply a client may be sent, MaxBuffer plus
// replyHeadroom, as a reply is sized before it is built.
type replyBudget int

func (s *Server) replyBudget() replyBudget {
	return replyBudget(s.cfg.MaxBuffer + replyHeadroom - replyHeaderLen)
}

// take takes n bytes from the budget and reports whether they fitted.
func (b *replyBudget) take(n int) bool {
	*b -= replyBudget(n)
	return *b >= 0
}

// fits reports whether n bytes would fit, without taking them.
func (b *replyBudget) fits(n int) bool { return int(*b) >= n }

// bodyLen returns the encoded length of a reply body that may be large — a node's
// data, a list of children, a multiRead's results — and 0 for the rest, which are small.
func bodyLen(body wire.Record) int {
	switch b := body.(type) {
	case *wire.GetDataResponse:
		return bufferLen(b.Data) + statLen
	case *wire.ChildrenResponse:
		if b.WithStat {
			return stringsLen(b.Children) + statLen
		}
		return stringsLen(b.Children)
	case *multiReadReply:
		return b.size
	}
	return 0
}

func bufferLen(b []byte) int { return 4 + len(b) }

func stringsLen(v []string) int {
	n := 4
	for _, s := range v {
		n += 4 + len(s)
	}
	return n
}

func identitiesLen(ids []wire.Identity) int {
	n := 4
	for _, id := range ids {
		n += 8 + len(id.Scheme) + len(id.ID)
	}
	return n
}

// replyTooLarge counts a read refused because its reply would pass the client's limit,
// and returns the code that answers it. ZooKeeper sends such a reply, and a client
// with the same jute.maxbuffer drops the connection on it ("Packet len N is out of
// range!") and, reconnected, asks again. paddock answers MarshallingError, as ZooKeeper
// answers a request whose processing failed (FinalRequestProcessor's catch-all): the
// client gets an error for this request and keeps its connection. Logged at Debug only:
// any client can ask for such a reply, as often as it likes.
func (c *conn) replyTooLarge(op wire.Op, path string) error {
	c.s.limits.largeResponses.Add(1)
	c.s.logger.Debug("reply refused: larger than a client may read", "op", op.String(), "path", path,
		"session_id", hexID(c.sessionID.Load()), "max_reply_bytes", c.s.cfg.MaxBuffer+replyHeadroom)
	return wire.ErrMarshallingError
}

// setWatches re-registers a reconnecting client's watches. A watch whose node changed
// since the client's last zxid fires at once instead (DataTree.setWatches).
func (c *conn) setWatches(w *wire.SetWatches) {
	s := c.s
	mzxid := func(n datatree.Node) int64 { return n.Mzxid() }
	pzxid := func(n datatree.Node) int64 { return n.Pzxid() }
	for _, p := range w.Data {
		c.rearm(p, watch.Data, w.RelativeZxid, mzxid, wire.EventNodeDataChanged)
	}
	for _, p := range w.Exist {
		if s.tree.Get(p).Exists() {
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
func (c *conn) rearm(path string, t watch.Table, seen int64, changedAt func(datatree.Node) int64, changed wire.EventType) {
	switch n := c.s.tree.Get(path); {
	case !n.Exists():
		c.notify(wire.EventNodeDeleted, path, -1)
	case changedAt(n) > seen:
		c.notify(changed, path, -1)
	default:
		c.s.watches.Add(t, path, c, watch.Standard)
	}
}
