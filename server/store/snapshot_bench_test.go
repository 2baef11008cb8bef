package store

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// snapshotBenchBytes is the payload of one op of the snapshot benchmarks: one op
// writes or reads a snapshot of about 16 MiB of records.
const snapshotBenchBytes = 16 << 20

// snapshotBenchFormats are the formats the benchmarks compare: version 1 (records as
// they are, each with its CRC) and the compressed blocks CreateSnapshot writes.
var snapshotBenchFormats = []struct {
	name    string
	version uint32
}{{"v1-plain", snapshotVersion1}, {"v2-zstd", snapshotVersion}}

// snapshotBenchStreams are the record streams of the benchmarks: znode records as
// `paddock bench` loads them (100-byte values of a repeated pattern), the same with
// random values (data that does not compress), and records of 1 KiB of random bytes.
var snapshotBenchStreams = []struct {
	name    string
	records func(payload int) [][]byte
}{
	{"znodes", func(payload int) [][]byte { return znodeRecords(payload, benchValue) }},
	{"znodes-random", func(payload int) [][]byte { return znodeRecords(payload, randomValue) }},
	{"random-1KiB", randomRecords},
}

// benchValue is the data `paddock bench` gives the znodes it creates (bench.Config.value).
func benchValue(_ *rand.Rand, v []byte) {
	for i := range v {
		v[i] = 'a' + byte(i%26)
	}
}

func randomValue(rng *rand.Rand, v []byte) {
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
}

// znodeRecords returns about payload bytes of snapshot records shaped as
// server/datatree encodes its znodes (jute: kind, path, data, ACL, stat), in tree
// order: 1,000 znodes /bench/dNNN/nNNNNNN of 100 bytes under each /bench/dNNN, created
// by multis of 500 at about 50 a millisecond, with world:anyone all.
func znodeRecords(payload int, value func(*rand.Rand, []byte)) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var out [][]byte
	total := 0
	data := make([]byte, 100)
	for i := 0; total < payload; i++ {
		zxid := int64(0x100000001) + int64(i/500)
		mtime := int64(1_790_000_000_000) + int64(i/50)
		if i%1000 == 0 {
			dir := znodeRecord(fmt.Sprintf("/bench/d%03d", i/1000), nil, zxid, zxid+1, mtime, 1000)
			out, total = append(out, dir), total+len(dir)
		}
		value(rng, data)
		r := znodeRecord(fmt.Sprintf("/bench/d%03d/n%06d", i/1000, i), data, zxid, zxid, mtime, 0)
		out, total = append(out, r), total+len(r)
	}
	return out
}

// znodeRecord encodes a znode as datatree's snapshot record does.
func znodeRecord(path string, data []byte, czxid, pzxid, time int64, children int32) []byte {
	be := binary.BigEndian
	b := be.AppendUint32(nil, 2) // kind: a node
	b = be.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	b = be.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	b = be.AppendUint32(b, 1)  // one ACL
	b = be.AppendUint32(b, 31) // all permissions
	for _, s := range []string{"world", "anyone"} {
		b = be.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	for _, v := range []int64{czxid, czxid, pzxid, time, time} {
		b = be.AppendUint64(b, uint64(v))
	}
	b = be.AppendUint64(b, 0) // version, aversion
	b = be.AppendUint64(b, 0) // owner
	return be.AppendUint32(b, uint32(children))
}

func randomRecords(payload int) [][]byte {
	rng := rand.New(rand.NewPCG(3, 4))
	out := make([][]byte, payload/1024)
	for i := range out {
		out[i] = make([]byte, 1024)
		randomValue(rng, out[i])
	}
	return out
}

// runSnapshotBench runs body for every format and stream, setting the bytes of an op
// to the payload of the stream's records, and reports records/s and the ratio of the
// payload to the file's size.
func runSnapshotBench(b *testing.B, body func(b *testing.B, version uint32, records [][]byte) SnapshotStats) {
	for _, stream := range snapshotBenchStreams {
		records := stream.records(snapshotBenchBytes)
		for _, format := range snapshotBenchFormats {
			b.Run(fmt.Sprintf("records=%s/format=%s", stream.name, format.name), func(b *testing.B) {
				n := 0
				for _, r := range records {
					n += len(r)
				}
				b.SetBytes(int64(n))
				b.ReportAllocs()
				stats := body(b, format.version, records)
				b.ReportMetric(float64(len(records))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(stats.Ratio(), "ratio")
			})
		}
	}
}

// BenchmarkSnapshotWrite measures writing a snapshot, Commit (fsync, rename, directory
// sync) included. MB/s counts payload bytes.
func BenchmarkSnapshotWrite(b *testing.B) {
	runSnapshotBench(b, func(b *testing.B, version uint32, records [][]byte) SnapshotStats {
		dir := b.TempDir()
		zxid := int64(0)
		var stats SnapshotStats
		for b.Loop() {
			zxid++
			stats = writeSnapshotStats(b, nil, dir, zxid, version, records)
			if _, _, err := PurgeSnapshots(dir, nil, 1); err != nil {
				b.Fatal(err)
			}
		}
		return stats
	})
}

// BenchmarkSnapshotRead measures reading a snapshot back with every check (from the
// page cache: the file was just written). MB/s counts payload bytes: the cost of
// loading a snapshot at a restart, before the records are decoded.
func BenchmarkSnapshotRead(b *testing.B) {
	runSnapshotBench(b, func(b *testing.B, version uint32, records [][]byte) SnapshotStats {
		dir := b.TempDir()
		stats := writeSnapshotStats(b, nil, dir, 1, version, records)
		path := filepath.Join(dir, snapshotName(1))
		for b.Loop() {
			got := 0
			if _, err := ReadSnapshot(path, nil, func([]byte) error { got++; return nil }); err != nil || got != len(records) {
				b.Fatalf("read %d records: %v", got, err)
			}
		}
		return stats
	})
}
