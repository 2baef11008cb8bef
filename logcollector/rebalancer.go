package logcollector

import (
	"context"
	"encoding/json"
	"errors"
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
	host     string
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
}

// caughtUp says the collector has taken in its latest assignment: it reads nothing
// that assignment does not hold.
func (c *collectorState) caughtUp() bool {
	return c.status != nil && c.status.Epoch >= c.assignment.Epoch
}

// run stands for election and rebalances while it leads, until ctx ends.
func (r *rebalancer) run(ctx context.Context) {
	info, _ := json.Marshal(map[string]any{"host": r.host, "pid": os.Getpid(), "since": time.Now().UTC()})
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
	sources, _, err := conn.Children(r.l.Sources())
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	collectors, err := r.readCollectors()
	if err != nil {
		return err
	}
	current := map[string][]string{}
	var live []string
	epoch := int64(0)
	for id, c := range collectors {
		current[id] = c.assignment.Sources
		epoch = max(epoch, c.assignment.Epoch)
		if c.live {
			live = append(live, id)
		}
	}
	want := plan(current, live, sources)
	for _, id := range slices.Sorted(maps.Keys(collectors)) {
		c := collectors[id]
		next := want[id] // nil for a lost collector: it is to read nothing
		if c.live {
			next = r.admissible(id, c, next, collectors)
		}
		if slices.Equal(next, sorted(c.assignment.Sources)) {
			continue
		}
		epoch++
		if err := r.assign(id, c, Assignment{Epoch: epoch, Sources: next}); err != nil {
			return err
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

// readCollectors reads every collector's assignment and status.
func (r *rebalancer) readCollectors() (map[string]*collectorState, error) {
	conn := r.s.Conn()
	ids, _, err := conn.Children(r.l.Collectors())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
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
		if sdata, _, err := conn.Get(r.l.Status(id)); err == nil {
			var s Status
			if json.Unmarshal(sdata, &s) == nil {
				c.status = &s
			}
		}
		// Live: a status written within the grace period, or just registered.
		created := time.UnixMilli(st.Ctime)
		c.live = c.status != nil && c.status.State != "stopped" && now.Sub(c.status.Updated) <= r.grace ||
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
