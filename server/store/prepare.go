package store

import (
	"errors"
	"os"
	"path/filepath"
	"time"
)

// Segments are preallocated by writing zeros, ahead of need, by a goroutine of the
// log's own. fallocate would be instant, but on ext4 (and others) it leaves the blocks
// "unwritten": every write into them changes extent metadata, so every fdatasync must
// also commit the file system's journal — measured here at 170 µs a sync against
// 115 µs for a file whose blocks were written. Group commit waits on those syncs, so
// they bound the write rate. Writing zeros takes a while, so the next segment is
// prepared in the background while the current one fills, in paced chunks that do not
// burst the disk under the log's own syncs; rotation takes it when it is ready. When
// it is not (a new log, or one that outran the preparer), the log writes the zeros of
// a short segment itself, shortSegmentSize at most, and leaves it for a prepared one
// soon: a 4 MiB write costs a few milliseconds once, while a fallocate'd segment
// would slow every sync until the next rotation.
const (
	// preparedName is a zero-filled file ready to become the next segment. It exists
	// only once complete and synced; preparingName is the file being filled.
	preparedName  = "next-segment" + tmpExt + ".ready"
	preparingName = "next-segment" + tmpExt
	// prepareChunk is written between pauses; prepareEvery chunks (1 MiB), the file is
	// synced. 64 KiB a millisecond fills a 64 MiB segment in a second or two, well before
	// a loaded log needs it, in bursts small enough that the log's own syncs hardly wait
	// behind them: under the set workload, log fsyncs over 2 ms were 6-14 in 5 s with
	// this pacing, 13-23 with fallocate'd segments and 30-41 with 256 KiB chunks and a
	// sync every 4 MiB.
	prepareChunk = 64 << 10
	prepareEvery = 16
	preparePause = time.Millisecond
)

var zeroChunk = make([]byte, prepareChunk)

// shortSegmentSize bounds a segment the log fills with zeros itself, when no prepared
// file is ready.
const shortSegmentSize = 4 << 20

// preparer fills the next segment file in the background. Its goroutine runs from
// Open to Close.
type preparer struct {
	fs   FS
	dir  string
	size int64
	// want asks for a prepared file (capacity 1); ready says one is (capacity 1).
	want  chan struct{}
	ready chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

func startPreparer(fsys FS, dir string, size int64) *preparer {
	p := &preparer{fs: fsys, dir: dir, size: size, want: make(chan struct{}, 1),
		ready: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if info, err := p.readyFile(); err == nil && info == size {
		p.ready <- struct{}{} // one survived from the last run, whole
	} else {
		p.fs.Remove(filepath.Join(dir, preparedName))
		p.want <- struct{}{}
	}
	p.fs.Remove(filepath.Join(dir, preparingName))
	go p.run()
	return p
}

func (p *preparer) readyFile() (int64, error) {
	f, err := p.fs.OpenFile(filepath.Join(p.dir, preparedName), os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Size()
}

func (p *preparer) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-p.want:
		}
		if len(p.ready) > 0 {
			continue // the file is still there; whoever takes it asks for the next
		}
		if err := p.prepare(); err != nil {
			// Rotation falls back to fallocate; try again at the next one.
			p.fs.Remove(filepath.Join(p.dir, preparingName))
			continue
		}
		select {
		case p.ready <- struct{}{}:
		case <-p.stop:
			return
		}
	}
}

// prepare writes a zero-filled file of the segment size and renames it ready.
func (p *preparer) prepare() error {
	path := filepath.Join(p.dir, preparingName)
	f, err := p.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	defer f.Close()
	for off, n := int64(0), 0; off < p.size; off += prepareChunk {
		select {
		case <-p.stop:
			return errors.New("store: log closed")
		default:
		}
		if _, err := f.WriteAt(zeroChunk[:min(prepareChunk, p.size-off)], off); err != nil {
			return err
		}
		if n++; n%prepareEvery == 0 {
			if err := f.Datasync(); err != nil {
				return err
			}
		}
		time.Sleep(preparePause)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return p.fs.Rename(path, filepath.Join(p.dir, preparedName))
}

// take returns the path of a prepared file, or "" if none is ready (or p is nil).
// Once the caller has renamed it away it calls next.
func (p *preparer) take() string {
	if p == nil {
		return ""
	}
	select {
	case <-p.ready:
		return filepath.Join(p.dir, preparedName)
	default:
		p.next() // in case the last attempt failed
		return ""
	}
}

// next asks for the next file to be prepared (again, if the last attempt failed).
func (p *preparer) next() {
	select {
	case p.want <- struct{}{}:
	default:
	}
}

// close stops the goroutine and waits for it. A half-filled file is removed at the
// next Open; a ready one is kept for it.
func (p *preparer) close() {
	close(p.stop)
	<-p.done
}

// usePrepared makes the prepared file at path the segment with header h, as
// createSegment does with a fresh file.
func usePrepared(fsys FS, dir, path string, h segmentHeader) (File, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return installSegment(fsys, dir, f, path, h, nil)
}
