package faultfs

import (
	"maps"
	"slices"
)

// CrashMode says what of the unsynced changes a Crash keeps.
type CrashMode int

const (
	// DropUnsynced loses every write, truncation and directory change not yet synced:
	// the state is exactly what the last syncs made durable.
	DropUnsynced CrashMode = iota
	// KeepPrefix keeps, for each file, a random prefix of its unsynced changes, and
	// of the next one, if a write, a random prefix of its bytes (a torn write); and for
	// each directory a random prefix of its unsynced changes. This is a disk that
	// persists changes in the order they were made, up to a point.
	KeepPrefix
	// Scramble keeps each 512-byte sector of each unsynced write, or not, at random,
	// independently of the order they were written in; truncations and allocations
	// are kept. Directories are as in KeepPrefix. This is a disk that writes back its
	// cache in any order.
	Scramble
)

func (m CrashMode) String() string {
	switch m {
	case DropUnsynced:
		return "drop-unsynced"
	case KeepPrefix:
		return "keep-prefix"
	case Scramble:
		return "scramble"
	}
	return "unknown"
}

// CrashModes lists every mode, for tests that try each.
var CrashModes = []CrashMode{DropUnsynced, KeepPrefix, Scramble}

// sectorSize is the unit Scramble keeps or loses.
const sectorSize = 512

// Crash simulates a power cut and the restart after it: every file and directory is
// left as the mode says, every open handle and lock becomes stale (ErrStale) and
// releases what it held, the rules are cleared and a halted file system resumes.
func (f *FS) Crash(mode CrashMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	nodes := make(map[*inode]bool)
	for _, d := range f.dirs {
		for _, n := range d.files {
			nodes[n] = true
		}
		for _, n := range d.durable {
			nodes[n] = true
		}
		for _, c := range d.pending {
			for _, e := range c {
				if e.node != nil {
					nodes[e.node] = true
				}
			}
		}
	}
	// Visit in a fixed order so that a seed replays the same crash.
	for _, n := range slices.SortedFunc(maps.Keys(nodes), func(a, b *inode) int { return a.id - b.id }) {
		f.crashFile(n, mode)
	}
	for _, p := range slices.Sorted(maps.Keys(f.dirs)) {
		f.crashDir(f.dirs[p], mode)
	}
	f.gen++
	f.halted = false
	f.faults = nil
	clear(f.locks)
}

func (f *FS) crashFile(n *inode, mode CrashMode) {
	switch mode {
	case KeepPrefix:
		k := f.rng.IntN(len(n.pending) + 1)
		for _, c := range n.pending[:k] {
			n.durable = c.apply(n.durable)
		}
		if k < len(n.pending) && n.pending[k].isWrite() {
			c := n.pending[k]
			c.data = c.data[:f.rng.IntN(len(c.data)+1)]
			n.durable = c.apply(n.durable)
		}
	case Scramble:
		for _, c := range n.pending {
			if !c.isWrite() {
				n.durable = c.apply(n.durable)
				continue
			}
			for off := c.off; off < c.off+int64(len(c.data)); {
				end := min((off/sectorSize+1)*sectorSize, c.off+int64(len(c.data)))
				if f.rng.IntN(2) == 0 {
					n.durable = change{off: off, data: c.data[off-c.off : end-c.off]}.apply(n.durable)
				}
				off = end
			}
		}
	}
	n.pending = nil
	n.data = append([]byte(nil), n.durable...)
}

func (f *FS) crashDir(d *dir, mode CrashMode) {
	k := 0
	if mode != DropUnsynced {
		k = f.rng.IntN(len(d.pending) + 1)
	}
	for _, c := range d.pending[:k] {
		c.apply(d.durable)
	}
	d.pending = nil
	d.files = maps.Clone(d.durable)
}
