package store

import (
	"fmt"
	"path/filepath"
	"testing"
)

// snapshotBenchSizes are the record sizes of the snapshot benchmarks: a small znode
// or session record, and a znode with 1 KiB of data. One op writes or reads a
// snapshot of about 16 MiB of payload.
var snapshotBenchSizes = []int{100, 1024}

const snapshotBenchBytes = 16 << 20

// BenchmarkSnapshotWrite measures writing a snapshot, Commit (fsync, rename, directory
// sync) included. MB/s counts payload bytes.
func BenchmarkSnapshotWrite(b *testing.B) {
	for _, size := range snapshotBenchSizes {
		b.Run(fmt.Sprintf("record=%dB", size), func(b *testing.B) {
			n := snapshotBenchBytes / size
			payload := payloadFor(1, size)
			dir := b.TempDir()
			b.SetBytes(int64(n * size))
			b.ReportAllocs()
			zxid := int64(0)
			for b.Loop() {
				zxid++
				w, err := CreateSnapshot(dir, zxid, nil)
				if err != nil {
					b.Fatal(err)
				}
				for range n {
					if err := w.Append(payload); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
				if _, _, err := PurgeSnapshots(dir, nil, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkSnapshotRead measures reading a snapshot back with every check: the
// records' checksums, the trailer and the checksum of the whole file (from the page
// cache: the file was just written).
func BenchmarkSnapshotRead(b *testing.B) {
	for _, size := range snapshotBenchSizes {
		b.Run(fmt.Sprintf("record=%dB", size), func(b *testing.B) {
			n := snapshotBenchBytes / size
			payload := payloadFor(1, size)
			dir := b.TempDir()
			w, err := CreateSnapshot(dir, 1, nil)
			if err != nil {
				b.Fatal(err)
			}
			for range n {
				if err := w.Append(payload); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(dir, snapshotName(1))
			b.SetBytes(int64(n * size))
			b.ReportAllocs()
			for b.Loop() {
				got := 0
				if _, err := ReadSnapshot(path, nil, func([]byte) error { got++; return nil }); err != nil || got != n {
					b.Fatalf("read %d records: %v", got, err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
