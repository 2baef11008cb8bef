package conformance

import "github.com/paddock/paddock/server/wire"

// Shorthands for the requests scenarios send most; each records the request and its reply.

func (s *Session) create(path string, data []byte, flags int32) *Frame {
	return s.createACL(wire.OpCreate, path, data, wire.OpenACLUnsafe, flags)
}

func (s *Session) create2(path string, data []byte, flags int32) *Frame {
	return s.createACL(wire.OpCreate2, path, data, wire.OpenACLUnsafe, flags)
}

func (s *Session) createACL(op wire.Op, path string, data []byte, acl []wire.ACL, flags int32) *Frame {
	return s.Call(op, &wire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: flags})
}

func (s *Session) createTTL(path string, data []byte, flags int32, ttl int64) *Frame {
	return s.Call(wire.OpCreateTTL, &wire.CreateTTLRequest{
		CreateRequest: wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags}, TTL: ttl})
}

func (s *Session) createContainer(path string, data []byte) *Frame {
	return s.createACL(wire.OpCreateContainer, path, data, wire.OpenACLUnsafe, wire.FlagContainer)
}

func (s *Session) delete(path string, version int32) *Frame {
	return s.Call(wire.OpDelete, &wire.PathVersionRequest{Path: path, Version: version})
}

func (s *Session) exists(path string, watch bool) *Frame {
	return s.Call(wire.OpExists, &wire.PathWatchRequest{Path: path, Watch: watch})
}

func (s *Session) getData(path string, watch bool) *Frame {
	return s.Call(wire.OpGetData, &wire.PathWatchRequest{Path: path, Watch: watch})
}

func (s *Session) setData(path string, data []byte, version int32) *Frame {
	return s.Call(wire.OpSetData, &wire.SetDataRequest{Path: path, Data: data, Version: version})
}

func (s *Session) getChildren(path string, watch bool) *Frame {
	return s.Call(wire.OpGetChildren, &wire.PathWatchRequest{Path: path, Watch: watch})
}

func (s *Session) getChildren2(path string, watch bool) *Frame {
	return s.Call(wire.OpGetChildren2, &wire.PathWatchRequest{Path: path, Watch: watch})
}

func (s *Session) getACL(path string) *Frame {
	return s.Call(wire.OpGetACL, &wire.PathRecord{Path: path})
}

func (s *Session) setACL(path string, acl []wire.ACL, version int32) *Frame {
	return s.Call(wire.OpSetACL, &wire.SetACLRequest{Path: path, ACL: acl, Version: version})
}

func (s *Session) addWatch(path string, mode wire.AddWatchMode) *Frame {
	return s.Call(wire.OpAddWatch, &wire.PathTypeRequest{Path: path, Type: int32(mode)})
}

func (s *Session) checkWatches(path string, typ wire.WatcherType) *Frame {
	return s.Call(wire.OpCheckWatches, &wire.PathTypeRequest{Path: path, Type: int32(typ)})
}

func (s *Session) removeWatches(path string, typ wire.WatcherType) *Frame {
	return s.Call(wire.OpRemoveWatches, &wire.PathTypeRequest{Path: path, Type: int32(typ)})
}

func (s *Session) auth(scheme, credentials string) *Frame {
	return s.CallXid(wire.XidAuth, wire.OpAuth, &wire.AuthPacket{Scheme: scheme, Auth: []byte(credentials)})
}

func (s *Session) whoAmI() *Frame { return s.Call(wire.OpWhoAmI, nil) }

func (s *Session) multi(ops ...wire.MultiOp) *Frame {
	return s.Call(wire.OpMulti, &wire.MultiRequest{Ops: ops})
}

func (s *Session) multiRead(ops ...wire.MultiOp) *Frame {
	return s.Call(wire.OpMultiRead, &wire.MultiRequest{Ops: ops})
}

func opCreate(op wire.Op, path string, data []byte, flags int32) wire.MultiOp {
	return wire.MultiOp{Op: op, Req: &wire.CreateRequest{Path: path, Data: data, ACL: wire.OpenACLUnsafe, Flags: flags}}
}

func opCreateTTL(path string, flags int32, ttl int64) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpCreateTTL, Req: &wire.CreateTTLRequest{
		CreateRequest: wire.CreateRequest{Path: path, ACL: wire.OpenACLUnsafe, Flags: flags}, TTL: ttl}}
}

func opDelete(path string, version int32) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpDelete, Req: &wire.PathVersionRequest{Path: path, Version: version}}
}

func opCheck(path string, version int32) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpCheck, Req: &wire.PathVersionRequest{Path: path, Version: version}}
}

func opSetData(path string, data []byte, version int32) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpSetData, Req: &wire.SetDataRequest{Path: path, Data: data, Version: version}}
}

func opGetData(path string) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpGetData, Req: &wire.PathWatchRequest{Path: path}}
}

func opGetChildren(path string) wire.MultiOp {
	return wire.MultiOp{Op: wire.OpGetChildren, Req: &wire.PathWatchRequest{Path: path}}
}

func acl(perms wire.Perm, scheme, id string) wire.ACL {
	return wire.ACL{Perms: perms, Scheme: scheme, ID: id}
}
