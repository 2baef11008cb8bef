package txn

import (
	"fmt"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// isSpecialPath reports the paths that can never be deleted (ZKDatabase.isSpecialPath).
func isSpecialPath(path string) bool {
	switch path {
	case datatree.RootPath, datatree.ProcPath, datatree.QuotaPath, datatree.ConfigPath:
		return true
	}
	return false
}

// delete checks as pRequest2Txn's delete case: special path, parent, DELETE on the
// parent, node, version, children.
func (a *applier) delete(r *wire.PathVersionRequest) error {
	parentPath, ok := datatree.ParentOf(r.Path)
	if !ok || isSpecialPath(r.Path) {
		return fmt.Errorf("%w: cannot delete %q", datatree.ErrBadArguments, r.Path)
	}
	parent := a.tree.Get(parentPath)
	if !parent.Exists() {
		return datatree.ErrNoNode
	}
	if !a.allowed(parent.ACL(), wire.PermDelete) {
		return datatree.ErrNoAuth
	}
	n := a.tree.Get(r.Path)
	if !n.Exists() {
		return datatree.ErrNoNode
	}
	if err := checkVersion(n.Version(), r.Version); err != nil {
		return err
	}
	if n.NumChildren() > 0 {
		return datatree.ErrNotEmpty
	}
	a.deleteNode(r.Path, n, parentPath, parent)
	return nil
}

func (a *applier) deleteNode(path string, n datatree.Node, parentPath string, parent datatree.Node) {
	a.tree.Delete(path, a.txn.Zxid)
	a.emit(wire.EventNodeDeleted, path, n.ACL())
	a.emit(wire.EventNodeChildrenChanged, parentPath, parent.ACL())
}

func (a *applier) setData(r *wire.SetDataRequest) (wire.Stat, error) {
	n, err := a.nodeFor(r.Path)
	if err != nil {
		return wire.Stat{}, err
	}
	if !a.allowed(n.ACL(), wire.PermWrite) {
		return wire.Stat{}, datatree.ErrNoAuth
	}
	if err := a.checkQuota(r.Path, int64(len(r.Data)-len(n.Data())), 0); err != nil {
		return wire.Stat{}, err
	}
	if err := checkVersion(n.Version(), r.Version); err != nil {
		return wire.Stat{}, err
	}
	n = a.tree.SetNodeData(n, r.Data, a.txn.Zxid, a.txn.Time)
	a.emit(wire.EventNodeDataChanged, r.Path, n.ACL())
	return n.Stat(), nil
}

// setACL checks path, ACL, node, ADMIN, aversion; it fires no watches, as in ZooKeeper.
func (a *applier) setACL(r *wire.SetACLRequest) (wire.Stat, error) {
	if err := datatree.ValidatePath(r.Path); err != nil {
		return wire.Stat{}, err
	}
	acl, err := datatree.FixupACL(r.ACL, a.txn.Ids)
	if err != nil {
		return wire.Stat{}, err
	}
	n := a.tree.Get(r.Path)
	if !n.Exists() {
		return wire.Stat{}, datatree.ErrNoNode
	}
	if !a.allowed(n.ACL(), wire.PermAdmin) {
		return wire.Stat{}, datatree.ErrNoAuth
	}
	if err := checkVersion(n.Aversion(), r.Version); err != nil {
		return wire.Stat{}, err
	}
	return a.tree.SetACL(r.Path, acl).Stat(), nil
}

func (a *applier) check(r *wire.PathVersionRequest) error {
	n, err := a.nodeFor(r.Path)
	if err != nil {
		return err
	}
	if !a.allowed(n.ACL(), wire.PermRead) {
		return datatree.ErrNoAuth
	}
	return checkVersion(n.Version(), r.Version)
}

// closeSession deletes the session's ephemerals, each firing watches as a delete would,
// then forgets the session. Closing an unknown session changes nothing.
func (a *applier) closeSession(id int64) {
	for _, path := range a.tree.Ephemerals(id) {
		parentPath, _ := datatree.ParentOf(path)
		a.deleteNode(path, a.tree.Get(path), parentPath, a.tree.Get(parentPath))
	}
	a.tree.RemoveSession(id)
}

// deleteContainer reaps an empty container or an expired TTL node. The reaper proposes
// it from a scan; the node is checked again here, since it may have changed since.
func (a *applier) deleteContainer(path string) error {
	n := a.tree.Get(path)
	if !n.Exists() {
		return datatree.ErrNoNode
	}
	if n.NumChildren() > 0 {
		return datatree.ErrNotEmpty
	}
	switch n.Kind() {
	case datatree.Container:
	case datatree.TTL:
		if a.txn.Time-n.Mtime() <= n.TTL() {
			return fmt.Errorf("%w: ttl of %q not expired", datatree.ErrBadArguments, path)
		}
	default:
		return fmt.Errorf("%w: %q is not a container or TTL node", datatree.ErrBadArguments, path)
	}
	parentPath, _ := datatree.ParentOf(path)
	a.deleteNode(path, n, parentPath, a.tree.Get(parentPath))
	return nil
}
