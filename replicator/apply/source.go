package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/go-sql-driver/mysql"
)

// Binlog connection timing: the source sends a heartbeat after heartbeatPeriod without
// events, so a connection silent for readTimeout is dead.
const (
	heartbeatPeriod = time.Second
	readTimeout     = 10 * time.Second
)

// source is the server whose binary log the task reads.
type source struct {
	addr    string
	dc      *mysql.Config
	db      *sql.DB // control queries and the snapshot
	flavor  string  // gomysql.MariaDBFlavor or gomysql.MySQLFlavor
	version string
	gtid    bool // positions carry GTIDs: always on MariaDB, gtid_mode=ON on MySQL
	log     *slog.Logger
}

// openSource opens (without connecting) a pool to the source DSN. Sessions use UTC, so
// TIMESTAMP values read by the snapshot match those the binlog decoder renders in UTC.
func openSource(dsn string, log *slog.Logger) (*source, error) {
	dc, err := parseDSN("source", dsn)
	if err != nil {
		return nil, permanentf(nil, "apply: %v", err)
	}
	dc.ParseTime, dc.InterpolateParams, dc.MultiStatements = false, true, false
	setSessionParams(dc, map[string]string{"time_zone": "'+00:00'"})
	db, err := openPool(dc, log)
	if err != nil {
		return nil, permanentf(err, "source %s", dc.Addr)
	}
	db.SetMaxOpenConns(3) // the snapshot's connection, control queries, and a spare
	return &source{addr: dc.Addr, dc: dc, db: db, log: log}, nil
}

func (s *source) close() { s.db.Close() }

// err wraps err from a source step.
func (s *source) err(err error, format string, args ...any) error {
	return sideErrf("source", s.addr, err, format, args...)
}

// probe connects and checks that the source can be replicated from: binary log on, ROW
// format, FULL row images, and a server id other than serverID. It learns the flavor.
func (s *source) probe(ctx context.Context, serverID uint32) error {
	if err := s.db.PingContext(ctx); err != nil {
		return sideErr("source", s.addr, err)
	}
	var logBin, format, image string
	var id uint32
	err := s.db.QueryRowContext(ctx, "SELECT VERSION(), @@GLOBAL.log_bin, @@GLOBAL.binlog_format, "+
		"@@GLOBAL.binlog_row_image, @@GLOBAL.server_id").Scan(&s.version, &logBin, &format, &image, &id)
	if err != nil {
		return s.err(err, "read the replication settings")
	}
	s.flavor, s.gtid = gomysql.MySQLFlavor, false
	if strings.Contains(strings.ToLower(s.version), "mariadb") {
		s.flavor, s.gtid = gomysql.MariaDBFlavor, true
	}
	switch {
	case logBin != "1" && !strings.EqualFold(logBin, "ON"):
		return permanentf(nil, "source %s: the binary log is off (log_bin=OFF): start the server with --log-bin and --binlog-format=ROW", s.addr)
	case !strings.EqualFold(format, "ROW"):
		return permanentf(nil, "source %s: binlog_format is %s: ROW is required", s.addr, format)
	case !strings.EqualFold(image, "FULL"):
		return permanentf(nil, "source %s: binlog_row_image is %s: FULL is required (rows are matched by their whole before image)", s.addr, image)
	case id == serverID:
		return permanentf(nil, "source %s: the task's server id %d is the source's own server_id: choose another", s.addr, serverID)
	}
	if s.flavor == gomysql.MySQLFlavor {
		return s.probeMySQLGTID(ctx)
	}
	return nil
}

// probeMySQLGTID learns whether a MySQL source has GTIDs on.
func (s *source) probeMySQLGTID(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_mode").Scan(&mode); err != nil {
		return s.err(err, "read gtid_mode")
	}
	s.gtid = strings.EqualFold(mode, "ON")
	return nil
}

// binlogFile is a line of SHOW BINARY LOGS.
type binlogFile struct {
	name string
	size int64
}

// binlogs lists the source's binary log files, oldest first.
func (s *source) binlogs(ctx context.Context) ([]binlogFile, error) {
	rows, err := s.db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, s.err(err, "SHOW BINARY LOGS")
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, s.err(err, "SHOW BINARY LOGS")
	}
	var files []binlogFile
	for rows.Next() {
		var f binlogFile
		dest := make([]any, len(cols)) // Log_name, File_size, and on MySQL Encrypted
		dest[0], dest[1] = &f.name, &f.size
		for i := 2; i < len(dest); i++ {
			dest[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, s.err(err, "SHOW BINARY LOGS")
		}
		files = append(files, f)
	}
	if err := rows.Err(); err != nil {
		return nil, s.err(err, "SHOW BINARY LOGS")
	}
	return files, nil
}

