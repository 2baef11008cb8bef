package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/paddock/paddock/server/store"
)

// newFS returns an FS with the directory /d.
func newFS(t *testing.T, seed uint64) *FS {
	t.Helper()
	f := New(seed)
	if err := f.MkdirAll("/d", 0o750); err != nil {
		t.Fatal(err)
	}
	return f
}

func create(t *testing.T, f *FS, name string) store.File {
	t.Helper()
	h, err := f.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func writeAt(t *testing.T, h store.File, s string, off int64) {
	t.Helper()
	if _, err := h.WriteAt([]byte(s), off); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// contents returns the file's contents, or "<none>" if it does not exist.
func contents(t *testing.T, f *FS, name string) string {
	t.Helper()
	b, err := f.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "<none>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDropUnsynced(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, f *FS)
		want  map[string]string
	}{
		{"created file without a directory sync", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a")
			writeAt(t, h, "abc", 0)
			must(t, h.Sync())
		}, map[string]string{"/d/a": "<none>"}},
		{"synced file and directory", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a")
			writeAt(t, h, "abc", 0)
			must(t, h.Sync())
			must(t, f.SyncDir("/d"))
			writeAt(t, h, "XY", 1) // not synced
			writeAt(t, h, "tail", 3)
		}, map[string]string{"/d/a": "abc"}},
		{"directory synced, data not", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a")
			must(t, f.SyncDir("/d"))
			writeAt(t, h, "abc", 0)
		}, map[string]string{"/d/a": ""}},
		{"unsynced truncation", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a")
			writeAt(t, h, "abcdef", 0)
			must(t, h.Datasync())
			must(t, f.SyncDir("/d"))
			must(t, h.Truncate(2))
		}, map[string]string{"/d/a": "abcdef"}},
		{"unsynced rename", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a.tmp")
			writeAt(t, h, "abc", 0)
			must(t, h.Sync())
			must(t, f.SyncDir("/d"))
			must(t, f.Rename("/d/a.tmp", "/d/a"))
		}, map[string]string{"/d/a": "<none>", "/d/a.tmp": "abc"}},
		{"synced rename", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a.tmp")
			writeAt(t, h, "abc", 0)
			must(t, h.Sync())
			must(t, f.Rename("/d/a.tmp", "/d/a"))
			must(t, f.SyncDir("/d"))
		}, map[string]string{"/d/a": "abc", "/d/a.tmp": "<none>"}},
		{"unsynced remove", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a")
			writeAt(t, h, "abc", 0)
			must(t, h.Sync())
			must(t, f.SyncDir("/d"))
			must(t, f.Remove("/d/a"))
		}, map[string]string{"/d/a": "abc"}},
		{"synced remove", func(t *testing.T, f *FS) {
			h := create(t, f, "/d/a")
			must(t, f.SyncDir("/d"))
			must(t, f.Remove("/d/a"))
			must(t, f.SyncDir("/d"))
			h.Close()
		}, map[string]string{"/d/a": "<none>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFS(t, 1)
			tt.setup(t, f)
			f.Crash(DropUnsynced)
			for name, want := range tt.want {
				if got := contents(t, f, name); got != want {
					t.Errorf("%s after crash: %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestKeepPrefix checks that every crash leaves a state some prefix of the writes,
// the last possibly torn, would have made, and that over many seeds all of them occur.
func TestKeepPrefix(t *testing.T) {
	writes := []string{"aaaa", "bbbb", "cc"}
	offs := []int64{0, 2, 8}
	possible := map[string]bool{"base": true}
	state := []byte("base")
	for i, w := range writes {
		for n := range len(w) + 1 {
			possible[string(change{off: offs[i], data: []byte(w[:n])}.apply(bytes.Clone(state)))] = true
		}
		state = change{off: offs[i], data: []byte(w)}.apply(state)
	}
	seen := make(map[string]bool)
	for seed := range uint64(400) {
		f := newFS(t, seed)
		h := create(t, f, "/d/a")
		writeAt(t, h, "base", 0)
		must(t, h.Sync())
		must(t, f.SyncDir("/d"))
		for i, w := range writes {
			writeAt(t, h, w, offs[i])
		}
		f.Crash(KeepPrefix)
		got := contents(t, f, "/d/a")
		if !possible[got] {
			t.Fatalf("seed %d: %q is no prefix of the writes", seed, got)
		}
		seen[got] = true
	}
	if len(seen) != len(possible) {
		t.Fatalf("saw %d of the %d possible states: %v", len(seen), len(possible), seen)
	}
}

func TestScramble(t *testing.T) {
	old := bytes.Repeat([]byte{'o'}, 4*sectorSize)
	kept, lost := 0, 0
	for seed := range uint64(50) {
		f := newFS(t, seed)
		h := create(t, f, "/d/a")
		writeAt(t, h, string(old), 0)
		must(t, h.Sync())
		must(t, f.SyncDir("/d"))
		// One write over sectors 0-2 (partly), one over sector 3.
		writeAt(t, h, string(bytes.Repeat([]byte{'n'}, 2*sectorSize+100)), 200)
		writeAt(t, h, string(bytes.Repeat([]byte{'m'}, sectorSize)), 3*sectorSize)
		f.Crash(Scramble)
		got := []byte(contents(t, f, "/d/a"))
		if len(got) != len(old) {
			t.Fatalf("seed %d: size %d", seed, len(got))
		}
		for s := range 4 {
			sec := got[s*sectorSize : (s+1)*sectorSize]
			first, want := 0, byte('n')
			switch s {
			case 0:
				first = 200
			case 2:
				sec = sec[:300]
			case 3:
				want = 'm'
			}
			switch {
			case bytes.Equal(sec[first:], bytes.Repeat([]byte{want}, len(sec)-first)):
				kept++
			case bytes.Equal(sec[first:], bytes.Repeat([]byte{'o'}, len(sec)-first)):
				lost++
			default:
				t.Fatalf("seed %d: sector %d is neither old nor new: %q", seed, s, sec)
			}
			if !bytes.Equal(sec[:first], old[:first]) {
				t.Fatalf("seed %d: bytes before the write changed", seed)
			}
		}
	}
	if kept == 0 || lost == 0 {
		t.Fatalf("sectors kept %d, lost %d: want both", kept, lost)
	}
}

func TestRules(t *testing.T) {
	t.Run("after and count", func(t *testing.T) {
		f := newFS(t, 1)
		ft := f.Inject(Rule{Ops: OpWrite, Path: "*.wal", After: 2, Count: 2})
		a, b := create(t, f, "/d/x.wal"), create(t, f, "/d/y.snap")
		var fails []int
		for i := range 6 {
			if _, err := a.WriteAt([]byte("z"), int64(i)); err != nil {
				if !errors.Is(err, ErrInjected) || !errors.Is(err, syscall.EIO) {
					t.Fatalf("error %v is not ErrInjected", err)
				}
				fails = append(fails, i)
			}
			writeAt(t, b, "z", int64(i))
		}
		if fmt.Sprint(fails) != "[2 3]" || ft.Fired() != 2 {
			t.Fatalf("failed writes %v (fired %d), want [2 3]", fails, ft.Fired())
		}
		if f.Count(OpWrite) != 12 || f.Count(OpCreate) != 2 || f.Count(OpWrite|OpCreate) != 14 {
			t.Fatalf("counts: write %d create %d", f.Count(OpWrite), f.Count(OpCreate))
		}
	})
	t.Run("renamed file matches its new name", func(t *testing.T) {
		f := newFS(t, 1)
		h := create(t, f, "/d/x.wal.tmp")
		must(t, f.Rename("/d/x.wal.tmp", "/d/x.wal"))
		custom := errors.New("custom")
		f.Inject(Rule{Ops: OpSync, Path: "/d/*.wal", Err: custom})
		if err := h.Datasync(); !errors.Is(err, custom) {
			t.Fatalf("Datasync: %v, want the custom error", err)
		}
	})
	t.Run("torn write", func(t *testing.T) {
		f := newFS(t, 3)
		h := create(t, f, "/d/a")
		f.Inject(Rule{Ops: OpWrite, Torn: true, Count: 1})
		n, err := h.WriteAt([]byte("0123456789"), 0)
		if err == nil || n >= 10 {
			t.Fatalf("torn write: n=%d err=%v", n, err)
		}
		if got := contents(t, f, "/d/a"); got != "0123456789"[:n] {
			t.Fatalf("after a torn write of %d bytes the file holds %q", n, got)
		}
	})
	t.Run("probability", func(t *testing.T) {
		f := newFS(t, 4)
		h := create(t, f, "/d/a")
		f.Inject(Rule{Ops: OpSync, Prob: 0.25})
		fails := 0
		for range 1000 {
			if h.Sync() != nil {
				fails++
			}
		}
		if fails < 180 || fails > 320 {
			t.Fatalf("%d of 1000 syncs failed with probability 0.25", fails)
		}
	})
	t.Run("halt", func(t *testing.T) {
		f := newFS(t, 1)
		h := create(t, f, "/d/a")
		writeAt(t, h, "abc", 0)
		must(t, h.Sync())
		must(t, f.SyncDir("/d"))
		f.Inject(Rule{Ops: OpRename, Halt: true})
		if err := f.Rename("/d/a", "/d/b"); !errors.Is(err, ErrInjected) {
			t.Fatalf("Rename: %v", err)
		}
		if _, err := h.WriteAt([]byte("x"), 0); !errors.Is(err, ErrHalted) || !f.Halted() {
			t.Fatalf("write after halt: %v", err)
		}
		if _, err := f.ReadDir("/d"); !errors.Is(err, ErrHalted) {
			t.Fatalf("ReadDir after halt: %v", err)
		}
		f.Crash(DropUnsynced)
		if _, err := h.ReadAt(make([]byte, 1), 0); !errors.Is(err, ErrStale) {
			t.Fatalf("old handle after crash: %v", err)
		}
		if got := contents(t, f, "/d/a"); got != "abc" || f.Halted() {
			t.Fatalf("after restart: %q, halted %v", got, f.Halted())
		}
	})
}

func TestFileSemantics(t *testing.T) {
	f := newFS(t, 1)
	if _, err := f.OpenFile("/d/a", os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open of a missing file: %v", err)
	}
	if _, err := f.OpenFile("/nodir/a", os.O_RDWR|os.O_CREATE, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("create in a missing directory: %v", err)
	}
	h := create(t, f, "/d/a")
	if _, err := f.OpenFile("/d/a", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("exclusive create of an existing file: %v", err)
	}
	writeAt(t, h, "hello", 3)
	must(t, h.Allocate(16))
	if n, _ := h.Size(); n != 16 {
		t.Fatalf("size %d after allocate, want 16", n)
	}
	must(t, h.Allocate(4)) // never shrinks
	buf := make([]byte, 20)
	n, err := h.ReadAt(buf, 0)
	if n != 16 || err != io.EOF || string(buf[:8]) != "\x00\x00\x00hello" {
		t.Fatalf("ReadAt: %d %v %q", n, err, buf[:n])
	}
	must(t, h.Truncate(4))
	must(t, h.Truncate(6))
	if got := contents(t, f, "/d/a"); got != "\x00\x00\x00h\x00\x00" {
		t.Fatalf("after shrinking and growing: %q", got)
	}
	ro, err := f.OpenFile("/d/a", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.WriteAt([]byte("x"), 0); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("write on a read-only handle: %v", err)
	}
	if _, err := f.OpenFile("/d/a", os.O_RDWR|os.O_TRUNC, 0); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, f, "/d/a"); got != "" {
		t.Fatalf("after O_TRUNC: %q", got)
	}
	must(t, f.MkdirAll("/d/sub/x", 0o750))
	entries, err := f.ReadDir("/d")
	if err != nil || len(entries) != 2 || entries[0].Name() != "a" || entries[1].Name() != "sub" || !entries[1].IsDir() {
		t.Fatalf("ReadDir: %v %v", entries, err)
	}
	must(t, h.Close())
	if err := h.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
}

func TestLock(t *testing.T) {
	f := newFS(t, 1)
	l, err := f.Lock("/d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Lock("/d"); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	must(t, l.Close())
	l2, err := f.Lock("/d")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	f.Crash(DropUnsynced) // the process holding it died
	if _, err := f.Lock("/d"); err != nil {
		t.Fatalf("lock after crash: %v", err)
	}
	must(t, l2.Close()) // a stale release does not drop the new holder's lock
	if _, err := f.Lock("/d"); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("stale release freed the lock: %v", err)
	}
}
