package wire

// NewRequest returns an empty request record for op, ready to Decode, and whether op is a
// request opcode a client may send. Ops without a body (ping, closeSession, whoAmI) get Empty.
func NewRequest(op Op) (Record, bool) {
	switch op {
	case OpCreate, OpCreate2, OpCreateContainer:
		return &CreateRequest{}, true
	case OpCreateTTL:
		return &CreateTTLRequest{}, true
	case OpDelete, OpCheck:
		return &PathVersionRequest{}, true
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		return &PathWatchRequest{}, true
	case OpSetData:
		return &SetDataRequest{}, true
	case OpGetACL, OpSync, OpGetEphemerals, OpGetAllChildrenNumber, OpDeleteContainer:
		return &PathRecord{}, true
	case OpSetACL:
		return &SetACLRequest{}, true
	case OpMulti, OpMultiRead:
		return &MultiRequest{}, true
	case OpCheckWatches, OpRemoveWatches, OpAddWatch:
		return &PathTypeRequest{}, true
	case OpReconfig:
		return &ReconfigRequest{}, true
	case OpAuth:
		return &AuthPacket{}, true
	case OpSetWatches:
		return &SetWatches{}, true
	case OpSetWatches2:
		return &SetWatches{V2: true}, true
	case OpSASL:
		return &SASLRequest{}, true
	case OpPing, OpCloseSession, OpWhoAmI:
		return Empty{}, true
	}
	return nil, false
}

// DecodeRequest decodes the body of a request of type op. Trailing bytes are allowed,
// as the Java server ignores them.
func DecodeRequest(op Op, body []byte) (Record, error) {
	rec, ok := NewRequest(op)
	if !ok {
		return nil, ErrUnimplemented
	}
	d := NewDecoder(body)
	rec.Decode(d)
	if err := d.Err(); err != nil {
		return nil, err
	}
	return rec, nil
}
