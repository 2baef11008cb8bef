package conformance

import (
	"fmt"
	"strings"

	"github.com/paddock/paddock/server/wire"
)

// DescribeRequest renders a request record as transcript text.
func DescribeRequest(op wire.Op, rec wire.Record) string {
	if rec == nil {
		return op.String()
	}
	return op.String() + " " + describeRecord(rec)
}

// DescribeFrame renders a reply or notification, decoding its body by the request's opcode.
// Trailing bytes after the record and undecodable bodies are part of the text, so that a
// server sending a body where ZooKeeper sends none shows up in a diff.
func DescribeFrame(f *Frame) string {
	var b strings.Builder
	switch {
	case f.Header.Xid == wire.XidNotification:
		fmt.Fprintf(&b, "event zxid=%s", Z(f.Header.Zxid))
	default:
		fmt.Fprintf(&b, "#%d %v zxid=%s", f.Header.Xid, f.Op, Z(f.Header.Zxid))
	}
	if f.Header.Err != wire.OK || f.Op != wire.OpNotification {
		fmt.Fprintf(&b, " err=%d", f.Header.Err)
		if f.Header.Err != wire.OK {
			fmt.Fprintf(&b, "(%s)", f.Header.Err.String())
		}
	}
	rec, extra, err := f.Decode()
	switch {
	case err != nil:
		fmt.Fprintf(&b, " UNDECODABLE(%v) body=%x", err, f.Body)
		return b.String()
	case rec != nil:
		b.WriteString(" " + describeRecord(rec))
	}
	if extra > 0 {
		fmt.Fprintf(&b, " +%d trailing bytes %x", extra, f.Body[len(f.Body)-extra:])
	}
	return b.String()
}

// DescribeConnectResponse renders a ConnectResponse with its frame length.
func (t *Transcript) DescribeConnectResponse(r *wire.ConnectResponse, n int) string {
	ro := "absent"
	if r.HasReadOnly {
		ro = fmt.Sprint(r.ReadOnly)
	}
	return fmt.Sprintf("connected len=%d protocol=%d timeout=%d session=%s passwd=%s readOnly=%s",
		n, r.ProtocolVersion, r.Timeout, SID(r.SessionID), t.Password(r.Password), ro)
}

// DescribeConnectRequest renders a ConnectRequest.
func (t *Transcript) DescribeConnectRequest(r *wire.ConnectRequest) string {
	ro := "absent"
	if r.HasReadOnly {
		ro = fmt.Sprint(r.ReadOnly)
	}
	return fmt.Sprintf("connect protocol=%d lastZxidSeen=%s timeout=%d session=%s passwd=%s readOnly=%s",
		r.ProtocolVersion, Z(r.LastZxidSeen), r.Timeout, SID(r.SessionID), t.Password(r.Password), ro)
}

func describeData(b []byte) string {
	switch {
	case b == nil:
		return "null"
	case len(b) > 64:
		return fmt.Sprintf("<%d bytes>", len(b))
	}
	return fmt.Sprintf("%q", b)
}

func describeACL(acl []wire.ACL) string {
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%d:%s:%s", a.Perms, a.Scheme, a.ID)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func describeChildren(c []string) string {
	return "[" + strings.Join(c, " ") + "]"
}

