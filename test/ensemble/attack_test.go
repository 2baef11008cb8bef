package ensemble

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// The attacks of issue 16, replayed on the member (peer) port of an ensemble of
// processes by an intruder that speaks the member protocol by hand. The frames are
// written here from the protocol's description (server/quorum/frame.go), not with the
// server's own encoder: a frame is a uint32 big-endian length, a kind byte and a body.
const (
	frameRaft  byte = 0
	frameNote  byte = 1
	frameHello byte = 2
)

// intruder is a connection to a member's peer port.
type intruder struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialIntruder connects to a member's peer address, over TLS when cfg is set, and says
// hello as member from to member to. The error says where the member refused it.
func dialIntruder(t *testing.T, addr string, cfg *tls.Config, from, to int) (*intruder, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if cfg != nil {
		tc := tls.Client(conn, cfg)
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("tls handshake: %w", err)
		}
		conn = tc
	}
	in := &intruder{conn: conn, r: bufio.NewReader(conn)}
	body := []byte{2} // the protocol's version (2: snapshots streamed in chunks)
	body = binary.BigEndian.AppendUint64(body, uint64(from))
	body = binary.BigEndian.AppendUint64(body, uint64(to))
	if err := in.frame(frameHello, body); err != nil {
		return nil, fmt.Errorf("hello: %w", err)
	}
	// The member answers a hello it accepts with its own; it closes the connection on
	// one it refuses.
	var hdr [5]byte
	if _, err := io.ReadFull(in.r, hdr[:]); err != nil {
		return nil, fmt.Errorf("hello refused: %w", err)
	}
	if hdr[4] != frameHello {
		return nil, fmt.Errorf("hello answered with a frame of kind %d", hdr[4])
	}
	if _, err := io.CopyN(io.Discard, in.r, int64(binary.BigEndian.Uint32(hdr[:4])-1)); err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return in, nil
}

func (in *intruder) frame(kind byte, body []byte) error {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)+1))
	b = append(b, kind)
	in.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := in.conn.Write(append(b, body...))
	return err
}

func (in *intruder) raft(m *raftpb.Message) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	return in.frame(frameRaft, b)
}

// note sends a report of sessions' traffic, as a follower sends its leader.
func (in *intruder) note(ids ...int64) error {
	var b []byte
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return in.frame(frameNote, b)
}

// message is a Raft message from member from to member to.
func message(typ raftpb.MessageType, from, to int, term uint64) *raftpb.Message {
	return &raftpb.Message{Type: typ.Enum(), From: new(uint64(from)), To: new(uint64(to)), Term: new(term)}
}

// proposal is a MsgProp carrying one entry with data behind the header a member puts
// on its proposals (its id and a sequence number).
func proposal(from, to int, data []byte) *raftpb.Message {
	m := message(raftpb.MsgProp, from, to, 0)
	d := binary.BigEndian.AppendUint64(nil, uint64(from))
	d = binary.BigEndian.AppendUint64(d, uint64(time.Now().UnixNano()))
	m.Entries = []*raftpb.Entry{{Type: raftpb.EntryNormal.Enum(), Data: append(d, data...)}}
	return m
}

// txnBatch is the data of a member's proposal: a count, then each txn behind its
// length, uvarints (server/replica.go).
func txnBatch(txns ...*txn.Txn) []byte {
	b := binary.AppendUvarint(nil, uint64(len(txns)))
	for _, x := range txns {
		var e wire.Encoder
		x.Encode(&e)
		b = binary.AppendUvarint(b, uint64(e.Len()))
		b = append(b, e.Bytes()...)
	}
	return b
}

// attack is one of issue 16's: what an intruder connected to member to, as member from,
// sends.
type attack struct {
	name string
	// to picks the member attacked and from whom the intruder claims to be, given the
	// leader's index.
	to, from func(lead int) int
	send     func(in *intruder, from, to int, term uint64) error
	// counted is the mntr counter of the member attacked that must count the attack
	// when it gets through the peer port's door (without TLS).
	counted string
}

