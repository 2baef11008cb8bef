package replicator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/replicator/apply"
)

// Backoff between runs of a task that failed: a retryable failure (a server
// unreachable) waits runBackoff's delay for the failures in a row, from minBackoff
// doubling to maxBackoff, with jitter; a permanent one (a wrong binlog format, a purged
// position) waits maxBackoff, or until the task's definition changes.
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
)

var runBackoff = backoff.Policy{Base: minBackoff, Cap: maxBackoff}

// instance is this process standing for one task: an ephemeral-sequential node under
// the task's instances; the lowest runs the task, each other waits for the one just
// before it.
type instance struct {
	r      *Replicator
	task   string
	cold   bool // claimed by a cold standby: give the task up if another instance is lower
	logger *slog.Logger
}

// serve stands for the task until ctx ends, or, for a cold claim, until another
// instance turns out to serve it. It registers again whenever its node goes (a new
// session). A registration that fails, and a stand cut short (the task's instances or
// definition cannot be read: stand gives up its node at once), are tried again with the
// backoff of the failures in a row, so that nothing about one task makes the instance
// create and delete nodes in a loop; a stand that lasted past the backoff's cap starts
// the count over.
func (in *instance) serve(ctx context.Context) {
	var retry backoff.Retry
	for ctx.Err() == nil {
		node, epoch, err := in.register(ctx)
		if err != nil {
			if ctx.Err() == nil {
				wait := retry.Fail()
				in.logger.Warn("cannot register an instance", "err", err, "retry_in", wait.Round(time.Millisecond))
				backoff.Sleep(ctx, wait)
			}
			continue
		}
		began := time.Now()
		gaveUp := in.stand(ctx, node, epoch)
		in.unregister(node)
		if gaveUp || in.cold && !in.taskExists() {
			return
		}
		if time.Since(began) > backoff.Default.Cap {
			retry.Reset()
		}
		backoff.Sleep(ctx, retry.Fail())
	}
}

// register creates this process's instance node and returns its name and its czxid,
// the epoch its runs own the task with (zxids only grow, so a later instance's epoch
// is higher than any earlier one's).
func (in *instance) register(ctx context.Context) (string, int64, error) {
	l, conn := in.r.layout, in.r.s.Conn()
	if err := in.waitTask(ctx); err != nil {
		return "", 0, err
	}
	if err := in.r.s.MakeDirs(ctx, l.Instances(in.task)); err != nil {
		return "", 0, err
	}
	info := InstanceInfo{Host: in.r.host, PID: os.Getpid(), State: "standby", Since: time.Now().UTC()}
	prefix := l.Instance(in.task, in.r.host+"_")
	p, err := conn.CreateProtectedEphemeralSequential(prefix, mustJSON(info), in.r.s.ACLFor(prefix))
	if err != nil {
		return "", 0, err
	}
	_, st, err := conn.Exists(p)
	if err != nil || st == nil {
		return "", 0, fmt.Errorf("instance node %s: %v", p, err)
	}
	return path.Base(p), st.Czxid, nil
}

