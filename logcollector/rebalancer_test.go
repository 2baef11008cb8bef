package logcollector

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
)

// TestRebalancerJudgesByServersClock: a collector whose clock runs an hour ahead (its
// status says updated in the future) but whose status node is not written again is
// lost after grace by the servers' clock, and its source moves; a drained collector
// gets nothing; a collector of another host never gets the source.
func TestRebalancerJudgesByServersClock(t *testing.T) {
	e := newCollectorEnv(t)
	e.put(e.layout.Source("s1"), Source{Host: "h", Path: "/var/log/s1.log"})
	e.assign("skewed", 1, "s1")
	e.assign("ok", 1)
	e.assign("other", 1)
	e.put(e.layout.Status("skewed"), Status{State: collectorRunning, Host: "h", Epoch: 1, Updated: time.Now().Add(time.Hour)})
	writeOK := func() {
		e.put(e.layout.Status("ok"), Status{State: collectorRunning, Host: "h", Epoch: 1, Updated: time.Now()})
		e.put(e.layout.Status("other"), Status{State: collectorRunning, Host: "elsewhere", Epoch: 1, Updated: time.Now()})
	}
	writeOK()
	r := &rebalancer{s: e.sess, l: e.layout, grace: 500 * time.Millisecond, interval: time.Second, logger: testutil.TestLogger()}
	step := func() map[string][]string {
		t.Helper()
		if err := r.step(); err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, id := range []string{"skewed", "ok", "other"} {
			data, _, err := e.sess.Conn().Get(e.layout.Collector(id))
			var a Assignment
			if err != nil || json.Unmarshal(data, &a) != nil {
				t.Fatalf("assignment of %s: %v", id, err)
			}
			out[id] = a.Sources
		}
		return out
	}
	if a := step(); !slices.Equal(a["skewed"], []string{"s1"}) {
		t.Fatalf("within grace: %v, want s1 left on skewed", a)
	}
	time.Sleep(time.Second) // past grace by the servers' clock; skewed's own clock says otherwise
	writeOK()
	if a := step(); len(a["skewed"]) != 0 || !slices.Equal(a["ok"], []string{"s1"}) || len(a["other"]) != 0 {
		t.Fatalf("past grace: %v, want s1 moved from skewed to ok (same host), none on other", a)
	}
	// Drained: ok lets s1 go and no one of host h is left to take it.
	e.put(e.layout.Drained("ok"), map[string]any{})
	if a := step(); len(a["ok"]) != 0 || len(a["other"]) != 0 {
		t.Fatalf("ok drained: %v, want s1 on no one", a)
	}
}

// TestRebalancerSkipsUnreadableSource: a source node the rebalancer cannot read (its
// ACL names someone else) is not placed, and the other sources are: one source's node
// no longer stops every step.
func TestRebalancerSkipsUnreadableSource(t *testing.T) {
	e := newCollectorEnv(t)
	e.put(e.layout.Source("s1"), Source{Host: "h", Path: "/var/log/s1.log"})
	data, _ := json.Marshal(Source{Host: "h", Path: "/var/log/hidden.log"})
	if _, err := e.sess.Conn().Create(e.layout.Source("hidden"), data, 0,
		[]zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: "someone:NSmgsYq/Vr5BMSRhJbq3Q6ULo3A="}}); err != nil {
		t.Fatal(err)
	}
	e.assign("c1", 1)
	e.put(e.layout.Status("c1"), Status{State: collectorRunning, Host: "h", Epoch: 1, Updated: time.Now()})
	r := &rebalancer{s: e.sess, l: e.layout, grace: time.Minute, interval: time.Second, logger: testutil.TestLogger()}
	if err := r.step(); err != nil {
		t.Fatalf("step with an unreadable source: %v", err)
	}
	got, _, err := e.sess.Conn().Get(e.layout.Collector("c1"))
	var a Assignment
	if err != nil || json.Unmarshal(got, &a) != nil || !slices.Equal(a.Sources, []string{"s1"}) {
		t.Fatalf("c1's assignment %s (%v): want s1 alone", got, err)
	}
}
