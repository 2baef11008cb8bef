package quorum

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Counters are what a member refused of its peers' input, since it started. Each kind
// of refusal is also logged, at most once per logEvery.
type Counters struct {
	// ConnsRefused counts peer connections closed before they carried a message: past
	// the bound on unidentified connections, a failed TLS handshake, no or a bad hello
	// within the handshake timeout, a certificate that does not prove the member id.
	ConnsRefused uint64
	// FramesRefused counts connections closed for a frame that breaks the protocol: an
	// unknown kind, over its kind's size bound, a body that does not decode.
	FramesRefused uint64
	// MessagesDropped counts Raft messages dropped by the checks in front of Raft (out
	// of range terms or indexes, a sender other than the connection's member, types
	// members never send), proposals aside.
	MessagesDropped uint64
	// ProposalsRefused counts proposals the member refused to put in the log: entries
	// that do not decode or do not belong to their sender, impossible membership changes.
	ProposalsRefused uint64
	// NotesDropped counts notes that did not decode.
	NotesDropped uint64
	// EntriesSkipped counts committed entries this member could not apply as written
	// (a membership change that did not decode or apply): each was logged as an error
	// and skipped by every member alike.
	EntriesSkipped uint64
	// SnapshotsRefused counts snapshots a leader streamed that the member refused
	// before Raft saw them: past its bound, cut short, or records its state machine
	// could not prove restorable (SnapshotChecker).
	SnapshotsRefused uint64
	// CommittedConflicts counts appends dropped because they conflict with entries the
	// member committed: no real leader sends one, so each is evidence that this
	// member's log, or the sender's, was forged (docs/security.md, "What no check can
	// catch"); an operator must rebuild the members concerned.
	CommittedConflicts uint64
	// TermCatchUps counts the member's climbs toward a peer's term more than
	// MaxTermJump past its own, at most one an election timeout (validate.go): a member
	// catching up with the others, or following a forger's term.
	TermCatchUps uint64
}

// counters is the live form of Counters.
type counters struct {
	connsRefused, framesRefused, messagesDropped, proposalsRefused, notesDropped, entriesSkipped, termCatchUps, snapshotsRefused, committedConflicts atomic.Uint64
}

func (c *counters) snapshot() Counters {
	return Counters{
		ConnsRefused: c.connsRefused.Load(), FramesRefused: c.framesRefused.Load(),
		MessagesDropped: c.messagesDropped.Load(), ProposalsRefused: c.proposalsRefused.Load(),
		NotesDropped: c.notesDropped.Load(), EntriesSkipped: c.entriesSkipped.Load(),
		TermCatchUps: c.termCatchUps.Load(), SnapshotsRefused: c.snapshotsRefused.Load(),
		CommittedConflicts: c.committedConflicts.Load(),
	}
}

// logEvery is how often each kind of refusal is logged at most: a peer that floods
// the port with garbage must not flood the log too.
const logEvery = 10 * time.Second

// limitedLog logs each message at most once per logEvery, saying how many were
// suppressed since the last time. Safe for concurrent use.
type limitedLog struct {
	logger *slog.Logger
	mu     sync.Mutex
	last   map[string]time.Time // guarded by mu
	held   map[string]int       // suppressed since last; guarded by mu
}

func newLimitedLog(logger *slog.Logger) *limitedLog {
	return &limitedLog{logger: logger, last: make(map[string]time.Time), held: make(map[string]int)}
}

// warn logs msg at Warn level unless it was logged less than logEvery ago.
func (l *limitedLog) warn(msg string, args ...any) { l.log(slog.LevelWarn, msg, args...) }

// error is warn at Error level: for what an operator must act on.
func (l *limitedLog) error(msg string, args ...any) { l.log(slog.LevelError, msg, args...) }

func (l *limitedLog) log(level slog.Level, msg string, args ...any) {
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.last[msg]) < logEvery {
		l.held[msg]++
		l.mu.Unlock()
		return
	}
	held := l.held[msg]
	l.last[msg], l.held[msg] = now, 0
	l.mu.Unlock()
	if held > 0 {
		args = append(args, "suppressed", held)
	}
	l.logger.Log(context.Background(), level, msg, args...)
}
