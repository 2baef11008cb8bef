package apply

import (
	"context"
	"errors"
	"log/slog"
)

// runner is one Run: the task's configuration and its two servers.
type runner struct {
	cfg      Config
	log      *slog.Logger
	scope    scope
	src      *source
	tgt      *target
	onCommit func(Position)
	progress *Tracker
}

// Run replicates the task until ctx ends (it then returns nil) or it cannot go on (it
// returns why; see Retryable). It takes ownership of the task as cfg.Epoch, copies the
// included tables if the task has no checkpoint yet, and then applies the source's binlog
// from the checkpoint. After every target commit it calls onCommit (if not nil) with the
// position now durable in the target, from Run's goroutine: onCommit must return quickly
// and the caller throttles what it does with it. progress, if not nil, is reset and then
// kept up to date.
func Run(ctx context.Context, cfg Config, onCommit func(Position), progress *Tracker) (err error) {
	progress.reset()
	defer func() {
		if ctx.Err() != nil {
			err = nil
		}
		if err != nil {
			progress.update(func(p *Progress) { p.LastError = err.Error() })
		}
	}()
	if err := cfg.Validate(); err != nil {
		return permanentf(nil, "%v", err)
	}
	if onCommit == nil {
		onCommit = func(Position) {}
	}
	r := &runner{cfg: cfg, log: cfg.logger().With("task", cfg.Task, "epoch", cfg.Epoch),
		scope: newScope(cfg.Include, cfg.Exclude), onCommit: onCommit, progress: progress}
	if err := r.open(); err != nil {
		return err
	}
	defer r.close()
	return r.run(ctx)
}

// open creates the two connection pools (without connecting).
func (r *runner) open() error {
	var err error
	if r.src, err = openSource(r.cfg.Source, r.log); err != nil {
		return err
	}
	if r.tgt, err = openTarget(r.cfg.Target, r.cfg.Task, r.cfg.Epoch, r.log); err != nil {
		r.src.close()
		return err
	}
	return nil
}

func (r *runner) close() {
	r.src.close()
	r.tgt.close()
}

// run checks both servers (and that they are two), takes ownership, snapshots if needed, and streams.
func (r *runner) run(ctx context.Context) error {
	if err := r.src.probe(ctx, r.cfg.ServerID); err != nil {
		return err
	}
	if err := r.checkDistinct(ctx); err != nil {
		return err // before anything is written to the target
	}
	if err := r.tgt.prepare(ctx); err != nil {
		return err
	}
	pos, err := r.tgt.takeOwnership(ctx)
	if err != nil {
		return err
	}
	r.log.Info("task owned", "source", r.src.addr, "source_version", r.src.version, "target", r.tgt.addr,
		"checkpoint", pos.String())
	if pos.IsZero() {
		if pos, err = r.snapshot(ctx); err != nil {
			return err
		}
	} else if err := r.src.checkResumable(ctx, pos); err != nil {
		return err
	}
	r.progress.update(func(p *Progress) { p.Position = pos })
	return r.stream(ctx, pos)
}

// committed records a durable position: progress, then the caller's callback.
func (r *runner) committed(pos Position, st batchStats) {
	r.progress.update(func(p *Progress) {
		p.Position = pos
		p.Transactions += st.groups
		p.Rows += st.rows
		p.DDL += st.ddl
	})
	if !pos.Time.IsZero() {
		r.progress.applied(pos.Time)
	}
	r.onCommit(pos)
}

// batchStats counts what a target transaction (or a DDL group) applied.
type batchStats struct {
	groups, rows, ddl int64
}

// isDeposed reports whether err says the run was fenced off.
func isDeposed(err error) bool { return errors.Is(err, ErrDeposed) }
