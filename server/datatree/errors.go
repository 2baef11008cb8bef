package datatree

import "errors"

// Errors returned by tree operations. The server maps each to a ZooKeeper error code
// in one table at the wire boundary.
var (
	ErrNoNode                  = errors.New("datatree: no node")
	ErrNodeExists              = errors.New("datatree: node exists")
	ErrBadVersion              = errors.New("datatree: bad version")
	ErrNotEmpty                = errors.New("datatree: node has children")
	ErrNoChildrenForEphemerals = errors.New("datatree: ephemeral nodes may not have children")
	ErrNoAuth                  = errors.New("datatree: not authorized")
	ErrBadPath                 = errors.New("datatree: invalid path")
	ErrBadArguments            = errors.New("datatree: bad arguments")
	ErrInvalidACL              = errors.New("datatree: invalid acl")
	ErrSessionExpired          = errors.New("datatree: session expired or unknown")
	ErrUnimplemented           = errors.New("datatree: not enabled")
)
