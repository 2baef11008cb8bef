package txn

import (
	"fmt"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// createMode is what the create flags ask for (CreateMode).
type createMode struct {
	ephemeral, sequential, container, ttl bool
}

func modeOf(flags int32) (createMode, bool) {
	switch flags {
	case wire.FlagPersistent:
		return createMode{}, true
	case wire.FlagEphemeral:
		return createMode{ephemeral: true}, true
	case wire.FlagPersistentSequential:
		return createMode{sequential: true}, true
	case wire.FlagEphemeralSequential:
		return createMode{ephemeral: true, sequential: true}, true
	case wire.FlagContainer:
		return createMode{container: true}, true
	case wire.FlagPersistentWithTTL:
		return createMode{ttl: true}, true
	case wire.FlagPersistentSequentialWithTTL:
		return createMode{sequential: true, ttl: true}, true
	}
	return createMode{}, false
}

// create applies create, create2, createContainer and createTTL (ttl is -1 unless the
// opcode is createTTL), checking in the order of PrepRequestProcessor.pRequest2TxnCreate.
func (a *applier) create(op wire.Op, r *wire.CreateRequest, ttl int64) OpResult {
	res := OpResult{Op: wire.OpCreate}
	if op != wire.OpCreate {
		res.Op = wire.OpCreate2
	}
	mode, ok := modeOf(r.Flags)
	if !ok {
		res.Err = fmt.Errorf("%w: create flags %d", datatree.ErrBadArguments, r.Flags)
		return res
	}
	// The opcode, not the flag, makes a container: createContainer makes one whatever
	// its flags (an ephemeral flag included), and create/create2 with the container flag
	// make a persistent node, as PrepRequestProcessor's txn types do.
	mode.container = op == wire.OpCreateContainer
	if mode.container {
		mode.ephemeral = false
	}
	if op == wire.OpCreateTTL && !mode.ttl {
		// Apache ZooKeeper 3.8 dies on this one (createTTL, non-TTL flags, ttl < 0).
		res.Err = fmt.Errorf("%w: createTTL with non-TTL flags %d", datatree.ErrBadArguments, r.Flags)
		return res
	}
	if res.Err = a.checkTTL(mode, ttl); res.Err != nil {
		return res
	}
	parentPath, ok := datatree.ParentOf(r.Path)
	if !ok {
		res.Err = fmt.Errorf("%w: %q", datatree.ErrBadPath, r.Path)
		return res
	}
	acl, err := datatree.FixupACL(r.ACL, a.txn.Ids)
	if err != nil {
		res.Err = err
		return res
	}
	parent := a.tree.Get(parentPath)
	if !parent.Exists() {
		res.Err = datatree.ErrNoNode
		return res
	}
	if !a.allowed(parent.ACL(), wire.PermCreate) {
		res.Err = datatree.ErrNoAuth
		return res
	}
	path := r.Path
	if mode.sequential {
		path = fmt.Sprintf("%s%010d", path, parent.ChildCreates())
	}
	if res.Err = datatree.ValidatePath(path); res.Err != nil {
		return res
	}
	// An ephemeral has no children, so "exists" cannot apply under one: checking it
	// first gives the same answers as ZooKeeper's order (exists, then ephemeral parent).
	if parent.Kind() == datatree.Ephemeral {
		res.Err = datatree.ErrNoChildrenForEphemerals
		return res
	}
	if res.Err = a.checkCreateQuota(path, r.Data); res.Err != nil {
		return res
	}
	var owner int64
	switch {
	case mode.ephemeral:
		owner = a.txn.Session
	case mode.container:
		owner = datatree.ContainerOwner
	case mode.ttl:
		owner = datatree.TTLOwner(ttl)
	}
	n, created := a.tree.CreateChild(parent, path, r.Data, acl, owner, a.txn.Zxid, a.txn.Time)
	if !created {
		res.Err = datatree.ErrNodeExists
		return res
	}
	a.emit(wire.EventNodeCreated, path, n.ACL())
	a.emit(wire.EventNodeChildrenChanged, parentPath, parent.ACL())
	res.Path, res.Stat = path, n.Stat()
	return res
}

// checkTTL enforces EphemeralType.validateTTL: TTL modes need extended types and a TTL
// in (0, MaxTTL]; other modes must not carry one.
func (a *applier) checkTTL(mode createMode, ttl int64) error {
	if mode.ttl && !a.opt.ExtendedTypes {
		return fmt.Errorf("%w: TTL nodes (extendedTypesEnabled)", datatree.ErrUnimplemented)
	}
	if mode.ttl && (ttl <= 0 || ttl > wire.MaxTTL) {
		return fmt.Errorf("%w: ttl %d not in (0, %d]", datatree.ErrBadArguments, ttl, wire.MaxTTL)
	}
	if !mode.ttl && ttl >= 0 {
		return fmt.Errorf("%w: ttl given for a non-TTL create", datatree.ErrBadArguments)
	}
	return nil
}

// checkCreateQuota checks a create's quota after its other checks, as ZooKeeper does:
// a node that exists is NodeExists, never QuotaExceeded. The existence check is made
// only under a quota; elsewhere CreateChild finds it.
func (a *applier) checkCreateQuota(path string, data []byte) error {
	vs := a.tree.CheckQuota(path, int64(len(data)), 1)
	if len(vs) > 0 && a.tree.Get(path).Exists() {
		return datatree.ErrNodeExists
	}
	return a.noteQuota(vs)
}
