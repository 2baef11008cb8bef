// Package session tracks when client sessions expire, in tick-aligned buckets as
// ZooKeeper's ExpiryQueue does. It reads no clock: every method takes the time.
package session

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Table holds the expiry time of every live session. It is safe for concurrent use; Touch,
// called for every packet a client sends, takes only a read lock unless the session's
// deadline crosses into a new tick bucket.
type Table struct {
	tick int64 // bucket width, ms

	mu       sync.RWMutex
	sessions map[int64]*entry           // guarded by mu
	buckets  map[int64]map[int64]*entry // expiry ms -> sessions; guarded by mu
}

type entry struct {
	id      int64
	timeout int64        // ms; immutable
	expiry  atomic.Int64 // the bucket the session is in, ms; 0 once expired or removed
}

// Bucket is one group of sessions that expire at the same tick, for the dump command.
type Bucket struct {
	Expiry   time.Time
	Sessions []int64
}

// NewTable returns an empty table with buckets tick wide.
func NewTable(tick time.Duration) *Table {
	return &Table{
		tick:     max(tick.Milliseconds(), 1),
		sessions: make(map[int64]*entry),
		buckets:  make(map[int64]map[int64]*entry),
	}
}

// round returns the end of the tick bucket holding t (ExpiryQueue.roundToNextInterval).
func (t *Table) round(ms int64) int64 { return (ms/t.tick + 1) * t.tick }

// Add starts tracking a session that expires timeout after now unless touched.
// Adding a session already present keeps its timeout and touches it.
func (t *Table) Add(id int64, timeout time.Duration, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	if e == nil {
		e = &entry{id: id, timeout: timeout.Milliseconds()}
		t.sessions[id] = e
	}
	t.moveLocked(e, t.round(now.UnixMilli()+e.timeout))
}

// Touch pushes a session's expiry to now + its timeout. It returns false if the session
// is unknown or already expired: the caller must treat it as expired.
func (t *Table) Touch(id int64, now time.Time) bool {
	t.mu.RLock()
	e := t.sessions[id]
	t.mu.RUnlock()
	if e == nil {
		return false
	}
	return t.touch(e, now)
}

func (t *Table) touch(e *entry, now time.Time) bool {
	cur := e.expiry.Load()
	if cur == 0 {
		return false
	}
	next := t.round(now.UnixMilli() + e.timeout)
	if next <= cur {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.expiry.Load() == 0 {
		return false
	}
	t.moveLocked(e, next)
	return true
}

func (t *Table) moveLocked(e *entry, expiry int64) {
	if old := e.expiry.Load(); old != 0 {
		if b := t.buckets[old]; b != nil {
			delete(b, e.id)
			if len(b) == 0 {
				delete(t.buckets, old)
			}
		}
	}
	b := t.buckets[expiry]
	if b == nil {
		b = make(map[int64]*entry)
		t.buckets[expiry] = b
	}
	b[e.id] = e
	e.expiry.Store(expiry)
}

// Remove stops tracking a session (it was closed).
func (t *Table) Remove(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(id)
}

func (t *Table) removeLocked(id int64) {
	e := t.sessions[id]
	if e == nil {
		return
	}
	delete(t.sessions, id)
	if b := t.buckets[e.expiry.Load()]; b != nil {
		delete(b, id)
		if len(b) == 0 {
			delete(t.buckets, e.expiry.Load())
		}
	}
	e.expiry.Store(0)
}

// Expire removes and returns, in id order, every session whose bucket ended at or before now.
// From then on Touch reports them expired.
func (t *Table) Expire(now time.Time) []int64 {
	ms := now.UnixMilli()
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int64
	for expiry, b := range t.buckets {
		if expiry > ms {
			continue
		}
		for id, e := range b {
			e.expiry.Store(0)
			delete(t.sessions, id)
			out = append(out, id)
		}
		delete(t.buckets, expiry)
	}
	slices.Sort(out)
	return out
}

// Next returns when the earliest bucket expires, or false if the table is empty.
func (t *Table) Next() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buckets) == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(slices.Min(slices.Collect(maps.Keys(t.buckets)))), true
}

// Len returns the number of live sessions.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// Timeout returns a live session's timeout.
func (t *Table) Timeout(id int64) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	if e == nil {
		return 0, false
	}
	return time.Duration(e.timeout) * time.Millisecond, true
}

// Expiry returns when a live session expires unless touched.
func (t *Table) Expiry(id int64) (time.Time, bool) {
	t.mu.RLock()
	e := t.sessions[id]
	t.mu.RUnlock()
	if e == nil {
		return time.Time{}, false
	}
	ms := e.expiry.Load()
	return time.UnixMilli(ms), ms != 0
}

// Buckets returns the sessions grouped by expiry time, earliest first.
func (t *Table) Buckets() []Bucket {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Bucket, 0, len(t.buckets))
	for _, expiry := range slices.Sorted(maps.Keys(t.buckets)) {
		out = append(out, Bucket{Expiry: time.UnixMilli(expiry), Sessions: slices.Sorted(maps.Keys(t.buckets[expiry]))})
	}
	return out
}

// Replace makes the table hold exactly the sessions in timeouts (id → timeout), each
// expiring its timeout after now unless touched: a member that loads a new state
// from its leader's snapshot resets its table this way.
func (t *Table) Replace(timeouts map[int64]time.Duration, now time.Time) {
	t.mu.Lock()
	for id := range t.sessions {
		if _, ok := timeouts[id]; !ok {
			t.removeLocked(id)
		}
	}
	t.mu.Unlock()
	for id, timeout := range timeouts {
		t.Add(id, timeout, now)
	}
}
