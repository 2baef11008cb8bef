package ensemble

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/lincheck"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/internal/testutil/faultproxy"
)

const (
	linRuns    = 3               // histories checked, each on fresh znodes of one ensemble
	linClients = 5               // sessions per run, each with every member in its connect string
	linPaths   = 3               // znodes per run
	linMinimum = 8 * time.Second // a run goes on until the nemesis's cycle that passes it ends
	// linCheckTimeout bounds each check; running out is a failure to check (Unknown).
	linCheckTimeout = 60 * time.Second
	// linMinApplied is the fewest CASes a run must have applied to count: a run that
	// did no work shows nothing, whatever the checker says.
	linMinApplied = 50
	// faultHold is how long the nemesis keeps a partition or a delay in place.
	faultHold = 1500 * time.Millisecond
	// calm is how long the nemesis leaves the healed ensemble alone between faults, so
	// that the history has stretches of ordinary operation between them.
	calm = 500 * time.Millisecond
)

// TestLinearizability has clients sync-read and compare-and-set a few znodes through
// every member while a nemesis partitions members, kills the leader and slows the
// links, and checks each run's history with internal/lincheck.
func TestLinearizability(t *testing.T) {
	seed := testutil.Seed(t, "PADDOCK_ENSEMBLE_SEED")
	c := newCluster(t, 3, clusterOptions{proxies: true})
	for run := range linRuns {
		if !t.Run(fmt.Sprintf("run%d", run), func(t *testing.T) {
			linearizabilityRun(t, c.in(t), run, newRand(seed, uint64(run)))
		}) {
			return
		}
	}
}

