package logcollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

var (
	// ErrNoCollector says there is no collector of that id.
	ErrNoCollector = errors.New("logcollector: no such collector")
	// ErrCollectorLive says a collector cannot be removed while it is live.
	ErrCollectorLive = errors.New("logcollector: collector is live")
	// ErrCollectorBusy says a dead collector still holds what its sources need.
	ErrCollectorBusy = errors.New("logcollector: collector still holds sources")
)

// The states CollectorView.State takes besides a status's own (running, draining,
// drained, stopped).
const (
	// StateDead: the collector's status is stale (or its session is gone) although it
	// did not stop cleanly: the process died or hangs.
	StateDead = "dead"
	// StateStarting: registered, no status written yet.
	StateStarting = "starting"
)

// CollectorView is a collector as an operator sees it.
type CollectorView struct {
	ID   string `json:"id"`
	Host string `json:"host,omitempty"` // the machine it runs on, from its status
	// Live: its status node was written within grace by the servers' clock (the
	// rebalancer's clock node) and its session node exists.
	Live bool `json:"live"`
	// State is its status's state (running, draining, drained, stopped), dead when not
	// live and not stopped cleanly, starting before its first status.
	State   string `json:"state"`
	Drained bool   `json:"drained"`
	// Written is when its status was last written, by the servers' clock.
	Written    time.Time   `json:"written,omitzero"`
	Assignment *Assignment `json:"assignment"`
	Status     *Status     `json:"status"`
	// Holder names the process holding the id (host, pid, since), if one does.
	Holder string `json:"holder,omitempty"`
}

// clock returns the servers' time as of the rebalancer's last step and the grace it
// judges by; ok is false when no rebalancer is elected, or none has stepped yet.
func (a *Admin) clock() (now time.Time, grace time.Duration, ok bool) {
	conn := a.s.Conn()
	if has, _, err := conn.Exists(a.l.Rebalancer()); err != nil || !has {
		return time.Time{}, 0, false
	}
	data, st, err := conn.Get(a.l.Clock())
	if err != nil {
		return time.Time{}, 0, false
	}
	var c struct {
		GraceMS int64 `json:"grace_ms"`
	}
	if json.Unmarshal(data, &c) != nil || c.GraceMS <= 0 {
		return time.Time{}, 0, false
	}
	return time.UnixMilli(st.Mtime), time.Duration(c.GraceMS) * time.Millisecond, true
}

