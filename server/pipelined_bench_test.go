package server_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server/wire"
)

// rawClient is a minimal pipelining client for benchmarks: it keeps up to depth
// requests in flight on one session and counts replies.
type rawClient struct {
	nc  net.Conn
	br  *bufio.Reader
	enc wire.Encoder
}

func dialRaw(b *testing.B, addr string) *rawClient {
	b.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	c := &rawClient{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	off := c.enc.BeginFrame()
	(&wire.ConnectRequest{Timeout: 30000, Password: make([]byte, 16)}).Encode(&c.enc)
	c.enc.EndFrame(off)
	nc.Write(c.enc.Bytes())
	if _, err := wire.ReadFrame(c.br, 1<<20, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return c
}

// run sends n requests made by req, at most depth in flight, and fails on an error reply.
func (c *rawClient) run(b *testing.B, n, depth int, op wire.Op, req func(i int) wire.Record) {
	var wg sync.WaitGroup
	wg.Add(1)
	var failed atomic.Value
	tokens := make(chan struct{}, depth)
	go func() {
		defer wg.Done()
		var buf []byte
		for i := 0; i < n; i++ {
			body, err := wire.ReadFrame(c.br, 64<<20, buf)
			if err != nil {
				failed.Store(err)
				return
			}
			buf = body[:0]
			<-tokens
			if code := wire.Code(int32(binary.BigEndian.Uint32(body[12:]))); code != wire.OK {
				failed.Store(code)
				return
			}
		}
	}()
	w := bufio.NewWriterSize(c.nc, 64<<10)
	for i := 0; i < n; i++ {
		tokens <- struct{}{}
		c.enc.Reset()
		off := c.enc.BeginFrame()
		(&wire.RequestHeader{Xid: int32(i + 1), Op: op}).Encode(&c.enc)
		req(i).Encode(&c.enc)
		c.enc.EndFrame(off)
		w.Write(c.enc.Bytes())
		w.Flush()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
}

func benchPipelined(b *testing.B, fsync bool, op wire.Op, setup func(c *rawClient, s int), req func(s, i int) wire.Record) {
	cfg := testutil.PaddockConfig(b)
	cfg.ForceSync = fsync
	cfg.MaxClientCnxns = 0
	cfg.PreAllocSize = 64 << 20
	cfg.SnapCount = 1_000_000
	runSessions(b, []string{testutil.StartServer(b, cfg).Addr().String()}, op, setup, req)
}

// runSessions runs op from 16 sessions spread over addrs, 4 requests in flight each,
// b.N in all, after setup has run on each session.
func runSessions(b *testing.B, addrs []string, op wire.Op, setup func(c *rawClient, s int), req func(s, i int) wire.Record) {
	const sessions = 16
	clients := make([]*rawClient, sessions)
	for s := range clients {
		clients[s] = dialRaw(b, addrs[s%len(addrs)])
		if setup != nil {
			setup(clients[s], s)
		}
	}
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/sessions + 1
	for s, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(b, per, 4, op, func(i int) wire.Record { return req(s, i) })
		}()
	}
	wg.Wait()
}

func BenchmarkPipelinedGet(b *testing.B) {
	data := make([]byte, 100)
	benchPipelined(b, true, wire.OpGetData,
		func(c *rawClient, s int) {
			c.run(b, 1, 1, wire.OpCreate, func(int) wire.Record {
				return &wire.CreateRequest{Path: fmt.Sprintf("/g%d", s), Data: data, ACL: wire.OpenACLUnsafe}
			})
		},
		func(s, i int) wire.Record { return &wire.PathWatchRequest{Path: fmt.Sprintf("/g%d", s)} })
}

func BenchmarkPipelinedSet(b *testing.B) {
	data := make([]byte, 100)
	benchPipelined(b, true, wire.OpSetData,
		func(c *rawClient, s int) {
			c.run(b, 1, 1, wire.OpCreate, func(int) wire.Record {
				return &wire.CreateRequest{Path: fmt.Sprintf("/s%d", s), Data: data, ACL: wire.OpenACLUnsafe}
			})
		},
		func(s, i int) wire.Record {
			return &wire.SetDataRequest{Path: fmt.Sprintf("/s%d", s), Data: data, Version: -1}
		})
}

func BenchmarkPipelinedCreate(b *testing.B) {
	data := make([]byte, 100)
	benchPipelined(b, true, wire.OpCreate, nil,
		func(s, i int) wire.Record {
			return &wire.CreateRequest{Path: fmt.Sprintf("/c-%d-%d", s, i), Data: data, ACL: wire.OpenACLUnsafe}
		})
}
