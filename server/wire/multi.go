package wire

import (
	"errors"
	"fmt"
)

// ErrBadMultiOp is returned when a multi contains an op type that cannot appear in one.
var ErrBadMultiOp = errors.New("wire: op type not allowed in multi")

// MultiHeader precedes each op of a multi request and each result of a multi response.
// A header with Done set ends the list (type -1, err -1).
type MultiHeader struct {
	Type Op
	Done bool
	Err  Code
}

func (h *MultiHeader) Encode(e *Encoder) { e.Int(int32(h.Type)); e.Bool(h.Done); e.Int(int32(h.Err)) }
func (h *MultiHeader) Decode(d *Decoder) {
	h.Type = Op(d.Int())
	h.Done = d.Bool()
	h.Err = Code(d.Int())
}

var multiEnd = MultiHeader{Type: OpError, Done: true, Err: -1}

// MultiOp is one operation of a multi or multiRead request.
type MultiOp struct {
	Op  Op
	Req Record // *CreateRequest, *CreateTTLRequest, *PathVersionRequest, *SetDataRequest or *PathWatchRequest
}

// MultiRequest is MultiOperationRecord: the ops of a multi (14) or multiRead (22).
type MultiRequest struct {
	Ops []MultiOp
}

// newMultiOpRecord returns an empty request record for an op allowed inside multi or multiRead.
func newMultiOpRecord(op Op) Record {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}
	case OpCreateTTL:
		return &CreateTTLRequest{}
	case OpDelete, OpCheck:
		return &PathVersionRequest{}
	case OpSetData:
		return &SetDataRequest{}
	case OpGetChildren, OpGetData:
		return &PathWatchRequest{}
	}
	return nil
}

func (r *MultiRequest) Encode(e *Encoder) {
	for _, op := range r.Ops {
		h := MultiHeader{Type: op.Op, Err: -1}
		h.Encode(e)
		op.Req.Encode(e)
	}
	multiEnd.Encode(e)
}

func (r *MultiRequest) Decode(d *Decoder) {
	r.Ops = r.Ops[:0]
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		rec := newMultiOpRecord(h.Type)
		if rec == nil {
			d.fail(fmt.Errorf("%w: %v", ErrBadMultiOp, h.Type))
			return
		}
		rec.Decode(d)
		r.Ops = append(r.Ops, MultiOp{Op: h.Type, Req: rec})
	}
}

// MultiResult is one entry of a MultiResponse. Op selects which fields are on the wire:
// OpCreate: Path; OpCreate2: Path, Stat; OpSetData: Stat; OpDelete, OpCheck: nothing;
// OpGetChildren: Children; OpGetData: Data, Stat; OpError: Err.
type MultiResult struct {
	Op       Op
	Err      Code
	Path     string
	Stat     Stat
	Data     []byte
	Children []string
}

// MultiResponse answers multi and multiRead: one result per op.
type MultiResponse struct {
	Results []MultiResult
}

func (r *MultiResponse) Encode(e *Encoder) {
	for i := range r.Results {
		res := &r.Results[i]
		h := MultiHeader{Type: res.Op, Err: res.Err}
		if res.Op != OpError {
			h.Err = OK
		}
		h.Encode(e)
		switch res.Op {
		case OpCreate:
			e.String(res.Path)
		case OpCreate2:
			e.String(res.Path)
			res.Stat.Encode(e)
		case OpSetData:
			res.Stat.Encode(e)
		case OpGetChildren:
			e.Strings(res.Children)
		case OpGetData:
			e.Buffer(res.Data)
			res.Stat.Encode(e)
		case OpError:
			e.Int(int32(res.Err))
		}
	}
	multiEnd.Encode(e)
}

func (r *MultiResponse) Decode(d *Decoder) {
	r.Results = r.Results[:0]
	for d.Err() == nil {
		var h MultiHeader
		h.Decode(d)
		if d.Err() != nil || h.Done {
			return
		}
		res := MultiResult{Op: h.Type, Err: h.Err}
		switch h.Type {
		case OpCreate:
			res.Path = d.String()
		case OpCreate2:
			res.Path = d.String()
			res.Stat.Decode(d)
		case OpSetData:
			res.Stat.Decode(d)
		case OpDelete, OpCheck:
		case OpGetChildren:
			res.Children = d.Strings()
		case OpGetData:
			res.Data = d.Buffer()
			res.Stat.Decode(d)
		case OpError:
			res.Err = Code(d.Int())
		default:
			d.fail(fmt.Errorf("%w: result type %v", ErrBadMultiOp, h.Type))
			return
		}
		r.Results = append(r.Results, res)
	}
}