func leader(lead int) int   { return lead }
func follower(lead int) int { return (lead + 1) % 3 }
func other(lead int) int    { return (lead + 2) % 3 }

var attacks = []attack{
	{"term overflow", follower, other, func(in *intruder, from, to int, _ uint64) error {
		// In the issue, one of these to each member bricked the ensemble for good.
		return in.raft(message(raftpb.MsgHeartbeat, from, to, math.MaxUint64))
	}, "zk_peer_messages_dropped"},
	{"malformed proposal", leader, follower, func(in *intruder, from, to int, _ uint64) error {
		// In the issue, this entry was committed and stopped every member at every restart.
		return in.raft(proposal(from, to, []byte{1, 200, 1, 0xde, 0xad}))
	}, "zk_peer_proposals_refused"},
	{"forged proposal", leader, follower, func(in *intruder, from, to int, _ uint64) error {
		// A write as the super user, with no session, to a node only its digest may write.
		x := &txn.Txn{Op: wire.OpSetData, Ids: []wire.Identity{{Scheme: "super"}},
			Req: &wire.SetDataRequest{Path: "/protected", Data: []byte("forged"), Version: -1}}
		return in.raft(proposal(from, to, txnBatch(x)))
	}, "zk_peer_proposals_refused"},
	{"commit past the log", follower, leader, func(in *intruder, from, to int, term uint64) error {
		m := message(raftpb.MsgHeartbeat, from, to, term)
		m.Commit = new(uint64(1 << 40))
		return in.raft(m)
	}, "zk_peer_messages_dropped"},
	{"garbage note", leader, follower, func(in *intruder, _, _ int, _ uint64) error {
		return in.frame(frameNote, []byte{1, 2, 3})
	}, "zk_peer_notes_dropped"},
}

// attackTarget is what the attacks need of an ensemble: its leader, its term, and a
// node only a digest identity may write (anyone may read it).
type attackTarget struct {
	c     *cluster
	lead  int
	term  uint64 // the leader's Raft term (mntr's zk_raft_term)
	epoch int64  // the leader's zxid epoch: the high 32 bits of a zxid
	conn  *zk.Conn
}

