package logcollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
)

// The states a collector writes in its status.
const (
	collectorRunning  = "running"
	collectorDraining = "draining" // drained, still holding sources being handed over
	collectorDrained  = "drained"  // drained and holding no source
	collectorStopped  = "stopped"  // stopped cleanly: it reads nothing, its offsets are final
)

// collectorLoop is a collector at work: one goroutine (run) follows the assignment and
// the session, starts and stops the sources' tails and writes the status. Every field
// is owned by that goroutine.
//
// Taking in an assignment of epoch E goes in three steps, in this order: stop the
// tails of the sources no longer assigned (their final offsets kept in retained);
// write the status with Epoch E — the rebalancer's signal that they are let go of;
// only then start the newly assigned sources, each resuming from the status entry of
// the highest epoch among all collectors'. So two collectors never read a source at
// once, and the new owner sees the old one's final offsets.
type collectorLoop struct {
	c      *Collector
	sink   Sink
	logger *slog.Logger

	applied  bool     // an assignment was taken in since Run started
	epoch    int64    // the epoch of the assignment taken in (of the last run's, before)
	assigned []string // the sources of that assignment, sorted
	// announced says the status carrying epoch was written: new sources may start.
	announced bool
	tails     map[string]*sourceTail  // the sources being read
	retained  map[string]SourceStatus // the final progress on sources let go of, for their next owner
	missing   map[string]bool         // assigned sources that cannot be started (logged once)

	watch         <-chan zk.Event  // fires when the collector node changes
	dirty         bool             // the assignment is to be read again
	retry         <-chan time.Time // fires when a failed read is to be tried again
	readRetry     backoff.Retry    // the reads of the assignment that failed in a row
	statusFailing bool             // the last status write failed (logged once per streak)
	drained       bool             // the collector's drained node exists (checked every tick)
}

func newCollectorLoop(c *Collector, sink Sink) *collectorLoop {
	return &collectorLoop{
		c: c, sink: sink, logger: c.logger,
		tails:    make(map[string]*sourceTail),
		retained: make(map[string]SourceStatus),
		missing:  make(map[string]bool),
	}
}

// loadStatus takes up the status an earlier run left: its entries are kept (as let
// go of) until the assignment says which are this collector's to resume.
func (l *collectorLoop) loadStatus(ctx context.Context) error {
	path := l.c.layout.Status(l.c.cfg.ID)
	for {
		data, _, err := l.c.conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err == nil {
			var st Status
			if err := json.Unmarshal(data, &st); err != nil {
				l.logger.Warn("earlier status unreadable: starting afresh", "path", path, "err", err)
				return nil
			}
			l.epoch = st.Epoch
			for id, ss := range st.Sources {
				l.retained[id] = ss
			}
			return nil
		}
		if err := l.c.sess.WaitToRetry(ctx, err); err != nil {
			return err
		}
	}
}