// Collectors lists the collectors by id. A collector is live while its session node
// exists, its state is not stopped and, when a rebalancer keeps the clock, its status
// was written within grace of the clock.
func (a *Admin) Collectors(ctx context.Context) ([]CollectorView, error) {
	conn := a.s.Conn()
	ids, _, err := conn.Children(a.l.Collectors())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now, grace, clocked := a.clock()
	var out []CollectorView
	for _, id := range slices.Sorted(slices.Values(ids)) {
		v, err := a.collector(id, now, grace, clocked)
		if errors.Is(err, ErrNoCollector) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Collector returns collector id (ErrNoCollector if there is none).
func (a *Admin) Collector(ctx context.Context, id string) (CollectorView, error) {
	if err := CheckID("collector", id); err != nil {
		return CollectorView{}, err
	}
	now, grace, clocked := a.clock()
	return a.collector(id, now, grace, clocked)
}

func (a *Admin) collector(id string, now time.Time, grace time.Duration, clocked bool) (CollectorView, error) {
	conn := a.s.Conn()
	v := CollectorView{ID: id}
	data, _, err := conn.Get(a.l.Collector(id))
	if errors.Is(err, zk.ErrNoNode) {
		return v, fmt.Errorf("%w: %s", ErrNoCollector, id)
	}
	if err != nil {
		return v, err
	}
	var asg Assignment
	if json.Unmarshal(data, &asg) == nil {
		v.Assignment = &asg
	}
	var st Status
	if data, sst, err := conn.Get(a.l.Status(id)); err == nil && json.Unmarshal(data, &st) == nil {
		v.Status, v.Host, v.Written = &st, st.Host, time.UnixMilli(sst.Mtime).UTC()
	}
	v.Drained, _, _ = conn.Exists(a.l.Drained(id))
	session := false
	if data, _, err := conn.Get(a.l.Session(id)); err == nil {
		session = true
		var h holder
		if json.Unmarshal(data, &h) == nil {
			v.Holder = h.String()
		}
	}
	fresh := !clocked || v.Status != nil && now.Sub(v.Written) <= grace
	switch {
	case v.Status != nil && v.Status.State == collectorStopped:
		v.State = collectorStopped
	case v.Status == nil && session:
		v.State, v.Live = StateStarting, true
	case session && fresh:
		v.State, v.Live = v.Status.State, true
	default:
		v.State = StateDead
	}
	return v, nil
}

// Drain drains collector id: the rebalancer hands its sources over to the other
// collectors of its host, the two-step way, and gives it no new ones.
func (a *Admin) Drain(ctx context.Context, id string) error {
	if _, err := a.Collector(ctx, id); err != nil {
		return err
	}
	data, _ := json.Marshal(map[string]any{"since": time.Now().UTC()})
	path := a.l.Drained(id)
	for {
		_, err := a.s.Conn().Create(path, data, 0, a.s.ACLFor(path))
		switch {
		case err == nil, errors.Is(err, zk.ErrNodeExists):
			return nil
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("%w: %s", ErrNoCollector, id)
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("logcollector: drain %s: %w", id, err)
		}
	}
}

// Undrain undoes Drain: the collector gets sources again.
func (a *Admin) Undrain(ctx context.Context, id string) error {
	if _, err := a.Collector(ctx, id); err != nil {
		return err
	}
	for {
		err := a.s.Conn().Delete(a.l.Drained(id), -1)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err := a.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("logcollector: undrain %s: %w", id, err)
		}
	}
}

// RemoveCollector removes a dead collector's nodes. It refuses a live one
// (ErrCollectorLive), and (ErrCollectorBusy, unless force) one still assigned sources
// or holding the last recorded offsets of a source no other collector has taken
// over: removing those would make the source's next collector read it from the start.
func (a *Admin) RemoveCollector(ctx context.Context, id string, force bool) error {
	v, err := a.Collector(ctx, id)
	if err != nil {
		return err
	}
	if v.Live {
		return fmt.Errorf("%w: %s (state %s, on host %s): stop it first", ErrCollectorLive, id, v.State, v.Host)
	}
	if !force {
		if v.Assignment != nil && len(v.Assignment.Sources) > 0 {
			return fmt.Errorf("%w: %s is still assigned %v: the rebalancer moves them within its grace; try again then, or --force",
				ErrCollectorBusy, id, v.Assignment.Sources)
		}
		if orphans := a.lastOffsets(id, v.Status); len(orphans) > 0 {
			return fmt.Errorf("%w: %s holds the last recorded offsets of %v, which no other collector has taken over: "+
				"removing it makes their next collector read them from the start (--force to remove it all the same)",
				ErrCollectorBusy, id, orphans)
		}
	}
	conn := a.s.Conn()
	for _, p := range []string{a.l.Session(id), a.l.Drained(id), a.l.Status(id), a.l.Collector(id)} {
		for {
			err := conn.Delete(p, -1)
			if err == nil || errors.Is(err, zk.ErrNoNode) {
				break
			}
			if err := a.s.WaitToRetry(ctx, err); err != nil {
				return fmt.Errorf("logcollector: remove collector %s: %w", id, err)
			}
		}
	}
	return nil
}

// lastOffsets returns the sources still defined whose best resume entry is in st, the
// status of collector id.
func (a *Admin) lastOffsets(id string, st *Status) []string {
	if st == nil {
		return nil
	}
	conn := a.s.Conn()
	others := map[string]Status{}
	ids, _, _ := conn.Children(a.l.Collectors())
	for _, c := range ids {
		if c == id {
			continue
		}
		var s Status
		if data, _, err := conn.Get(a.l.Status(c)); err == nil && json.Unmarshal(data, &s) == nil {
			others[c] = s
		}
	}
	var out []string
	for src, mine := range st.Sources {
		if ok, _, err := conn.Exists(a.l.Source(src)); err != nil || !ok {
			continue
		}
		if best, ok := bestResume(others, src); !ok || best.Epoch < mine.Epoch {
			out = append(out, src)
		}
	}
	slices.Sort(out)
	return out
}