func newAttackTarget(t *testing.T, c *cluster) *attackTarget {
	t.Helper()
	lead := c.waitLeader(recoverBound)
	conn := c.memberConn(lead)
	if err := conn.AddAuth("digest", []byte("owner:secret")); err != nil {
		t.Fatal(err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "owner", "secret"), zk.WorldACL(zk.PermRead)...)
	if _, err := conn.Create("/protected", []byte("owner's"), 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	stat, err := conn.Set("/protected", []byte("owner's"), -1)
	if err != nil {
		t.Fatal(err)
	}
	term := uint64(c.members[lead].counter(t, "zk_raft_term"))
	return &attackTarget{c: c, lead: lead, term: term, epoch: stat.Mzxid >> 32, conn: conn}
}

// unaffected checks that the attacks left the ensemble as it was: every member up and
// serving, the same leader in the same term (a write now gets a zxid of its epoch),
// the protected node untouched.
func (a *attackTarget) unaffected(t *testing.T, note string) {
	t.Helper()
	a.c.waitServing(recoverBound)
	for i, m := range a.c.members {
		if !m.running() {
			t.Fatalf("member %d is down", i+1)
		}
	}
	for i := range a.c.members {
		conn := a.c.memberConn(i)
		if _, err := conn.Sync("/protected"); err != nil {
			t.Fatalf("%s: sync on member %d: %v", note, i+1, err)
		}
		data, _, err := conn.Get("/protected")
		if err != nil || string(data) != "owner's" {
			t.Errorf("%s: member %d reads /protected as %q, %v", note, i+1, data, err)
		}
	}
	stat, err := a.conn.Set("/protected", []byte("owner's"), -1)
	if err != nil {
		t.Fatalf("%s: write after the attacks: %v", note, err)
	}
	if stat.Mzxid>>32 != a.epoch {
		t.Errorf("%s: a write after the attacks got epoch %d, before %d: the attacks forced an election", note, stat.Mzxid>>32, a.epoch)
	}
	if got := a.c.leaderAmong(a.c.others(-1)); got != a.lead {
		t.Errorf("%s: member %d leads, before member %d", note, got+1, a.lead+1)
	}
	if term := uint64(a.c.members[a.lead].counter(t, "zk_raft_term")); term != a.term {
		t.Errorf("%s: the leader's term is %d, before %d", note, term, a.term)
	}
}

// TestAttacksOnThePeerPortWithoutTLS replays each attack on an ensemble whose member
// link is plain TCP, which the README says not to run on an untrusted network: the
// intruder gets in (it only has to name a member), but nothing it sends stops a member,
// moves the term or enters the log, and a member restarted on a log holding an entry
// that does not decode comes back and serves.
func TestAttacksOnThePeerPortWithoutTLS(t *testing.T) {
	c := newCluster(t, 3, clusterOptions{})
	a := newAttackTarget(t, c)
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			to, from := at.to(a.lead), at.from(a.lead)
			before := c.members[to].counter(t, at.counted)
			in, err := dialIntruder(t, c.members[to].peerAddr(), nil, from+1, to+1)
			if err != nil {
				t.Fatalf("without TLS a hello naming member %d is accepted; got %v", from+1, err)
			}
			if err := at.send(in, from+1, to+1, a.term); err != nil {
				t.Fatal(err)
			}
			c.members[to].waitCounter(t, at.counted, before+1)
			a.unaffected(t, at.name)
		})
	}
	t.Run("term bumps", func(t *testing.T) {
		// Heartbeats of ever higher terms, as if from another member: without
		// authentication each one moves the ensemble to a new term and an election (in
		// the issue, 14 elections in 15 s). What must hold: nobody stops, and writes go
		// through again once the intruder stops.
		for k := range 5 {
			for to := range c.members {
				from := (to + 1) % 3
				in, err := dialIntruder(t, c.members[to].peerAddr(), nil, from+1, to+1)
				if err != nil {
					continue // the member is in the middle of something: next round
				}
				in.raft(message(raftpb.MsgHeartbeat, from+1, to+1, a.term+uint64(10*(k+1))))
			}
			time.Sleep(300 * time.Millisecond)
		}
		c.waitServing(recoverBound)
		conn, _ := connect(t, c.addrs())
		if err := createRetry(conn, "/after-term-bumps", nil, recoverBound); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("restart on an undecodable committed entry", func(t *testing.T) {
		c.restartOnUndecodableEntry(t)
	})
}

// TestAttacksOnThePeerPortWithTLS replays each attack on an ensemble whose members
// authenticate each other with TLS certificates: plain TCP, TLS without a certificate,
// a certificate of another CA, and a certificate of the ensemble's own CA that names
// another member are all refused before a message gets through, and the ensemble is
// untouched.
func TestAttacksOnThePeerPortWithTLS(t *testing.T) {
	c := newCluster(t, 3, clusterOptions{tls: true})
	a := newAttackTarget(t, c)
	roots := x509.NewCertPool()
	roots.AddCert(c.ca.Certificate())
	stranger, err := certs.NewCA("stranger", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	strangerPEM, strangerKey, err := stranger.Issue(certs.IssueOptions{CommonName: "x", Hosts: []string{"127.0.0.1"}, MemberID: 2, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := tls.X509KeyPair(strangerPEM, strangerKey)
	if err != nil {
		t.Fatal(err)
	}
	ninePEM, nineKey := c.issue(9)
	nine, err := tls.X509KeyPair(ninePEM, nineKey)
	if err != nil {
		t.Fatal(err)
	}
	credentials := []struct {
		name string
		cfg  *tls.Config
	}{
		{"plain TCP", nil},
		{"TLS without a certificate", &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}},
		{"a certificate of another CA", &tls.Config{RootCAs: roots, ServerName: "127.0.0.1",
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &foreign, nil }}},
		{"the ensemble CA's certificate for member 9", &tls.Config{RootCAs: roots, ServerName: "127.0.0.1",
			Certificates: []tls.Certificate{nine}}},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			to, from := at.to(a.lead), at.from(a.lead)
			before := c.members[to].counter(t, "zk_peer_connections_refused")
			for _, cred := range credentials {
				in, err := dialIntruder(t, c.members[to].peerAddr(), cred.cfg, from+1, to+1)
				if err == nil {
					at.send(in, from+1, to+1, a.term)
					t.Errorf("%s got in as member %d", cred.name, from+1)
				}
			}
			c.members[to].waitCounter(t, "zk_peer_connections_refused", before+int64(len(credentials)))
			a.unaffected(t, at.name)
		})
	}
	t.Run("spoofed notes", func(t *testing.T) {
		c.spoofedNotesCannotKeepASessionAlive(t, a.lead, credentials[3].cfg)
	})
}

