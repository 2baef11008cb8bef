package txn

import (
	"errors"
	"fmt"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// ErrRolledBack marks the ops of a failed multi that came after the failing one
// (RuntimeInconsistency in ZooKeeper).
var ErrRolledBack = errors.New("txn: not applied: an earlier op of the multi failed")

// ErrBadMulti is returned for a multi that mixes reads into writes.
var ErrBadMulti = errors.New("txn: op not allowed in multi")

// Options are the settings that change how txns apply. Every replica must use the same.
type Options struct {
	ExtendedTypes bool // TTL nodes allowed (extendedTypesEnabled)
	SkipACL       bool // no ACL checks (skipACL)
	// EnforceQuota refuses creates and setData that pass a hard quota with
	// QuotaExceeded (zookeeper.enforceQuota). The check is made here, at apply, against
	// the tree every member holds, so every member reaches the same outcome.
	EnforceQuota bool
}

// Event is a change that may fire watches: the node's path and the ACL that decides who
// may be told (the deleted node's for NodeDeleted, the parent's for NodeChildrenChanged).
type Event struct {
	Type wire.EventType
	Path string
	ACL  []wire.ACL
}

// OpResult is the outcome of one op of a multi.
type OpResult struct {
	Op   wire.Op // the result type: OpCreate, OpCreate2, OpDelete, OpSetData or OpCheck
	Err  error   // nil on success; set on every op of a failed multi (nil for those before the failure)
	Path string
	Stat wire.Stat
}

// Result is the outcome of applying a txn.
type Result struct {
	Err    error
	Path   string     // the created node (create ops)
	Stat   wire.Stat  // the node's stat after create2/createContainer/createTTL/setData/setACL
	Multi  []OpResult // one per op, for OpMulti; Err stays nil and failure is per op
	Failed bool       // a multi whose ops were rolled back
	Events []Event    // the changes, in order, for the watch registry; empty on failure
	// Quota lists the quota limits the txn's writes passed or would have passed (soft
	// ones, and hard ones where not enforced or refused), for the server to log.
	Quota []datatree.QuotaViolation
}

type applier struct {
	tree   *datatree.Tree
	txn    *Txn
	opt    Options
	events []Event
	inline [2]Event // events' first backing array: a create or delete fires two
	quota  []datatree.QuotaViolation
}

// Apply applies x to t and returns the outcome. It never panics on a txn's content: a txn
// that fails validation changes nothing but the tree's last zxid, as a failed write still
// consumes a zxid in ZooKeeper.
func Apply(t *datatree.Tree, x *Txn, opt Options) Result {
	a := &applier{tree: t, txn: x, opt: opt}
	a.events = a.inline[:0]
	defer t.SetLastZxid(x.Zxid)
	if x.Session != 0 && x.Op != wire.OpCreateSession && x.Op != wire.OpCloseSession && t.Session(x.Session) == nil {
		return Result{Err: datatree.ErrSessionExpired}
	}
	var res Result
	switch x.Op {
	case wire.OpMulti:
		res = a.multi(x.Req.(*wire.MultiRequest))
	case wire.OpCreateSession:
		cs := x.Req.(*CreateSession)
		t.AddSession(&datatree.Session{ID: x.Session, Timeout: cs.Timeout, Password: cs.Password})
	case wire.OpCloseSession:
		a.closeSession(x.Session)
	case wire.OpDeleteContainer:
		res.Err = a.deleteContainer(x.Req.(*wire.PathRecord).Path)
	case wire.OpError:
		res.Err = wire.Code(x.Req.(*ErrorTxn).Code)
	default:
		r := a.op(x.Op, x.Req)
		res = Result{Err: r.Err, Path: r.Path, Stat: r.Stat}
	}
	if res.Err == nil && !res.Failed {
		res.Events = a.events
	}
	res.Quota = a.quota
	return res
}

// op applies one write op, standalone or inside a multi.
func (a *applier) op(op wire.Op, req wire.Record) OpResult {
	switch r := req.(type) {
	case *wire.CreateRequest:
		return a.create(op, r, -1)
	case *wire.CreateTTLRequest:
		return a.create(op, &r.CreateRequest, r.TTL)
	case *wire.PathVersionRequest:
		if op == wire.OpCheck {
			return OpResult{Op: op, Err: a.check(r)}
		}
		return OpResult{Op: op, Err: a.delete(r)}
	case *wire.SetDataRequest:
		stat, err := a.setData(r)
		return OpResult{Op: op, Err: err, Stat: stat}
	case *wire.SetACLRequest:
		stat, err := a.setACL(r)
		return OpResult{Op: op, Err: err, Stat: stat}
	}
	return OpResult{Op: op, Err: fmt.Errorf("%w: %v", ErrBadMulti, op)}
}

func (a *applier) allowed(acl []wire.ACL, perm wire.Perm) bool {
	return a.opt.SkipACL || datatree.Allowed(acl, perm, a.txn.Ids)
}

// nodeFor validates path and returns its node, in ZooKeeper's order (BadArguments, NoNode).
func (a *applier) nodeFor(path string) (datatree.Node, error) {
	if err := datatree.ValidatePath(path); err != nil {
		return datatree.Node{}, err
	}
	n := a.tree.Get(path)
	if !n.Exists() {
		return datatree.Node{}, datatree.ErrNoNode
	}
	return n, nil
}

// checkQuota checks a write that adds countDiff nodes and bytesDiff bytes under path
// against the quota covering path (ZooKeeperServer.checkQuota). It notes every limit
// passed, and refuses the write if one is hard and quotas are enforced.
func (a *applier) checkQuota(path string, bytesDiff, countDiff int64) error {
	return a.noteQuota(a.tree.CheckQuota(path, bytesDiff, countDiff))
}

// noteQuota notes the limits vs passed and refuses the write if one is hard and quotas
// are enforced.
func (a *applier) noteQuota(vs []datatree.QuotaViolation) error {
	if len(vs) == 0 {
		return nil
	}
	a.quota = append(a.quota, vs...)
	for _, v := range vs {
		if v.Hard && a.opt.EnforceQuota {
			return fmt.Errorf("%w: %s %s would be %d, hard limit %d", datatree.ErrQuotaExceeded, v.Quota, v.Kind, v.Value, v.Limit)
		}
	}
	return nil
}

func checkVersion(current, expected int32) error {
	if expected != -1 && expected != current {
		return datatree.ErrBadVersion
	}
	return nil
}

func (a *applier) emit(t wire.EventType, path string, acl []wire.ACL) {
	a.events = append(a.events, Event{Type: t, Path: path, ACL: acl})
}
