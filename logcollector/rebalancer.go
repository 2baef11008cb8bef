package logcollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// rebalancer is the elected process that assigns sources to collectors.
type rebalancer struct {
	s        *coordinator.Session
	l        Layout
	id       string        // the collector's id, of the process standing for election
	host     string        // the host it runs on
	grace    time.Duration // a collector whose status is older is lost
	interval time.Duration // how often the state is polled
	logger   *slog.Logger
	moves    func(n int) // counts moved sources (metrics); may be nil
}

// collectorState is one collector as the rebalancer reads it.
type collectorState struct {
	assignment Assignment
	version    int32
	status     *Status
	live       bool
	drained    bool // its drained node exists: it is to hold no source
}

// placeable says the collector may be given sources: live, not drained, and its host
// known (from its status).
func (c *collectorState) placeable() bool {
	return c.live && !c.drained && c.status != nil && c.status.Host != ""
}

// caughtUp says the collector has taken in its latest assignment: it reads nothing
// that assignment does not hold.
func (c *collectorState) caughtUp() bool {
	return c.status != nil && c.status.Epoch >= c.assignment.Epoch
}

// run stands for election and rebalances while it leads, until ctx ends.
func (r *rebalancer) run(ctx context.Context) {
	info, _ := json.Marshal(map[string]any{"id": r.id, "host": r.host, "pid": os.Getpid(), "since": time.Now().UTC()})
	for ctx.Err() == nil {
		h, err := coordinator.NewElection(r.s, r.l.Rebalancer(), info).Campaign(ctx)
		if err != nil {
			return
		}
		r.logger.Info("rebalancer elected")
		r.lead(ctx, h)
		h.Release(context.Background())
	}
}

func (r *rebalancer) lead(ctx context.Context, h *coordinator.Hold) {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		if err := r.step(); err != nil && !coordinator.IsConnLoss(err) {
			r.logger.Warn("rebalancing failed; trying again", "err", err)
		}
		select {
		case <-tick.C:
		case <-h.Lost():
			r.logger.Info("no longer the rebalancer")
			return
		case <-ctx.Done():
			return
		}
	}
}

