package faultfs

import (
	"io"
	"os"
	"slices"
	"syscall"
)

// inode is a file's contents: what reads see, what survives a crash, and the changes
// between the two. All fields are guarded by FS.mu.
type inode struct {
	id      int    // creation order, so that Crash visits files deterministically
	path    string // the name it was last created or renamed under, for rules and errors
	data    []byte // what reads see
	durable []byte // what a crash keeps: data as of the last Sync or Datasync
	pending []change
}

// change is one write or resize of a file since its last sync.
type change struct {
	off  int64
	data []byte // the bytes written at off; nil for a resize
	size int64  // for a resize: the new size
}

func (c change) isWrite() bool { return c.data != nil }

func (n *inode) write(off int64, p []byte) {
	c := change{off: off, data: append([]byte{}, p...)}
	n.data = c.apply(n.data)
	n.pending = append(n.pending, c)
}

func (n *inode) resize(size int64) {
	c := change{size: size}
	n.data = c.apply(n.data)
	n.pending = append(n.pending, c)
}

// sync makes data durable by applying the pending changes to durable, which costs
// what was changed rather than the file's size.
func (n *inode) sync() {
	for _, c := range n.pending {
		n.durable = c.apply(n.durable)
	}
	n.pending = nil
}

// apply returns b with the change made; bytes b gains read as zeros.
func (c change) apply(b []byte) []byte {
	if !c.isWrite() {
		return resize(b, c.size)
	}
	if end := c.off + int64(len(c.data)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[c.off:], c.data)
	return b
}

func resize(b []byte, size int64) []byte {
	if size <= int64(len(b)) {
		return b[:size]
	}
	n := len(b)
	b = slices.Grow(b, int(size)-n)[:size]
	clear(b[n:]) // the capacity reused may hold old bytes
	return b
}

// dir is a directory's entries: those lookups see, those a crash keeps (as of the last
// SyncDir), and the changes between the two. Guarded by FS.mu.
type dir struct {
	files   map[string]*inode
	durable map[string]*inode
	pending []dirChange
}

// dirChange is one atomic change of a directory: each entry set (to a file, or to nil
// to remove it). A rename within a directory is one change of two entries.
type dirChange []dirEntryChange

type dirEntryChange struct {
	name string
	node *inode
}

func newDir() *dir {
	return &dir{files: make(map[string]*inode), durable: make(map[string]*inode)}
}

func (d *dir) change(c dirChange) {
	c.apply(d.files)
	d.pending = append(d.pending, c)
}

func (d *dir) sync() {
	for _, c := range d.pending {
		c.apply(d.durable)
	}
	d.pending = nil
}

func (c dirChange) apply(m map[string]*inode) {
	for _, e := range c {
		if e.node == nil {
			delete(m, e.name)
		} else {
			m[e.name] = e.node
		}
	}
}

// file is an open file handle.
type file struct {
	fs     *FS
	node   *inode
	gen    int // the FS generation it was opened in
	flag   int
	closed bool
}

func (h *file) writable() bool { return h.flag&(os.O_WRONLY|os.O_RDWR) != 0 }

// beginLocked checks that the handle may do op and whether a rule fails it.
func (h *file) beginLocked(op Op, name string) (torn bool, err error) {
	switch {
	case h.closed:
		return false, pathErr(name, h.node.path, os.ErrClosed)
	case h.gen != h.fs.gen:
		return false, pathErr(name, h.node.path, ErrStale)
	}
	if err, torn := h.fs.checkLocked(op, h.node.path); err != nil {
		return torn, pathErr(name, h.node.path, err)
	}
	if op&(OpWrite|OpTruncate|OpAllocate) != 0 && !h.writable() {
		return false, pathErr(name, h.node.path, syscall.EBADF)
	}
	return false, nil
}

func (h *file) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if _, err := h.beginLocked(OpRead, "read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", h.node.path, syscall.EINVAL)
	}
	if off >= int64(len(h.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *file) WriteAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	torn, err := h.beginLocked(OpWrite, "write")
	if torn && len(p) > 0 {
		n := h.fs.rng.IntN(len(p))
		h.node.write(off, p[:n])
		return n, err
	}
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("write", h.node.path, syscall.EINVAL)
	}
	h.node.write(off, p)
	return len(p), nil
}

func (h *file) Size() (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if _, err := h.beginLocked(OpStat, "stat"); err != nil {
		return 0, err
	}
	return int64(len(h.node.data)), nil
}

func (h *file) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if _, err := h.beginLocked(OpTruncate, "truncate"); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", h.node.path, syscall.EINVAL)
	}
	h.node.resize(size)
	return nil
}

func (h *file) Allocate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if _, err := h.beginLocked(OpAllocate, "allocate"); err != nil {
		return err
	}
	if size > int64(len(h.node.data)) {
		h.node.resize(size)
	}
	return nil
}

func (h *file) Sync() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if _, err := h.beginLocked(OpSync, "sync"); err != nil {
		return err
	}
	h.node.sync()
	return nil
}

// Datasync is Sync: the model keeps no metadata that fdatasync would leave out.
func (h *file) Datasync() error { return h.Sync() }

func (h *file) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.closed {
		return pathErr("close", h.node.path, os.ErrClosed)
	}
	h.closed = true
	return nil
}
