package server

import (
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// The audit log (audit.enable in ZooKeeper; docs/audit.md): one line per audited
// operation, written by the server that proposed it — for a client's write, the member
// the client is connected to. A line is ZooKeeper's AuditEvent, tab-separated key=value
// pairs in its order (session, user, ip, operation, znode, znode_type, acl, result), after
// a timestamp and level as ZooKeeper's log4j layout writes them, with paddock's
// identities after user (auditIdentities). No line holds a node's data or a password:
// setData is logged without its data, and digest identities and ACL ids without their
// hash.
//
// Lines go through a bounded queue to one writer goroutine: the apply loop never waits
// on the disk for them. When the queue is full a line is dropped and counted
// (audit_lines_dropped in mntr), never blocking writes.

// Audited operations (AuditConstants).
const (
	auditStart           = "serverStart"
	auditStop            = "serverStop"
	auditCreate          = "create"
	auditDelete          = "delete"
	auditSetData         = "setData"
	auditSetACL          = "setAcl"
	auditMulti           = "multiOperation"
	auditReconfig        = "reconfig"
	auditEphemeralDelete = "ephemeralZNodeDeletionOnSessionCloseOrExpire"
)

// Audit results (AuditEvent.Result).
const (
	auditSuccess = "success"
	auditFailure = "failure"
	auditInvoked = "invoked"
)

// auditFieldMax bounds one field of a line: a path or identity longer than this is cut,
// so that no client can make a line of a megabyte.
const auditFieldMax = 1024

// auditEvent is one line's fields; empty fields are left out, as ZooKeeper leaves out null ones.
// identities is paddock's (auditIdentities); the others are ZooKeeper's.
type auditEvent struct {
	session, user, identities, ip, op, znode, znodeType, acl, result string
}

// format renders the event as one line, timestamp first.
func (e *auditEvent) format(now time.Time) []byte {
	b := make([]byte, 0, 160)
	b = now.UTC().AppendFormat(b, "2006-01-02 15:04:05,000")
	if e.result == auditFailure {
		b = append(b, " ERROR audit: "...) // Slf4jAuditLogger logs failures at error
	} else {
		b = append(b, " INFO audit: "...)
	}
	first := true
	add := func(key, value string) {
		if value == "" {
			return
		}
		if !first {
			b = append(b, '\t')
		}
		first = false
		b = append(b, key...)
		b = append(b, '=')
		b = appendAuditValue(b, value)
	}
	add("session", e.session)
	add("user", e.user)
	add("identities", e.identities)
	add("ip", e.ip)
	add("operation", e.op)
	add("znode", e.znode)
	add("znode_type", e.znodeType)
	add("acl", e.acl)
	add("result", e.result)
	return append(b, '\n')
}

// appendAuditValue appends v with control characters, backslashes and invalid UTF-8
// escaped (a path refused as invalid may hold a newline or a tab) and cut at
// auditFieldMax bytes.
func appendAuditValue(b []byte, v string) []byte {
	cut := len(v) > auditFieldMax
	if cut {
		v = v[:auditFieldMax]
	}
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		switch {
		case r == '\\':
			b = append(b, `\\`...)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError && size == 1:
			b = fmt.Appendf(b, `\x%02x`, v[i])
		default:
			b = append(b, v[i:i+size]...)
		}
		i += size
	}
	if cut {
		b = append(b, "...(cut)"...)
	}
	return b
}

// auditLog is the audit log's queue and writer. Safe for concurrent use.
type auditLog struct {
	path   string
	file   *os.File
	lines  chan []byte   // queued lines, bounded; the writer drains it
	stop   chan struct{} // closed by close: drain, flush, exit
	done   chan struct{} // closed when the writer has exited and the file is closed
	logger *slog.Logger
	user   string // the server's own user, for its start and stop lines

	written, dropped, failed atomic.Int64
	closed                   atomic.Bool
	started                  atomic.Bool // serverStart was logged a success: serverStop follows
}

