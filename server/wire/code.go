package wire

import "strconv"

// Code is a ZooKeeper error code (KeeperException.Code) as carried in ReplyHeader.err.
type Code int32

// Error codes sent by the server. Codes that only clients generate are included
// where clients share the numbering with the server.
const (
	OK                          Code = 0
	ErrSystemError              Code = -1
	ErrRuntimeInconsistency     Code = -2
	ErrDataInconsistency        Code = -3
	ErrConnectionLoss           Code = -4
	ErrMarshallingError         Code = -5
	ErrUnimplemented            Code = -6
	ErrOperationTimeout         Code = -7
	ErrBadArguments             Code = -8
	ErrUnknownSession           Code = -12
	ErrNewConfigNoQuorum        Code = -13
	ErrReconfigInProgress       Code = -14
	ErrAPIError                 Code = -100
	ErrNoNode                   Code = -101
	ErrNoAuth                   Code = -102
	ErrBadVersion               Code = -103
	ErrNoChildrenForEphemerals  Code = -108
	ErrNodeExists               Code = -110
	ErrNotEmpty                 Code = -111
	ErrSessionExpired           Code = -112
	ErrInvalidCallback          Code = -113
	ErrInvalidACL               Code = -114
	ErrAuthFailed               Code = -115
	ErrSessionMoved             Code = -118
	ErrNotReadOnly              Code = -119
	ErrEphemeralOnLocalSession  Code = -120
	ErrNoWatcher                Code = -121
	ErrRequestTimeout           Code = -122
	ErrReconfigDisabled         Code = -123
	ErrSessionClosedRequireSASL Code = -124
	ErrQuotaExceeded            Code = -125
	ErrThrottledOp              Code = -127
)

var codeNames = map[Code]string{
	OK:                          "ok",
	ErrSystemError:              "system error",
	ErrRuntimeInconsistency:     "runtime inconsistency",
	ErrDataInconsistency:        "data inconsistency",
	ErrConnectionLoss:           "connection loss",
	ErrMarshallingError:         "marshalling error",
	ErrUnimplemented:            "unimplemented",
	ErrOperationTimeout:         "operation timeout",
	ErrBadArguments:             "bad arguments",
	ErrUnknownSession:           "unknown session",
	ErrNewConfigNoQuorum:        "new config no quorum",
	ErrReconfigInProgress:       "reconfig in progress",
	ErrAPIError:                 "api error",
	ErrNoNode:                   "no node",
	ErrNoAuth:                   "not authenticated",
	ErrBadVersion:               "bad version",
	ErrNoChildrenForEphemerals:  "no children for ephemerals",
	ErrNodeExists:               "node exists",
	ErrNotEmpty:                 "node not empty",
	ErrSessionExpired:           "session expired",
	ErrInvalidCallback:          "invalid callback",
	ErrInvalidACL:               "invalid acl",
	ErrAuthFailed:               "auth failed",
	ErrSessionMoved:             "session moved",
	ErrNotReadOnly:              "not read only",
	ErrEphemeralOnLocalSession:  "ephemeral on local session",
	ErrNoWatcher:                "no watcher",
	ErrRequestTimeout:           "request timeout",
	ErrReconfigDisabled:         "reconfig disabled",
	ErrSessionClosedRequireSASL: "session closed require sasl",
	ErrQuotaExceeded:            "quota exceeded",
	ErrThrottledOp:              "throttled op",
}

// Error makes a non-zero Code usable as an error value: "zk: no node".
func (c Code) Error() string {
	if n, ok := codeNames[c]; ok {
		return "zk: " + n
	}
	return "zk: error code " + strconv.Itoa(int(c))
}

// String returns the code's name, or its number for an unknown code.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return strconv.Itoa(int(c))
}
