// Package faultfs is an in-memory store.FS for tests that can crash the machine and
// fail operations on command.
//
// It keeps, for every file, what reads see and what would survive a crash — the
// contents as of the file's last Sync or Datasync — and the writes, truncations and
// allocations made since, in order; for every directory it keeps its entries as of its
// last SyncDir and the creations, renames and removals made since. Crash throws away
// what was not synced, or, in its harsher modes, keeps a random part of it (a prefix
// of the changes with the next write torn, or random sectors of every unsynced write),
// as a power cut may. Rules (Inject) make chosen operations fail — by kind, path, count
// or probability — optionally tearing the failing write, or halting the file system
// there as if the process died at that very call.
//
// A test runs its code on an FS, crashes it, and opens the same FS again as the
// restarted machine would see it:
//
//	fsys := faultfs.New(seed)
//	w, _ := store.Open(store.Config{Dir: "/log", FS: fsys, ...}, nil)
//	... Append, Sync ...
//	fsys.Crash(faultfs.KeepPrefix)
//	w, _ = store.Open(store.Config{Dir: "/log", FS: fsys, ...}, nil) // recovers
//
// It lives in internal/ rather than under server/store because it implements
// store.FS, so it imports store, and a subpackage never imports its parent; it is
// test infrastructure for any package that stores through package store (the server's
// crash tests pass it with server.WithFS).
//
// Simplifications: directories are durable as soon as MkdirAll returns; a rename
// between two directories is two independent changes, one in each; permissions are
// not checked. Randomness comes from the seed given to New, so a single-goroutine test
// replays exactly.
package faultfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/paddock/paddock/server/store"
)

var (
	// ErrInjected is what an operation failed by a Rule returns unless the Rule names
	// another error. It wraps syscall.EIO, as a failing disk reports.
	ErrInjected = fmt.Errorf("faultfs: injected fault: %w", syscall.EIO)
	// ErrHalted is returned by every operation after a Rule with Halt fired, until Crash.
	ErrHalted = errors.New("faultfs: halted: the process is considered dead")
	// ErrStale is returned by a file handle or lock opened before the last Crash.
	ErrStale = errors.New("faultfs: handle from before the crash")
)

// Op is a kind of operation, as a bit so that a Rule can name several.
type Op uint32

const (
	OpOpen     Op = 1 << iota // OpenFile of a file that exists
	OpCreate                  // OpenFile that creates a file
	OpRead                    // File.ReadAt
	OpWrite                   // File.WriteAt
	OpTruncate                // File.Truncate, and the truncation of OpenFile with os.O_TRUNC
	OpAllocate                // File.Allocate
	OpSync                    // File.Sync and File.Datasync
	OpStat                    // File.Size
	OpSyncDir                 // FS.SyncDir
	OpRename                  // FS.Rename
	OpRemove                  // FS.Remove
	OpReadDir                 // FS.ReadDir
	OpMkdir                   // FS.MkdirAll
	OpLock                    // FS.Lock
	opLimit

	// AllOps matches every operation.
	AllOps = opLimit - 1
)

var opNames = []string{"open", "create", "read", "write", "truncate", "allocate", "sync", "stat",
	"syncdir", "rename", "remove", "readdir", "mkdir", "lock"}

func (op Op) String() string {
	var names []string
	for i, name := range opNames {
		if op&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "|")
}

// Rule makes matching operations fail. An operation matches when its kind is in Ops
// and its path matches Path. The first After matching operations pass; after them,
// each matching operation fails — with probability Prob if Prob > 0 — until the rule
// has failed Count of them (0: no limit).
type Rule struct {
	Ops Op
	// Path is a filepath.Match pattern for the file's base name ("*.wal", "snapshot.*"),
	// or for the whole path if it holds a separator; "" matches every path. File handle
	// operations match the file's current name, renames the old and the new name.
	Path  string
	After int
	Count int
	Prob  float64
	// Err is the error a failing operation returns; nil means ErrInjected.
	Err error
	// Torn makes a failing write first write a random prefix of its data, as a write
	// cut short by the error would (unsynced, like any write).
	Torn bool
	// Halt makes the file system stop when the rule fires: that operation and every
	// later one fails with ErrHalted until Crash, as if the process died during the
	// call. Whether the failing operation took effect is decided by Torn for writes;
	// other operations do not take effect.
	Halt bool
}

// Fault is an injected Rule, for asking how often it fired.
type Fault struct {
	fs    *FS
	rule  Rule
	seen  int // matching operations so far
	fired int
}

// Fired returns how many operations the rule has failed so far.
func (f *Fault) Fired() int {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.fired
}

