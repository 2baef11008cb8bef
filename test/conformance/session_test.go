package conformance

import (
	"slices"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// scenarioInitialTree reads the nodes every server starts with and tries to break them.
// The stats of / and /zookeeper are recorded only in part: on a long-running server their
// cversion, numChildren and pzxid count other scenarios' (and earlier runs') nodes. Their
// whole stats on a fresh server are compared by TestDefaults, which starts fresh servers.
func scenarioInitialTree(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	for _, p := range []string{"/zookeeper/quota", "/zookeeper/config"} {
		s1.exists(p, false)
		s1.getData(p, false)
		s1.getACL(p)
		s1.getChildren2(p, false)
		s1.Call(wire.OpGetAllChildrenNumber, &wire.PathRecord{Path: p})
	}
	for _, p := range []string{"/", "/zookeeper"} {
		notePartialStat(sc, s1, p)
	}
	if f := s1.CallQuiet(wire.OpGetChildren, &wire.PathWatchRequest{Path: "/zookeeper"}); f != nil {
		rec, _, _ := f.Decode()
		if r, ok := rec.(*wire.ChildrenResponse); ok {
			sc.Note("/zookeeper children include config, quota: %v", slices.Contains(r.Children, "config") && slices.Contains(r.Children, "quota"))
		}
	}
	if f := s1.CallQuiet(wire.OpGetChildren, &wire.PathWatchRequest{Path: "/"}); f != nil {
		rec, _, _ := f.Decode()
		r, _ := rec.(*wire.ChildrenResponse)
		sc.Note("/ has child zookeeper: %v", r != nil && slices.Contains(r.Children, "zookeeper"))
	}
	if f := s1.CallQuiet(wire.OpGetData, &wire.PathWatchRequest{Path: "/"}); f != nil {
		rec, _, _ := f.Decode()
		if r, ok := rec.(*wire.GetDataResponse); ok {
			sc.Note("/ data=%s", describeData(r.Data))
		}
	}
	sc.Note("system nodes cannot be deleted")
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		s1.delete(p, -1)
	}
	sc.Note("/zookeeper/config is read-only for world")
	s1.setData("/zookeeper/config", []byte("x"), -1)
	s1.create("/zookeeper/config/x", nil, 0)
	sc.Note("clients may create and delete their own nodes under /zookeeper")
	s1.create("/zookeeper"+sc.Root, nil, 0)
	s1.delete("/zookeeper"+sc.Root, -1)
	s1.Close()
}

// notePartialStat records a node's ACL and the stat fields that other scenarios cannot change.
func notePartialStat(sc *Scenario, s *Session, path string) {
	f := s.CallQuiet(wire.OpGetACL, &wire.PathRecord{Path: path})
	if f == nil {
		return
	}
	rec, _, err := f.Decode()
	r, ok := rec.(*wire.GetACLResponse)
	if !ok || err != nil {
		sc.Note("%s getACL err=%d %v", path, f.Header.Err, err)
		return
	}
	st := r.Stat
	sc.Note("%s err=%d acl=%s czxid=%d ctime=%d mzxid=%d version=%d aversion=%d owner=%d dataLength=%d",
		path, f.Header.Err, describeACL(r.ACL), st.Czxid, st.Ctime, st.Mzxid, st.Version, st.Aversion, st.EphemeralOwner, st.DataLength)
}

// scenarioConnect covers the handshake: the optional readOnly byte, timeout negotiation,
// resuming a session, moving it to a new connection, and the "expired" answer for wrong
// passwords, unknown, closed and expired sessions.
func scenarioConnect(sc *Scenario) {
	sc.Note("without the readOnly byte (go-zk): 36-byte response; with it (Java, kazoo): 37")
	s1 := sc.Connect("s1", ConnectOptions{})
	s2 := sc.Connect("s2", ConnectOptions{ReadOnlyByte: true})
	s3 := sc.Connect("s3", ConnectOptions{ReadOnlyByte: true, ReadOnly: true})
	sc.Note("timeouts are clamped into [2, 20] ticks")
	s4 := sc.Connect("s4", ConnectOptions{Timeout: 1})
	s5 := sc.Connect("s5", ConnectOptions{Timeout: 1 << 30})
	s1.create(sc.Root, nil, 0)
	for _, s := range []*Session{s2, s3, s4, s5} {
		s.Close()
	}

	sc.Note("resume on a new connection: same id and password; the old connection is closed")
	old := s1.Conn()
	s1b := sc.Connect("s1b", ConnectOptions{SessionID: s1.ID, Password: s1.Password, LastZxidSeen: old.LastZxid})
	if _, err := old.ReadFrame(DefaultReadTimeout); IsClosed(err) {
		sc.Note("s1: old connection closed by server")
	} else {
		sc.Note("s1: old connection: %v", err)
	}
	s1b.exists(sc.Root, false)

	sc.Note("a wrong password: timeout 0, session 0, zero password, then close; ZooKeeper closes")
	sc.Note("the session's current connection before it checks the password, the session lives on")
	s8 := sc.Connect("s8", ConnectOptions{})
	bad := slices.Clone(s8.Password)
	bad[0] ^= 0xff
	w := sc.Connect("wrongpw", ConnectOptions{SessionID: s8.ID, Password: bad, ReadOnlyByte: true})
	w.ExpectClosed()
	s8.Barrier()
	s8.Reconnect(ConnectOptions{})
	s8.Close()
	sc.Note("an unknown session: the same answer")
	u := sc.Connect("unknown", ConnectOptions{SessionID: s1.ID ^ 0x5a5a5a, Password: s1.Password})
	u.ExpectClosed()
	sc.Note("a client that has seen a later zxid than the server's is refused without a reply")
	sc.Connect("future", ConnectOptions{LastZxidSeen: 1 << 60})

	sc.Note("a closed session cannot be resumed")
	s6 := sc.Connect("s6", ConnectOptions{})
	s6.Close()
	s6.Reconnect(ConnectOptions{})
	s6.ExpectClosed()

	sc.Note("an expired session's ephemerals go (watchers see it) and it cannot be resumed")
	s7 := sc.Connect("s7", ConnectOptions{Timeout: 1000})
	s7.create(sc.Path("e"), []byte("eph"), wire.FlagEphemeral)
	s1b.exists(sc.Path("e"), true)
	s7.Drop()
	s1b.ReadWithin(10 * time.Second) // NodeDeleted when the session expires
	s1b.exists(sc.Path("e"), false)
	s7.Reconnect(ConnectOptions{})
	s7.ExpectClosed()
	s1b.delete(sc.Root, -1)
	s1b.Close()
}
