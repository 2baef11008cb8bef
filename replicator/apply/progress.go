package apply

import (
	"fmt"
	"sync"
	"time"
)

// Position is a place in the source's binary log between two transactions: everything
// before it has been applied to the target.
type Position struct {
	File string `json:"file"`           // binlog file name, e.g. "bin.000003"
	Pos  uint32 `json:"pos"`            // byte offset in File after the last applied transaction
	GTID string `json:"gtid,omitempty"` // the source's GTID state there (MariaDB "0-1-42", MySQL "uuid:1-42"), when it has GTIDs
	// Time is the source's commit timestamp (whole seconds, UTC) of the last applied
	// transaction, or the source's clock when the snapshot was taken.
	Time time.Time `json:"ts"`
}

// IsZero reports whether p names no position: a task whose snapshot is not done.
func (p Position) IsZero() bool { return p.File == "" && p.GTID == "" }

// String renders p for logs and errors: "bin.000003:1234 (gtid 0-1-42)".
func (p Position) String() string {
	s := fmt.Sprintf("%s:%d", p.File, p.Pos)
	if p.GTID != "" {
		s += " (gtid " + p.GTID + ")"
	}
	return s
}

// sameStream reports whether p and q are the same place (the time aside).
func (p Position) sameStream(q Position) bool {
	return p.File == q.File && p.Pos == q.Pos && p.GTID == q.GTID
}

// Progress is a snapshot of a run's figures.
type Progress struct {
	// Position is the last position made durable in the target (what onCommit was last
	// given, or the checkpoint the run started from).
	Position Position
	// Snapshotting is true while the initial copy of the existing rows runs.
	Snapshotting bool
	// Transactions, Rows and DDL count what was applied to the target since the run
	// started: source transactions that changed a replicated table, row changes, and DDL
	// statements. Snapshot rows are counted in SnapshotRows instead.
	Transactions, Rows, DDL int64
	// SnapshotRows counts the rows copied by the initial snapshot of this run.
	SnapshotRows int64
	// Skipped counts statements of the source's binlog that were deliberately not applied
	// and were logged at Warn: views, triggers, routines, events, sequences and statements
	// the engine does not know (see the package doc). Statements about tables outside the
	// task and account management are not counted.
	Skipped int64
	// LagSeconds is now minus the source commit time (whole seconds) of the transaction
	// at Position, computed when Snapshot is called; 0 once the run is idle at the
	// source's end (the source's heartbeat, about every second, says so) and before
	// anything was applied.
	LagSeconds float64
	// EventsBehind estimates the backlog in bytes of source binlog (not events): from the
	// run's position to the end of the source's binlog, over all files, as SHOW BINARY LOGS
	// said at most about two seconds ago; -1 when unknown (no permission, or not streaming
	// yet).
	EventsBehind int64
	// LastError is the error the run ended with, or "" while it runs or if it ended by
	// its context.
	LastError string
}

// Tracker holds the Progress of a run. The zero value is ready; Run updates it and any
// goroutine may call Snapshot at any time. A Tracker serves one run at a time: Run
// resets its figures when it starts.
type Tracker struct {
	mu       sync.Mutex
	p        Progress  // guarded by mu
	lagFrom  time.Time // guarded by mu: source time of Position; zero: no lag known
	caughtUp bool      // guarded by mu: idle at the source's end since the last commit
}

// Snapshot returns a copy of the current figures, LagSeconds computed as of now.
func (t *Tracker) Snapshot() Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.p
	p.LagSeconds = 0
	if !t.caughtUp && !t.lagFrom.IsZero() {
		p.LagSeconds = max(time.Since(t.lagFrom).Seconds(), 0)
	}
	return p
}

// applied records a durable position whose source commit time is ts.
func (t *Tracker) applied(ts time.Time) {
	t.update(func(*Progress) { t.lagFrom, t.caughtUp = ts, false })
}

// idle records that the run is at the source's end with nothing to apply.
func (t *Tracker) idle() {
	t.update(func(*Progress) { t.caughtUp = true })
}

// reset clears the figures for a new run.
func (t *Tracker) reset() {
	t.update(func(p *Progress) {
		*p = Progress{EventsBehind: -1}
		t.lagFrom, t.caughtUp = time.Time{}, false
	})
}

// update applies f to the figures under the lock; a nil Tracker ignores it.
func (t *Tracker) update(f func(*Progress)) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f(&t.p)
}
