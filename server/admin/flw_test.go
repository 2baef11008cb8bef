package admin

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// listenWords answers four-letter words on a local port the way the server's connection
// reader is meant to: read the first four bytes, ask IsFourLetterWord, Serve, close. It
// returns the address for go-zookeeper/zk's FLW helpers, which dial a real server.
func listenWords(t *testing.T, a *Admin) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				var first [4]byte
				if _, err := io.ReadFull(c, first[:]); err != nil {
					return
				}
				if word, ok := IsFourLetterWord(int32(binary.BigEndian.Uint32(first[:]))); ok {
					if err := a.Serve(c, word); err != nil {
						t.Errorf("serve %s: %v", word, err)
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

func TestGoZookeeperParsesSrvr(t *testing.T) {
	a, src, _ := newFixture(t, "*")
	src.stats.Zxid = 5<<32 | 9
	addr := listenWords(t, a)
	ss, ok := zk.FLWSrvr([]string{addr}, 5*time.Second)
	if !ok || len(ss) != 1 || ss[0].Error != nil {
		t.Fatalf("FLWSrvr = %+v, %v", ss, ok)
	}
	s := ss[0]
	want := zk.ServerStats{
		Server: addr, Version: Version, BuildTime: time.Date(2026, 11, 21, 8, 36, 0, 0, time.UTC),
		MinLatency: 0, AvgLatency: 3.375, MaxLatency: 14, Received: 18, Sent: 17, Connections: 3,
		Outstanding: 0, Epoch: 5, Counter: 9, Mode: zk.ModeStandalone, NodeCount: 10,
	}
	if !s.BuildTime.Equal(want.BuildTime) {
		t.Errorf("BuildTime = %v, want %v", s.BuildTime, want.BuildTime)
	}
	s.BuildTime = want.BuildTime
	if *s != want {
		t.Errorf("FLWSrvr parsed\n %+v\nwant\n %+v", *s, want)
	}
}

func TestGoZookeeperRuok(t *testing.T) {
	a, _, _ := newFixture(t, "ruok")
	if oks := zk.FLWRuok([]string{listenWords(t, a)}, 5*time.Second); len(oks) != 1 || !oks[0] {
		t.Errorf("FLWRuok = %v, want [true]", oks)
	}
	refusing, _, _ := newFixture(t) // only srvr whitelisted: the refusal is not "imok"
	if oks := zk.FLWRuok([]string{listenWords(t, refusing)}, 5*time.Second); len(oks) != 1 || oks[0] {
		t.Errorf("FLWRuok on a refusing server = %v, want [false]", oks)
	}
}

func TestGoZookeeperParsesCons(t *testing.T) {
	a, src, _ := newFixture(t, "*")
	src.conns = src.conns[1:] // without the connection still in its handshake
	sc, ok := zk.FLWCons([]string{listenWords(t, a)}, 5*time.Second)
	if !ok || len(sc) != 1 || sc[0].Error != nil || len(sc[0].Clients) != 2 {
		t.Fatalf("FLWCons = %+v, %v", sc, ok)
	}
	c := sc[0].Clients[0]
	// go-zk reads est and lresp as Unix seconds although they are milliseconds: compare raw.
	want := zk.ServerClient{
		Queued: 0, Received: 11, Sent: 11, SessionID: sid0, Lcxid: 9, Lzxid: 7, Timeout: 10000,
		LastLatency: 1, MinLatency: 0, AvgLatency: 4, MaxLatency: 14,
		Established: time.Unix(1795250282133, 0), LastResponse: time.Unix(1795250285897, 0),
		Addr: "127.0.0.1:53618", LastOperation: "PING",
	}
	if *c != want {
		t.Errorf("FLWCons parsed\n %+v\nwant\n %+v", *c, want)
	}
	if got := sc[0].Clients[1]; got.SessionID != sid1 || got.LastOperation != "GETD" || got.Lcxid != 4 {
		t.Errorf("second client = %+v", got)
	}
}

// A connection without a session prints no sid..maxlat, which go-zk's regex cannot match:
// FLWCons then reports failure but still returns the clients it parsed. Apache ZooKeeper
// always lists the asking four-letter-word connection that way, so go-zk fails on it too;
// the server should leave the asking connection out of Source.Connections.
func TestGoZookeeperConsWithHandshakingConnection(t *testing.T) {
	a, _, _ := newFixture(t, "*")
	sc, ok := zk.FLWCons([]string{listenWords(t, a)}, 5*time.Second)
	if ok || len(sc) != 1 || len(sc[0].Clients) != 2 {
		t.Errorf("FLWCons = %+v, %v; want the 2 session clients and ok=false", sc, ok)
	}
}
