package wire

// Record is a jute record: fields in declaration order, no tags, no padding.
// Decode leaves errors in the Decoder (see Decoder.Err).
type Record interface {
	Encode(e *Encoder)
	Decode(d *Decoder)
}

// RequestHeader precedes every request after the handshake.
type RequestHeader struct {
	Xid int32
	Op  Op
}

func (r *RequestHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Int(int32(r.Op)) }
func (r *RequestHeader) Decode(d *Decoder) { r.Xid = d.Int(); r.Op = Op(d.Int()) }

// ReplyHeader precedes every reply and notification.
type ReplyHeader struct {
	Xid  int32
	Zxid int64
	Err  Code
}

func (r *ReplyHeader) Encode(e *Encoder) { e.Int(r.Xid); e.Long(r.Zxid); e.Int(int32(r.Err)) }
func (r *ReplyHeader) Decode(d *Decoder) { r.Xid = d.Int(); r.Zxid = d.Long(); r.Err = Code(d.Int()) }

// PathWatchRequest is GetDataRequest, ExistsRequest, GetChildrenRequest and GetChildren2Request,
// which share one layout.
type PathWatchRequest struct {
	Path  string
	Watch bool
}

func (r *PathWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }
func (r *PathWatchRequest) Decode(d *Decoder) { r.Path = d.String(); r.Watch = d.Bool() }

// PathRecord is a record holding only a path: GetACLRequest, SyncRequest/Response,
// CreateResponse, GetEphemeralsRequest, GetAllChildrenNumberRequest.
type PathRecord struct {
	Path string
}

func (r *PathRecord) Encode(e *Encoder) { e.String(r.Path) }
func (r *PathRecord) Decode(d *Decoder) { r.Path = d.String() }

// CreateRequest is used by create, create2 and createContainer.
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	encodeACLs(e, r.ACL)
	e.Int(r.Flags)
}

func (r *CreateRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = decodeACLs(d)
	r.Flags = d.Int()
}

// CreateTTLRequest is used by createTTL; TTL is in milliseconds.
type CreateTTLRequest struct {
	CreateRequest
	TTL int64
}

func (r *CreateTTLRequest) Encode(e *Encoder) { r.CreateRequest.Encode(e); e.Long(r.TTL) }
func (r *CreateTTLRequest) Decode(d *Decoder) { r.CreateRequest.Decode(d); r.TTL = d.Long() }

// PathVersionRequest is DeleteRequest and CheckVersionRequest. Version -1 matches any version.
type PathVersionRequest struct {
	Path    string
	Version int32
}

func (r *PathVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }
func (r *PathVersionRequest) Decode(d *Decoder) { r.Path = d.String(); r.Version = d.Int() }

// SetDataRequest replaces a node's data.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int(r.Version) }
func (r *SetDataRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
}

// SetACLRequest replaces a node's ACL; Version is checked against aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

func (r *SetACLRequest) Encode(e *Encoder) { e.String(r.Path); encodeACLs(e, r.ACL); e.Int(r.Version) }
func (r *SetACLRequest) Decode(d *Decoder) {
	r.Path = d.String()
	r.ACL = decodeACLs(d)
	r.Version = d.Int()
}

// PathTypeRequest is CheckWatchesRequest, RemoveWatchesRequest and AddWatchRequest
// (whose Type is the AddWatchMode).
type PathTypeRequest struct {
	Path string
	Type int32
}

func (r *PathTypeRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Type) }
func (r *PathTypeRequest) Decode(d *Decoder) { r.Path = d.String(); r.Type = d.Int() }

// AuthPacket carries credentials; Type is always 0.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

func (r *AuthPacket) Encode(e *Encoder) { e.Int(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }
func (r *AuthPacket) Decode(d *Decoder) { r.Type = d.Int(); r.Scheme = d.String(); r.Auth = d.Buffer() }

// SetWatches re-registers watches after a reconnect (opcodes 101 and 105).
// Persistent and PersistentRecursive are only on the wire for setWatches2 (V2).
type SetWatches struct {
	V2                  bool
	RelativeZxid        int64
	Data                []string
	Exist               []string
	Child               []string
	Persistent          []string
	PersistentRecursive []string
}

func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.Data)
	e.Strings(r.Exist)
	e.Strings(r.Child)
	if r.V2 {
		e.Strings(r.Persistent)
		e.Strings(r.PersistentRecursive)
	}
}