// waitTask waits until the task exists.
func (in *instance) waitTask(ctx context.Context) error {
	for {
		ok, _, ev, err := in.r.s.Conn().ExistsW(in.r.layout.Task(in.task))
		if err == nil && ok {
			return nil
		}
		if err != nil {
			if err := in.r.s.WaitToRetry(ctx, err); err != nil {
				return err
			}
			continue
		}
		in.logger.Info("waiting for the task to be created")
		select {
		case <-ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (in *instance) taskExists() bool {
	ok, _, err := in.r.s.Conn().Exists(in.r.layout.Task(in.task))
	return ok || err != nil
}

func (in *instance) unregister(node string) {
	err := in.r.s.Conn().Delete(in.r.layout.Instance(in.task, node), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		in.logger.Debug("instance node not deleted (it goes with the session)", "node", node, "err", err)
	}
}

// stand waits its turn and runs the task while it is the lowest instance and the task
// is enabled. It returns when its node is gone (false: register again) or, for a cold
// claim that is not the lowest, at once (true: give up).
func (in *instance) stand(ctx context.Context, node string, epoch int64) (gaveUp bool) {
	conn := in.r.s.Conn()
	l := in.r.layout
	for ctx.Err() == nil {
		nodes, _, err := conn.Children(l.Instances(in.task))
		if err != nil {
			if in.r.s.WaitToRetry(ctx, err) != nil {
				return false
			}
			continue
		}
		nodes = sortInstances(nodes)
		i := slices.Index(nodes, node)
		switch {
		case i < 0:
			in.logger.Info("instance node gone: registering again", "node", node)
			return false
		case i > 0 && in.cold:
			return true
		case i > 0:
			in.logger.Info("standby", "node", node, "waiting_for", nodes[i-1])
			if !in.waitGone(ctx, l.Instance(in.task, nodes[i-1])) {
				return false
			}
			continue
		}
		if !in.lead(ctx, node, epoch) {
			return false
		}
	}
	return false
}

// waitGone waits until the node at p is deleted; false if ctx ended or the session
// went.
func (in *instance) waitGone(ctx context.Context, p string) bool {
	ok, _, ev, err := in.r.s.Conn().ExistsW(p)
	switch {
	case err != nil:
		return in.r.s.WaitToRetry(ctx, err) == nil
	case !ok:
		return true // gone already
	}
	select {
	case e := <-ev:
		return e.Type != zk.EventNotWatching // NotWatching: the session ended
	case <-ctx.Done():
		return false
	}
}

// lead runs the task while this instance is the lowest and its node and the task's
// definition stay as they are; it returns true to look again (the definition changed,
// a run ended), false when the node is gone or ctx ended.
func (in *instance) lead(ctx context.Context, node string, epoch int64) bool {
	conn := in.r.s.Conn()
	l := in.r.layout
	data, _, defChanged, err := conn.GetW(l.Task(in.task))
	if errors.Is(err, zk.ErrNoNode) {
		return false // deleted: the instances went with it
	}
	if err != nil {
		return in.r.s.WaitToRetry(ctx, err) == nil
	}
	var def TaskDef
	if err := json.Unmarshal(data, &def); err != nil {
		in.logger.Error("task definition unreadable", "err", err)
		return waitEvent(ctx, defChanged)
	}
	// The state goes into the node before the watch is armed: an exists watch fires on
	// a change of the node's data too.
	state := map[bool]string{true: "running", false: "standby"}[def.Enabled]
	in.setState(node, state)
	mine, _, nodeGone, err := conn.ExistsW(l.Instance(in.task, node))
	if err != nil || !mine {
		return false
	}
	if !def.Enabled {
		in.writeStatus(Status{State: "disabled", Instance: node, Updated: time.Now().UTC()})
		in.logger.Info("task disabled: not running it")
		select {
		case <-defChanged:
			return true
		case <-nodeGone:
			return false
		case <-ctx.Done():
			return false
		}
	}
	defer in.setState(node, "standby")
	return in.runUntil(ctx, node, epoch, def, defChanged, nodeGone)
}

// runUntil runs the task with backoff on failures until the definition changes, the
// node goes, the session is lost or ctx ends.
func (in *instance) runUntil(ctx context.Context, node string, epoch int64, def TaskDef,
	defChanged, nodeGone <-chan zk.Event) bool {
	events, unsubscribe := in.r.s.Subscribe()
	defer unsubscribe()
	retry := backoff.Retry{Policy: runBackoff}
	for {
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		run := newRun(in, node, epoch, def)
		go func() { done <- run.run(runCtx) }()
		again, err := in.watchRun(ctx, done, defChanged, nodeGone, events, run)
		cancel()
		if err == nil {
			err = <-done
		}
		run.finish(err)
		if !again {
			return false
		}
		switch {
		case errors.Is(err, apply.ErrDeposed):
			in.logger.Warn("deposed: a newer instance owns the task")
			return false
		case err == nil || errors.Is(err, context.Canceled):
			return true // the definition changed: read it again
		}
		in.r.metrics.errors.WithLabelValues(in.task).Inc()
		wait := retry.Fail()
		if !apply.Retryable(err) {
			wait = maxBackoff
		}
		in.logger.Warn("task run failed; trying again", "err", err, "in", wait)
		switch in.backoff(ctx, wait, run, err, defChanged, nodeGone) {
		case backoffDefChanged:
			return true
		case backoffStop:
			return false
		}
	}
}

type backoffEnd int

const (
	backoffDone backoffEnd = iota
	backoffDefChanged
	backoffStop
)

// backoff waits before the next run, writing the failed run's status every second
// meanwhile, so that it stays fresh (the monitor flags a stale one).
func (in *instance) backoff(ctx context.Context, wait time.Duration, run *taskRun, runErr error,
	defChanged, nodeGone <-chan zk.Event) backoffEnd {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return backoffDone
		case <-tick.C:
			run.finish(runErr)
		case <-defChanged:
			return backoffDefChanged
		case <-nodeGone:
			return backoffStop
		case <-ctx.Done():
			return backoffStop
		}
	}
}

// watchRun waits for the run to end or for a reason to stop it. again says whether
// the instance may go on; err is the run's error if it ended by itself.
func (in *instance) watchRun(ctx context.Context, done <-chan error, defChanged, nodeGone <-chan zk.Event,
	events <-chan coordinator.Event, run *taskRun) (again bool, err error) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return true, endedBySelf(err)
		case <-defChanged:
			in.logger.Info("task definition changed: restarting the run")
			return true, nil
		case <-nodeGone:
			in.logger.Warn("instance node gone: stopping the run")
			return false, nil
		case ev := <-events:
			if ev.State == coordinator.StateLost || ev.State == coordinator.StateClosed {
				in.logger.Warn("session lost: stopping the run")
				return false, nil
			}
		case <-tick.C:
			run.report()
		case <-ctx.Done():
			return false, nil
		}
	}
}

