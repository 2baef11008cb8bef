package server_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// benchClients starts a server and n go-zookeeper/zk clients against it.
func benchClients(b *testing.B, n int, forceSync bool) []*zk.Conn {
	b.Helper()
	cfg := testutil.PaddockConfig(b)
	cfg.ForceSync = forceSync
	cfg.PreAllocSize = 64 << 20
	cfg.MaxClientCnxns = 0 // every client comes from 127.0.0.1
	addr := testutil.StartServer(b, cfg).Addr().String()
	conns := make([]*zk.Conn, n)
	for i := range conns {
		c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		conns[i] = c
	}
	if _, err := conns[0].Create("/bench", make([]byte, 100), 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	return conns
}

// runParallel spreads b.N calls of op over the clients, 8 goroutines each.
func runParallel(b *testing.B, conns []*zk.Conn, op func(c *zk.Conn, i int64) error) {
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if err := op(conns[i%int64(len(conns))], i); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// runClients spreads b.N calls of op over the clients, one goroutine each, so that as
// many requests are in flight as there are clients.
func runClients(b *testing.B, conns []*zk.Conn, op func(c *zk.Conn, i int64) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, c := range conns {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if err := op(c, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
}

func BenchmarkGetData(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			conns := benchClients(b, clients, true)
			runParallel(b, conns, func(c *zk.Conn, _ int64) error {
				_, _, err := c.Get("/bench")
				return err
			})
		})
	}
}

func BenchmarkSetData(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("fsync=%v/clients=%d", sync, clients), func(b *testing.B) {
				conns := benchClients(b, clients, sync)
				data := make([]byte, 100)
				runParallel(b, conns, func(c *zk.Conn, _ int64) error {
					_, err := c.Set("/bench", data, -1)
					return err
				})
			})
		}
	}
}

func BenchmarkCreateDelete(b *testing.B) {
	conns := benchClients(b, 16, true)
	runParallel(b, conns, func(c *zk.Conn, i int64) error {
		path := fmt.Sprintf("/bench/n%d", i)
		if _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			return err
		}
		return c.Delete(path, -1)
	})
}

// BenchmarkDurableCreate measures creates acknowledged after fsync, from 1, 16 and 256
// clients with one request in flight each: the throughput is how many writes group
// commit puts behind each fsync.
func BenchmarkDurableCreate(b *testing.B) {
	for _, clients := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			conns := benchClients(b, clients, true)
			data := make([]byte, 100)
			runClients(b, conns, func(c *zk.Conn, i int64) error {
				_, err := c.Create(fmt.Sprintf("/bench/n%d", i), data, 0, zk.WorldACL(zk.PermAll))
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}