// linearizabilityRun creates the run's znodes, runs the clients until the nemesis is
// done and checks their history.
func linearizabilityRun(t *testing.T, c *cluster, run int, rng *rand.Rand) {
	setup, _ := connect(t, c.addrs())
	init := make(map[string]lincheck.Value)
	var paths []string
	for k := range linPaths {
		p := fmt.Sprintf("/lin%d-%c", run, 'a'+k)
		if err := createRetry(setup, p, []byte(p+"-initial"), recoverBound); err != nil {
			t.Fatal(err)
		}
		init[p] = lincheck.Value{Data: p + "-initial", Version: 0}
		paths = append(paths, p)
	}

	rec := lincheck.NewRecorder()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var clients sync.WaitGroup
	stats := make([]linStats, linClients)
	for i := range linClients {
		r := newRand(rng.Uint64(), uint64(i))
		clients.Go(func() { stats[i] = linClient(ctx, rec, i, c.addrs(), paths, r) })
	}
	clientsDone := make(chan struct{})
	go func() {
		clients.Wait()
		close(clientsDone)
	}()
	start := time.Now()
	steps, err := nemesis(c, rng, start.Add(linMinimum))
	stop()
	elapsed := time.Since(start)
	for _, s := range steps {
		t.Log("nemesis: " + s)
	}
	if err != nil {
		t.Error(err)
	}
	select {
	case <-clientsDone:
	case <-time.After(recoverBound):
		t.Fatalf("clients still stuck in a request %v after the nemesis ended", recoverBound)
	}
	for i, s := range stats {
		t.Logf("client %d: %d operations (the longest %v, from %s on %s), %d failed (connection trouble), %d sessions",
			i, s.ops, s.longest.Round(time.Millisecond), s.longestAt.Format("15:04:05.000"), s.longestOn, s.failed, s.sessions)
		if s.err != nil {
			t.Errorf("client %d: %v", i, s.err)
		}
	}

	res, err := rec.Check(init, linCheckTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v of clients and nemesis: %s", elapsed.Round(time.Millisecond), res)
	if res.Verdict != lincheck.Linearizable {
		res.KeepVisualization(t, testutil.ArtifactDir(t))
		t.Fatalf("%s", res)
	}
	if res.CASApplied < linMinApplied || res.Reads < linMinApplied {
		t.Errorf("the run did too little to show anything: %s; want at least %d applied CASes and reads",
			res, linMinApplied)
	}
}

// linStats counts one client's work.
type linStats struct {
	ops, failed, sessions int
	longest               time.Duration // the longest read, or read and CAS
	longestAt             time.Time     // when it began
	longestOn             string        // the server the client was on when it began
	err                   error         // why the client gave up, if it did
}

// linClient sync-reads a random znode and, two times in three, CASes it at the
// version read, until ctx is done. Connection trouble is part of the test: the
// recorder keeps a CAS that got no answer as indefinite, and the client carries on,
// with a new session if its own expired.
func linClient(ctx context.Context, rec *lincheck.Recorder, id int, addrs, paths []string, rng *rand.Rand) linStats {
	st := linStats{sessions: 1}
	conn, _, err := dial(addrs, sessionTimeout, nil)
	if err != nil {
		st.err = err
		return st
	}
	defer func() { conn.Close() }()
	for n := 0; ctx.Err() == nil; n++ {
		p := paths[rng.IntN(len(paths))]
		began, on := time.Now(), conn.Server()
		_, version, err := rec.Read(id, conn, p)
		if err == nil && rng.IntN(3) > 0 {
			_, err = rec.CAS(id, conn, p, fmt.Appendf(nil, "c%d-%d", id, n), version)
		}
		st.ops++
		if took := time.Since(began); took > st.longest {
			st.longest, st.longestAt, st.longestOn = took, began, on
		}
		switch {
		case err == nil, errors.Is(err, zk.ErrBadVersion):
		case errors.Is(err, zk.ErrSessionExpired) || conn.State() == zk.StateExpired:
			st.failed++
			conn.Close()
			if conn, _, st.err = dial(addrs, sessionTimeout, nil); st.err != nil {
				return st
			}
			st.sessions++
		default:
			st.failed++
			time.Sleep(10 * time.Millisecond) // go-zk is reconnecting; don't spin
		}
	}
	return st
}

// nemesis breaks the ensemble in cycles of three faults, in a random order each cycle
// — a member isolated for faultHold, the leader killed and restarted once another
// leads, every link delayed for faultHold — until a cycle ends after until. After each
// fault it waits for every member to serve again, and then for calm. It returns what
// it did.
func nemesis(c *cluster, rng *rand.Rand, until time.Time) ([]string, error) {
	var steps []string
	for cycle := 0; cycle == 0 || time.Now().Before(until); cycle++ {
		for _, kind := range rng.Perm(3) {
			start := time.Now()
			var step string
			var err error
			switch kind {
			case 0:
				i := rng.IntN(len(c.members))
				c.isolate(i)
				time.Sleep(faultHold) // the fault's length, not a wait for a condition
				c.heal()
				step = fmt.Sprintf("member %d isolated for %v", i+1, faultHold)
			case 1:
				step, err = killLeader(c)
			case 2:
				d := time.Duration(10+rng.IntN(40)) * time.Millisecond
				c.eachProxy(func(p *faultproxy.Proxy) { p.Delay(d) })
				time.Sleep(faultHold)
				c.heal()
				step = fmt.Sprintf("every link delayed %v for %v", d, faultHold)
			}
			if err == nil && !testutil.WaitFor(recoverBound, 20*time.Millisecond, c.allServing) {
				err = fmt.Errorf("not every member serves %v after the fault; modes %v\n%s", recoverBound, c.modes(), c.diagnose())
			}
			if err != nil {
				return steps, fmt.Errorf("cycle %d, %s: %w", cycle, step, err)
			}
			steps = append(steps, fmt.Sprintf("cycle %d, %s: %s; all serving %v after it began",
				cycle, start.Format("15:04:05.000"), step, time.Since(start).Round(time.Millisecond)))
			time.Sleep(calm) // pacing, not a wait for a condition
		}
	}
	return steps, nil
}

// killLeader kills the leader, waits for another to lead and restarts it.
func killLeader(c *cluster) (string, error) {
	all := c.others(-1)
	leader := -1
	if !testutil.WaitFor(recoverBound, 20*time.Millisecond, func() bool { leader = c.leaderAmong(all); return leader >= 0 }) {
		return "leader kill", fmt.Errorf("no leader to kill; modes %v", c.modes())
	}
	c.kill(leader)
	killed := time.Now()
	step := fmt.Sprintf("leader (member %d) killed", leader+1)
	next := -1
	if !testutil.WaitFor(failoverBound, 20*time.Millisecond, func() bool { next = c.leaderAmong(c.others(leader)); return next >= 0 }) {
		return step, fmt.Errorf("no new leader within %v; modes %v", failoverBound, c.modes())
	}
	step += fmt.Sprintf(", member %d leads %v later, restarted", next+1, time.Since(killed).Round(time.Millisecond))
	return step, c.members[leader].start()
}
