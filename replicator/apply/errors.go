package apply

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// ErrDeposed is returned (wrapped) when a run with a higher owner epoch has taken the task
// over: this run committed nothing after that. It is permanent for this epoch.
var ErrDeposed = errors.New("apply: deposed: a newer owner epoch has taken the task over")

// ErrPurged is returned (wrapped) when the source no longer has the binlog at the task's
// checkpoint: the task cannot go on without a new snapshot (ResetCheckpoint).
var ErrPurged = errors.New("apply: the checkpoint's binlog position was purged from the source")

// runError is an error of Run that knows whether trying again may help.
type runError struct {
	msg   string
	err   error // the cause, printed after msg; or nil
	kind  error // a sentinel errors.Is matches (ErrPurged), not printed; or nil
	retry bool
}

func (e *runError) Error() string {
	if e.err == nil {
		return e.msg
	}
	return e.msg + ": " + describe(e.err)
}

func (e *runError) Unwrap() error { return e.err }

func (e *runError) Is(target error) bool { return e.kind != nil && target == e.kind }

// Retryable reports whether err is transient — a server unreachable or restarting, a lost
// connection, a lock wait timeout or deadlock — so that running the task again later may
// succeed. It is false for nil, for ErrDeposed, ErrPurged and ErrSameServer, for configuration and
// permission problems (binlog format, access denied, bad DSN), and for a target that
// diverged from the source: those need a person or a new snapshot.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, ErrDeposed) || errors.Is(err, ErrPurged) {
		return false
	}
	var re *runError
	if errors.As(err, &re) {
		return re.retry
	}
	return transient(err)
}

// permanentf returns a permanent error with the message (and cause, if any).
func permanentf(cause error, format string, args ...any) error {
	return &runError{msg: fmt.Sprintf(format, args...), err: cause}
}

// sideErr wraps err from talking to side ("source" or "target") at addr, classifying it.
func sideErr(side, addr string, err error) error {
	var re *runError
	if errors.As(err, &re) || errors.Is(err, ErrDeposed) {
		return err // already says what it is
	}
	return &runError{msg: side + " " + addr, err: err, retry: transient(err)}
}

// sideErrf is sideErr with a description of the step that failed.
func sideErrf(side, addr string, err error, format string, args ...any) error {
	var re *runError
	if errors.As(err, &re) || errors.Is(err, ErrDeposed) {
		return err
	}
	msg := side + " " + addr + ": " + fmt.Sprintf(format, args...)
	return &runError{msg: msg, err: err, retry: transient(err)}
}

// transientCodes are the server error numbers that say "try again later".
var transientCodes = map[uint16]bool{
	1040: true,                                     // too many connections
	1053: true,                                     // server shutdown in progress
	1152: true,                                     // aborted connection
	1158: true, 1159: true, 1160: true, 1161: true, // network read/write errors
	1203: true,                                     // max_user_connections
	1205: true,                                     // lock wait timeout
	1213: true,                                     // deadlock
	1317: true,                                     // query interrupted
	1412: true,                                     // table definition changed (DDL during a snapshot): a new snapshot will do
	1927: true,                                     // connection killed
	2002: true, 2003: true, 2006: true, 2013: true, // client: cannot connect, gone away, lost
}

// transient reports whether err is of a kind that goes away by itself.
func transient(err error) bool {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return transientCodes[myErr.Number]
	}
	var goErr *gomysql.MyError
	if errors.As(err, &goErr) {
		return transientCodes[goErr.Code]
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, gomysql.ErrBadConn)
}

// describe renders a cause for a message: a failed dial loses its "dial tcp addr:" prefix,
// which the message already says.
func describe(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" && opErr.Err != nil {
		return opErr.Err.Error()
	}
	return err.Error()
}

// errorCode returns the server error number of err, or 0.
func errorCode(err error) uint16 {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) {
		return myErr.Number
	}
	var goErr *gomysql.MyError
	if errors.As(err, &goErr) {
		return goErr.Code
	}
	return 0
}