func describeRecord(rec wire.Record) string {
	switch r := rec.(type) {
	case *wire.CreateRequest:
		return fmt.Sprintf("path=%q data=%s acl=%s flags=%d", r.Path, describeData(r.Data), describeACL(r.ACL), r.Flags)
	case *wire.CreateTTLRequest:
		return describeRecord(&r.CreateRequest) + fmt.Sprintf(" ttl=%d", r.TTL)
	case *wire.PathVersionRequest:
		return fmt.Sprintf("path=%q version=%d", r.Path, r.Version)
	case *wire.PathWatchRequest:
		return fmt.Sprintf("path=%q watch=%v", r.Path, r.Watch)
	case *wire.PathRecord:
		return fmt.Sprintf("path=%q", r.Path)
	case *wire.SetDataRequest:
		return fmt.Sprintf("path=%q data=%s version=%d", r.Path, describeData(r.Data), r.Version)
	case *wire.SetACLRequest:
		return fmt.Sprintf("path=%q acl=%s version=%d", r.Path, describeACL(r.ACL), r.Version)
	case *wire.PathTypeRequest:
		return fmt.Sprintf("path=%q type=%d", r.Path, r.Type)
	case *wire.AuthPacket:
		return fmt.Sprintf("type=%d scheme=%q auth=%s", r.Type, r.Scheme, describeData(r.Auth))
	case *wire.SetWatches:
		s := fmt.Sprintf("relativeZxid=%s data=%s exist=%s child=%s", Z(r.RelativeZxid),
			describeChildren(r.Data), describeChildren(r.Exist), describeChildren(r.Child))
		if r.V2 {
			s += fmt.Sprintf(" persistent=%s recursive=%s", describeChildren(r.Persistent), describeChildren(r.PersistentRecursive))
		}
		return s
	case *wire.MultiRequest:
		parts := make([]string, len(r.Ops))
		for i, op := range r.Ops {
			parts[i] = "\n      " + DescribeRequest(op.Op, op.Req)
		}
		return "[" + strings.Join(parts, "") + "]"
	case *wire.StatResponse:
		return "stat=" + FormatStat(&r.Stat)
	case *wire.Create2Response:
		return fmt.Sprintf("path=%q stat=%s", r.Path, FormatStat(&r.Stat))
	case *wire.GetDataResponse:
		return fmt.Sprintf("data=%s stat=%s", describeData(r.Data), FormatStat(&r.Stat))
	case *wire.GetACLResponse:
		return fmt.Sprintf("acl=%s stat=%s", describeACL(r.ACL), FormatStat(&r.Stat))
	case *wire.ChildrenResponse:
		s := "children=" + describeChildren(sortedCopy(r.Children))
		if r.WithStat {
			s += " stat=" + FormatStat(&r.Stat)
		}
		return s
	case *wire.IntResponse:
		return fmt.Sprintf("value=%d", r.Value)
	case *wire.WhoAmIResponse:
		parts := make([]string, len(r.Clients))
		for i, c := range r.Clients {
			parts[i] = c.Scheme + ":" + c.ID
		}
		// In the order received: ZooKeeper's is its identity set's iteration order, which
		// paddock gives too.
		return "identities=[" + strings.Join(parts, " ") + "]"
	case *wire.WatcherEvent:
		return fmt.Sprintf("%v state=%d path=%q", r.Type, r.State, r.Path)
	case *wire.MultiResponse:
		parts := make([]string, len(r.Results))
		for i := range r.Results {
			parts[i] = "\n      " + describeMultiResult(&r.Results[i])
		}
		return "results=[" + strings.Join(parts, "") + "]"
	case wire.Empty:
		return ""
	}
	return fmt.Sprintf("%+v", rec)
}

func describeMultiResult(r *wire.MultiResult) string {
	switch r.Op {
	case wire.OpCreate:
		return fmt.Sprintf("create path=%q", r.Path)
	case wire.OpCreate2:
		return fmt.Sprintf("create2 path=%q stat=%s", r.Path, FormatStat(&r.Stat))
	case wire.OpSetData:
		return "setData stat=" + FormatStat(&r.Stat)
	case wire.OpGetData:
		return fmt.Sprintf("getData data=%s stat=%s", describeData(r.Data), FormatStat(&r.Stat))
	case wire.OpGetChildren:
		return "getChildren children=" + describeChildren(sortedCopy(r.Children))
	case wire.OpError:
		return fmt.Sprintf("error err=%d(%s)", r.Err, r.Err.String())
	}
	return r.Op.String()
}

// sortedCopy sorts children: ZooKeeper returns them in HashSet order, which means nothing.
func sortedCopy(c []string) []string {
	return SortedLines(append([]string(nil), c...))
}
