package server

import (
	"errors"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

var errShuttingDown = errors.New("server: shutting down")

// errorCodes is the one table that turns internal errors into ZooKeeper error codes.
var errorCodes = []struct {
	err  error
	code wire.Code
}{
	{datatree.ErrNoNode, wire.ErrNoNode},
	{datatree.ErrNodeExists, wire.ErrNodeExists},
	{datatree.ErrBadVersion, wire.ErrBadVersion},
	{datatree.ErrNotEmpty, wire.ErrNotEmpty},
	{datatree.ErrNoChildrenForEphemerals, wire.ErrNoChildrenForEphemerals},
	{datatree.ErrNoAuth, wire.ErrNoAuth},
	{datatree.ErrBadPath, wire.ErrBadArguments},
	{datatree.ErrBadArguments, wire.ErrBadArguments},
	{datatree.ErrInvalidACL, wire.ErrInvalidACL},
	{datatree.ErrSessionExpired, wire.ErrSessionExpired},
	{datatree.ErrUnimplemented, wire.ErrUnimplemented},
	{datatree.ErrQuotaExceeded, wire.ErrQuotaExceeded},
	{txn.ErrRolledBack, wire.ErrRuntimeInconsistency},
	{txn.ErrBadMulti, wire.ErrMarshallingError},
	{wire.ErrShortBuffer, wire.ErrMarshallingError},
	{wire.ErrBadLength, wire.ErrMarshallingError},
	{wire.ErrBadMultiOp, wire.ErrMarshallingError},
}

// codeOf maps an error to the code sent to the client; nil is OK. An error not in the
// table is a bug: it becomes SystemError and is logged by the caller.
func codeOf(err error) wire.Code {
	if err == nil {
		return wire.OK
	}
	var c wire.Code
	if errors.As(err, &c) {
		return c
	}
	for _, e := range errorCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return wire.ErrSystemError
}
