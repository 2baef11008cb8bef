package store

import (
	"fmt"
	"testing"
)

// benchRecordBytes is the payload size of the benchmarks: a small create or setData.
const benchRecordBytes = 100

// BenchmarkAppendSync measures group commit: one op is a batch of Appends and one
// Sync. MB/s counts payload bytes; records/s is the durable write rate a server
// with that many writes in flight could reach from the log alone.
func BenchmarkAppendSync(b *testing.B) {
	for _, forceSync := range []bool{true, false} {
		for _, batch := range []int{1, 10, 100, 1000} {
			name := fmt.Sprintf("fsync=%v/batch=%d", forceSync, batch)
			b.Run(name, func(b *testing.B) { benchAppendSync(b, batch, forceSync) })
		}
	}
}

func benchAppendSync(b *testing.B, batch int, forceSync bool) {
	cfg := Config{Dir: b.TempDir(), SegmentSize: DefaultSegmentSize, ForceSync: forceSync}
	w, err := Open(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	payload := payloadFor(1, benchRecordBytes)
	zxid := int64(0)
	b.SetBytes(int64(batch * benchRecordBytes))
	b.ReportAllocs()
	for b.Loop() {
		for range batch {
			zxid++
			if err := w.Append(zxid, payload); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(zxid)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkReplay measures the start-up read of a log of 100-byte records, checksums
// included. One op replays 100,000 records.
func BenchmarkReplay(b *testing.B) {
	const records = 100_000
	cfg := Config{Dir: b.TempDir(), SegmentSize: DefaultSegmentSize, ForceSync: false}
	w, err := Open(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	payload := payloadFor(1, benchRecordBytes)
	for z := int64(1); z <= records; z++ {
		if err := w.Append(z, payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(records * benchRecordBytes)
	for b.Loop() {
		w, err := Open(cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := w.Replay(0, func(int64, []byte) error { n++; return nil }); err != nil || n != records {
			b.Fatalf("replayed %d records: %v", n, err)
		}
		w.Close()
	}
	b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
}
