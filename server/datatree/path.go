package datatree

import (
	"fmt"
	"strings"
)

// ValidatePath checks a full znode path as ZooKeeper's PathUtils.validatePath does:
// absolute, no trailing slash (except "/"), no empty, "." or ".." segments, and none of
// the characters ZooKeeper forbids (controls, surrogates, private use, specials).
func ValidatePath(path string) error {
	if path == "" {
		return fmt.Errorf("%w: path must not be empty", ErrBadPath)
	}
	if path[0] != '/' {
		return fmt.Errorf("%w: %q must start with /", ErrBadPath, path)
	}
	if path == "/" {
		return nil
	}
	if path[len(path)-1] == '/' {
		return fmt.Errorf("%w: %q must not end with /", ErrBadPath, path)
	}
	for rest := path[1:]; ; {
		seg, more, found := strings.Cut(rest, "/")
		switch seg {
		case "":
			return fmt.Errorf("%w: empty node name in %q", ErrBadPath, path)
		case ".", "..":
			return fmt.Errorf("%w: relative segment %q in %q", ErrBadPath, seg, path)
		}
		if !found {
			break
		}
		rest = more
	}
	for i, r := range path {
		if forbiddenRune(r) {
			return fmt.Errorf("%w: invalid character %U at %d in %q", ErrBadPath, r, i, path)
		}
	}
	return nil
}

// forbiddenRune reports the characters PathUtils rejects. Java sees UTF-16 units, so every
// rune outside the BMP (a surrogate pair there) is rejected, and so is invalid UTF-8,
// which decodes to U+FFFD in both languages.
func forbiddenRune(r rune) bool {
	return r == 0 || r > 0xffff ||
		(r > 0 && r <= 0x1f) ||
		(r >= 0x7f && r <= 0x9f) ||
		(r >= 0xd800 && r <= 0xf8ff) ||
		(r >= 0xfff0 && r <= 0xffff)
}

// splitPath returns the parent path and the last segment of an absolute path.
// The parent of "/a" is "/". It does not validate.
func splitPath(path string) (parent, name string) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/", path[i+1:]
	}
	return path[:i], path[i+1:]
}

// ParentOf returns the parent path of an absolute path as ZooKeeper computes it
// (everything before the last '/'), and false if the path has no '/' or contains NUL.
func ParentOf(path string) (string, bool) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 || strings.IndexByte(path, 0) >= 0 {
		return "", false
	}
	if i == 0 {
		return "/", true
	}
	return path[:i], true
}

// Join returns the path of child name under parent.
func Join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
