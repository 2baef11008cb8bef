package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"
)

// ErrSameServer is returned (wrapped) when a task's source and target are one server: the
// task would apply its own writes to its source and read them back from the binlog,
// forever.
var ErrSameServer = errors.New("apply: source and target are the same server")

// identityTimeout bounds each connection and query of an identity check.
const identityTimeout = 5 * time.Second

// SameAddress reports whether the source and target DSNs name the same host and port
// once their host names are resolved (localhost and 127.0.0.1 are one address). It
// returns an error wrapping ErrSameServer if they do, nil if they do not or if a name
// does not resolve (the run will say so).
func SameAddress(ctx context.Context, sourceDSN, targetDSN string) error {
	src, err := parseDSN("source", sourceDSN)
	if err != nil {
		return nil // Validate reports it
	}
	tgt, err := parseDSN("target", targetDSN)
	if err != nil {
		return nil
	}
	sh, sp, err1 := net.SplitHostPort(src.Addr)
	th, tp, err2 := net.SplitHostPort(tgt.Addr)
	if err1 != nil || err2 != nil || sp != tp {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	sa, err1 := net.DefaultResolver.LookupHost(ctx, sh)
	ta, err2 := net.DefaultResolver.LookupHost(ctx, th)
	if err1 != nil || err2 != nil {
		return nil
	}
	for _, a := range sa {
		if slices.Contains(ta, a) {
			return fmt.Errorf("%w: %s and %s are both %s", ErrSameServer, src.Addr, tgt.Addr, net.JoinHostPort(a, sp))
		}
	}
	return nil
}

// serverIdentity is what tells two servers apart: @@server_uuid where the server has one
// (MySQL), else its host name, port and data directory together (MariaDB has no
// server_uuid, and server_id is 1 on every server nobody configured).
type serverIdentity struct {
	serverID uint32
	uuid     string
	host     string
	port     int
	datadir  string
}

func (a serverIdentity) same(b serverIdentity) bool {
	if a.uuid != "" && b.uuid != "" {
		return a.uuid == b.uuid
	}
	return a.serverID == b.serverID && a.host == b.host && a.port == b.port && a.datadir == b.datadir
}

func (a serverIdentity) String() string {
	if a.uuid != "" {
		return "server_uuid " + a.uuid
	}
	return fmt.Sprintf("server_id %d, hostname %s, port %d, datadir %s", a.serverID, a.host, a.port, a.datadir)
}

// readIdentity reads db's identity.
func readIdentity(ctx context.Context, db *sql.DB) (serverIdentity, error) {
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	var id serverIdentity
	err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_id, @@hostname, @@port, @@datadir").
		Scan(&id.serverID, &id.host, &id.port, &id.datadir)
	if err != nil {
		return id, err
	}
	var uuid sql.NullString
	if db.QueryRowContext(ctx, "SELECT @@GLOBAL.server_uuid").Scan(&uuid) == nil { // MySQL only
		id.uuid = uuid.String
	}
	return id, nil
}

// SameServer reports, by SameAddress and then by asking both servers who they are
// (@@server_uuid, or server_id, hostname, port and datadir), whether the source and
// target are one server: an error wrapping ErrSameServer if they are. A server it cannot
// reach is not an error: it returns nil (the run will say so); then only the addresses
// were compared.
func SameServer(ctx context.Context, sourceDSN, targetDSN string) error {
	if err := SameAddress(ctx, sourceDSN, targetDSN); err != nil {
		return err
	}
	var ids [2]serverIdentity
	for i, dsn := range []string{sourceDSN, targetDSN} {
		dc, err := parseDSN("source", dsn)
		if err != nil {
			return nil
		}
		dc.Timeout = min(identityTimeout, max(dc.Timeout, time.Second))
		db, err := openPool(dc, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil
		}
		ids[i], err = readIdentity(ctx, db)
		db.Close()
		if err != nil {
			return nil
		}
	}
	if ids[0].same(ids[1]) {
		return fmt.Errorf("%w (%s)", ErrSameServer, ids[0])
	}
	return nil
}

// checkDistinct is the run's check that the source and target are two servers; it is
// permanent when they are one.
func (r *runner) checkDistinct(ctx context.Context) error {
	if err := SameAddress(ctx, r.cfg.Source, r.cfg.Target); err != nil {
		return &runError{msg: err.Error(), kind: ErrSameServer}
	}
	src, err := readIdentity(ctx, r.src.db)
	if err != nil {
		return sideErr("source", r.src.addr, err)
	}
	tgt, err := readIdentity(ctx, r.tgt.db)
	if err != nil {
		return sideErr("target", r.tgt.addr, err) // the target's first contact: its errors read as such
	}
	if src.same(tgt) {
		return &runError{msg: fmt.Sprintf("%v: %s and %s are one server (%s)", ErrSameServer, r.src.addr, r.tgt.addr, src),
			kind: ErrSameServer}
	}
	return nil
}
