package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Streaming cadence and batching. Source transactions already waiting in the stream are
// applied in one target transaction, up to batchGroups transactions, batchRows rows or
// batchAge of age; a batch is committed as soon as nothing more is waiting.
const (
	batchGroups   = 500
	batchRows     = 20000
	batchAge      = 200 * time.Millisecond
	idleInterval  = time.Second     // after this without events: write a dirty position, refresh figures
	fenceInterval = 5 * time.Second // an idle run checks at least this often that it still owns the task
	behindEvery   = 2 * time.Second // how often EventsBehind is refreshed
)

// streamItem is what the pump hands over: an event or the error that ended the stream.
type streamItem struct {
	ev  *replication.BinlogEvent
	err error
}

// stream applies the source's binlog from a checkpoint. Only Run's goroutine touches it;
// the syncer and the pump goroutine only fill events.
type stream struct {
	*runner
	events chan streamItem // filled by the pump; closed never
	tables *tableCache

	file    string          // the binlog file being read, from rotate events
	evPos   uint32          // the end position of the event being handled, for messages
	pos     Position        // after the last event group handled (at a group boundary)
	durable Position        // the last position committed to the target
	gset    gomysql.GTIDSet // the GTID state at pos; nil when the source has no GTIDs
	group   *group          // the open event group, or nil between groups

	tx      *sql.Tx    // the open target transaction, holding whole groups (and the open one's rows), or nil
	txStart time.Time  // when tx was begun
	ins     insertBuf  // inserts not yet sent, all inside tx
	pending batchStats // what was applied since the last durable commit

	resuming    bool      // no group since the checkpoint the stream started from has changed the target
	lastWrite   time.Time // the last target commit or fence check
	lastBehind  time.Time // when EventsBehind was last refreshed
	behindBytes int64     // its value then
}

// group is the event group (source transaction) being read.
type group struct {
	gtid     string // its GTID ("0-1-42", "uuid:7"), or "" when anonymous
	inTxn    bool   // it ends with XID, COMMIT or ROLLBACK; else its one statement ends it
	touched  bool   // something of it was executed on the target
	rows     int64
	ddl      int64
	annotate string // the SQL of its latest rows, when the source logs it (for error messages)
}

// stream starts reading the binlog at pos and applies it until ctx ends or an error.
func (r *runner) stream(ctx context.Context, pos Position) error {
	s := &stream{runner: r, tables: newTableCache(r.tgt), file: pos.File, pos: pos, durable: pos,
		resuming: true, lastWrite: time.Now(), behindBytes: -1}
	if err := s.initGTIDs(); err != nil {
		return err
	}
	syncCfg, err := r.src.syncerConfig(r.cfg.ServerID, r.scope)
	if err != nil {
		return err
	}
	syncer := replication.NewBinlogSyncer(syncCfg)
	defer syncer.Close()
	streamer, err := s.startSync(syncer)
	if err != nil {
		return err
	}
	pumpCtx, stopPump := context.WithCancel(ctx)
	var pumped sync.WaitGroup
	s.events = make(chan streamItem, 256)
	pumped.Go(func() { pump(pumpCtx, streamer, s.events) })
	defer func() {
		stopPump()
		pumped.Wait()
	}()
	r.log.Info("streaming", "position", pos.String(), "flavor", r.src.flavor)
	err = s.loop(ctx)
	s.rollback()
	return err
}

// initGTIDs parses the checkpoint's GTID state.
func (s *stream) initGTIDs() error {
	if !s.src.gtid {
		return nil
	}
	set, err := gomysql.ParseGTIDSet(s.src.flavor, s.pos.GTID)
	if err != nil {
		return permanentf(err, "checkpoint of task %q has an unreadable GTID %q", s.cfg.Task, s.pos.GTID)
	}
	s.gset = set
	return nil
}

// startSync asks the source for its binlog from the checkpoint: by GTID when there is
// one, by file and position otherwise.
func (s *stream) startSync(syncer *replication.BinlogSyncer) (*replication.BinlogStreamer, error) {
	var streamer *replication.BinlogStreamer
	var err error
	if s.gset != nil && !s.gset.IsEmpty() {
		streamer, err = syncer.StartSyncGTID(s.gset.Clone())
	} else {
		streamer, err = syncer.StartSync(gomysql.Position{Name: s.pos.File, Pos: s.pos.Pos})
	}
	if err != nil {
		return nil, s.streamErr(err)
	}
	return streamer, nil
}

