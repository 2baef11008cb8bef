package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
)

// MakeDirs creates dir and its missing ancestors as persistent nodes (each with
// its ACLFor), riding out disconnections. The root is always there.
func (s *Session) MakeDirs(ctx context.Context, dir string) error {
	if ok, _, err := s.conn.Exists(dir); err == nil && ok {
		return nil
	}
	for i := 2; i <= len(dir); i++ {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		for {
			_, err := s.conn.Create(dir[:i], nil, 0, s.ACLFor(dir[:i]))
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				break
			}
			if err := s.WaitToRetry(ctx, err); err != nil {
				return fmt.Errorf("create %s: %w", dir[:i], err)
			}
		}
	}
	return nil
}

// PathProblem says what is wrong with a znode path by ZooKeeper's rules
// (PathUtils.validatePath), in words and without the path, or returns nil: absolute,
// no trailing slash, and names that are not empty, "." or "..", without characters
// ZooKeeper refuses.
func PathProblem(path string) error {
	switch {
	case path == "/":
		return nil
	case path == "":
		return errors.New("empty path")
	case !strings.HasPrefix(path, "/"):
		return errors.New("want an absolute path, starting with /")
	case strings.HasSuffix(path, "/"):
		return errors.New("must not end with /")
	}
	for _, name := range strings.Split(path[1:], "/") {
		if err := checkNodeName(name); err != nil {
			return err
		}
	}
	return nil
}

// checkPath validates an absolute node path.
func checkPath(path string) error {
	if err := PathProblem(path); err != nil {
		return fmt.Errorf("coordinator: path %q: %w", path, err)
	}
	return nil
}

// validNodeName validates one path component as ZooKeeper does
// (PathUtils.validatePath): not empty, not "." or "..", no "/" and none of the
// characters ZooKeeper refuses.
func checkNodeName(name string) error {
	switch name {
	case "":
		return errors.New("empty node name")
	case ".", "..":
		return fmt.Errorf("node name %q is reserved", name)
	}
	for _, r := range name {
		switch {
		case r == '/':
			return fmt.Errorf("node name %q contains '/'", name)
		case r == 0, r > 0 && r < 0x20, r >= 0x7f && r <= 0x9f,
			r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xffff:
			return fmt.Errorf("node name %q contains the invalid character %U", name, r)
		}
	}
	return nil
}

func childPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

func parentPath(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

func baseName(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }
