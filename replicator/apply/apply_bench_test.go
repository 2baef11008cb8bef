package apply

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// BenchmarkApply measures end-to-end catch-up throughput: with the task stopped, b.N
// source transactions of rowsPerTxn single-row INSERTs are written; the timed part runs
// the task from its checkpoint until the target's checkpoint reaches the source's end
// position (connecting and registering as a replica included). rows/s is the figure
// to read; ns/op is per source transaction.
func BenchmarkApply(b *testing.B) {
	p := startPair(b, testutil.MariaDBOptions{})
	exec(b, p.srcDB, "CREATE DATABASE bench", "CREATE TABLE bench.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, "+
		"k INT NOT NULL, v VARCHAR(64), n DECIMAL(10,2), ts DATETIME, KEY (k))")
	for _, rowsPerTxn := range []int{1, 20, 200} {
		b.Run(fmt.Sprintf("rows_per_txn=%d", rowsPerTxn), func(b *testing.B) {
			cfg := p.config(fmt.Sprintf("bench-%d", rowsPerTxn), 1, "bench.*")
			r := startRun(b, cfg) // the snapshot, untimed
			p.catchUp(b, r)
			if err := r.stop(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			writeTransactions(b, p, b.N, rowsPerTxn)
			want := p.sourcePos(b)
			b.StartTimer()
			start := time.Now()
			r = startRun(b, cfg)
			testutil.Eventually(b, 10*time.Minute, time.Millisecond, func() bool { return r.reached(want) },
				"the task did not catch up with %v", want)
			elapsed := time.Since(start)
			b.StopTimer()
			if err := r.stop(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N*rowsPerTxn)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(r.commitCount()), "target_commits")
		})
	}
}

// writeTransactions writes n transactions of rowsPerTxn single-row INSERTs to the
// source from 8 connections at once.
func writeTransactions(b *testing.B, p *pair, n, rowsPerTxn int) {
	b.Helper()
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				if err := insertTxn(p, i, rowsPerTxn); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// insertTxn writes one source transaction of rows single-row INSERTs.
func insertTxn(p *pair, i, rows int) error {
	tx, err := p.srcDB.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for j := range rows {
		_, err := tx.Exec("INSERT INTO bench.t (k, v, n, ts) VALUES (?, ?, ?, NOW())",
			i*rows+j, strings.Repeat("v", 20+j%40), float64(j)+0.25)
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}
