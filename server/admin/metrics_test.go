package admin

import (
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// ObserveRequest and ObserveFsync run on the request path: they must not allocate once an
// opcode has been seen.
func TestObserveDoesNotAllocate(t *testing.T) {
	a, _, _ := newFixture(t)
	a.ObserveRequest(wire.OpGetData, time.Millisecond)
	if n := testing.AllocsPerRun(100, func() {
		a.ObserveRequest(wire.OpGetData, 150*time.Microsecond)
		a.ObserveFsync(200 * time.Microsecond)
	}); n != 0 {
		t.Errorf("ObserveRequest+ObserveFsync allocate %v times per call", n)
	}
}

func TestObserveConcurrently(t *testing.T) {
	a, err := New(DefaultConfig(), &fakeSource{}, nil)
	must(t, err)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				a.ObserveRequest(wire.Op(w%4), time.Duration(i%20)*time.Millisecond)
				if i%50 == 0 {
					a.monitor() // readers race the writers
				}
			}
		})
	}
	wg.Wait()
	l := a.latency.snapshot()
	if l.count != workers*each || l.min != 0 || l.max != 19 {
		t.Errorf("latency after %d observations = %+v", workers*each, l)
	}
	if r, u := a.read.snapshot().count, a.update.snapshot().count; r+u != workers*each {
		t.Errorf("read %d + update %d != %d", r, u, workers*each)
	}
}

func BenchmarkObserveRequest(b *testing.B) {
	a, err := New(DefaultConfig(), &fakeSource{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a.ObserveRequest(wire.OpGetData, 120*time.Microsecond)
		}
	})
}
