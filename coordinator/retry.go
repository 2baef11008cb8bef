package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// IsConnLoss says err is a loss of the connection or of the session: the call may be
// tried again once the Session is connected.
func IsConnLoss(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// WaitToRetry is what the recipes, and the services built on the Session, do after err
// from a request: if err is retryable they wait for the Session to be connected and go
// on (nil); otherwise, or when ctx ends or the Session closes first, they stop with the
// error returned. The short pause keeps a request that fails before the Session hears
// of the disconnection from spinning. A write whose outcome is unknown (see
// ErrOutcomeUnknown) must not simply be sent again.
func (s *Session) WaitToRetry(ctx context.Context, err error) error {
	if errors.Is(err, zk.ErrClosing) {
		return ErrClosed
	}
	if !IsConnLoss(err) {
		return err
	}
	t := time.NewTimer(50 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.Closed():
		return ErrClosed
	}
	return s.WaitConnected(ctx)
}

// ErrOutcomeUnknown says the connection dropped while a write was on its way, so it may
// or may not have been applied (Put, Take, Counter.Add): the recipe cannot tell, and
// does not retry, which could apply it twice.
var ErrOutcomeUnknown = errors.New("coordinator: connection lost during the write: it may or may not have been applied")

// WriteNotSent says a write failed before it was sent (the client had no server to
// send it to), so it is safe to send again.
func WriteNotSent(err error) bool { return errors.Is(err, zk.ErrNoServer) }
