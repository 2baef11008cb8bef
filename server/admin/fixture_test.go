package admin

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

func TestMain(m *testing.M) {
	// dump prints dates in the local zone, as Java does in the JVM's default zone.
	time.Local = time.UTC
	os.Exit(m.Run())
}

// fakeSource is a Source over fixed snapshots. It hands out copies, as the contract asks
// of a real server, and counts the resets it is asked for.
type fakeSource struct {
	mu         sync.Mutex
	stats      Stats
	conns      []Connection
	sessions   []Session
	watches    []Watch
	resets     int
	connResets int
}

func (f *fakeSource) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *fakeSource) Connections() []Connection {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.conns)
}

func (f *fakeSource) Sessions() []Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Clone(f.sessions)
	for i := range out {
		out[i].Ephemerals = slices.Clone(out[i].Ephemerals)
	}
	return out
}

func (f *fakeSource) Watches() []Watch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.watches)
}

func (f *fakeSource) ResetStats() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resets++
	f.stats.PacketsReceived, f.stats.PacketsSent = 0, 0
}

func (f *fakeSource) ResetConnectionStats() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connResets++
	for i := range f.conns {
		var s ConnStats
		s.Fill(&f.conns[i])
	}
}

const (
	sid0 = 0x10000038eec0000
	sid1 = 0x10000038eec0001
	sid2 = 0x10000038eec0002
)

// at returns 2026-11-21 08:38:<sec>.<ms> UTC, the clock of the reference ZooKeeper run
// these fixtures were modelled on.
func at(sec, ms int) time.Time {
	return time.Date(2026, 11, 21, 8, 38, sec, ms*int(time.Millisecond), time.UTC)
}

// newFixtureSource mirrors the state of the Apache ZooKeeper 3.8 instance whose output the
// golden strings were checked against: two sessions with ephemerals and watches, one more
// session without, and a connection still in its handshake.
func newFixtureSource() *fakeSource {
	ms := time.Millisecond
	return &fakeSource{
		stats: Stats{
			Mode: ModeStandalone, Zxid: 7, Nodes: 10, DataSize: 88, Ephemerals: 3, Sessions: 3,
			Watches: 5, Connections: 3, Outstanding: 0, PacketsReceived: 18, PacketsSent: 17,
			Limits: LimitStats{SessionlessExpired: 2, FramesRejected: 1, LargeResponsesRejected: 4,
				ConnectionsDropped: 3, ThrottleWaits: 7, ConnThrottleWaits: 5, TLSHandshakesFailed: 6, QueuedBytes: 4096,
				ReadOnlyRefused: 8},
			QuotaAudit: QuotaAuditStats{QuotaRefused: 2, QuotaExceeded: 6, AuditEnabled: true, AuditWritten: 11, AuditDropped: 1},
		},
		conns: []Connection{
			{ // listed out of order on purpose: output is sorted by Established
				Remote: netip.MustParseAddrPort("127.0.0.1:53668"), Established: at(10, 0), Expires: at(20, 0),
				Received: 1, LastCxid: -1, LastZxid: -1,
			},
			{
				Remote: netip.MustParseAddrPort("127.0.0.1:53618"), Established: at(2, 133), Expires: at(19, 0),
				SessionID: sid0, Timeout: 10 * time.Second, Received: 11, Sent: 11, LastOp: "PING",
				LastCxid: 9, LastZxid: 7, LastResponse: at(5, 897),
				LastLatency: 1 * ms, MinLatency: 0, AvgLatency: 4*ms + 500*time.Microsecond, MaxLatency: 14 * ms,
			},
			{
				Remote: netip.MustParseAddrPort("127.0.0.1:53622"), Established: at(2, 167), Expires: at(19, 0),
				SessionID: sid1, Timeout: 15 * time.Second, Received: 5, Sent: 5, LastOp: "GETD",
				LastCxid: 4, LastZxid: 7, LastResponse: at(6, 129),
				LastLatency: 0, MinLatency: 0, AvgLatency: 900 * time.Microsecond, MaxLatency: 2 * ms,
			},
		},
		sessions: []Session{
			{ID: sid1, Timeout: 15 * time.Second, Expires: at(17, 0), Ephemerals: []string{"/app/s-0000000003"}},
			{ID: sid0, Timeout: 10 * time.Second, Expires: at(15, 0), Ephemerals: []string{"/app/e2", "/app/e1"}},
			{ID: sid2, Timeout: 10 * time.Second, Expires: at(15, 0)},
		},
		watches: []Watch{
			{sid1, "/nope"}, {sid1, "/app"}, {sid0, "/app/a"}, {sid1, "/app/a"}, {sid0, "/app/a"},
		},
	}
}

// fixtureLatencies are 8 requests of 0+1+2+3+3+2+2+14 = 27 ms: min/avg/max 0/3.375/14.
var fixtureLatencies = []struct {
	op wire.Op
	ms int
}{
	{wire.OpPing, 0}, {wire.OpGetData, 1}, {wire.OpCreate, 2}, {wire.OpCreate, 3},
	{wire.OpExists, 3}, {wire.OpGetChildren2, 2}, {wire.OpSetData, 2}, {wire.OpCreateSession, 14},
}

// newFixture returns an Admin over newFixtureSource with the given whitelist, the
// fixture's latencies observed, and a data directory holding 123 bytes.
func newFixture(t *testing.T, whitelist ...string) (*Admin, *fakeSource, string) {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "log.1"), make([]byte, 100), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "snap"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "snap", "snapshot.7"), make([]byte, 23), 0o644))
	src := newFixtureSource()
	cfg := DefaultConfig()
	cfg.FourLetterWords = whitelist
	cfg.BuildTime = time.Date(2026, 11, 21, 8, 36, 59, 0, time.UTC)
	cfg.Server = ServerConf{
		ClientPort: 27311, SecureClientPort: -1, DataDir: dir, TickTime: 2 * time.Second, MaxClientCnxns: 60,
		MinSessionTimeout: 4 * time.Second, MaxSessionTimeout: 40 * time.Second, ServerID: 1,
	}
	a, err := New(cfg, src, nil)
	must(t, err)
	for _, l := range fixtureLatencies {
		a.ObserveRequest(l.op, time.Duration(l.ms)*time.Millisecond+300*time.Microsecond)
	}
	return a, src, dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serve returns a's answer to word.
func serve(t *testing.T, a *Admin, word string) string {
	t.Helper()
	var b bytesWriter
	must(t, a.Serve(&b, word))
	return string(b)
}

type bytesWriter []byte

func (w *bytesWriter) Write(p []byte) (int, error) {
	*w = append(*w, p...)
	return len(p), nil
}
