package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"
)

// checkpointDDL creates the checkpoint table; see the package doc for its columns.
var checkpointDDL = []string{
	"CREATE DATABASE IF NOT EXISTS `" + CheckpointDatabase + "`",
	"CREATE TABLE IF NOT EXISTS " + checkpointName + ` (
  task VARCHAR(191) NOT NULL,
  file VARCHAR(255) NOT NULL DEFAULT '',
  pos BIGINT UNSIGNED NOT NULL DEFAULT 0,
  gtid TEXT NOT NULL,
  ts DATETIME(6) NULL,
  owner_epoch BIGINT NOT NULL,
  updated TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
  PRIMARY KEY (task)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
}

const checkpointName = "`" + CheckpointDatabase + "`.`" + CheckpointTable + "`"

// target is the database the task writes to, as one owner epoch of one task.
type target struct {
	addr  string
	db    *sql.DB
	task  string
	epoch int64
}

// openTarget opens (without connecting) a pool to the target DSN with the session
// settings the engine relies on: UTC time zone, sql_mode NO_AUTO_VALUE_ON_ZERO (an
// explicit 0 in an AUTO_INCREMENT column stays 0), no foreign key checks (rows arrive in
// source commit order, tables are copied one by one), found-rows counts for UPDATE, and
// client-side placeholder interpolation (one round trip per statement).
func openTarget(dsn, task string, epoch int64, log *slog.Logger) (*target, error) {
	dc, err := parseDSN("target", dsn)
	if err != nil {
		return nil, permanentf(nil, "apply: %v", err)
	}
	dc.ParseTime, dc.Loc = true, time.UTC
	dc.InterpolateParams, dc.ClientFoundRows, dc.MultiStatements = true, true, false
	setSessionParams(dc, map[string]string{
		"time_zone":          "'+00:00'",
		"sql_mode":           "'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'",
		"foreign_key_checks": "0",
	})
	db, err := openPool(dc, log)
	if err != nil {
		return nil, permanentf(err, "target %s", dc.Addr)
	}
	db.SetMaxOpenConns(4)
	return &target{addr: dc.Addr, db: db, task: task, epoch: epoch}, nil
}

// setSessionParams sets system variables the driver sets on each new connection, and a
// dial timeout when the DSN has none.
func setSessionParams(dc *mysql.Config, vars map[string]string) {
	if dc.Params == nil {
		dc.Params = map[string]string{}
	}
	for k, v := range vars {
		dc.Params[k] = v
	}
	if dc.Timeout == 0 {
		dc.Timeout = 10 * time.Second
	}
}

// openPool opens a database/sql pool for dc whose driver messages go to log at Debug.
func openPool(dc *mysql.Config, log *slog.Logger) (*sql.DB, error) {
	dc.Logger = driverLogger{log}
	conn, err := mysql.NewConnector(dc)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetConnMaxLifetime(4 * time.Minute) // below common wait_timeout and proxy idle limits
	return db, nil
}

// driverLogger sends go-sql-driver's messages (e.g. "unexpected EOF") to slog.
type driverLogger struct{ log *slog.Logger }

func (d driverLogger) Print(v ...any) { d.log.Debug("mysql driver", "msg", fmt.Sprint(v...)) }

func (t *target) close() { t.db.Close() }

// err wraps err from a target step.
func (t *target) err(err error, format string, args ...any) error {
	return sideErrf("target", t.addr, err, format, args...)
}

// prepare connects and creates the checkpoint database and table if missing.
func (t *target) prepare(ctx context.Context) error {
	if err := t.db.PingContext(ctx); err != nil {
		return sideErr("target", t.addr, err)
	}
	for _, q := range checkpointDDL {
		if _, err := t.db.ExecContext(ctx, q); err != nil {
			return t.err(err, "create the checkpoint table %s", checkpointName)
		}
	}
	return nil
}

// takeOwnership makes this run's epoch the task's owner and returns the task's
// checkpoint (zero when there is none yet, e.g. on the first run). A row with a higher
// epoch means ErrDeposed; the same epoch is accepted (the owner running again).
func (t *target) takeOwnership(ctx context.Context) (Position, error) {
	// The row is created first, on its own: locking a missing row would lock a gap of the
	// index, and two tasks starting at once would deadlock on their inserts.
	_, err := t.db.ExecContext(ctx, "INSERT IGNORE INTO "+checkpointName+
		" (task, file, pos, gtid, ts, owner_epoch) VALUES (?, '', 0, '', NULL, 0)", t.task)
	if err != nil {
		return Position{}, t.err(err, "create the checkpoint row of task %q", t.task)
	}
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return Position{}, t.err(err, "begin")
	}
	defer tx.Rollback()
	cp, found, err := readCheckpoint(ctx, tx, t.task, true)
	switch {
	case err != nil:
		return Position{}, t.err(err, "read the checkpoint of task %q", t.task)
	case !found:
		return Position{}, fmt.Errorf("%w: the checkpoint row of task %q was deleted", ErrDeposed, t.task)
	case cp.OwnerEpoch > t.epoch:
		return Position{}, fmt.Errorf("%w: task %q is owned by epoch %d, this run has epoch %d",
			ErrDeposed, t.task, cp.OwnerEpoch, t.epoch)
	}
	_, err = tx.ExecContext(ctx, "UPDATE "+checkpointName+" SET owner_epoch = ? WHERE task = ?", t.epoch, t.task)
	if err != nil {
		return Position{}, t.err(err, "take ownership of task %q", t.task)
	}
	if err := tx.Commit(); err != nil {
		return Position{}, t.err(err, "commit the ownership of task %q", t.task)
	}
	return cp.Position, nil
}

// begin starts a target transaction fenced by the owner epoch: it locks the task's
// checkpoint row and fails with ErrDeposed if another epoch owns it now. The row lock is
// held until the transaction ends, so no newer owner can take over in between.
func (t *target) begin(ctx context.Context) (*sql.Tx, error) {
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, t.err(err, "begin")
	}
	if err := t.fence(ctx, tx); err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// fence checks, locking the checkpoint row, that this run's epoch still owns the task.
func (t *target) fence(ctx context.Context, tx *sql.Tx) error {
	var epoch int64
	err := tx.QueryRowContext(ctx, "SELECT owner_epoch FROM "+checkpointName+" WHERE task = ? FOR UPDATE",
		t.task).Scan(&epoch)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: the checkpoint row of task %q was deleted", ErrDeposed, t.task)
	case err != nil:
		return t.err(err, "lock the checkpoint of task %q", t.task)
	case epoch != t.epoch:
		return fmt.Errorf("%w: task %q is owned by epoch %d, this run has epoch %d", ErrDeposed, t.task, epoch, t.epoch)
	}
	return nil
}

// save writes pos as the task's checkpoint inside tx (a fenced transaction).
func (t *target) save(ctx context.Context, tx *sql.Tx, pos Position) error {
	var ts any
	if !pos.Time.IsZero() {
		ts = pos.Time.UTC()
	}
	_, err := tx.ExecContext(ctx, "UPDATE "+checkpointName+" SET file = ?, pos = ?, gtid = ?, ts = ? WHERE task = ?",
		pos.File, pos.Pos, pos.GTID, ts, t.task)
	if err != nil {
		return t.err(err, "write the checkpoint of task %q", t.task)
	}
	return nil
}

// commitPosition writes pos as the checkpoint in a transaction of its own.
func (t *target) commitPosition(ctx context.Context, pos Position) error {
	tx, err := t.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := t.save(ctx, tx, pos); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return t.err(err, "commit the checkpoint of task %q", t.task)
	}
	return nil
}

// checkFence checks in a short transaction that this run still owns the task.
func (t *target) checkFence(ctx context.Context) error {
	tx, err := t.begin(ctx)
	if err != nil {
		return err
	}
	return tx.Rollback()
}

// Checkpoint is a task's row in the checkpoint table.
type Checkpoint struct {
	Position             // zero when the task's snapshot has not completed
	OwnerEpoch int64     // the epoch of the run that last took the task
	Updated    time.Time // when the row was last written (the target's clock, UTC)
}

// querier is what both *sql.DB and *sql.Tx offer.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readCheckpoint reads the task's row, locking it when forUpdate.
func readCheckpoint(ctx context.Context, q querier, task string, forUpdate bool) (Checkpoint, bool, error) {
	query := "SELECT file, pos, gtid, ts, owner_epoch, updated FROM " + checkpointName + " WHERE task = ?"
	if forUpdate {
		query += " FOR UPDATE"
	}
	var cp Checkpoint
	var ts sql.NullTime
	err := q.QueryRowContext(ctx, query, task).Scan(&cp.File, &cp.Pos, &cp.GTID, &ts, &cp.OwnerEpoch, &cp.Updated)
	if errors.Is(err, sql.ErrNoRows) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, err
	}
	cp.Time = ts.Time
	return cp, true, nil
}

// ReadCheckpoint reads task's checkpoint row from the target (a DSN as in Config.Target).
// found is false when the task has no row: it never ran against this target.
func ReadCheckpoint(ctx context.Context, targetDSN, task string) (cp Checkpoint, found bool, err error) {
	t, err := openTarget(targetDSN, task, 0, Config{}.logger())
	if err != nil {
		return Checkpoint{}, false, err
	}
	defer t.close()
	cp, found, err = readCheckpoint(ctx, t.db, task, false)
	if err != nil {
		if errorCode(err) == 1146 { // no checkpoint table: no task ever ran here
			return Checkpoint{}, false, nil
		}
		return Checkpoint{}, false, t.err(err, "read the checkpoint of task %q", task)
	}
	return cp, found, nil
}

// ResetCheckpoint clears task's position on the target, as owner epoch, so that the next
// Run takes a new snapshot (the remedy for ErrPurged, or after changing the filters). It
// fails with ErrDeposed if a higher epoch owns the task; a task without a row needs no
// reset.
func ResetCheckpoint(ctx context.Context, targetDSN, task string, epoch int64) error {
	t, err := openTarget(targetDSN, task, epoch, Config{}.logger())
	if err != nil {
		return err
	}
	defer t.close()
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return t.err(err, "begin")
	}
	defer tx.Rollback()
	cp, found, err := readCheckpoint(ctx, tx, task, true)
	switch {
	case errorCode(err) == 1146 || (err == nil && !found):
		return nil
	case err != nil:
		return t.err(err, "read the checkpoint of task %q", task)
	case cp.OwnerEpoch > epoch:
		return fmt.Errorf("%w: task %q is owned by epoch %d, the reset has epoch %d", ErrDeposed, task, cp.OwnerEpoch, epoch)
	}
	_, err = tx.ExecContext(ctx, "UPDATE "+checkpointName+
		" SET file = '', pos = 0, gtid = '', ts = NULL, owner_epoch = ? WHERE task = ?", epoch, task)
	if err != nil {
		return t.err(err, "reset the checkpoint of task %q", task)
	}
	if err := tx.Commit(); err != nil {
		return t.err(err, "commit the reset of task %q", task)
	}
	return nil
}