func (r *SetWatches) Decode(d *Decoder) {
	r.RelativeZxid = d.Long()
	r.Data = d.Strings()
	r.Exist = d.Strings()
	r.Child = d.Strings()
	if r.V2 {
		r.Persistent = d.Strings()
		r.PersistentRecursive = d.Strings()
	}
}

// ReconfigRequest asks for a membership change. Only decoded, to answer it properly.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

func (r *ReconfigRequest) Encode(e *Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	e.String(r.NewMembers)
	e.Long(r.CurConfigID)
}

func (r *ReconfigRequest) Decode(d *Decoder) {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Long()
}

// SASLRequest is GetSASLRequest and SetSASLResponse: one opaque token.
type SASLRequest struct {
	Token []byte
}

func (r *SASLRequest) Encode(e *Encoder) { e.Buffer(r.Token) }
func (r *SASLRequest) Decode(d *Decoder) { r.Token = d.Buffer() }

// Empty is a record with no fields (ping, closeSession, whoAmI requests; delete replies).
type Empty struct{}

func (Empty) Encode(*Encoder) {}
func (Empty) Decode(*Decoder) {}

// StatResponse is ExistsResponse, SetDataResponse and SetACLResponse.
type StatResponse struct {
	Stat Stat
}

func (r *StatResponse) Encode(e *Encoder) { r.Stat.Encode(e) }
func (r *StatResponse) Decode(d *Decoder) { r.Stat.Decode(d) }

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }
func (r *Create2Response) Decode(d *Decoder) { r.Path = d.String(); r.Stat.Decode(d) }

// GetDataResponse answers getData. Data nil is sent as null, as ZooKeeper does for null data.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }
func (r *GetDataResponse) Decode(d *Decoder) { r.Data = d.Buffer(); r.Stat.Decode(d) }

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

func (r *GetACLResponse) Encode(e *Encoder) { encodeACLs(e, r.ACL); r.Stat.Encode(e) }
func (r *GetACLResponse) Decode(d *Decoder) { r.ACL = decodeACLs(d); r.Stat.Decode(d) }

// ChildrenResponse answers getChildren (WithStat false) and getChildren2 (WithStat true).
// It is also GetEphemeralsResponse (WithStat false).
type ChildrenResponse struct {
	WithStat bool
	Children []string
	Stat     Stat
}

func (r *ChildrenResponse) Encode(e *Encoder) {
	e.Strings(r.Children)
	if r.WithStat {
		r.Stat.Encode(e)
	}
}

func (r *ChildrenResponse) Decode(d *Decoder) {
	r.Children = d.Strings()
	if r.WithStat {
		r.Stat.Decode(d)
	}
}

// IntResponse is ErrorResponse (addWatch's 4-byte body) and GetAllChildrenNumberResponse.
type IntResponse struct {
	Value int32
}

func (r *IntResponse) Encode(e *Encoder) { e.Int(r.Value) }
func (r *IntResponse) Decode(d *Decoder) { r.Value = d.Int() }

// WhoAmIResponse lists the connection's identities as {authScheme, user} pairs.
type WhoAmIResponse struct {
	Clients []Identity
}

func (r *WhoAmIResponse) Encode(e *Encoder) {
	e.Int(int32(len(r.Clients)))
	for _, c := range r.Clients {
		e.String(c.Scheme)
		e.String(c.ID)
	}
}

func (r *WhoAmIResponse) Decode(d *Decoder) {
	n := d.Count(8)
	r.Clients = make([]Identity, n)
	for i := range r.Clients {
		r.Clients[i].Scheme = d.String()
		r.Clients[i].ID = d.String()
	}
}

// WatcherEvent is the body of a notification (xid -1).
type WatcherEvent struct {
	Type  EventType
	State State
	Path  string
}

func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Int(int32(r.State))
	e.String(r.Path)
}
func (r *WatcherEvent) Decode(d *Decoder) {
	r.Type = EventType(d.Int())
	r.State = State(d.Int())
	r.Path = d.String()
}