// run follows the assignment until ctx ends (nil) or the session is closed under it.
func (l *collectorLoop) run(ctx context.Context) error {
	events, unsubscribe := l.c.sess.Subscribe() // its first event, connected, reads the assignment
	defer unsubscribe()
	tick := time.NewTicker(l.c.cfg.StatusInterval)
	defer tick.Stop()
	for {
		if l.dirty && ctx.Err() == nil {
			l.dirty = false
			switch {
			case l.readAssignment(ctx):
				l.readRetry.Reset()
			case l.retry == nil:
				l.retry = time.After(l.readRetry.Fail())
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok || ev.State == coordinator.StateClosed {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("logcollector: collector: session closed while running")
			}
			if err := l.onSession(ctx, ev); err != nil {
				return err
			}
		case <-l.watch:
			l.watch, l.dirty = nil, true
		case <-l.retry:
			l.retry, l.dirty = nil, true
		case <-tick.C:
			l.tick()
		}
	}
}

// onSession follows the session: reading goes on while disconnected (the offsets are
// recorded once the status can be written again); after a reconnection the
// assignment is read again, which re-arms its watch, and in a new session the id is
// claimed again: if another process holds it by then, the collector stops (error).
func (l *collectorLoop) onSession(ctx context.Context, ev coordinator.Event) error {
	switch ev.State {
	case coordinator.StateConnected:
		if ev.NewSession {
			l.logger.Info("new session: reading the assignment again", "session_id", hexSession(ev.SessionID))
			if err := l.c.claim(ctx); errors.Is(err, ErrIDHeld) {
				return err
			}
		}
		l.dirty = true
	case coordinator.StateSuspended:
		l.logger.Info("disconnected: reading goes on", "sources", len(l.tails))
	case coordinator.StateLost:
		l.logger.Warn("session lost: reading goes on until a new one", "sources", len(l.tails))
	}
	return nil
}

// readAssignment reads the collector node, re-arming its watch, and takes in the
// assignment if it changed. A node removed under the collector is created again. It
// returns false if it could not read it, for run to try again.
func (l *collectorLoop) readAssignment(ctx context.Context) bool {
	path := l.c.layout.Collector(l.c.cfg.ID)
	data, _, watch, err := l.c.conn.GetW(path)
	if errors.Is(err, zk.ErrNoNode) {
		l.logger.Warn("collector node missing: registering again", "path", path)
		if err := l.c.register(ctx); err != nil {
			return false
		}
		data, _, watch, err = l.c.conn.GetW(path)
	}
	if err != nil {
		if !coordinator.IsConnLoss(err) {
			l.logger.Warn("cannot read the assignment", "path", path, "err", err)
		}
		return false
	}
	l.watch = watch
	var a Assignment
	if err := json.Unmarshal(data, &a); err != nil {
		l.logger.Warn("assignment unreadable: keeping the current one", "path", path, "err", err)
		return true
	}
	l.take(a)
	return true
}

// take takes in assignment a, unless it is the one taken in already.
func (l *collectorLoop) take(a Assignment) {
	ids := l.sourceIDs(a.Sources)
	if l.applied && a.Epoch == l.epoch && slices.Equal(ids, l.assigned) {
		return
	}
	if l.applied && a.Epoch < l.epoch {
		l.logger.Warn("assignment epoch went back: taking it in all the same", "epoch", a.Epoch, "was", l.epoch)
	}
	l.logger.Info("assignment", "epoch", a.Epoch, "sources", ids)
	l.letGo(ids)
	l.applied, l.epoch, l.assigned, l.announced = true, a.Epoch, ids, false
	l.announce()
}

// sourceIDs returns the valid ids among sources, sorted and without repeats.
func (l *collectorLoop) sourceIDs(sources []string) []string {
	var ids []string
	for _, id := range sources {
		if err := CheckID("source", id); err != nil {
			l.logger.Warn("assignment names a bad source id: skipping it", "err", err)
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// letGo stops the tails of the sources not in keep, all at once, and keeps their
// final progress, read under the current epoch, for their next owner.
func (l *collectorLoop) letGo(keep []string) {
	var stopping []string
	for id, t := range l.tails {
		if !slices.Contains(keep, id) {
			t.stop()
			stopping = append(stopping, id)
		}
	}
	for _, id := range stopping {
		ss := l.tails[id].wait()
		ss.Epoch = l.epoch
		l.retained[id] = ss
		delete(l.tails, id)
		l.logger.Info("let go of source", "source", id)
	}
	for id := range l.missing {
		if !slices.Contains(keep, id) {
			delete(l.missing, id)
		}
	}
}

// announce writes the status carrying the epoch taken in, then starts the sources
// newly assigned. If the write fails, the next tick tries again: nothing new starts
// before it succeeds.
func (l *collectorLoop) announce() {
	if !l.writeStatus(collectorRunning) {
		return
	}
	l.announced = true
	l.startPending()
}

// tick writes the status, and starts assigned sources that could not be started yet.
func (l *collectorLoop) tick() {
	if ok, _, err := l.c.conn.Exists(l.c.layout.Drained(l.c.cfg.ID)); err == nil && ok != l.drained {
		l.drained = ok
		l.logger.Info("drained", "drained", ok)
	}
	if !l.announced {
		l.announce()
		return
	}
	l.writeStatus(collectorRunning)
	l.startPending()
}

// startPending starts the assigned sources that have no tail yet, each resuming from
// the status entry of the highest epoch among all collectors' (this one's included).
func (l *collectorLoop) startPending() {
	var pending []string
	for _, id := range l.assigned {
		if l.tails[id] == nil {
			pending = append(pending, id)
		}
	}
	if len(pending) == 0 || !l.announced {
		return
	}
	statuses, err := l.c.readStatuses()
	if err != nil {
		l.logger.Warn("cannot read the statuses to resume from: trying again", "err", err)
		return
	}
	statuses[l.c.cfg.ID] = l.status(collectorRunning) // newer than our node
	l.prune(statuses)
	for _, id := range pending {
		l.start(id, statuses)
	}
}

// start starts reading source id; one without a definition is skipped (logged once)
// and tried again at the next tick.
func (l *collectorLoop) start(id string, statuses map[string]Status) {
	src, ok, err := l.c.readSource(id)
	if err != nil && coordinator.IsConnLoss(err) {
		return
	}
	if err != nil || !ok {
		if !l.missing[id] {
			l.logger.Warn("assigned source cannot be read: skipping it", "source", id, "err", err)
			l.missing[id] = true
		}
		return
	}
	delete(l.missing, id)
	resume, found := bestResume(statuses, id)
	l.logger.Info("reading source", "source", id, "path", src.Path, "resumed", found, "from_epoch", resume.Epoch)
	l.tails[id] = startTail(id, src, resume, l.sink, l.c.cfg.PollInterval, l.logger)
	delete(l.retained, id)
}

// prune drops the entries of sources let go of that another collector has read under
// a later epoch: their next owner has taken them over.
func (l *collectorLoop) prune(statuses map[string]Status) {
	for id, mine := range l.retained {
		if slices.Contains(l.assigned, id) {
			continue
		}
		for host, st := range statuses {
			if ss, ok := st.Sources[id]; ok && host != l.c.cfg.ID && ss.Epoch > mine.Epoch {
				delete(l.retained, id)
				break
			}
		}
	}
}

// status returns the collector's status now: the sources read, at the epoch taken
// in, and the final progress on those let go of.
func (l *collectorLoop) status(state string) Status {
	if state == collectorRunning && l.drained {
		state = collectorDrained
		if len(l.assigned) > 0 {
			state = collectorDraining
		}
	}
	st := Status{State: state, Updated: time.Now().UTC(), Host: l.c.cfg.Host, Epoch: l.epoch,
		Sources: make(map[string]SourceStatus, len(l.retained)+len(l.tails))}
	for id, ss := range l.retained {
		st.Sources[id] = ss
	}
	for id, t := range l.tails {
		ss := t.snapshot()
		ss.Epoch = l.epoch
		st.Sources[id] = ss
	}
	return st
}

// writeStatus writes the status in state, and reports whether it could.
func (l *collectorLoop) writeStatus(state string) bool {
	err := l.c.writeStatus(l.status(state))
	if err != nil {
		if !l.statusFailing {
			l.logger.Warn("cannot write the status: trying again", "err", err)
		}
		l.statusFailing = true
		return false
	}
	if l.statusFailing {
		l.logger.Info("status written again")
		l.statusFailing = false
	}
	return true
}

// shutdown stops every tail and writes the final status: state stopped, with the
// offsets reached, from which a restart or the next owner resumes.
func (l *collectorLoop) shutdown() {
	for _, t := range l.tails {
		t.stop()
	}
	for id, t := range l.tails {
		ss := t.wait()
		ss.Epoch = l.epoch
		l.retained[id] = ss
	}
	clear(l.tails)
	l.statusFailing = false
	if !l.writeStatus(collectorStopped) {
		l.logger.Warn("final status not written: the next owner resumes from the last one written")
	}
}

func hexSession(id int64) string { return fmt.Sprintf("0x%x", id) }
