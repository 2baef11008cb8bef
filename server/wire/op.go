package wire

import "strconv"

// Op is a request type (ZooDefs.OpCode).
type Op int32

// Opcodes of the ZooKeeper protocol. There is no opcode 10.
const (
	OpNotification         Op = 0
	OpCreate               Op = 1
	OpDelete               Op = 2
	OpExists               Op = 3
	OpGetData              Op = 4
	OpSetData              Op = 5
	OpGetACL               Op = 6
	OpSetACL               Op = 7
	OpGetChildren          Op = 8
	OpSync                 Op = 9
	OpPing                 Op = 11
	OpGetChildren2         Op = 12
	OpCheck                Op = 13
	OpMulti                Op = 14
	OpCreate2              Op = 15
	OpReconfig             Op = 16
	OpCheckWatches         Op = 17
	OpRemoveWatches        Op = 18
	OpCreateContainer      Op = 19
	OpDeleteContainer      Op = 20
	OpCreateTTL            Op = 21
	OpMultiRead            Op = 22
	OpAuth                 Op = 100
	OpSetWatches           Op = 101
	OpSASL                 Op = 102
	OpGetEphemerals        Op = 103
	OpGetAllChildrenNumber Op = 104
	OpSetWatches2          Op = 105
	OpAddWatch             Op = 106
	OpWhoAmI               Op = 107
	OpCreateSession        Op = -10
	OpCloseSession         Op = -11
	OpError                Op = -1
)

type opInfo struct {
	name  string // as in ZooDefs.opNames / Request.op2String, lower camel case
	short string // the 4-letter form the cons command prints as lop
}

var opInfos = map[Op]opInfo{
	OpNotification:         {"notification", "NOTI"},
	OpCreate:               {"create", "CREA"},
	OpDelete:               {"delete", "DELE"},
	OpExists:               {"exists", "EXIS"},
	OpGetData:              {"getData", "GETD"},
	OpSetData:              {"setData", "SETD"},
	OpGetACL:               {"getACL", "GETA"},
	OpSetACL:               {"setACL", "SETA"},
	OpGetChildren:          {"getChildren", "GETC"},
	OpSync:                 {"sync", "SYNC"},
	OpPing:                 {"ping", "PING"},
	OpGetChildren2:         {"getChildren2", "GETC"},
	OpCheck:                {"check", "CHEC"},
	OpMulti:                {"multi", "MULT"},
	OpCreate2:              {"create2", "CREA"},
	OpReconfig:             {"reconfig", "RECO"},
	OpCheckWatches:         {"checkWatches", "CHKW"},
	OpRemoveWatches:        {"removeWatches", "REMW"},
	OpCreateContainer:      {"createContainer", "CREA"},
	OpDeleteContainer:      {"deleteContainer", "DELE"},
	OpCreateTTL:            {"createTTL", "CREA"},
	OpMultiRead:            {"multiRead", "MLTR"},
	OpAuth:                 {"auth", "AUTH"},
	OpSetWatches:           {"setWatches", "SETW"},
	OpSASL:                 {"sasl", "SASL"},
	OpGetEphemerals:        {"getEphemerals", "GETE"},
	OpGetAllChildrenNumber: {"getAllChildrenNumber", "GACN"},
	OpSetWatches2:          {"setWatches2", "STW2"},
	OpAddWatch:             {"addWatch", "ADDW"},
	OpWhoAmI:               {"whoAmI", "HOMI"},
	OpCreateSession:        {"createSession", "SESS"},
	OpCloseSession:         {"closeSession", "CLOS"},
	OpError:                {"error", "ERR"},
}

// String returns the opcode's name, or "op(N)" for an unknown opcode.
func (o Op) String() string {
	if i, ok := opInfos[o]; ok {
		return i.name
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Short returns the four-letter form used by the cons command ("GETD"), or "UNKN".
func (o Op) Short() string {
	if i, ok := opInfos[o]; ok {
		return i.short
	}
	return "UNKN"
}

// IsWrite reports whether o changes state and so goes through the log.
func (o Op) IsWrite() bool {
	switch o {
	case OpCreate, OpCreate2, OpCreateContainer, OpCreateTTL, OpDelete, OpSetData, OpSetACL,
		OpMulti, OpCheck, OpCreateSession, OpCloseSession, OpDeleteContainer, OpReconfig:
		return true
	}
	return false
}

// Special xids (RequestHeader.xid / ReplyHeader.xid).
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
	XidAuth         int32 = -4
	XidSetWatches   int32 = -8
)
