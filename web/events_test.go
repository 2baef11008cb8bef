package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

type sseEvent struct {
	name string
	data string
}

// sseStream is an open event stream read by a goroutine into events.
type sseStream struct {
	t      *testing.T
	events chan sseEvent
	close  func() // ends the stream from the client's side
}

// openStream opens GET /api/v1/events?topic= as cl and waits for its "ready" event.
// It returns nil and the status when the console refuses the stream.
func (cl *client) openStream(topic string) (*sseStream, int) {
	cl.t.Helper()
	req, _ := http.NewRequest("GET", cl.base+"/api/v1/events?topic="+topic, nil)
	resp, err := cl.http.Do(req)
	if err != nil {
		cl.t.Fatalf("open stream %s: %v", topic, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, resp.StatusCode
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		cl.t.Fatalf("stream content type %q", ct)
	}
	s := &sseStream{t: cl.t, events: make(chan sseEvent, 16), close: func() { resp.Body.Close() }}
	cl.t.Cleanup(s.close)
	go s.readLoop(bufio.NewReader(resp.Body))
	if ev := s.next(); ev.name != "ready" {
		cl.t.Fatalf("first event %+v, want ready", ev)
	}
	return s, resp.StatusCode
}

func (s *sseStream) readLoop(rd *bufio.Reader) {
	defer close(s.events)
	var ev sseEvent
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.name != "" {
				s.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[len("data: "):]
		}
	}
}

// next returns the next event, failing the test after 10 s or when the stream ends.
func (s *sseStream) next() sseEvent {
	s.t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			s.t.Fatal("event stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		s.t.Fatal("no event within 10s")
	}
	return sseEvent{}
}

func (s *sseStream) expectChange(topic, typ, path string) {
	s.t.Helper()
	ev := s.next()
	var got changeEvent
	if ev.name != "change" || json.Unmarshal([]byte(ev.data), &got) != nil {
		s.t.Fatalf("event %+v, want a change", ev)
	}
	if want := (changeEvent{topic, typ, path}); got != want {
		s.t.Fatalf("change %+v, want %+v", got, want)
	}
}

