package wire

// PasswordLen is the length of a session password; clients send 16 zero bytes for a new session.
const PasswordLen = 16

// ConnectRequest opens or resumes a session. It has no RequestHeader.
// The trailing readOnly byte is optional: go-zookeeper/zk never sends it, Java and kazoo do.
// HasReadOnly records which form arrived so the reply can mirror it.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	Timeout         int32 // milliseconds
	SessionID       int64
	Password        []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.Timeout)
	e.Long(r.SessionID)
	e.Buffer(r.Password)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectRequest) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.Timeout = d.Int()
	r.SessionID = d.Long()
	r.Password = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}

// ConnectResponse answers a ConnectRequest. Timeout 0 and SessionID 0 tell the client
// its session has expired. HasReadOnly mirrors the request's form.
type ConnectResponse struct {
	ProtocolVersion int32
	Timeout         int32
	SessionID       int64
	Password        []byte
	ReadOnly        bool
	HasReadOnly     bool
}

func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.Timeout)
	e.Long(r.SessionID)
	e.Buffer(r.Password)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

func (r *ConnectResponse) Decode(d *Decoder) {
	r.ProtocolVersion = d.Int()
	r.Timeout = d.Int()
	r.SessionID = d.Long()
	r.Password = d.Buffer()
	r.HasReadOnly = d.Err() == nil && d.Remaining() > 0
	if r.HasReadOnly {
		r.ReadOnly = d.Bool()
	}
}