// FS is the in-memory file system. All its methods are safe for concurrent use.
type FS struct {
	mu     sync.Mutex
	rng    *rand.Rand
	dirs   map[string]*dir    // by clean path; every directory, durable when created
	locks  map[string]*locker // held directory locks, by clean path
	faults []*Fault
	counts [32]int // operations performed, by bit number of Op
	gen    int     // bumped by Crash: handles of an older generation are stale
	halted bool
	nextID int // for ordering inodes deterministically
}

// New returns an empty file system whose random choices (Crash modes, Rule
// probabilities) derive from seed.
func New(seed uint64) *FS {
	return &FS{
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		dirs:  make(map[string]*dir),
		locks: make(map[string]*locker),
	}
}

var _ store.FS = (*FS)(nil)

// Inject adds a rule. Rules are checked in the order they were added; the first one
// that fires decides the operation's failure.
func (f *FS) Inject(r Rule) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := &Fault{fs: f, rule: r}
	f.faults = append(f.faults, ft)
	return ft
}

// ClearFaults removes every rule and resumes a halted file system.
func (f *FS) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults, f.halted = nil, false
}

// Count returns how many operations of the kinds in op were attempted, failed ones
// included, since New or the last ResetCounts.
func (f *FS) Count(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := range f.counts {
		if op&(1<<i) != 0 {
			n += f.counts[i]
		}
	}
	return n
}

// ResetCounts sets every operation count to zero.
func (f *FS) ResetCounts() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts = [32]int{}
}

// Halted reports whether a Halt rule has fired since the last Crash.
func (f *FS) Halted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.halted
}

// checkLocked counts an operation and returns the error it must fail with, if any.
// torn is set when a failing write is to write part of its data first.
func (f *FS) checkLocked(op Op, paths ...string) (err error, torn bool) {
	f.counts[bits.TrailingZeros32(uint32(op))]++
	if f.halted {
		return ErrHalted, false
	}
	for _, ft := range f.faults {
		r := &ft.rule
		if r.Ops&op == 0 || !matchAny(r.Path, paths) {
			continue
		}
		ft.seen++
		if ft.seen <= r.After || (r.Count > 0 && ft.fired >= r.Count) {
			continue
		}
		if r.Prob > 0 && f.rng.Float64() >= r.Prob {
			continue
		}
		ft.fired++
		err = r.Err
		if err == nil {
			err = ErrInjected
		}
		if r.Halt {
			f.halted = true
		}
		return err, r.Torn && op == OpWrite
	}
	return nil, false
}

