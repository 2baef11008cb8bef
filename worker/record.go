package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/task"
)

// record ends j's run with one multi: it deletes the assignment at the version of the
// started mark and creates the task's status (the task ended) or an attempt record (a
// failure with retries left). If the master took the assignment back meanwhile, the
// multi fails and the run leaves no trace. A multi whose reply is lost with the
// connection is sent again only once the worker has found it was not applied, so the
// outcome is never recorded twice. record gives up when ctx ends while it waits for the
// connection. An outcome the servers refuse for any other reason (the task's node
// lets this worker create nothing under it, say) is not tried again: the task is
// refused (refuse.go), so that it does not run again here, and the master ends it.
func (l *loop) record(ctx context.Context, j *job, o *outcome) {
	target, data, kind, err := l.result(j, o)
	if err != nil {
		l.logger.Error("cannot encode outcome", "task", j.id, "attempt", j.a.Attempt, "err", err)
		return
	}
	ops := []any{
		&zk.DeleteRequest{Path: j.path, Version: j.version},
		&zk.CreateRequest{Path: target, Data: data, Acl: l.sess.ACLFor(target)},
	}
	for {
		op, err := multiErr(l.conn.Multi(ops...))
		switch {
		case err == nil:
			l.recorded(j, o, kind)
			return
		case op == 0 && (errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion)):
			l.logger.Warn("assignment taken back: outcome not recorded", "task", j.id, "attempt", j.a.Attempt, "err", err)
			return
		case op == 1 && errors.Is(err, zk.ErrNodeExists):
			l.alreadyRecorded(j, target)
			return
		case op == 1 && errors.Is(err, zk.ErrNoNode):
			l.logger.Warn("task deleted while it ran: outcome dropped", "task", j.id, "attempt", j.a.Attempt)
			l.dropAssignment(j)
			return
		case op < 0 && coordinator.IsConnLoss(err):
			l.logger.Info("connection lost while recording outcome", "task", j.id, "attempt", j.a.Attempt, "err", err)
			applied, ok := l.settle(ctx, err, target, data)
			if !ok {
				l.logger.Warn("stopped before the outcome was recorded", "task", j.id, "attempt", j.a.Attempt, "err", err)
				return
			}
			if applied {
				l.recorded(j, o, kind)
				return
			}
		case errors.Is(err, zk.ErrClosing):
			l.logger.Warn("stopped before the outcome was recorded", "task", j.id, "attempt", j.a.Attempt, "err", err)
			return
		default:
			j.refused = true
			l.refuse(ctx, refusal{id: j.id, path: j.path, version: j.version, attempt: j.a.Attempt, ran: true,
				why: fmt.Errorf("record the outcome in %s: %w", target, err)})
			return
		}
	}
}

// multiErr returns the index of the op that failed a multi and its error; -1 and the
// request's error (nil when applied) if no op failed. ZooKeeper reports the ops before
// the failing one as fine and those after it as not run.
func multiErr(res []zk.MultiResponse, err error) (int, error) {
	for i, r := range res {
		if r.Error != nil {
			return i, r.Error
		}
	}
	return -1, err
}

// settle waits, after the multi failed on the connection (err), for the session to be
// connected again and finds out whether the multi was applied: the node it creates
// holds exactly data. ok is false if ctx ended or the session closed first.
func (l *loop) settle(ctx context.Context, err error, target string, data []byte) (applied, ok bool) {
	if err := l.sess.WaitToRetry(ctx, err); err != nil {
		return false, false
	}
	if coordinator.WriteNotSent(err) {
		return false, true
	}
	for {
		got, _, err := l.conn.Get(target)
		switch {
		case err == nil:
			return bytes.Equal(got, data), true
		case errors.Is(err, zk.ErrNoNode):
			return false, true
		}
		if err := l.sess.WaitToRetry(ctx, err); err != nil {
			return false, false
		}
	}
}

// alreadyRecorded handles a run whose record is there already (another run of the task
// ended it): it deletes the assignment, at its version, so that it is not run again.
func (l *loop) alreadyRecorded(j *job, target string) {
	l.logger.Warn("task already has this record: dropping the run's outcome", "task", j.id,
		"attempt", j.a.Attempt, "path", target)
	l.dropAssignment(j)
}

// dropAssignment deletes j's assignment, at its version, so that it is not run again.
func (l *loop) dropAssignment(j *job) {
	err := l.conn.Delete(j.path, j.version)
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		l.logger.Warn("cannot delete assignment", "task", j.id, "err", err)
	}
}

// result returns the node that records o, its data, and the kind of outcome (a state
// label of the finished metric). A failure with retries left is an attempt record;
// anything else is the task's status.
func (l *loop) result(j *job, o *outcome) (path string, data []byte, kind string, err error) {
	id := l.w.cfg.ID
	if o.handedBack {
		data, err = json.Marshal(task.Attempt{
			N: j.a.Attempt, Worker: id, ExitCode: o.exitCode, Signal: o.signal, Error: o.err,
			OutputTail: o.tail, OutputFile: o.file, Started: o.started, Finished: o.finished,
			Lost: true, HandedBack: true,
		})
		return l.w.layout.Lost(j.id, j.a.Attempt), data, finishedHandedBack, err
	}
	if o.state == task.Failed && !o.final && j.a.Failures < j.spec.Retries {
		data, err = json.Marshal(task.Attempt{
			N: j.a.Attempt, Worker: id, ExitCode: o.exitCode, Signal: o.signal, Error: o.err,
			OutputTail: o.tail, OutputFile: o.file, Started: o.started, Finished: o.finished,
		})
		return l.w.layout.Attempt(j.id, j.a.Attempt), data, finishedRetry, err
	}
	attempts := j.a.Attempt
	if o.notRun {
		attempts--
	}
	data, err = json.Marshal(task.Status{
		State: o.state, ExitCode: o.exitCode, Signal: o.signal, Error: o.err, OutputTail: o.tail, OutputFile: o.file,
		Worker: id, Attempts: attempts, Started: o.started, Finished: o.finished,
	})
	return l.w.layout.Status(j.id), data, string(o.state), err
}

// recorded counts and logs an outcome the multi recorded.
func (l *loop) recorded(j *job, o *outcome, kind string) {
	l.w.metrics.finished.WithLabelValues(kind).Inc()
	msg := "task ended"
	switch kind {
	case finishedRetry:
		msg = "task run failed; it will be retried"
	case finishedHandedBack:
		msg = "task handed back as a lost run"
	}
	l.logger.Info(msg, "task", j.id, "attempt", j.a.Attempt, "state", o.state, "exit_code", o.exitCode)
}
