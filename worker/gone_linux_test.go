package worker

// processGone reports whether process pid has ended: it is not in /proc, or it is a
// zombie nobody reaped yet (an orphan whose init does not reap).
func processGone(pid int) bool { return !alive(pid) }
