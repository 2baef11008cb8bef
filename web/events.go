package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"
)

// Limits and timings of the live-update streams (GET /api/v1/events).
const (
	maxStreamsPerLogin = 8
	maxStreams         = 256
	heartbeatInterval  = 15 * time.Second
	// rearmBackoff is the pause before arming a watch again after arming failed
	// (connection loss, a closed session).
	rearmBackoff = time.Second
)

// streamLimiter bounds the concurrent event streams, per login and overall. It is
// safe for concurrent use.
type streamLimiter struct {
	perLogin, overall int

	mu     sync.Mutex
	counts map[string]int // open streams per login id; guarded by mu
	total  int            // guarded by mu
}

func newStreamLimiter(perLogin, overall int) *streamLimiter {
	return &streamLimiter{perLogin: perLogin, overall: overall, counts: make(map[string]int)}
}

// acquire takes a stream slot for login, false if a limit is reached. A true answer
// must be matched by one release.
func (l *streamLimiter) acquire(login string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.overall || l.counts[login] >= l.perLogin {
		return false
	}
	l.total++
	l.counts[login]++
	return true
}

func (l *streamLimiter) release(login string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.counts[login]--; l.counts[login] <= 0 {
		delete(l.counts, login)
	}
}

// watchKind says what of a znode a stream watches.
type watchKind int

const (
	watchData     watchKind = iota // existence and data: ExistsW
	watchChildren                  // the children list: ChildrenW (ExistsW while the node is missing)
)

type watchSpec struct {
	path string
	kind watchKind
}

// topicWatches returns the watches of an event topic, or a *requestError naming the
// fault.
func (c *Console) topicWatches(topic string) ([]watchSpec, error) {
	switch topic {
	case "tasks":
		return []watchSpec{{c.taskLayout().Tasks(), watchChildren}}, nil
	case "workers":
		l := c.taskLayout()
		return []watchSpec{{l.Workers(), watchChildren}, {l.Master(), watchData}}, nil
	case "replication":
		return []watchSpec{{c.replLayout().Tasks(), watchChildren}}, nil
	case "logs":
		l := c.logsLayout()
		return []watchSpec{{l.Sources(), watchChildren}, {l.Collectors(), watchChildren}}, nil
	}
	if p, ok := strings.CutPrefix(topic, "znode:"); ok {
		if err := checkPath(p); err != nil {
			return nil, badRequest("topic %q: %v", topic, err)
		}
		return []watchSpec{{p, watchData}, {p, watchChildren}}, nil
	}
	return nil, badRequest("topic %q: want znode:<path>, tasks, workers, replication or logs", topic)
}

// arm sets w's watch. Setting it reads the watched state, so a change made after an
// earlier event fired and before this call is reported by the next event, not lost.
func (c *Console) arm(w watchSpec) (<-chan zk.Event, error) {
	if w.kind == watchChildren {
		_, _, ch, err := c.conn.ChildrenW(w.path)
		if !errors.Is(err, zk.ErrNoNode) {
			return ch, err
		}
	}
	_, _, ch, err := c.conn.ExistsW(w.path)
	return ch, err
}

// forward passes a subscription's events to a stream's channel until ctx ends.
func forward(ctx context.Context, from <-chan zk.Event, to chan<- zk.Event) {
	for {
		select {
		case ev := <-from:
			select {
			case to <- ev:
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// changeEvent is the data of an SSE "change" event.
type changeEvent struct {
	Topic string `json:"topic"`
	Type  string `json:"type"` // created, deleted, data or children
	Path  string `json:"path"`
}

func eventTypeName(t zk.EventType) string {
	switch t {
	case zk.EventNodeCreated:
		return "created"
	case zk.EventNodeDeleted:
		return "deleted"
	case zk.EventNodeDataChanged:
		return "data"
	case zk.EventNodeChildrenChanged:
		return "children"
	}
	return t.String()
}

// apiEvents is GET /api/v1/events?topic=: a server-sent event stream. It sends "ready"
// once the topic's watches are armed, "change" on each watch event, and a comment
// every heartbeatInterval; it ends when the client goes, the login ends (logout or
// expiry) or the console stops.
func (c *Console) apiEvents(g *gin.Context) {
	topic := g.Query("topic")
	specs, err := c.topicWatches(topic)
	if err != nil {
		apiError(g, http.StatusBadRequest, err.Error())
		return
	}
	ws := sessionOf(g)
	if !c.streams.acquire(ws.id) {
		g.Header("Retry-After", "10")
		apiError(g, http.StatusTooManyRequests, fmt.Sprintf("too many event streams: at most %d per login and %d in all",
			maxStreamsPerLogin, maxStreams))
		return
	}
	defer c.streams.release(ws.id)
	ctx, cancel := context.WithDeadline(g.Request.Context(), ws.expires)
	defer cancel()
	events := make(chan zk.Event)
	for _, w := range specs {
		ch, unsubscribe, err := c.hub.subscribe(w)
		if err != nil {
			status, msg := zkStatus(err)
			apiError(g, status, w.path+": "+msg)
			return
		}
		defer unsubscribe()
		go forward(ctx, ch, events)
	}
	h := g.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	g.Status(http.StatusOK)
	c.stream(ctx, g, ws, topic, events)
}

// stream writes the event stream until ctx ends, the login ends, the console stops or
// a write fails.
func (c *Console) stream(ctx context.Context, g *gin.Context, ws *webSession, topic string, events <-chan zk.Event) {
	send := func(s string) bool {
		if _, err := g.Writer.WriteString(s); err != nil {
			return false
		}
		g.Writer.Flush()
		return true
	}
	ready, _ := json.Marshal(map[string]string{"topic": topic})
	if !send("retry: 5000\nevent: ready\ndata: " + string(ready) + "\n\n") {
		return
	}
	beat := time.NewTicker(heartbeatInterval)
	defer beat.Stop()
	for {
		var msg string
		select {
		case <-ctx.Done():
			return
		case <-c.stop:
			return
		case <-beat.C:
			if c.sessions.get(ws.id) == nil {
				return
			}
			msg = ": heartbeat\n\n"
		case ev := <-events:
			if c.sessions.get(ws.id) == nil {
				return
			}
			b, _ := json.Marshal(changeEvent{Topic: topic, Type: eventTypeName(ev.Type), Path: ev.Path})
			msg = "event: change\ndata: " + string(b) + "\n\n"
		}
		if !send(msg) {
			return
		}
	}
}

// pageTopic is the event topic of a page, "" for none: what the page's script
// listens to (the data-topic attribute of <main>).
func (c *Console) pageTopic(g *gin.Context, name string) string {
	switch name {
	case "znodes":
		if p := g.DefaultQuery("path", "/"); checkPath(p) == nil {
			return "znode:" + p
		}
	case "task":
		if id := g.Param("id"); id != "" && !strings.Contains(id, "/") {
			return "znode:" + c.taskLayout().Status(id)
		}
	case "tasks", "workers", "replication", "logs":
		return name
	}
	return ""
}