// endedBySelf is what watchRun reports for a run that ended without being stopped: its
// error, never nil, so that nil keeps meaning "stopped by watchRun, read the run's
// result". A run ends with nil only when its context ends, which watchRun causes.
func endedBySelf(err error) error {
	if err == nil {
		return errRunEnded
	}
	return err
}

// errRunEnded stands for a run that returned nil by itself (see endedBySelf).
var errRunEnded = errors.New("replicator: run ended")

func (in *instance) setState(node, state string) {
	info := InstanceInfo{Host: in.r.host, PID: os.Getpid(), State: state, Since: time.Now().UTC()}
	_, err := in.r.s.Conn().Set(in.r.layout.Instance(in.task, node), mustJSON(info), -1)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		in.logger.Debug("instance state not written", "err", err)
	}
}

// writeStatus writes the task's status node, creating it if needed.
func (in *instance) writeStatus(st Status) { in.writeNode(in.r.layout.Status(in.task), mustJSON(st)) }

func (in *instance) writeNode(p string, data []byte) { in.r.writeNode(p, data) }

// sortInstances orders instance nodes (<host>_<10-digit sequence>, maybe with the
// protected-create prefix) by sequence.
func sortInstances(nodes []string) []string {
	seq := func(n string) string {
		if i := strings.LastIndexByte(n, '_'); i >= 0 {
			return n[i+1:]
		}
		return n
	}
	slices.SortFunc(nodes, func(a, b string) int { return strings.Compare(seq(a), seq(b)) })
	return nodes
}

func waitEvent(ctx context.Context, ev <-chan zk.Event) bool {
	select {
	case <-ev:
		return true
	case <-ctx.Done():
		return false
	}
}