// openAudit opens (appending, creating it readable by its owner only) the audit log
// and starts its writer.
func openAudit(path string, queue int, logger *slog.Logger) (*auditLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("server: audit_log_file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server: audit_log_file: %w", err)
	}
	a := &auditLog{path: path, file: f, lines: make(chan []byte, queue), stop: make(chan struct{}),
		done: make(chan struct{}), logger: logger, user: serverUser()}
	go a.writeLoop()
	return a, nil
}

// serverUser names the server in its own lines (ZooKeeper: its login user).
func serverUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "paddock"
}

// log queues ev, or drops and counts it if the queue is full or the log closed.
func (a *auditLog) log(ev *auditEvent) {
	if a == nil {
		return
	}
	if a.closed.Load() {
		a.dropped.Add(1)
		return
	}
	select {
	case a.lines <- ev.format(time.Now()):
	default:
		a.dropped.Add(1)
	}
}

// writeLoop writes queued lines, draining the queue into one write where it can.
func (a *auditLog) writeLoop() {
	defer close(a.done)
	var buf []byte
	for {
		select {
		case line := <-a.lines:
			buf = append(buf[:0], line...)
			n := int64(1)
			for more := true; more && len(buf) < 64<<10; {
				select {
				case line := <-a.lines:
					buf = append(buf, line...)
					n++
				default:
					more = false
				}
			}
			a.write(buf, n)
		case <-a.stop:
			for {
				select {
				case line := <-a.lines:
					a.write(line, 1)
				default:
					if err := a.file.Close(); err != nil {
						a.logger.Error("audit log close failed", "path", a.path, "err", err)
					}
					return
				}
			}
		}
	}
}

func (a *auditLog) write(b []byte, lines int64) {
	if _, err := a.file.Write(b); err != nil {
		if a.failed.Add(lines) == lines {
			a.logger.Error("audit log write failed: lines are being lost", "path", a.path, "err", err)
		}
		return
	}
	a.written.Add(lines)
}

// close writes what is queued and closes the file. Idempotent.
func (a *auditLog) close() {
	if a == nil || !a.closed.CompareAndSwap(false, true) {
		return
	}
	close(a.stop)
	<-a.done
}

// auditServer logs the server's own start or stop.
func (a *auditLog) auditServer(op, result string) {
	if a == nil {
		return
	}
	switch {
	case op == auditStart && result == auditSuccess:
		a.started.Store(true)
	case op == auditStop && !a.started.Load():
		return // a server that never started does not stop
	}
	a.log(&auditEvent{user: a.user, op: op, result: result})
}

// auditUsers joins the names of a session's identities as ZooKeeper's
// AuthUtil.getUsers does: the user part of a digest id, the address of an ip one, the
// id of the others; super, which no provider owns, is left out.
func auditUsers(ids []wire.Identity) string {
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		switch id.Scheme {
		case datatree.SchemeSuper:
			continue
		case datatree.SchemeDigest:
			user, _, _ := strings.Cut(id.ID, ":")
			names = append(names, user)
		default:
			if id.ID != "" {
				names = append(names, id.ID)
			}
		}
	}
	return strings.Join(names, ",")
}

// auditIdentities writes the identities of a session so that a line tells who acted,
// where ZooKeeper's user= gives only names (and a made-up digest admin reads as the real
// one): each as scheme:id, separated by ';' —
//
//   - digest:<user>(super), (known) or (claimed): the super digest, one of
//     known_digests_file, or one the server cannot tell from a made-up one (any client
//     may addauth digest with any password). Never the hash.
//   - ip:<address>: the connection's.
//   - x509:<subject> and sasl:<user>: proven by the TLS handshake and the SASL exchange;
//     (super) for the super user's.
//
// The super identity itself is left out: the mark says which identity made it. Within
// an id, the characters that would end an entry or forge a mark — % ; ( ) — are
// percent-encoded.
func (s *Server) auditIdentities(ids []wire.Identity) string {
	var b strings.Builder
	for _, id := range ids {
		mark := ""
		switch id.Scheme {
		case datatree.SchemeSuper:
			continue
		case datatree.SchemeDigest:
			user, _, _ := strings.Cut(id.ID, ":")
			mark = "claimed"
			switch {
			case s.cfg.SuperDigest != "" && id.ID == s.cfg.SuperDigest:
				mark = "super"
			case s.known.has(id.ID):
				mark = "known"
			}
			id.ID = user
		case datatree.SchemeX509:
			if s.cfg.X509SuperUser != "" && id.ID == s.cfg.X509SuperUser {
				mark = "super"
			}
		case SchemeSASL:
			if s.cfg.SASLSuperUser != "" && id.ID == s.cfg.SASLSuperUser {
				mark = "super"
			}
		}
		if b.Len() > 0 {
			b.WriteByte(';')
		}
		b.WriteString(id.Scheme)
		b.WriteByte(':')
		b.WriteString(auditIDEscaper.Replace(id.ID))
		if mark != "" {
			b.WriteString("(" + mark + ")")
		}
	}
	return b.String()
}

