package worker

import (
	"log/slog"
	"os"
	"time"
)

// killer ends a task's process group: SIGTERM first, SIGKILL once the grace period is
// over. It is used by the job's goroutine only.
type killer struct {
	p      *os.Process
	grace  time.Duration
	logger *slog.Logger
	timer  *time.Timer // from the SIGTERM to the SIGKILL
	killed bool        // SIGKILL was sent
}

// terminate asks the group to end; a second call does nothing.
func (k *killer) terminate() {
	if k.timer != nil || k.killed {
		return
	}
	if k.grace <= 0 {
		k.kill()
		return
	}
	k.signal(false)
	k.timer = time.NewTimer(k.grace)
}

// graceOver fires when the group has had its grace period after terminate.
func (k *killer) graceOver() <-chan time.Time {
	if k.timer == nil || k.killed {
		return nil
	}
	return k.timer.C
}

// kill sends SIGKILL to the group.
func (k *killer) kill() {
	if !k.killed {
		k.killed = true
		k.signal(true)
	}
}

// sweep kills what is left of the group once its leader has exited: a task's
// processes end with it. The leader has been reaped by then, but its pid, the group's
// id, stays taken while any member of the group lives; a group with none left answers
// ESRCH.
func (k *killer) sweep() {
	if err := signalGroup(k.p, true); err != nil {
		k.logger.Debug("cannot kill what is left of the task's process group", "err", err)
	}
	k.stop()
}

func (k *killer) stop() {
	if k.timer != nil {
		k.timer.Stop()
	}
}

func (k *killer) signal(hard bool) {
	sig := "SIGTERM"
	if hard {
		sig = "SIGKILL"
	}
	k.logger.Info("signalling task process group", "signal", sig, "pid", k.p.Pid)
	if err := signalGroup(k.p, hard); err != nil {
		k.logger.Warn("cannot signal task process group", "signal", sig, "pid", k.p.Pid, "err", err)
	}
}
