package wire

// Perm is a set of ACL permission bits (ZooDefs.Perms).
type Perm int32

// Permission bits.
const (
	PermRead   Perm = 1
	PermWrite  Perm = 2
	PermCreate Perm = 4
	PermDelete Perm = 8
	PermAdmin  Perm = 16
	PermAll    Perm = 31
)

// EventType is the type of a watch notification (Watcher.Event.EventType).
type EventType int32

// Event types sent by the server; the *WatchRemoved types are client-local.
const (
	EventNone                   EventType = -1
	EventNodeCreated            EventType = 1
	EventNodeDeleted            EventType = 2
	EventNodeDataChanged        EventType = 3
	EventNodeChildrenChanged    EventType = 4
	EventDataWatchRemoved       EventType = 5
	EventChildWatchRemoved      EventType = 6
	EventPersistentWatchRemoved EventType = 7
)

func (t EventType) String() string {
	switch t {
	case EventNone:
		return "None"
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventDataWatchRemoved:
		return "DataWatchRemoved"
	case EventChildWatchRemoved:
		return "ChildWatchRemoved"
	case EventPersistentWatchRemoved:
		return "PersistentWatchRemoved"
	}
	return "EventType(?)"
}

// State is a KeeperState; the server only ever sends SyncConnected.
type State int32

// Keeper states.
const (
	StateDisconnected  State = 0
	StateSyncConnected State = 3
	StateAuthFailed    State = 4
	StateReadOnly      State = 5
	StateExpired       State = -112
)

// WatcherType selects watches in checkWatches/removeWatches.
type WatcherType int32

// Watcher types; Persistent and PersistentRecursive exist since 3.9.
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// AddWatchMode is the mode of an addWatch request.
type AddWatchMode int32

// AddWatch modes.
const (
	AddWatchPersistent          AddWatchMode = 0
	AddWatchPersistentRecursive AddWatchMode = 1
)

// Create flags (CreateMode.toFlag).
const (
	FlagPersistent                  int32 = 0
	FlagEphemeral                   int32 = 1
	FlagPersistentSequential        int32 = 2
	FlagEphemeralSequential         int32 = 3
	FlagContainer                   int32 = 4
	FlagPersistentWithTTL           int32 = 5
	FlagPersistentSequentialWithTTL int32 = 6
)

// MaxTTL is the largest TTL in milliseconds a TTL node may have (EphemeralType.MAX_TTL).
const MaxTTL int64 = 0x000000FFFFFFFFFF

// Stat is the metadata of a znode as sent to clients (68 bytes on the wire).
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64 // milliseconds since the epoch
	Mtime          int64 // milliseconds since the epoch
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}

// Encode implements Record.
func (s *Stat) Encode(e *Encoder) {
	e.Long(s.Czxid)
	e.Long(s.Mzxid)
	e.Long(s.Ctime)
	e.Long(s.Mtime)
	e.Int(s.Version)
	e.Int(s.Cversion)
	e.Int(s.Aversion)
	e.Long(s.EphemeralOwner)
	e.Int(s.DataLength)
	e.Int(s.NumChildren)
	e.Long(s.Pzxid)
}

// Decode implements Record.
func (s *Stat) Decode(d *Decoder) {
	s.Czxid = d.Long()
	s.Mzxid = d.Long()
	s.Ctime = d.Long()
	s.Mtime = d.Long()
	s.Version = d.Int()
	s.Cversion = d.Int()
	s.Aversion = d.Int()
	s.EphemeralOwner = d.Long()
	s.DataLength = d.Int()
	s.NumChildren = d.Int()
	s.Pzxid = d.Long()
}

// Identity is an authenticated identity (jute Id): scheme "world", "ip", "digest", "super", ...
type Identity struct {
	Scheme string
	ID     string
}

// ACL is one access-control entry: permissions granted to an identity.
type ACL struct {
	Perms  Perm
	Scheme string
	ID     string
}

// Well-known ACL lists (ZooDefs.Ids).
var (
	OpenACLUnsafe = []ACL{{Perms: PermAll, Scheme: "world", ID: "anyone"}}
	ReadACLUnsafe = []ACL{{Perms: PermRead, Scheme: "world", ID: "anyone"}}
)

func encodeACLs(e *Encoder, acl []ACL) {
	e.Int(int32(len(acl)))
	for _, a := range acl {
		e.Int(int32(a.Perms))
		e.String(a.Scheme)
		e.String(a.ID)
	}
}

func decodeACLs(d *Decoder) []ACL {
	n := d.Count(12)
	if n == 0 {
		return nil
	}
	acl := make([]ACL, n)
	for i := range acl {
		acl[i].Perms = Perm(d.Int())
		acl[i].Scheme = d.String()
		acl[i].ID = d.String()
	}
	return acl
}
