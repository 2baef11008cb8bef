package txn

import (
	"fmt"

	"github.com/paddock/paddock/server/wire"
)

// multi applies the ops of a multi atomically: all of them, or, at the first failure,
// none. The failing op reports its error, earlier ops report success-with-rollback
// (code 0) and later ones ErrRolledBack, as ZooKeeper's error results do.
func (a *applier) multi(m *wire.MultiRequest) Result {
	for _, op := range m.Ops {
		switch op.Op {
		case wire.OpCreate, wire.OpCreate2, wire.OpCreateContainer, wire.OpCreateTTL,
			wire.OpDelete, wire.OpSetData, wire.OpCheck:
		default:
			return Result{Err: fmt.Errorf("%w: %v", ErrBadMulti, op.Op)}
		}
	}
	results := make([]OpResult, len(m.Ops))
	a.tree.Begin()
	for i, op := range m.Ops {
		results[i] = a.op(op.Op, op.Req)
		if results[i].Err != nil {
			a.tree.Rollback()
			a.events = nil
			for j := range results {
				switch {
				case j < i:
					results[j] = OpResult{Op: wire.OpError}
				case j > i:
					results[j] = OpResult{Op: wire.OpError, Err: ErrRolledBack}
				default:
					results[j].Op = wire.OpError
				}
			}
			return Result{Multi: results, Failed: true}
		}
	}
	a.tree.Commit()
	return Result{Multi: results}
}