func matchAny(pattern string, paths []string) bool {
	if pattern == "" {
		return true
	}
	for _, p := range paths {
		name := p
		if !strings.ContainsRune(pattern, filepath.Separator) {
			name = filepath.Base(p)
		}
		if ok, _ := filepath.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

func pathErr(op, path string, err error) error { return &fs.PathError{Op: op, Path: path, Err: err} }

// lookupLocked returns the directory of path and path's base name.
func (f *FS) lookupLocked(path string) (*dir, string, error) {
	path = filepath.Clean(path)
	d := f.dirs[filepath.Dir(path)]
	if d == nil {
		return nil, "", fs.ErrNotExist
	}
	return d, filepath.Base(path), nil
}

// OpenFile implements store.FS.
func (f *FS) OpenFile(name string, flag int, perm fs.FileMode) (store.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = filepath.Clean(name)
	d, base, err := f.lookupLocked(name)
	if err != nil {
		if err, _ := f.checkLocked(OpOpen, name); err != nil {
			return nil, pathErr("open", name, err)
		}
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	n := d.files[base]
	op := OpOpen
	if n == nil && flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	if err, _ := f.checkLocked(op, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	switch {
	case f.dirs[name] != nil:
		return nil, pathErr("open", name, syscall.EISDIR)
	case n == nil && flag&os.O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case n != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case n == nil:
		f.nextID++
		n = &inode{id: f.nextID, path: name}
		d.change(dirChange{{base, n}})
	}
	h := &file{fs: f, node: n, gen: f.gen, flag: flag}
	if flag&os.O_TRUNC != 0 && h.writable() && len(n.data) > 0 {
		if err, _ := f.checkLocked(OpTruncate, name); err != nil {
			return nil, pathErr("open", name, err)
		}
		n.resize(0)
	}
	return h, nil
}

// Rename implements store.FS.
func (f *FS) Rename(oldname, newname string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	if err, _ := f.checkLocked(OpRename, oldname, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	od, obase, err := f.lookupLocked(oldname)
	if err == nil && od.files[obase] == nil {
		err = fs.ErrNotExist
	}
	nd, nbase, err2 := f.lookupLocked(newname)
	if err = errors.Join(err, err2); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if f.dirs[newname] != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: syscall.EISDIR}
	}
	n := od.files[obase]
	n.path = newname
	if od == nd {
		if obase != nbase {
			od.change(dirChange{{nbase, n}, {obase, nil}})
		}
		return nil
	}
	nd.change(dirChange{{nbase, n}})
	od.change(dirChange{{obase, nil}})
	return nil
}

// Remove implements store.FS.
func (f *FS) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = filepath.Clean(name)
	if err, _ := f.checkLocked(OpRemove, name); err != nil {
		return pathErr("remove", name, err)
	}
	d, base, err := f.lookupLocked(name)
	if err != nil || d.files[base] == nil {
		if f.dirs[name] != nil {
			return pathErr("remove", name, errors.New("faultfs: removing directories is not supported"))
		}
		return pathErr("remove", name, fs.ErrNotExist)
	}
	d.change(dirChange{{base, nil}})
	return nil
}

// ReadDir implements store.FS.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = filepath.Clean(name)
	if err, _ := f.checkLocked(OpReadDir, name); err != nil {
		return nil, pathErr("readdir", name, err)
	}
	d := f.dirs[name]
	if d == nil {
		return nil, pathErr("readdir", name, fs.ErrNotExist)
	}
	var out []fs.DirEntry
	for base, n := range d.files {
		out = append(out, dirEntry{name: base, size: int64(len(n.data))})
	}
	for p := range f.dirs {
		if p != name && filepath.Dir(p) == name {
			out = append(out, dirEntry{name: filepath.Base(p), dir: true})
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// MkdirAll implements store.FS. The directories are durable at once.
func (f *FS) MkdirAll(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = filepath.Clean(name)
	if err, _ := f.checkLocked(OpMkdir, name); err != nil {
		return pathErr("mkdir", name, err)
	}
	for p := name; f.dirs[p] == nil; p = filepath.Dir(p) {
		if d, base, err := f.lookupLocked(p); err == nil && d.files[base] != nil {
			return pathErr("mkdir", p, syscall.ENOTDIR)
		}
		f.dirs[p] = newDir()
		if filepath.Dir(p) == p {
			break
		}
	}
	return nil
}

// SyncDir implements store.FS: the directory's entries become durable.
func (f *FS) SyncDir(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = filepath.Clean(name)
	if err, _ := f.checkLocked(OpSyncDir, name); err != nil {
		return pathErr("syncdir", name, err)
	}
	d := f.dirs[name]
	if d == nil {
		return pathErr("syncdir", name, fs.ErrNotExist)
	}
	d.sync()
	return nil
}

// Lock implements store.FS. The lock is released by closing the returned Closer, and
// by Crash.
func (f *FS) Lock(name string) (io.Closer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = filepath.Clean(name)
	if err, _ := f.checkLocked(OpLock, name); err != nil {
		return nil, pathErr("lock", name, err)
	}
	if f.dirs[name] == nil {
		return nil, pathErr("lock", name, fs.ErrNotExist)
	}
	if f.locks[name] != nil {
		return nil, fmt.Errorf("%w: %s", store.ErrLocked, name)
	}
	l := &locker{fs: f, path: name, gen: f.gen}
	f.locks[name] = l
	return l, nil
}

type locker struct {
	fs   *FS
	path string
	gen  int
	done bool
}

func (l *locker) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.done || l.gen != l.fs.gen {
		return nil
	}
	l.done = true
	delete(l.fs.locks, l.path)
	return nil
}

// ReadFile returns what a read of the whole file would see now. It bypasses the rules
// and the counts: it is for the test to look, not for the code under test.
func (f *FS) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, base, err := f.lookupLocked(name)
	if err == nil && d.files[base] == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		return nil, pathErr("read", name, err)
	}
	return slices.Clone(d.files[base].data), nil
}

// WriteFile replaces the file's contents, creating it if needed, and makes the file
// and its directory entry durable, bypassing the rules and the counts: it is for a
// test to set up or damage files.
func (f *FS) WriteFile(name string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = filepath.Clean(name)
	d, base, err := f.lookupLocked(name)
	if err != nil {
		return pathErr("write", name, err)
	}
	n := d.files[base]
	if n == nil {
		f.nextID++
		n = &inode{id: f.nextID, path: name}
		d.change(dirChange{{base, n}})
	}
	n.resize(0)
	n.write(0, data)
	n.sync()
	d.sync()
	return nil
}

type dirEntry struct {
	name string
	size int64
	dir  bool
}

func (e dirEntry) Name() string { return e.name }
func (e dirEntry) IsDir() bool  { return e.dir }
func (e dirEntry) Type() fs.FileMode {
	if e.dir {
		return fs.ModeDir
	}
	return 0
}
func (e dirEntry) Info() (fs.FileInfo, error) { return e, nil }
func (e dirEntry) Size() int64                { return e.size }
func (e dirEntry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o750
	}
	return 0o640
}
func (e dirEntry) ModTime() time.Time { return time.Time{} }
func (e dirEntry) Sys() any           { return nil }
