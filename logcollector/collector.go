package logcollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// Collector is one log collector. It registers as /logs/collector/<id>, holding the
// id with the ephemeral /logs/collector/<id>/session, takes in the assignments the
// rebalancer writes there, tails the assigned sources' files, ships their lines to its
// sink, and reports its progress (and its host) in /logs/collector/<id>/status. Make one with NewCollector and call Run once.
//
// Delivery is at least once. A file's offset is recorded in the status only after the
// sink accepted the lines before it, and a source's next owner resumes from the
// recorded offsets: after a clean hand-off (the old owner let go and wrote its final
// offsets before the new one starts) no line is shipped twice, but after a crash
// (kill -9) the lines read since the last status write are shipped again by whoever
// reads the source next. Lines are never lost, save in the limits of tailing itself:
// see tail.go (truncation races, inode reuse). Each Line carries (source, file,
// offset) for a consumer to drop duplicates.
type Collector struct {
	cfg    Config // immutable after NewCollector
	layout Layout
	sess   *coordinator.Session
	conn   *zk.Conn
	logger *slog.Logger

	ran atomic.Bool // Run was called
}

// NewCollector checks cfg and returns a Collector that works through s, a Session the
// caller connected and closes after Run returns (other parts of the process, such as
// the rebalancer, may share it). Nothing starts before Run. A nil logger discards the
// logs.
func NewCollector(cfg Config, s *coordinator.Session, logger *slog.Logger) (*Collector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if s == nil {
		return nil, errors.New("logcollector: collector: no session")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	layout, _ := NewLayout(cfg.Root) // Validate checked it
	cfg.Servers = append([]string(nil), cfg.Servers...)
	return &Collector{
		cfg: cfg, layout: layout, sess: s, conn: s.Conn(),
		logger: logger.With("collector", cfg.ID),
	}, nil
}

// ID returns the collector's id, the name of its node.
func (c *Collector) ID() string { return c.cfg.ID }

// Host returns the machine the collector runs on: it reads only that host's sources.
func (c *Collector) Host() string { return c.cfg.Host }

// Run registers the collector (creating /logs/collector/<id> if missing, with an
// empty assignment, and claiming the id) and collects until ctx ends. It then stops
// reading, writes its final status (state "stopped", with the offsets it got to, from
// which a restart or the next owner resumes), releases its id and returns nil. It
// returns an error if the sink cannot be opened, the registration is refused (the id
// is held by another live process: ErrIDHeld), or the Session is closed under it. It
// may be called once.
func (c *Collector) Run(ctx context.Context) error {
	if c.ran.Swap(true) {
		return errors.New("logcollector: collector: Run called twice")
	}
	sink, closeSink, err := openSink(c.cfg.Sink)
	if err != nil {
		return fmt.Errorf("logcollector: sink = %s: %w", c.cfg.Sink, err)
	}
	defer closeSink()
	if err := c.register(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	l := newCollectorLoop(c, sink)
	if err := l.loadStatus(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	c.logger.Info("collector started", "sink", c.cfg.Sink)
	err = l.run(ctx)
	l.shutdown()
	c.release()
	c.logger.Info("collector stopped")
	return err
}

// emptyAssignment is a new collector node's data.
var emptyAssignment = []byte(`{"epoch":0,"sources":[]}`)

// register makes sure /logs/collector/<id> exists, creating it with an empty
// assignment (an existing one, and the assignment in it, is kept), then claims the
// id (claim).
func (c *Collector) register(ctx context.Context) error {
	if err := c.sess.MakeDirs(ctx, c.layout.Collectors()); err != nil {
		return fmt.Errorf("logcollector: register: %w", err)
	}
	path := c.layout.Collector(c.cfg.ID)
	for {
		_, err := c.conn.Create(path, emptyAssignment, 0, c.sess.ACLFor(path))
		if err == nil {
			c.logger.Info("registered", "path", path)
			break
		}
		if errors.Is(err, zk.ErrNodeExists) {
			break
		}
		if err := c.sess.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("logcollector: register %s: %w", path, err)
		}
	}
	return c.claim(ctx)
}

// holder is the data of a collector's session node: who holds the id.
type holder struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
}

func (h holder) String() string {
	return fmt.Sprintf("the collector on host %s, pid %d, since %s", h.Host, h.PID, h.Since.Format(time.RFC3339))
}

// ErrIDHeld says another live session holds the collector's id.
var ErrIDHeld = errors.New("logcollector: collector id held by another session")

// claim creates the collector's ephemeral session node, which holds its id. If
// another session holds it, claim refuses at once, naming the holder, when that
// holder writes its status meanwhile (it is alive); otherwise it waits for the node to
// expire, at most one session timeout, and then refuses all the same.
func (c *Collector) claim(ctx context.Context) error {
	path := c.layout.Session(c.cfg.ID)
	me, _ := json.Marshal(holder{Host: c.cfg.Host, PID: os.Getpid(), Since: time.Now().UTC()})
	var deadline time.Time
	var statusMtime int64 = -1
	for {
		_, err := c.conn.Create(path, me, zk.FlagEphemeral, c.sess.ACLFor(path))
		if err == nil || errors.Is(err, zk.ErrNodeExists) && c.ownSession(path) {
			return nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			if err := c.sess.WaitToRetry(ctx, err); err != nil {
				return fmt.Errorf("logcollector: claim %s: %w", path, err)
			}
			continue
		}
		var h holder
		if data, _, err := c.conn.Get(path); err == nil {
			json.Unmarshal(data, &h)
		}
		var mtime int64
		if _, st, err := c.conn.Exists(c.layout.Status(c.cfg.ID)); err == nil && st != nil {
			mtime = st.Mtime
		}
		switch {
		case deadline.IsZero():
			deadline, statusMtime = time.Now().Add(c.cfg.SessionTimeout+time.Second), mtime
			c.logger.Warn("collector id held by another session: waiting for it to expire unless it is alive",
				"holder", h.String(), "at_most", c.cfg.SessionTimeout)
		case mtime != statusMtime:
			return fmt.Errorf("%w: %s is held by %s, which is alive (it writes its status): stop it, or give this one another --id",
				ErrIDHeld, c.cfg.ID, h)
		case time.Now().After(deadline):
			return fmt.Errorf("%w: %s is held by %s, whose session did not expire within %v: stop it, or give this one another --id",
				ErrIDHeld, c.cfg.ID, h, c.cfg.SessionTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(c.cfg.StatusInterval, 200*time.Millisecond)):
		}
	}
}

// release deletes the collector's session node, if this session holds it: a new
// process may take the id at once.
func (c *Collector) release() {
	path := c.layout.Session(c.cfg.ID)
	if _, st, err := c.conn.Exists(path); err == nil && st != nil && st.EphemeralOwner == c.conn.SessionID() {
		c.conn.Delete(path, st.Version)
	}
}

// ownSession says the node at path is this session's ephemeral.
func (c *Collector) ownSession(path string) bool {
	_, st, err := c.conn.Exists(path)
	return err == nil && st != nil && st.EphemeralOwner == c.conn.SessionID()
}

// readStatuses reads every collector's status, by host; collectors without one, or
// with one that does not parse, are left out.
func (c *Collector) readStatuses() (map[string]Status, error) {
	hosts, _, err := c.conn.Children(c.layout.Collectors())
	if err != nil {
		return nil, err
	}
	out := make(map[string]Status, len(hosts))
	for _, h := range hosts {
		data, _, err := c.conn.Get(c.layout.Status(h))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var st Status
		if err := json.Unmarshal(data, &st); err != nil {
			c.logger.Warn("status unreadable: ignoring it", "collector", h, "err", err)
			continue
		}
		out[h] = st
	}
	return out, nil
}

// readSource reads source id's definition; ok is false if it does not exist.
func (c *Collector) readSource(id string) (src Source, ok bool, err error) {
	data, _, err := c.conn.Get(c.layout.Source(id))
	if errors.Is(err, zk.ErrNoNode) {
		return Source{}, false, nil
	}
	if err != nil {
		return Source{}, false, err
	}
	if err := json.Unmarshal(data, &src); err != nil {
		return Source{}, false, fmt.Errorf("source %s: %w", id, err)
	}
	return src, true, nil
}

// writeStatus writes st as the collector's status node, creating it if missing.
func (c *Collector) writeStatus(st Status) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("logcollector: status: %w", err)
	}
	path := c.layout.Status(c.cfg.ID)
	_, err = c.conn.Set(path, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = c.conn.Create(path, data, 0, c.sess.ACLFor(path))
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = c.conn.Set(path, data, -1)
		}
	}
	return err
}

// bestResume returns the entry for source id to resume from among statuses: the one
// read under the highest epoch; between equal epochs, the one further on. ok is false
// if no status has the source.
func bestResume(statuses map[string]Status, id string) (best SourceStatus, ok bool) {
	for _, st := range statuses {
		ss, has := st.Sources[id]
		if !has {
			continue
		}
		if !ok || ss.Epoch > best.Epoch || ss.Epoch == best.Epoch && shipped(ss) > shipped(best) {
			best, ok = ss, true
		}
	}
	return best, ok
}

// shipped sums the offsets of ss's files.
func shipped(ss SourceStatus) int64 {
	var n int64
	for _, f := range ss.Files {
		n += f.Offset
	}
	return n
}