func TestEventsZnode(t *testing.T) {
	f := startConsole(t)
	if _, err := f.conn.Create("/x", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s, _ := f.login(t, "vic").openStream("znode:/x")
	if _, err := f.conn.Set("/x", []byte("v1"), -1); err != nil {
		t.Fatal(err)
	}
	s.expectChange("znode:/x", "data", "/x")
	if _, err := f.conn.Create("/x/c", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s.expectChange("znode:/x", "children", "/x")
	// Re-armed after the first event: a second data change is reported too.
	if _, err := f.conn.Set("/x", []byte("v2"), -1); err != nil {
		t.Fatal(err)
	}
	s.expectChange("znode:/x", "data", "/x")
}

// TestEventsShareWatches: streams on one topic share its watches, and the watches go
// when the last stream does — page loads do not pile watches up.
func TestEventsShareWatches(t *testing.T) {
	f := startConsole(t)
	if _, err := f.conn.Create("/shared", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cl := f.login(t, "vic")
	a, _ := cl.openStream("znode:/shared")
	b, _ := cl.openStream("znode:/shared")
	if n := f.console.hub.following(); n != 2 {
		t.Fatalf("two streams on znode:/shared follow %d watches, want its 2 (data, children)", n)
	}
	if _, err := f.conn.Set("/shared", []byte("v"), -1); err != nil {
		t.Fatal(err)
	}
	a.expectChange("znode:/shared", "data", "/shared")
	b.expectChange("znode:/shared", "data", "/shared")
	a.close()
	b.close()
	testutil.Eventually(t, 5*time.Second, 10*time.Millisecond, func() bool { return f.console.hub.following() == 0 },
		"the watches released with the last stream")
}

func TestEventsTopics(t *testing.T) {
	f := startConsole(t)
	cl := f.login(t, "vic")
	s, _ := cl.openStream("tasks")
	tasks := f.console.taskLayout().Tasks()
	if err := f.session.MakeDirs(t.Context(), tasks+"/t1"); err != nil {
		t.Fatal(err)
	}
	// The stream watched /tasks while it was missing (exists), then its children.
	s.expectChange("tasks", "created", tasks)
	if _, err := f.conn.Create(tasks+"/t2", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	s.expectChange("tasks", "children", tasks)

	for _, topic := range []string{"nope", "znode:x", "znode:/a/"} {
		expect(t, cl.do("GET", "/api/v1/events?topic="+topic, nil), http.StatusBadRequest, "topic "+topic)
	}
	page := cl.do("GET", "/znodes?path=/zookeeper", nil)
	if !strings.Contains(page.body, `data-topic="znode:/zookeeper"`) {
		t.Errorf("znodes page has no data-topic: %s", page.body)
	}
}

func TestEventsAuthAndLimits(t *testing.T) {
	f := startConsole(t)
	resp, err := http.Get(f.url + "/api/v1/events?topic=tasks")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("events without a session: %d, want 401", resp.StatusCode)
	}
	cl := f.login(t, "vic")
	for i := 0; i < maxStreamsPerLogin; i++ {
		if s, status := cl.openStream("workers"); s == nil {
			t.Fatalf("stream %d: %d", i, status)
		}
	}
	if _, status := cl.openStream("workers"); status != http.StatusTooManyRequests {
		t.Fatalf("stream beyond the limit: %d, want 429", status)
	}
	if s, status := f.login(t, "vic").openStream("workers"); s == nil {
		t.Fatalf("another login's stream: %d", status)
	}
}

func TestStreamLimiter(t *testing.T) {
	l := newStreamLimiter(2, 3)
	steps := []struct {
		login string
		want  bool
	}{{"a", true}, {"a", true}, {"a", false}, {"b", true}, {"c", false}}
	for i, s := range steps {
		if got := l.acquire(s.login); got != s.want {
			t.Fatalf("step %d: acquire(%s) = %v, want %v", i, s.login, got, s.want)
		}
	}
	l.release("a")
	if !l.acquire("c") || l.acquire("c") {
		t.Fatal("after a release: want one more stream, not two")
	}
}

// startAdminConsole starts a server with its admin HTTP on and a console that reads it.
func startAdminConsole(t *testing.T) *fixture {
	t.Helper()
	cfg := testutil.PaddockConfig(t)
	cfg.AdminAddr = "127.0.0.1:0"
	srv := testutil.StartServer(t, cfg)
	admin := srv.AdminAddr().String()
	return startConsoleOn(t, srv.Addr().String(), func(c *Config) { c.AdminAddr = admin })
}

func TestSessions(t *testing.T) {
	f := startAdminConsole(t)
	if _, _, _, err := f.conn.ExistsW("/watched"); err != nil {
		t.Fatal(err)
	}
	cl := f.login(t, "vic")
	id := hex64(f.session.SessionID())
	r := cl.do("GET", "/api/v1/sessions", nil)
	expect(t, r, http.StatusOK, "sessions")
	var v SessionsView
	if err := json.Unmarshal([]byte(r.body), &v); err != nil {
		t.Fatal(err)
	}
	var own *ConnectionView
	for i := range v.Connections {
		if v.Connections[i].SessionID == id {
			own = &v.Connections[i]
		}
	}
	if own == nil || !own.Console || !strings.Contains(strings.Join(own.Watches, " "), "/watched") {
		t.Fatalf("sessions %s: want %s, the console's, watching /watched", r.body, id)
	}
	page := cl.do("GET", "/sessions", nil)
	expect(t, page, http.StatusOK, "sessions page")
	if !strings.Contains(page.body, id) || !strings.Contains(page.body, "/watched") {
		t.Errorf("sessions page lacks %s or /watched: %s", id, page.body)
	}
	ov := cl.do("GET", "/", nil)
	if !strings.Contains(ov.body, `<td class="mode">standalone</td>`) || !strings.Contains(ov.body, "<td>admin</td>") {
		t.Errorf("overview does not show a standalone member: %s", ov.body)
	}
}

func TestSessionsWithoutAdminAddr(t *testing.T) {
	f := startConsole(t)
	cl := f.login(t, "vic")
	r := cl.do("GET", "/api/v1/sessions", nil)
	expect(t, r, http.StatusServiceUnavailable, "sessions without admin_addr")
	if !strings.Contains(r.body, "admin_addr") {
		t.Errorf("answer does not name admin_addr: %s", r.body)
	}
	if page := cl.do("GET", "/sessions", nil); !strings.Contains(page.body, "No admin address configured") {
		t.Errorf("sessions page: %s", page.body)
	}
}

func TestEventsEndWhenConsoleStops(t *testing.T) {
	f := startConsole(t)
	if err := f.console.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.console.Run(ctx) }()
	f.url = "http://" + f.console.Addr().String()
	s, _ := f.login(t, "vic").openStream("logs")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(3 * time.Second): // the graceful shutdown would wait 5 s for the stream
		t.Fatal("run did not return within 3s of its context ending")
	}
	select {
	case _, ok := <-s.events:
		if ok {
			t.Fatal("an event after the console stopped")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end")
	}
}
