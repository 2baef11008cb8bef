// Package apply is the replication engine: it copies the tables of a MySQL or MariaDB
// source to a target server and keeps them in step by applying the source's binary log.
// It knows nothing of ZooKeeper: the replicator service decides who runs a task, with
// which owner epoch, and restarts it; this package makes each run safe.
//
// The binlog is read with go-mysql's replication package (not canal, and not its
// database/sql driver); everything else — control queries, the snapshot, the target — goes
// through database/sql with go-sql-driver/mysql.
//
// # Checkpoint table
//
// The target holds the truth about a task's progress, in one row per task:
//
//	paddock.paddock_checkpoint
//	+-------------+-----------------+--------------------------------------------------+
//	| task        | VARCHAR(191) PK | Config.Task                                      |
//	| file, pos   | VARCHAR, BIGINT | binlog position after the last applied txn       |
//	| gtid        | TEXT            | the source's GTID state there ("" without GTIDs) |
//	| ts          | DATETIME(6)     | the source's commit time of that txn (UTC)       |
//	| owner_epoch | BIGINT          | the epoch of the run that owns the task          |
//	| updated     | TIMESTAMP(6)    | when the row was last written                    |
//	+-------------+-----------------+--------------------------------------------------+
//
// A row with an empty file and gtid has no position: the task's snapshot is not done.
// ReadCheckpoint reads a row; ResetCheckpoint empties its position so that the next Run
// takes a new snapshot.
//
// # Exactly once
//
// Each source transaction is applied inside one target transaction that also writes the
// checkpoint row with the position after the transaction's commit event (XID, or COMMIT
// for non-transactional tables). A crash before the target commit loses the whole target
// transaction, and the next run reads the old checkpoint and applies the source
// transaction again; after the commit, the next run starts after it. Source transactions
// that are already waiting in the stream are batched into one target transaction (up to
// 500 transactions, 20000 rows or 200 ms), never a part of one. A run resumes by GTID when
// the checkpoint has one (MariaDB always logs GTIDs; MySQL when gtid_mode=ON), else by
// file and position. Positions between transactions that changed nothing on the target
// (rotations, transactions on other tables) are written within about a second, so that a
// checkpoint does not sit in a file the source may purge.
//
// # Fencing
//
// A run first takes ownership: in a target transaction it locks the task's row (SELECT
// ... FOR UPDATE) and fails with ErrDeposed if owner_epoch is greater than its epoch,
// else writes its epoch (the same epoch may run again). Every later target transaction
// of the run, snapshot batches included, begins by locking the row and comparing
// owner_epoch with its own epoch; a mismatch rolls back and ends the run with ErrDeposed.
// The row lock is held to the commit, so a new owner's takeover waits for a transaction
// in flight and the old owner commits nothing after it. An idle run checks every five
// seconds. A DDL statement cannot share that transaction: it runs right after a check,
// so one DDL may still run on the target after a takeover between the two; the new owner
// then meets its effect as described under DDL.
//
// # Snapshot
//
// A task without a position starts with a snapshot. On MariaDB the run opens START
// TRANSACTION WITH CONSISTENT SNAPSHOT and reads binlog_snapshot_file and
// binlog_snapshot_position from SHOW STATUS (and BINLOG_GTID_POS of them): the exact
// position of the read view, without a global lock. On MySQL it holds FLUSH TABLES WITH
// READ LOCK just long enough to start the transaction and read the position. It then
// lists the base tables in scope, creates each one missing on the target (and its
// database, with the source's character set) from SHOW CREATE TABLE, empties each one
// the target already has, and copies the rows in INSERTs of up to 1000 rows, committing
// every 20000 rows. Only then is the checkpoint written at the snapshot's position, and
// streaming starts there. A run that stops before that leaves no position: the next one
// snapshots again, emptying the target tables first. Only InnoDB tables are read
// consistently. A table dropped during the snapshot is skipped (its DROP follows in the
// binlog); one changed by DDL during the snapshot fails the run with a retryable error
// (MariaDB error 1412), and the next run snapshots again.
//
// # Rows
//
// Row events of tables in scope are applied by the target table's columns: the target is
// at the same place in the table's history as the event being applied (DDL is applied in
// order), unlike the source's current schema that canal-based readers consult; an event
// whose column count differs from the target table's is an error. Inserts become INSERT
// (consecutive rows of a table share one statement); updates become UPDATE ... SET every
// non-generated column from the after image WHERE the primary key equals the before
// image's; deletes become DELETE ... WHERE the primary key matches. A table without a
// primary key is matched on all its columns but FLOAT and JSON ones, NULL-safe (<=>), with
// LIMIT 1. An UPDATE or DELETE that finds no row means the target diverged from the
// source: the run fails rather than skip it. Generated columns are never written.
// Integers of UNSIGNED columns, which the decoder may read as signed, are reinterpreted;
// text in utf8 and ascii columns is sent as text, binary columns and text in other
// character sets as raw bytes (_binary), so they arrive byte for byte. Target sessions
// use time_zone +00:00 (TIMESTAMP values are decoded in UTC, and the snapshot reads them
// in UTC), sql_mode NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION, and foreign_key_checks
// 0. SAVEPOINT and ROLLBACK TO SAVEPOINT logged inside a transaction are run in the
// target transaction.
//
// # DDL
//
// Query events are classified by a small lexer (comments dropped, executable comments
// kept) and applied in binlog order, with the statement's default database as the
// connection's current one (created on the target first if the statement's table needs
// it):
//
//   - CREATE/ALTER/TRUNCATE TABLE, CREATE/DROP INDEX of a table in scope: run as logged.
//   - DROP TABLE: rewritten to DROP TABLE IF EXISTS of each table in scope.
//   - RENAME TABLE (and ALTER TABLE ... RENAME): each pair whose old name is in scope is
//     renamed on the target; a rename that brings a table into the scope is an error (its
//     rows were never copied).
//   - CREATE/ALTER DATABASE of a database that may hold tables in scope: run as logged
//     ("database exists" is fine); DROP DATABASE drops its tables in scope, and the
//     database if the task covers all of it.
//   - CREATE TABLE ... SELECT: the CREATE and its rows are one transaction on MariaDB.
//   - Views, triggers, routines, events and sequences are not replicated: logged at Warn
//     and counted in Progress.Skipped (a trigger on the target would apply its changes a
//     second time). Accounts, privileges, FLUSH, ANALYZE and temporary tables are ignored.
//   - A statement-based data change (a session with binlog_format STATEMENT or MIXED)
//     that may touch a table in scope, and XA transactions, are errors.
//
// DDL commits implicitly on the target, so it cannot share the checkpoint's transaction.
// Before running it, the run commits everything before it together with the checkpoint;
// after it, it writes the checkpoint after it. A crash in between leaves the checkpoint
// just before the DDL, which the next run applies again. Therefore, until the first event
// group after its starting checkpoint that changes the target, a run takes these errors
// of a DDL statement as "already applied" and logs them at Warn: 1007 database exists,
// 1008 database does not exist, 1050 table exists, 1051 unknown table, 1054 unknown
// column, 1060 duplicate column name, 1061 duplicate key name, 1091 cannot drop a column
// or key that does not exist, 1146 table does not exist, 1826 duplicate foreign key
// name. Anywhere else they are errors: the target was changed by hand.
//
// # Errors
//
// Run's errors name the server, the step and the position, e.g.
//
//	source 127.0.0.1:3306: connect: connection refused
//	target 10.0.0.5:3306: Error 1045 (28000): Access denied for user 'app'@'10.0.0.9' (using password: YES)
//	source 127.0.0.1:3306: binlog_format is STATEMENT: ROW is required
//	source 127.0.0.1:3306 no longer has binlog bin.000003 (purged): position bin.000003:1234 (gtid 0-1-42) cannot be resumed; re-snapshot the task
//	apply: deposed: a newer owner epoch has taken the task over: task "t" is owned by epoch 3, this run has epoch 2
//	update of shop.orders at source bin.000007:88123: the target has no row with id=5: the target has diverged from the source; re-snapshot the task
//
// Retryable tells transient failures (a server unreachable or restarting, a lost
// connection, a deadlock or lock wait timeout, a table changed during a snapshot) from
// permanent ones (configuration, permissions, binlog format or row image, ErrPurged,
// ErrDeposed, divergence, unsupported statements), which need a person or a new
// snapshot. Run never retries by itself: after a transient error its caller runs it again
// and it resumes from the checkpoint. The source must have log_bin on, binlog_format=ROW
// and binlog_row_image=FULL; Config.ServerID must be unique among its replicas (MariaDB
// and MySQL drop an older binlog connection registered with the same server id).
package apply
