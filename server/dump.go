package server

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/store"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// DumpStore prints, for operators, every snapshot in dataDir and every record of the log
// in logDir (dataDir when empty) in readable form, and, for an ensemble member, its
// Raft directory (logDir/raft: dumpMember). It only reads: it may run beside a
// live server. Damage is printed where it is met, and returned after the whole dump.
func DumpStore(w io.Writer, dataDir, logDir string) error {
	var errs []error
	snaps, err := store.ListSnapshots(snapDirOf(dataDir), nil)
	if err != nil {
		return err
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		if err := dumpSnapshot(w, snaps[i]); err != nil {
			fmt.Fprintf(w, "  ! %v\n", err)
			errs = append(errs, err)
		}
	}
	dir := logDirOf(dataDir, logDir)
	if isMember(dataDir, logDir) && !exists(dir) {
		// An ensemble member keeps its log in its Raft directory only.
		return errors.Join(append(errs, dumpMember(w, raftDirOf(dataDir, logDir)))...)
	}
	fmt.Fprintf(w, "log %s\n", dir)
	records := 0
	err = store.ReadLog(dir, nil, func(zxid int64, payload []byte) error {
		records++
		x, err := txn.Decode(payload)
		if err != nil {
			fmt.Fprintf(w, "  0x%x ! undecodable txn: %v\n", zxid, err)
			return nil
		}
		x.Zxid = zxid
		fmt.Fprintf(w, "  %s\n", describeTxn(x))
		return nil
	})
	if err != nil {
		fmt.Fprintf(w, "  ! log ends: %v\n", err)
		errs = append(errs, err)
	}
	fmt.Fprintf(w, "  (%d records)\n", records)
	if err := dumpMember(w, raftDirOf(dataDir, logDir)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func dumpSnapshot(w io.Writer, info store.SnapshotInfo) error {
	fmt.Fprintf(w, "snapshot %s (zxid 0x%x, %d bytes)\n", info.Path, info.Zxid, info.Size)
	t, err := readTree(info.Path, nil)
	if err != nil {
		return err
	}
	dumpTree(w, t)
	return nil
}

// dumpTree prints every node of t with its stat, ACL and data, then the sessions.
func dumpTree(w io.Writer, t *datatree.Tree) {
	t.Walk(func(n datatree.Node) {
		s := n.Stat()
		fmt.Fprintf(w, "  %s czxid=0x%x mzxid=0x%x pzxid=0x%x ctime=%s mtime=%s version=%d cversion=%d aversion=%d owner=%s children=%d acl=%s data=%s\n",
			n.Path(), s.Czxid, s.Mzxid, s.Pzxid, stamp(s.Ctime), stamp(s.Mtime), s.Version, s.Cversion, s.Aversion,
			owner(n), s.NumChildren, describeACLs(n.ACL()), describeBytes(n.Data()))
	})
	for _, s := range t.Sessions() {
		fmt.Fprintf(w, "  session 0x%x timeout=%dms\n", s.ID, s.Timeout)
	}
}

func owner(n datatree.Node) string {
	switch n.Kind() {
	case datatree.Ephemeral:
		return fmt.Sprintf("0x%x", n.Owner())
	case datatree.Container:
		return "container"
	case datatree.TTL:
		return "ttl:" + strconv.FormatInt(n.TTL(), 10) + "ms"
	}
	return "0"
}

// stamp prints a ms time as UTC; 0 (the system nodes) stays 0.
func stamp(ms int64) string {
	if ms == 0 {
		return "0"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// describeTxn prints one logged txn on a line: zxid, time, session, cxid, op and the
// request's fields.
func describeTxn(x *txn.Txn) string {
	return fmt.Sprintf("0x%x %s session=0x%x cxid=%d %s %s", x.Zxid, stamp(x.Time), x.Session, x.Cxid, x.Op, describeRequest(x.Req))
}

func describeRequest(r wire.Record) string {
	switch r := r.(type) {
	case *wire.CreateRequest:
		return fmt.Sprintf("path=%q flags=%d acl=%s data=%s", r.Path, r.Flags, describeACLs(r.ACL), describeBytes(r.Data))
	case *wire.CreateTTLRequest:
		return fmt.Sprintf("path=%q flags=%d ttl=%dms acl=%s data=%s", r.Path, r.Flags, r.TTL, describeACLs(r.ACL), describeBytes(r.Data))
	case *wire.PathVersionRequest:
		return fmt.Sprintf("path=%q version=%d", r.Path, r.Version)
	case *wire.SetDataRequest:
		return fmt.Sprintf("path=%q version=%d data=%s", r.Path, r.Version, describeBytes(r.Data))
	case *wire.SetACLRequest:
		return fmt.Sprintf("path=%q version=%d acl=%s", r.Path, r.Version, describeACLs(r.ACL))
	case *wire.PathRecord:
		return fmt.Sprintf("path=%q", r.Path)
	case *wire.MultiRequest:
		ops := make([]string, len(r.Ops))
		for i, op := range r.Ops {
			ops[i] = op.Op.String() + " " + describeRequest(op.Req)
		}
		return "[" + strings.Join(ops, "; ") + "]"
	case *txn.CreateSession:
		return fmt.Sprintf("timeout=%dms", r.Timeout)
	case *txn.ErrorTxn:
		return "refused: " + wire.Code(r.Code).String()
	}
	return ""
}

func describeACLs(acl []wire.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%d", a.Scheme, a.ID, a.Perms)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// describeBytes prints data as a quoted string if it is printable text, else as hex;
// long data is cut at 64 bytes. Null data prints as null.
func describeBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	const max = 64
	cut := ""
	if len(b) > max {
		b, cut = b[:max], fmt.Sprintf("…(%d bytes)", len(b))
	}
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' }) {
		return strconv.Quote(string(b)) + cut
	}
	return fmt.Sprintf("0x%x%s", b, cut)
}
