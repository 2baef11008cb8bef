package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// ErrNoPolicy is MigrateACLs on a Session without a Policy.
var ErrNoPolicy = errors.New("coordinator: no ACL policy (no roles given)")

// MigrateACLs gives every node at or under each of roots that lets unauthenticated
// clients do more than read and what the Session's Policy lets them do there (a node
// made by a paddock before role ACLs is world:anyone cdrwa) the ACL the Policy gives its
// path, and returns how many it changed. Nodes already protected are left alone, so it
// may run on every start. Changing an ACL needs the ADMIN permission, which
// world:anyone cdrwa grants; a node whose ACL this session may not change is an error.
// A root that does not exist is skipped.
func (s *Session) MigrateACLs(ctx context.Context, roots ...string) (int, error) {
	if s.cfg.Policy == nil {
		return 0, ErrNoPolicy
	}
	n := 0
	for _, root := range roots {
		if err := checkPath(root); err != nil {
			return n, err
		}
		if err := s.migrateTree(ctx, root, &n); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *Session) migrateTree(ctx context.Context, path string, n *int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	acl, stat, err := s.conn.GetACL(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("coordinator: migrate acls: get acl %s: %w", path, err)
	}
	// Children first, while this node still lets us list them.
	kids, _, err := s.conn.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("coordinator: migrate acls: list %s: %w", path, err)
	}
	for _, k := range kids {
		if err := s.migrateTree(ctx, childPath(path, k), n); err != nil {
			return err
		}
	}
	changed, err := s.migrateNode(path, acl, stat)
	if changed {
		*n++
	}
	return err
}

// MigrateACL is MigrateACLs of the node at path alone, not its children (the root
// znode, whose children are not all the platform's); it reports whether it changed the
// ACL.
func (s *Session) MigrateACL(ctx context.Context, path string) (bool, error) {
	if s.cfg.Policy == nil {
		return false, ErrNoPolicy
	}
	if err := checkPath(path); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	acl, stat, err := s.conn.GetACL(path)
	if errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("coordinator: migrate acl: get acl %s: %w", path, err)
	}
	return s.migrateNode(path, acl, stat)
}

// migrateNode gives the node at path, whose ACL is acl at stat, the Policy's ACL if it
// is open beyond it; it reports whether it did.
func (s *Session) migrateNode(path string, acl []zk.ACL, stat *zk.Stat) (bool, error) {
	if !s.cfg.Policy.openBeyond(path, acl) {
		return false, nil
	}
	_, err := s.conn.SetACL(path, s.ACLFor(path), stat.Aversion)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("coordinator: migrate acls: set acl %s: %w", path, err)
	}
	return true, nil
}