// bytesBehind returns how many bytes of binlog follow pos in files, or -1 if pos's file
// is not among them.
func bytesBehind(files []binlogFile, pos Position) int64 {
	for i, f := range files {
		if f.name != pos.File {
			continue
		}
		behind := max(f.size-int64(pos.Pos), 0)
		for _, later := range files[i+1:] {
			behind += later.size
		}
		return behind
	}
	return -1
}

// checkResumable fails if the source can no longer stream from pos: its file was purged
// (and there is no GTID the source could find instead), or pos lies beyond the file's end.
func (s *source) checkResumable(ctx context.Context, pos Position) error {
	files, err := s.binlogs(ctx)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.name == pos.File && int64(pos.Pos) > f.size {
			return permanentf(nil, "source %s: binlog %s has %d bytes but the checkpoint is at %s: "+
				"the source's binary log was reset; re-snapshot the task", s.addr, f.name, f.size, pos)
		}
		if f.name == pos.File {
			return nil
		}
	}
	if pos.GTID != "" && s.gtid {
		return nil // the GTID may still be found in a later file; the source decides
	}
	return s.purged(pos, nil)
}

// purged returns the ErrPurged error for pos, with the source's own words if any.
func (s *source) purged(pos Position, cause error) error {
	return &runError{
		msg: fmt.Sprintf("source %s no longer has binlog %s (purged): position %s cannot be resumed; re-snapshot the task",
			s.addr, pos.File, pos),
		err:  cause,
		kind: ErrPurged,
	}
}

// syncerConfig returns the binlog connection's configuration. The syncer does not retry
// by itself: Run ends on a lost connection and its caller starts it again from the
// checkpoint, which keeps a half-read transaction from being applied twice. Rows of
// tables outside sc are not decoded.
func (s *source) syncerConfig(serverID uint32, sc scope) (replication.BinlogSyncerConfig, error) {
	host, portStr, err := net.SplitHostPort(s.dc.Addr)
	if err != nil {
		return replication.BinlogSyncerConfig{}, permanentf(err, "source address %q", s.dc.Addr)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return replication.BinlogSyncerConfig{}, permanentf(err, "source port %q", portStr)
	}
	mariaDB := s.flavor == gomysql.MariaDBFlavor
	cfg := replication.BinlogSyncerConfig{
		ServerID: serverID, Flavor: s.flavor, Host: host, Port: uint16(port),
		User: s.dc.User, Password: s.dc.Passwd, TLSConfig: s.dc.TLS, Localhost: "paddock",
		UseDecimal: true, TimestampStringLocation: time.UTC,
		HeartbeatPeriod: heartbeatPeriod, ReadTimeout: readTimeout,
		DisableRetrySync: true, MaxReconnectAttempts: 1,
		FillZeroLogPos:  mariaDB, // MariaDB 11.4+ leaves end_log_pos 0 inside transactions
		EventCacheCount: 4096,
		Logger:          slog.New(demoted{s.log.Handler()}),
		RowsEventDecodeFunc: func(e *replication.RowsEvent, data []byte) error {
			return decodeInScope(sc, e, data)
		},
	}
	if mariaDB {
		cfg.DumpCommandFlag = replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT // else dummy events stand in for them
	}
	return cfg, nil
}

// decodeInScope decodes a rows event's rows only if its table is replicated.
func decodeInScope(sc scope, e *replication.RowsEvent, data []byte) error {
	pos, err := e.DecodeHeader(data)
	if err != nil {
		return err
	}
	if e.Table == nil || !sc.table(string(e.Table.Schema), string(e.Table.Table)) {
		return nil
	}
	return e.DecodeData(pos, data)
}

// snapshotStart opens a consistent read of the source on conn and returns the binlog
// position it corresponds to. On MariaDB the transaction's own snapshot position is
// exact without any lock; on MySQL a global read lock is held for the instant it takes
// to start the transaction and read the position.
func (s *source) snapshotStart(ctx context.Context, conn *sql.Conn) (Position, error) {
	if _, err := conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
		return Position{}, s.err(err, "snapshot: set isolation level")
	}
	if s.flavor == gomysql.MariaDBFlavor {
		return s.snapshotStartMariaDB(ctx, conn)
	}
	return s.snapshotStartMySQL(ctx, conn)
}