// spoofedNotesCannotKeepASessionAlive: a client of a follower dies holding an
// ephemeral node (a lock); an intruder that reports the session's traffic to the
// leader as that follower every half second is refused, and the session expires on time.
func (c *cluster) spoofedNotesCannotKeepASessionAlive(t *testing.T, lead int, cfg *tls.Config) {
	f := follower(lead)
	id, die := dyingClient(t, c.addrs(f), "/lock")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			if in, err := dialIntruder(t, c.members[lead].peerAddr(), cfg, f+1, lead+1); err == nil {
				in.note(id)
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	died := die()
	check, _ := connect(t, c.addrs(lead))
	testutil.Eventually(t, sessionTimeout+recoverBound, 50*time.Millisecond, func() bool {
		ok, _, err := check.Exists("/lock")
		return err == nil && !ok
	}, "the dead client's lock outlived its session")
	t.Logf("the dead client's session ended %v after it died (session timeout %v)",
		time.Since(died).Round(100*time.Millisecond), sessionTimeout)
}

// dyingClient opens a session on addrs holding an ephemeral node at path. die cuts
// its connection and keeps it from reconnecting — a client that crashed, which sends no
// closeSession — and returns when.
func dyingClient(t *testing.T, addrs []string, path string) (id int64, die func() time.Time) {
	t.Helper()
	var g gate
	var mu sync.Mutex
	var conns []net.Conn
	dialer := func(network, address string, timeout time.Duration) (net.Conn, error) {
		nc, err := g.dial(network, address, timeout)
		if err == nil {
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
		}
		return nc, err
	}
	conn, _ := connectVia(t, addrs, dialer)
	if _, err := conn.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return conn.SessionID(), func() time.Time {
		g.close(true)
		mu.Lock()
		defer mu.Unlock()
		for _, nc := range conns {
			nc.Close()
		}
		return time.Now()
	}
}

// restartOnUndecodableEntry puts an entry that does not decode into every member's
// log, committed, as an older leader's bug or a forged append on a link without TLS
// could: the members are stopped once they agree, the entry appended with the members'
// own log code, and the members started again. Each must apply it as an error txn, say
// so loudly, and serve.
func (c *cluster) restartOnUndecodableEntry(t *testing.T) {
	conn, _ := connect(t, c.addrs())
	if err := createRetry(conn, "/before-the-poison", nil, recoverBound); err != nil {
		t.Fatal(err)
	}
	c.waitAgreed()
	for i := range c.members {
		c.kill(i)
	}
	last := uint64(0)
	for i, m := range c.members {
		idx := appendUndecodable(t, filepath.Join(m.dir, "raft"))
		if i > 0 && idx != last {
			t.Fatalf("member %d's log ends at %d, member 1's at %d: the members did not agree", m.id, idx, last)
		}
		last = idx
	}
	c.expectErrors = append(c.expectErrors, "committed raft entry cannot be decoded")
	for i := range c.members {
		c.start(i)
	}
	c.waitServing(recoverBound)
	conn2, _ := connect(t, c.addrs())
	if err := createRetry(conn2, "/after-the-poison", nil, recoverBound); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.members {
		m.expectLogged(t, "committed raft entry cannot be decoded")
	}
}

// appendUndecodable appends to the Raft log in dir an entry of garbage behind a
// proposal header, in the last entry's term, and commits it. It returns its index.
func appendUndecodable(t *testing.T, dir string) uint64 {
	t.Helper()
	st, err := quorum.OpenStorage(quorum.StorageConfig{Dir: dir}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	last, err := st.LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	term, err := st.Term(last)
	if err != nil {
		t.Fatal(err)
	}
	hs, _, err := st.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	data := binary.BigEndian.AppendUint64(nil, 2)
	data = binary.BigEndian.AppendUint64(data, 1)
	data = append(data, 1, 200, 1, 0xde, 0xad)
	e := &raftpb.Entry{Type: raftpb.EntryNormal.Enum(), Index: new(last + 1), Term: new(term), Data: data}
	hs = &raftpb.HardState{Term: new(max(hs.GetTerm(), term)), Vote: new(hs.GetVote()), Commit: new(last + 1)}
	if err := st.Save(hs, []*raftpb.Entry{e}, nil, true); err != nil {
		t.Fatal(err)
	}
	return last + 1
}

// waitAgreed waits until every member reports the same last zxid for a while.
func (c *cluster) waitAgreed() {
	c.t.Helper()
	same := 0
	testutil.Eventually(c.t, recoverBound, 50*time.Millisecond, func() bool {
		var first int64
		for i, m := range c.members {
			z, err := m.zxid()
			if err != nil || (i > 0 && z != first) {
				same = 0
				return false
			}
			first = z
		}
		same++
		return same >= 5
	}, "the members do not agree on a last zxid")
}

// zxid asks srvr for the member's last zxid.
func (m *member) zxid() (int64, error) {
	out, err := testutil.FourLetterWord(m.addr(), "srvr", time.Second)
	if err != nil {
		return 0, err
	}
	return testutil.ParseSrvrZxid(out)
}

// expectLogged waits until the member's current process has logged a line holding one
// of substrs.
func (m *member) expectLogged(t *testing.T, substrs ...string) {
	t.Helper()
	testutil.Eventually(t, recoverBound, 50*time.Millisecond, func() bool {
		b, err := os.ReadFile(m.child.LogPath)
		if err != nil {
			return false
		}
		for _, s := range substrs {
			if bytes.Contains(b, []byte(s)) {
				return true
			}
		}
		return false
	}, "%s logged none of %q; log tail:\n%s", m, substrs, m.child.LogTail(20))
}

// counter returns a counter of the member's mntr.
func (m *member) counter(t *testing.T, key string) int64 {
	t.Helper()
	out, err := testutil.FourLetterWord(m.addr(), "mntr", 2*time.Second)
	if err != nil {
		t.Fatalf("%s: mntr: %v", m, err)
	}
	for line := range strings.SplitSeq(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+"\t"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("%s: mntr %s = %q", m, key, v)
			}
			return n
		}
	}
	t.Fatalf("%s: mntr has no %s:\n%s", m, key, out)
	return 0
}

// waitCounter waits until the member's mntr counter key reaches at least want.
func (m *member) waitCounter(t *testing.T, key string, want int64) {
	t.Helper()
	deadline := time.Now().Add(recoverBound)
	for got := m.counter(t, key); got < want; got = m.counter(t, key) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s is %d after %v, want at least %d", m, key, got, recoverBound, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