// step reads sources and collectors and moves the assignments one step towards the
// plan: a source a collector gives up goes to its new owner only once the old one has
// taken in the assignment without it (or is lost), so that two never read it at once.
func (r *rebalancer) step() error {
	conn := r.s.Conn()
	ids, _, err := conn.Children(r.l.Sources())
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	sources := make(map[string]string, len(ids)) // id -> host
	for _, id := range ids {
		data, _, err := conn.Get(r.l.Source(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if coordinator.IsConnLoss(err) {
			return err
		}
		// A source that cannot be read or decoded is one source's trouble: it is not
		// placed (no host), and the others are.
		var src Source
		if err != nil || json.Unmarshal(data, &src) != nil {
			r.logger.Warn("source unreadable: not placing it", "source", id, "err", err)
		}
		sources[id] = src.Host
	}
	now, err := r.serverNow()
	if err != nil {
		return err
	}
	collectors, err := r.readCollectors(now)
	if err != nil {
		return err
	}
	current := map[string][]string{}
	hosts := map[string]string{} // placeable collector -> host
	epoch := int64(0)
	for id, c := range collectors {
		current[id] = c.assignment.Sources
		epoch = max(epoch, c.assignment.Epoch)
		if c.placeable() {
			hosts[id] = c.status.Host
		}
	}
	want := planByHost(current, hosts, sources)
	for _, id := range slices.Sorted(maps.Keys(collectors)) {
		c := collectors[id]
		next := want[id] // nil for a lost or drained collector: it is to read nothing
		if c.live {
			next = r.admissible(id, c, next, collectors)
		}
		if slices.Equal(next, sorted(c.assignment.Sources)) {
			continue
		}
		epoch++
		if err := r.assign(id, c, Assignment{Epoch: epoch, Sources: next}); coordinator.IsConnLoss(err) {
			return err
		} else if err != nil {
			// One collector's node refused: the others still move (a source leaves a
			// collector only once it has taken in the assignment without it, so a
			// collector left as it was keeps what it reads).
			r.logger.Warn("cannot assign a collector: trying again next step", "collector", id, "err", err)
		}
	}
	return nil
}

// admissible trims the planned sources of collector id to those it may take now: all
// it already holds, and the new ones no other live collector holds or may still be
// reading.
func (r *rebalancer) admissible(id string, c *collectorState, planned []string, all map[string]*collectorState) []string {
	out := []string{}
	for _, s := range planned {
		if slices.Contains(c.assignment.Sources, s) || r.free(s, id, all) {
			out = append(out, s)
		}
	}
	return out
}

func (r *rebalancer) free(s, taker string, all map[string]*collectorState) bool {
	for id, c := range all {
		if id == taker || !c.live {
			continue
		}
		if slices.Contains(c.assignment.Sources, s) {
			return false
		}
		if c.status == nil {
			continue
		}
		// An entry of the status's own epoch is a source being read; older ones are
		// final offsets of sources let go of.
		if ss, ok := c.status.Sources[s]; ok && ss.Epoch >= c.status.Epoch && !c.caughtUp() {
			return false
		}
	}
	return true
}

func (r *rebalancer) assign(id string, c *collectorState, a Assignment) error {
	if a.Sources == nil {
		a.Sources = []string{}
	}
	data, _ := json.Marshal(a)
	_, err := r.s.Conn().Set(r.l.Collector(id), data, c.version)
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return nil // changed meanwhile: the next step reads it again
	}
	if err != nil {
		return err
	}
	if r.moves != nil {
		r.moves(len(a.Sources))
	}
	r.logger.Info("assigned", "collector", id, "epoch", a.Epoch, "sources", a.Sources, "live", c.live)
	return nil
}

// serverNow sets the clock node and returns its mtime: the servers' clock now, against
// which the status nodes' mtimes are judged (the collectors' clocks play no part).
func (r *rebalancer) serverNow() (time.Time, error) {
	conn := r.s.Conn()
	path := r.l.Clock()
	data := []byte(fmt.Sprintf(`{"grace_ms":%d}`, r.grace.Milliseconds()))
	st, err := conn.Set(path, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if _, err = conn.Create(path, data, 0, r.s.ACLFor(path)); err == nil || errors.Is(err, zk.ErrNodeExists) {
			st, err = conn.Set(path, data, -1)
		}
	}
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(st.Mtime), nil
}

// readCollectors reads every collector's assignment, status and drain, judging
// liveness by the status node's mtime against now, the servers' clock.
func (r *rebalancer) readCollectors(now time.Time) (map[string]*collectorState, error) {
	conn := r.s.Conn()
	ids, _, err := conn.Children(r.l.Collectors())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]*collectorState, len(ids))
	for _, id := range ids {
		data, st, err := conn.Get(r.l.Collector(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		c := &collectorState{version: st.Version}
		if json.Unmarshal(data, &c.assignment) != nil {
			r.logger.Warn("collector assignment unreadable: replacing it", "collector", id)
		}
		c.assignment.Sources = sorted(c.assignment.Sources)
		var written time.Time
		if sdata, sst, err := conn.Get(r.l.Status(id)); err == nil {
			var s Status
			if json.Unmarshal(sdata, &s) == nil {
				c.status, written = &s, time.UnixMilli(sst.Mtime)
			}
		}
		if ok, _, err := conn.Exists(r.l.Drained(id)); err == nil {
			c.drained = ok
		}
		// Live: a status written within the grace period, or just registered.
		created := time.UnixMilli(st.Ctime)
		c.live = c.status != nil && c.status.State != collectorStopped && now.Sub(written) <= r.grace ||
			c.status == nil && now.Sub(created) <= r.grace
		out[id] = c
	}
	return out, nil
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}