func (s *source) snapshotStartMariaDB(ctx context.Context, conn *sql.Conn) (Position, error) {
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return Position{}, s.err(err, "snapshot: start transaction")
	}
	var pos Position
	rows, err := conn.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return Position{}, s.err(err, "snapshot: read binlog_snapshot_file and _position")
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return Position{}, s.err(err, "snapshot: read binlog_snapshot_file and _position")
		}
		switch strings.ToLower(name) {
		case "binlog_snapshot_file":
			pos.File = value
		case "binlog_snapshot_position":
			n, _ := strconv.ParseUint(value, 10, 32)
			pos.Pos = uint32(n)
		}
	}
	if err := rows.Err(); err != nil || pos.File == "" {
		return Position{}, s.err(errors.Join(err, errors.New("no binlog_snapshot_file")), "snapshot position")
	}
	var gtid sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", pos.File, pos.Pos).Scan(&gtid); err != nil {
		return Position{}, s.err(err, "snapshot: BINLOG_GTID_POS(%q, %d)", pos.File, pos.Pos)
	}
	pos.GTID = gtid.String
	return s.snapshotTime(ctx, conn, pos)
}

func (s *source) snapshotStartMySQL(ctx context.Context, conn *sql.Conn) (Position, error) {
	if _, err := conn.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		return Position{}, s.err(err, "snapshot: FLUSH TABLES WITH READ LOCK")
	}
	defer conn.ExecContext(context.Background(), "UNLOCK TABLES")
	if _, err := conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return Position{}, s.err(err, "snapshot: start transaction")
	}
	var pos Position
	var gtid sql.NullString
	scan := func(q string) error {
		var doDB, ignoreDB sql.NullString
		return conn.QueryRowContext(ctx, q).Scan(&pos.File, &pos.Pos, &doDB, &ignoreDB, &gtid)
	}
	err := scan("SHOW BINARY LOG STATUS") // MySQL 8.2+; 8.4 removed SHOW MASTER STATUS
	if err != nil {
		err = scan("SHOW MASTER STATUS")
	}
	if err != nil {
		return Position{}, s.err(err, "snapshot: read the binlog position")
	}
	if s.gtid {
		pos.GTID = strings.ReplaceAll(gtid.String, "\n", "")
	}
	return s.snapshotTime(ctx, conn, pos)
}

// snapshotTime sets pos.Time to the source's clock.
func (s *source) snapshotTime(ctx context.Context, conn *sql.Conn, pos Position) (Position, error) {
	var unix int64
	if err := conn.QueryRowContext(ctx, "SELECT UNIX_TIMESTAMP()").Scan(&unix); err != nil {
		return Position{}, s.err(err, "snapshot: read the clock")
	}
	pos.Time = time.Unix(unix, 0).UTC()
	return pos, nil
}

// createDatabaseSQL returns a CREATE DATABASE IF NOT EXISTS statement for db with the
// source's character set and collation, or a plain one if the source does not have db.
func (s *source) createDatabaseSQL(ctx context.Context, q querier, db string) string {
	var name, create string
	err := q.QueryRowContext(ctx, "SHOW CREATE DATABASE "+quoteIdent(db)).Scan(&name, &create)
	if rest, ok := strings.CutPrefix(create, "CREATE DATABASE "); err == nil && ok {
		if !strings.HasPrefix(rest, "IF NOT EXISTS") {
			return "CREATE DATABASE IF NOT EXISTS " + rest
		}
		return create
	}
	return "CREATE DATABASE IF NOT EXISTS " + quoteIdent(db)
}

// quoteIdent quotes a database, table or column name with backquotes.
func quoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// quoteTable quotes db.name.
func quoteTable(db, name string) string { return quoteIdent(db) + "." + quoteIdent(name) }

// demoted is a slog handler that logs the go-mysql library at Debug: its Info lines are
// config dumps and rotations, and its errors are ones Run returns anyway.
type demoted struct{ slog.Handler }

func (d demoted) Enabled(ctx context.Context, l slog.Level) bool {
	return d.Handler.Enabled(ctx, demote(l))
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return d.Handler.Handle(ctx, r)
}

func (d demoted) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoted{d.Handler.WithAttrs(attrs)}
}
func (d demoted) WithGroup(name string) slog.Handler { return demoted{d.Handler.WithGroup(name)} }

func demote(l slog.Level) slog.Level { return min(l, slog.LevelDebug) }