// pump moves events from the streamer to out until ctx ends or the stream fails, so
// that the loop can see whether an event is already waiting without blocking.
func pump(ctx context.Context, streamer *replication.BinlogStreamer, out chan<- streamItem) {
	for {
		ev, err := streamer.GetEvent(ctx)
		if ctx.Err() != nil {
			return
		}
		select {
		case out <- streamItem{ev: ev, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// loop handles events until ctx ends (nil) or an error.
func (s *stream) loop(ctx context.Context) error {
	for {
		it, err := s.next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if it.err != nil {
			return s.streamErr(it.err)
		}
		if err := s.handle(ctx, it.ev); err != nil {
			return err
		}
		if s.group == nil && s.batchFull() {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
	}
}

// next returns the next event. If none is waiting, it first makes the applied groups
// durable; while it waits it does the idle chores every idleInterval.
func (s *stream) next(ctx context.Context) (streamItem, error) {
	select {
	case it := <-s.events:
		return it, nil
	default:
	}
	if s.group == nil && s.tx != nil {
		if err := s.flush(ctx); err != nil {
			return streamItem{}, err
		}
	}
	timer := time.NewTimer(idleInterval)
	defer timer.Stop()
	for {
		select {
		case it := <-s.events:
			return it, nil
		case <-ctx.Done():
			return streamItem{}, ctx.Err()
		case <-timer.C:
			if err := s.idle(ctx, false); err != nil {
				return streamItem{}, err
			}
			timer.Reset(idleInterval)
		}
	}
}

// idle runs between events: it writes a position that moved without a commit (rotations,
// transactions on other tables), checks the fence now and then, and refreshes the lag
// figures. caughtUp says the source just said it has nothing more (a heartbeat).
func (s *stream) idle(ctx context.Context, caughtUp bool) error {
	if s.group != nil {
		return nil
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	if time.Since(s.lastWrite) >= fenceInterval {
		if err := s.tgt.checkFence(ctx); err != nil {
			return err
		}
		s.lastWrite = time.Now()
	}
	s.refreshBehind(ctx)
	if caughtUp || s.behindBytes == 0 {
		s.progress.idle()
	}
	return nil
}

// refreshBehind updates EventsBehind if it is older than behindEvery. A failure to read
// the source's binlog list makes it unknown (-1) rather than stopping the run.
func (s *stream) refreshBehind(ctx context.Context) {
	if time.Since(s.lastBehind) < behindEvery {
		return
	}
	s.lastBehind = time.Now()
	s.behindBytes = -1
	if files, err := s.src.binlogs(ctx); err == nil {
		s.behindBytes = bytesBehind(files, s.pos)
	} else {
		s.log.Debug("binlog list unavailable", "err", err)
	}
	behind := s.behindBytes
	s.progress.update(func(p *Progress) { p.EventsBehind = behind })
}

// batchFull reports whether the open target transaction should be committed now.
func (s *stream) batchFull() bool {
	return s.tx != nil && (s.pending.groups >= batchGroups || s.pending.rows >= batchRows ||
		time.Since(s.txStart) >= batchAge)
}

// flush makes s.pos durable: it commits the open target transaction with the checkpoint,
// or writes the checkpoint alone if the position moved without changes. Only called
// between groups.
func (s *stream) flush(ctx context.Context) error {
	if s.tx == nil && s.pos.sameStream(s.durable) {
		return nil
	}
	if s.tx == nil {
		tx, err := s.tgt.begin(ctx)
		if err != nil {
			return err
		}
		s.tx = tx
	}
	if err := s.ins.send(ctx, s); err != nil {
		return err
	}
	if err := s.tgt.save(ctx, s.tx, s.pos); err != nil {
		return err
	}
	err := s.tx.Commit()
	s.tx = nil
	if err != nil {
		return s.tgt.err(err, "commit at %s", s.pos)
	}
	s.durable, s.lastWrite = s.pos, time.Now()
	st := s.pending
	s.pending = batchStats{}
	s.committed(s.pos, st)
	s.refreshBehind(ctx)
	return nil
}

// ensureTx begins the target transaction if none is open.
func (s *stream) ensureTx(ctx context.Context) error {
	if s.tx != nil {
		return nil
	}
	tx, err := s.tgt.begin(ctx)
	if err != nil {
		return err
	}
	s.tx, s.txStart = tx, time.Now()
	return nil
}

// at names the event being handled: "bin.000003:1234".
func (s *stream) at() string { return fmt.Sprintf("%s:%d", s.file, s.evPos) }

// rollback abandons the open target transaction, if any.
func (s *stream) rollback() {
	s.ins.reset()
	if s.tx != nil {
		s.tx.Rollback()
		s.tx = nil
	}
}

// streamErr turns an error of the binlog stream into Run's error.
func (s *stream) streamErr(err error) error {
	if errorCode(err) == 1236 { // the source refuses to send from our position
		msg := err.Error()
		if strings.Contains(msg, "purged") || strings.Contains(msg, "Could not find first log file") ||
			strings.Contains(msg, "could not find next log") {
			return s.src.purged(s.durable, err)
		}
		return permanentf(err, "source %s refused to stream the binlog from %s", s.src.addr, s.durable)
	}
	if errors.Is(err, replication.ErrSyncClosed) || errors.Is(err, replication.ErrNeedSyncAgain) {
		return &runError{msg: "source " + s.src.addr + ": binlog stream closed at " + s.pos.String(), retry: true}
	}
	return sideErrf("source", s.src.addr, err, "binlog stream at %s", s.pos)
}
