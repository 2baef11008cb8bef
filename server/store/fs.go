package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unsafe"
)

// FS is the file system the store works on: every file operation of the log and the
// snapshots goes through it, so that tests can put them on a file system that fails
// or crashes on command (internal/faultfs). Config.FS nil, and a nil FS argument,
// mean the operating system's (OS).
//
// Paths are operating-system paths as the store builds them with path/filepath.
// Implementations must be safe for concurrent use: the log's writer, a purge and a
// snapshot writer may call them at once.
type FS interface {
	// OpenFile opens a regular file as os.OpenFile does; flag is made of os.O_RDONLY,
	// os.O_WRONLY, os.O_RDWR, os.O_CREATE, os.O_EXCL and os.O_TRUNC.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Rename renames a file, replacing newname if it exists, as os.Rename does. It is
	// durable only once the directories involved are synced.
	Rename(oldname, newname string) error
	// Remove removes a file; durable once its directory is synced. A missing file gives
	// an error for which errors.Is(err, fs.ErrNotExist) holds.
	Remove(name string) error
	// ReadDir lists a directory sorted by name, as os.ReadDir does.
	ReadDir(name string) ([]fs.DirEntry, error)
	// MkdirAll creates a directory and its parents, as os.MkdirAll does.
	MkdirAll(name string, perm fs.FileMode) error
	// SyncDir makes the creations, renames and removals in a directory durable.
	SyncDir(name string) error
	// Lock takes an exclusive lock on a directory for this process, without waiting;
	// closing the returned Closer releases it. A lock held by someone else gives an
	// error for which errors.Is(err, ErrLocked) holds.
	Lock(name string) (io.Closer, error)
}

// File is an open file of an FS. The store reads and writes at explicit offsets only.
// A File is used by one goroutine at a time.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	// Size returns the file's current size in bytes.
	Size() (int64, error)
	// Truncate changes the file's size; new bytes read as zeros.
	Truncate(size int64) error
	// Allocate makes the file at least size bytes long, the new bytes reading as zeros,
	// and reserves the disk space so that later writes below size need not grow it.
	Allocate(size int64) error
	// Sync makes the file's data and metadata durable (fsync).
	Sync() error
	// Datasync makes the file's data durable, and of its metadata what reading the data
	// back needs, such as its size (fdatasync).
	Datasync() error
}

// OS is the operating system's file system, the default.
var OS FS = osFS{}

// fsOrOS returns fsys, or OS if fsys is nil.
func fsOrOS(fsys FS) FS {
	if fsys == nil {
		return OS
	}
	return fsys
}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = syncDir(d)
	return errors.Join(err, d.Close())
}

func (osFS) Lock(name string) (io.Closer, error) {
	d, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if err := lockDir(d); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil // closing the directory releases the lock
}

// osFile is an *os.File with the calls the store needs that package os lacks.
type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (f osFile) Allocate(size int64) error { return preallocate(f.File, size) }
func (f osFile) Datasync() error           { return fdatasync(f.File) }

// fillZeros extends f to size bytes by writing zeros after its current end: the
// fallback of preallocate where the file system cannot reserve space.
func fillZeros(f *os.File, size int64) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	for off := fi.Size(); off < size; {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return fmt.Errorf("fill zeros: %w", err)
		}
		off += n
	}
	return nil
}

// openUncached opens a file to be written around the page cache (O_DIRECT) where
// fsys is the operating system's file system and it allows that; align is then the
// size and alignment every write's offset, length and memory must have. Otherwise
// it opens the file as fsys.OpenFile does, with align 0.
func openUncached(fsys FS, name string, flag int, perm fs.FileMode) (f File, align int, err error) {
	if _, ok := fsys.(osFS); ok && directIOFlag != 0 {
		if f, err := os.OpenFile(name, flag|directIOFlag, perm); err == nil {
			return uncachedFile{osFile{f}}, directIOAlign, nil
		}
		// tmpfs, for one, refuses the flag: through the page cache then.
	}
	f, err = fsys.OpenFile(name, flag, perm)
	return f, 0, err
}

// uncachedFile is a file opened with O_DIRECT. Where the file system accepted the
// flag but refuses a write with it (EINVAL), the file goes on through the page cache.
type uncachedFile struct{ osFile }

func (f uncachedFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.osFile.WriteAt(p, off)
	if n == 0 && errors.Is(err, syscall.EINVAL) && clearDirectIO(f.File) == nil {
		return f.osFile.WriteAt(p, off)
	}
	return n, err
}

// alignedBuffer returns an empty slice of capacity size whose memory starts on a
// multiple of align (anywhere if align is 0).
func alignedBuffer(size, align int) []byte {
	if align == 0 {
		return make([]byte, 0, size)
	}
	b := make([]byte, size+align)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % uintptr(align)); r != 0 {
		skip = align - r
	}
	return b[skip : skip : skip+size]
}
