// Package txn defines the state-machine commands of the coordination server and applies
// them to a datatree.Tree. Apply is a pure function of the tree and the txn: every check
// that decides a write's outcome (NoNode, NodeExists, BadVersion, NoAuth, ...) happens
// inside it, so a standalone server replaying its log and every replica of an ensemble
// reach the same state and the same results.
package txn

import (
	"errors"
	"fmt"

	"github.com/paddock/paddock/server/wire"
)

// Txn is one command: a client's write, a session change, or housekeeping, together with
// everything that makes applying it deterministic. It is immutable once proposed.
type Txn struct {
	Zxid    int64
	Time    int64 // ms since the epoch, read from the proposer's clock
	Session int64 // 0 for housekeeping txns
	Cxid    int32
	Op      wire.Op
	// Ids are the requester's identities at proposal time, for ACL checks and "auth" ACLs.
	Ids []wire.Identity
	// Req is the request record: a wire request for client ops, *CreateSession for
	// OpCreateSession, wire.Empty for OpCloseSession, *wire.PathRecord for OpDeleteContainer,
	// *ErrorTxn for OpError.
	Req wire.Record
}

// CreateSession is the body of an OpCreateSession txn. The proposer picks the id and the
// random password, so replaying the txn recreates the same session.
type CreateSession struct {
	Timeout  int32 // negotiated, ms
	Password []byte
}

func (c *CreateSession) Encode(e *wire.Encoder) { e.Int(c.Timeout); e.Buffer(c.Password) }
func (c *CreateSession) Decode(d *wire.Decoder) { c.Timeout = d.Int(); c.Password = d.Buffer() }

// ErrorTxn is the body of an OpError txn: a client write refused before it could be
// applied (a malformed record, an op the server refuses). It is logged anyway so that,
// as in ZooKeeper, every write consumes a zxid. Code is the ZooKeeper error code.
type ErrorTxn struct {
	Code int32
}

func (e *ErrorTxn) Encode(enc *wire.Encoder) { enc.Int(e.Code) }
func (e *ErrorTxn) Decode(d *wire.Decoder)   { e.Code = d.Int() }

// ErrBadTxn is returned when a logged txn cannot be decoded.
var ErrBadTxn = errors.New("txn: malformed txn")

// Encode appends the txn's log form: zxid, time, session, cxid, op, identities, request.
func (x *Txn) Encode(e *wire.Encoder) {
	e.Long(x.Zxid)
	e.Long(x.Time)
	e.Long(x.Session)
	e.Int(x.Cxid)
	e.Int(int32(x.Op))
	e.Int(int32(len(x.Ids)))
	for _, id := range x.Ids {
		e.String(id.Scheme)
		e.String(id.ID)
	}
	x.Req.Encode(e)
}

// Decode reads a txn written by Encode.
func Decode(b []byte) (*Txn, error) {
	d := wire.NewDecoder(b)
	x := &Txn{Zxid: d.Long(), Time: d.Long(), Session: d.Long(), Cxid: d.Int(), Op: wire.Op(d.Int())}
	if n := d.Count(8); n > 0 {
		x.Ids = make([]wire.Identity, n)
		for i := range x.Ids {
			x.Ids[i] = wire.Identity{Scheme: d.String(), ID: d.String()}
		}
	}
	if d.Err() != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrBadTxn, d.Err())
	}
	switch x.Op {
	case wire.OpCreateSession:
		x.Req = &CreateSession{}
	case wire.OpError:
		x.Req = &ErrorTxn{}
	default:
		rec, ok := wire.NewRequest(x.Op)
		if !ok || !x.Op.IsWrite() {
			return nil, fmt.Errorf("%w: op %v", ErrBadTxn, x.Op)
		}
		x.Req = rec
	}
	x.Req.Decode(d)
	if d.Err() != nil {
		return nil, fmt.Errorf("%w: %v body: %v", ErrBadTxn, x.Op, d.Err())
	}
	return x, nil
}
