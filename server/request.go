package server

import (
	"time"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// request is one decoded client request. A request through the log carries its txn
// and proposal in the same allocation.
type request struct {
	xid   int32
	op    wire.Op
	kind  reqKind
	state reqState // guarded by the conn's mu once the request is in its queue
	rec   wire.Record
	ids   []wire.Identity // the connection's identities when the request arrived
	err   wire.Code       // answer with this error instead of executing (bad record, bad op)
	close bool            // close the connection after answering
	start time.Time
	// weight is how many outstanding requests the request counts as (requestWeight).
	weight int64
	res    txn.Result // a request through the log: its outcome, kept while it waits to be answered

	txn  txn.Txn
	prop proposal
}

// reqKind says how a request is answered.
type reqKind uint8

const (
	// kindRead is answered from the tree (read.go): reads, watch management, auth,
	// ping, and every request refused before it reaches the log.
	kindRead reqKind = iota
	// kindLog goes through the log (proposeWrite) and is answered once applied
	// (completeWrite): the writes, closeSession, a refused write as an error txn.
	kindLog
	// kindSync is answered once the tree holds every write acknowledged before it
	// anywhere: at once on a standalone server, after a ReadIndex round on a member
	// (txnLog.sync).
	kindSync
	// kindReconfig changes the ensemble (txnLog.reconfig); refused, it goes through the
	// log as an error txn (kindLog), as ZooKeeper's does.
	kindReconfig
)

// kindOf is the kind of a request of type op as decoded.
func kindOf(op wire.Op) reqKind {
	switch {
	case op == wire.OpSync:
		return kindSync
	case op == wire.OpReconfig:
		return kindReconfig
	case op.IsWrite():
		return kindLog
	}
	return kindRead
}

// reqState is where a request in its connection's queue stands. The queue answers in
// arrival order: a request is answered when it is first in the queue and stateReady.
//
//	stateReady                     a read, from the start
//	stateApplying ─► (answered)    through the log: answered at once when applied first in the queue (completeWrite)
//	              ─► stateReady    applied behind a request still waiting: its outcome kept in res
//	stateWaiting  ─► stateReady    a member's sync or reconfig, once its round ended (answerLater): its code in err
type reqState uint8

const (
	// stateReady: the answer can be made (answerFromTree, or replyWrite from res).
	stateReady reqState = iota
	// stateApplying: proposed to the log and not yet applied.
	stateApplying
	// stateWaiting: a round with the ensemble (a ReadIndex, a membership change) is
	// under way; writes applied meanwhile wait behind it.
	stateWaiting
)

// dispatch decodes one request frame and starts it by its kind: a request through the
// log is proposed; a sync or reconfig goes to the log's own way of answering it; any
// other request is answered now, or, if requests of this connection are still waiting,
// after them, so replies leave in request order. It returns false when the connection
// must stop reading.
func (c *conn) dispatch(body []byte) bool {
	s := c.s
	d := &c.dec
	d.Reset(body)
	var h wire.RequestHeader
	h.Decode(d)
	if d.Err() != nil {
		return false
	}
	now := time.Now()
	sid := c.sessionID.Load()
	ro := c.readOnly.Load()
	if ro && !s.ro.touch(sid, now) || !ro && !s.sessions.Touch(sid, now) {
		// The session has expired and its close is on its way through the log. As in
		// ZooKeeper the request is dropped and the connection closed; the client learns
		// of the expiry when it reconnects.
		return false
	}
	r := &request{xid: h.Xid, op: h.Op, kind: kindOf(h.Op), start: now, weight: requestWeight(len(body))}
	c.admit(r.weight)
	r.rec, r.err = decodeRequest(h.Op, d)
	switch {
	case r.err == wire.ErrUnimplemented:
		// ZooKeeper answers an opcode it does not know with Unimplemented and hangs up.
		r.close, r.kind = true, kindRead
	case r.err == wire.OK && h.Op == wire.OpAuth && !c.authenticate(r.rec.(*wire.AuthPacket)):
		r.err, r.close = wire.ErrAuthFailed, true
	case r.err == wire.OK && h.Op == wire.OpSASL:
		c.saslStep(r)
	}
	if ro {
		c.readOnlyRequest(r, sid)
	}
	if !c.mayProceed(h.Op) {
		r.err, r.close, r.kind = wire.ErrSessionClosedRequireSASL, true, kindRead
	}
	r.ids = c.identities()
	if !ro {
		c.reportActivity(now, sid)
	}
	switch r.kind {
	case kindLog:
		return c.proposeWrite(r)
	case kindReconfig:
		if r.err == wire.OK && s.cfg.ReconfigEnabled {
			return s.log.reconfig(c, r)
		}
		if r.err == wire.OK {
			r.err = wire.ErrReconfigDisabled
		}
		return c.proposeWrite(r) // refused: logged as an error txn
	case kindSync:
		if r.err == wire.OK {
			return s.log.sync(c, r)
		}
	}
	return c.answerInOrder(r)
}

// answerInOrder answers a request from the tree now, or, if requests of this
// connection are still waiting, after them, so replies leave in request order. It
// returns false when the connection must stop reading.
func (c *conn) answerInOrder(r *request) bool {
	if r.close {
		c.draining.Store(true)
	}
	c.mu.Lock()
	if len(c.queue) > 0 {
		c.queue = append(c.queue, r)
		c.mu.Unlock()
		return !r.close
	}
	c.mu.Unlock()
	c.s.treeMu.RLock()
	c.answerFromTree(r)
	c.s.treeMu.RUnlock()
	return !r.close
}

// decodeRequest decodes the body of a request of type op. It returns the error to
// answer with instead of executing the request, as ZooKeeper would: Unimplemented for an
// unknown opcode, MarshallingError for a malformed record or a multi that mixes reads and
// writes, ReconfigDisabled for reconfig (dynamic reconfiguration is off), and
// MarshallingError for a createSession sent as a request.
func decodeRequest(op wire.Op, d *wire.Decoder) (wire.Record, wire.Code) {
	switch op {
	case wire.OpCreateSession:
		return nil, wire.ErrMarshallingError
	}
	rec, known := wire.NewRequest(op)
	if !known {
		return nil, wire.ErrUnimplemented
	}
	rec.Decode(d)
	if d.Err() != nil {
		return nil, wire.ErrMarshallingError
	}
	if m, ok := rec.(*wire.MultiRequest); ok && !normalizeMulti(op, m) {
		return nil, wire.ErrMarshallingError
	}
	return rec, wire.OK
}

// normalizeMulti checks that a multi holds only writes and a multiRead only reads, and
// re-types the create ops of a multi by their flags, as ZooKeeper's MultiOperationRecord
// does when it builds Op.create: the container flag makes a createContainer (whose result
// is a create2), other flags a plain create (a create2 op reports a create result), and TTL
// flags outside createTTL make the whole multi malformed.
func normalizeMulti(op wire.Op, m *wire.MultiRequest) bool {
	for i, o := range m.Ops {
		read := o.Op == wire.OpGetChildren || o.Op == wire.OpGetData
		if read != (op == wire.OpMultiRead) {
			return false
		}
		switch o.Op {
		case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer:
			switch flags := o.Req.(*wire.CreateRequest).Flags; {
			case flags == wire.FlagContainer:
				m.Ops[i].Op = wire.OpCreateContainer
			case flags < wire.FlagPersistent || flags > wire.FlagContainer:
				return false
			default:
				m.Ops[i].Op = wire.OpCreate
			}
		}
	}
	return true
}

// proposeWrite queues a request through the log behind the connection's earlier
// requests and proposes it. A write refused at decoding is logged as an error txn: it
// still consumes a zxid.
func (c *conn) proposeWrite(r *request) bool {
	r.kind, r.state = kindLog, stateApplying
	r.txn = txn.Txn{Session: c.sessionID.Load(), Cxid: r.xid, Op: r.op, Ids: r.ids, Req: r.rec}
	x := &r.txn
	if r.err != wire.OK {
		x.Op, x.Req = wire.OpError, &txn.ErrorTxn{Code: int32(r.err)}
	}
	if r.op == wire.OpCloseSession {
		c.draining.Store(true)
	}
	c.mu.Lock()
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	r.prop = proposal{txn: x, conn: c, req: r}
	return c.s.propose(c.ctx, &r.prop) == nil && r.op != wire.OpCloseSession
}

// authenticate adds the identity an auth packet proves, and reports whether the scheme
// is one the server knows. Digest always succeeds, as in ZooKeeper.
func (c *conn) authenticate(a *wire.AuthPacket) bool {
	switch a.Scheme {
	case datatree.SchemeDigest:
		id := wire.Identity{Scheme: datatree.SchemeDigest, ID: datatree.Digest(string(a.Auth))}
		if sd := c.s.cfg.SuperDigest; sd != "" && id.ID == sd {
			// super first, as DigestAuthenticationProvider adds them.
			return c.addIdentity(wire.Identity{Scheme: datatree.SchemeSuper}, id) || c.tooManyIdentities()
		}
		return c.addIdentity(id) || c.tooManyIdentities()
	case datatree.SchemeIP:
		return c.addIdentity(wire.Identity{Scheme: datatree.SchemeIP, ID: c.ip}) || c.tooManyIdentities()
	case datatree.SchemeX509:
		return c.authenticateX509()
	}
	c.s.logger.Info("auth failed: unknown scheme", "scheme", a.Scheme, "session_id", hexID(c.sessionID.Load()))
	return false
}

// tooManyIdentities refuses an auth past the bounds on a connection's identities
// (addIdentity): it fails, and the connection closes, as for a failed auth.
func (c *conn) tooManyIdentities() bool {
	c.s.logger.Info("auth failed: too many identities or too long a one", "session_id", hexID(c.sessionID.Load()),
		"max_identities", maxIdentities, "max_identity_length", maxIdentityLength)
	return false
}

// completeWrite answers a write that has been applied, then every request that was
// waiting behind it up to the next one not ready. Writes are applied in the order they
// were proposed, so the write is first in the queue — unless a request still waiting
// for its round (a member's sync or reconfig) is before it: then its answer waits too.
// The caller holds the tree write lock.
func (c *conn) completeWrite(p *proposal, res *txn.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 || c.queue[0] != p.req && c.queue[0].state != stateWaiting {
		c.s.logger.Error("reply out of order: dropping connection", "session_id", hexID(c.sessionID.Load()))
		c.close()
		return
	}
	if c.queue[0] == p.req { // the common case: answer it now, without keeping res
		c.queue[0] = nil
		c.queue = c.queue[1:]
		c.replyWrite(p, res)
	} else {
		p.req.res, p.req.state = *res, stateReady
	}
	c.answerReadyLocked()
}

// answerReadyLocked answers the requests at the head of the queue that are ready. The
// caller holds c.mu and the tree lock.
func (c *conn) answerReadyLocked() {
	for len(c.queue) > 0 {
		r := c.queue[0]
		if r.state != stateReady {
			return
		}
		c.queue[0] = nil
		c.queue = c.queue[1:]
		if r.kind == kindLog {
			c.replyWrite(&r.prop, &r.res)
		} else {
			c.answerFromTree(r)
		}
	}
}

// answerLater queues r behind the connection's requests as a write is queued, so that
// requests after it wait for it, and runs work on a goroutine of its own. It then
// answers r with work's code, in order, or closes the connection if work says so.
// These goroutines are as many as the requests outstanding: the read loop's throttle
// bounds them (MaxOutstandingPerConn, MaxOutstanding).
func (c *conn) answerLater(r *request, work func() (code wire.Code, ok bool)) bool {
	r.state = stateWaiting
	c.mu.Lock()
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	c.s.goroutine(func() {
		code, ok := work()
		if !ok {
			c.close()
			return
		}
		c.s.treeMu.RLock()
		defer c.s.treeMu.RUnlock()
		c.mu.Lock()
		defer c.mu.Unlock()
		r.err, r.state = code, stateReady
		c.answerReadyLocked()
	})
	return true
}

// reportActivity tells the log, at most every quarter tick, that the client of session
// sid is alive (for a member's next report to its leader).
func (c *conn) reportActivity(now time.Time, sid int64) {
	ms := now.UnixMilli()
	if ms-c.reported.Load() < c.s.cfg.TickTime.Milliseconds()/4 {
		return
	}
	c.reported.Store(ms)
	c.s.log.keptAlive(sid)
}

// replyWrite encodes the answer to an applied write.
func (c *conn) replyWrite(p *proposal, res *txn.Result) {
	r := p.req
	code := c.s.codeFor(res.Err, r.op)
	var body wire.Record
	switch r.op {
	case wire.OpCreate:
		body = &wire.PathRecord{Path: res.Path}
	case wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL:
		body = &wire.Create2Response{Path: res.Path, Stat: res.Stat}
	case wire.OpSetData, wire.OpSetACL:
		body = &wire.StatResponse{Stat: res.Stat}
	case wire.OpMulti:
		if code == wire.OK {
			body = c.s.multiResponse(res)
		}
	case wire.OpCheck:
		body = &wire.StatResponse{Stat: res.Stat}
	}
	c.reply(r.xid, p.txn.Zxid, code, body)
	c.responded(r, p.txn.Zxid)
	if r.op == wire.OpCloseSession {
		c.closeAfterFlush()
	}
}

func (s *Server) multiResponse(res *txn.Result) *wire.MultiResponse {
	out := &wire.MultiResponse{Results: make([]wire.MultiResult, len(res.Multi))}
	for i, op := range res.Multi {
		out.Results[i] = wire.MultiResult{Op: op.Op, Err: s.codeFor(op.Err, wire.OpMulti), Path: op.Path, Stat: op.Stat}
	}
	return out
}

// responded records a reply in the connection's and the server's statistics.
func (c *conn) responded(r *request, zxid int64) {
	now := time.Now()
	c.answered(r.weight)
	c.stats.Responded(r.op, r.xid, zxid, r.start, now)
	c.s.admin.ObserveRequest(r.op, now.Sub(r.start))
}

// codeFor maps err to a code, logging errors that have no code of their own.
func (s *Server) codeFor(err error, op wire.Op) wire.Code {
	code := codeOf(err)
	if code == wire.ErrSystemError {
		s.logger.Error("request failed with an unmapped error", "op", op.String(), "err", err)
	}
	return code
}
