package worker

import (
	"log/slog"
	"time"
)

// killer ends a task's processes, all of them: SIGTERM first, SIGKILL once the grace
// period is over. It is used by the job's goroutine only.
type killer struct {
	p      taskProc
	grace  time.Duration
	logger *slog.Logger
	timer  *time.Timer // from the SIGTERM to the SIGKILL
	killed bool        // SIGKILL was sent
}

// terminate asks the task to end; a second call does nothing.
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

// graceOver fires when the task has had its grace period after terminate.
func (k *killer) graceOver() <-chan time.Time {
	if k.timer == nil || k.killed {
		return nil
	}
	return k.timer.C
}

// kill sends SIGKILL to every process of the task.
func (k *killer) kill() {
	if !k.killed {
		k.killed = true
		k.signal(true)
	}
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
	k.logger.Info("signalling task processes", "signal", sig, "pid", k.p.PID())
	if err := k.p.Signal(hard); err != nil {
		k.logger.Warn("cannot signal task processes", "signal", sig, "pid", k.p.PID(), "err", err)
	}
}