// auditIDEscaper percent-encodes what would end an identity or forge a mark.
var auditIDEscaper = strings.NewReplacer("%", "%25", ";", "%3B", "(", "%28", ")", "%29")

// auditACL renders an ACL as ZKUtil.aclToString does (scheme:id:perms), entries
// separated by commas where ZooKeeper runs them together, and a digest id's hash
// replaced by "x": it is a password's equivalent.
func auditACL(acl []wire.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		id := a.ID
		if a.Scheme == datatree.SchemeDigest {
			user, _, _ := strings.Cut(id, ":")
			id = user + ":x"
		}
		parts[i] = a.Scheme + ":" + id + ":" + permString(a.Perms)
	}
	return strings.Join(parts, ",")
}

// permString is ZKUtil.getPermString: the letters of cdrwa that perms hold.
func permString(p wire.Perm) string {
	var b strings.Builder
	for _, x := range []struct {
		perm wire.Perm
		c    byte
	}{{wire.PermCreate, 'c'}, {wire.PermDelete, 'd'}, {wire.PermRead, 'r'}, {wire.PermWrite, 'w'}, {wire.PermAdmin, 'a'}} {
		if p&x.perm != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// createMode is CreateMode.toString().toLowerCase() for create flags, as ZooKeeper's
// znode_type shows them.
func createMode(op wire.Op, flags int32) string {
	if op == wire.OpCreateContainer {
		return "container"
	}
	switch flags {
	case wire.FlagPersistent:
		return "persistent"
	case wire.FlagEphemeral:
		return "ephemeral"
	case wire.FlagPersistentSequential:
		return "persistent_sequential"
	case wire.FlagEphemeralSequential:
		return "ephemeral_sequential"
	case wire.FlagContainer:
		return "container"
	case wire.FlagPersistentWithTTL:
		return "persistent_with_ttl"
	case wire.FlagPersistentSequentialWithTTL:
		return "persistent_sequential_with_ttl"
	}
	return "flags_" + strconv.Itoa(int(flags))
}

func auditResult(err error) string {
	if err != nil {
		return auditFailure
	}
	return auditSuccess
}

// auditApplied logs an applied txn that this server proposed: a client's write, as
// AuditHelper.addAuditLog does, and the ephemerals a session's close deleted.
// Called by apply, under the tree lock.
func (s *Server) auditApplied(p *proposal, res *txn.Result) {
	a := s.audit
	if a == nil || p.remote {
		return
	}
	if p.txn.Op == wire.OpCloseSession {
		s.auditEphemerals(p, res)
	}
	if p.conn == nil || p.req == nil {
		return
	}
	ev := auditEvent{session: "0x" + strconv.FormatInt(p.txn.Session, 16), user: auditUsers(p.req.ids),
		identities: s.auditIdentities(p.req.ids), ip: p.conn.ip}
	if p.req.op == wire.OpMulti && p.txn.Op == wire.OpMulti {
		s.auditMulti(&ev, p, res)
		return
	}
	ev.result = auditResult(res.Err)
	switch r := p.req.rec.(type) {
	case *wire.CreateRequest:
		ev.op, ev.znode, ev.znodeType = auditCreate, r.Path, createMode(p.req.op, r.Flags)
		if res.Err == nil {
			ev.znode = res.Path
		}
	case *wire.CreateTTLRequest:
		ev.op, ev.znode, ev.znodeType = auditCreate, r.Path, createMode(p.req.op, r.Flags)
		if res.Err == nil {
			ev.znode = res.Path
		}
	case *wire.PathVersionRequest:
		if p.req.op != wire.OpDelete {
			return // check is not audited
		}
		ev.op, ev.znode = auditDelete, r.Path
	case *wire.PathRecord:
		if p.req.op != wire.OpDeleteContainer {
			return
		}
		ev.op, ev.znode = auditDelete, r.Path
	case *wire.SetDataRequest:
		ev.op, ev.znode = auditSetData, r.Path // never the data
	case *wire.SetACLRequest:
		ev.op, ev.znode, ev.acl = auditSetACL, r.Path, auditACL(r.ACL)
	default:
		if p.req.op != wire.OpMulti { // a multi refused at decoding has no record
			return
		}
		ev.op = auditMulti
	}
	a.log(&ev)
}

// auditMulti logs a multi as ZooKeeper does: one line per create, delete and setData
// when it succeeded, one multiOperation failure line when it did not.
func (s *Server) auditMulti(base *auditEvent, p *proposal, res *txn.Result) {
	if res.Failed || res.Err != nil {
		ev := *base
		ev.op, ev.result = auditMulti, auditFailure
		s.audit.log(&ev)
		return
	}
	m := p.req.rec.(*wire.MultiRequest)
	for i, op := range m.Ops {
		if i >= len(res.Multi) {
			break
		}
		ev := *base
		ev.result = auditSuccess
		switch r := op.Req.(type) {
		case *wire.CreateRequest:
			ev.op, ev.znode, ev.znodeType = auditCreate, res.Multi[i].Path, createMode(op.Op, r.Flags)
		case *wire.CreateTTLRequest:
			ev.op, ev.znode, ev.znodeType = auditCreate, res.Multi[i].Path, createMode(op.Op, r.Flags)
		case *wire.PathVersionRequest:
			if op.Op != wire.OpDelete {
				continue
			}
			ev.op, ev.znode = auditDelete, r.Path
		case *wire.SetDataRequest:
			ev.op, ev.znode = auditSetData, r.Path
		default:
			continue
		}
		s.audit.log(&ev)
	}
}

// auditEphemerals logs each ephemeral a session's close deleted, as the server's own
// act (DataTree.killSession's ephemeralZNodeDeletionOnSessionCloseOrExpire lines).
func (s *Server) auditEphemerals(p *proposal, res *txn.Result) {
	for _, ev := range res.Events {
		if ev.Type != wire.EventNodeDeleted {
			continue
		}
		s.audit.log(&auditEvent{session: "0x" + strconv.FormatInt(p.txn.Session, 16), user: s.audit.user,
			op: auditEphemeralDelete, znode: ev.Path, result: auditSuccess})
	}
}

// auditReconfig logs a reconfig request's outcome.
func (s *Server) auditReconfig(c *conn, r *request, code wire.Code) {
	if s.audit == nil {
		return
	}
	result := auditSuccess
	if code != wire.OK {
		result = auditFailure
	}
	s.audit.log(&auditEvent{session: "0x" + strconv.FormatInt(c.sessionID.Load(), 16), user: auditUsers(r.ids),
		identities: s.auditIdentities(r.ids), ip: c.ip, op: auditReconfig, znode: datatree.ConfigPath, result: result})
}

// auditPath is where the audit log goes: audit_log_file, or audit.log in the data directory.
func (c *Config) auditPath() string {
	if c.AuditLogFile != "" {
		return c.AuditLogFile
	}
	return filepath.Join(c.DataDir, "audit.log")
}

// startAudit opens the audit log if it is enabled.
func (s *Server) startAudit() error {
	if !s.cfg.AuditEnable {
		return nil
	}
	a, err := openAudit(s.cfg.auditPath(), s.cfg.AuditQueue, s.logger)
	if err != nil {
		return err
	}
	s.audit = a
	s.logger.Info("audit log enabled", "path", a.path)
	return nil
}
