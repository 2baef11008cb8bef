package replicator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/backoff"
	"github.com/paddock/paddock/internal/testutil"
)

// TestUnreadableInstancesBackOff: a task whose instances directory lets the replicator
// create its node but not list the others (its ACL: create and delete, no read) made a
// replicator stand, give its node up at once and register again, in a loop that
// created and deleted nodes as fast as the servers answered. Now each stand cut short is
// followed by the backoff: the third registration comes no sooner than the first two
// waits' floors allow.
func TestUnreadableInstancesBackOff(t *testing.T) {
	addr := testutil.StartPaddock(t, nil)
	s, err := coordinator.Connect(context.Background(), coordinator.Config{Servers: []string{addr}, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, _ := NewLayout("/")
	if err := s.MakeDirs(context.Background(), l.Tasks()); err != nil {
		t.Fatal(err)
	}
	def, _ := json.Marshal(TaskDef{Enabled: true})
	if _, err := s.Conn().Create(l.Task("t"), def, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Conn().Create(l.Instances("t"), nil, 0, zk.WorldACL(zk.PermCreate|zk.PermDelete)); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Servers, cfg.Tasks, cfg.SessionTimeout = []string{addr}, []string{"t"}, 4*time.Second
	r, err := New(cfg, testutil.TestLogger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	first := time.Now()
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// Each registration creates a node in the directory and its end deletes it: two
	// changes of the directory's children.
	testutil.Eventually(t, 20*time.Second, 5*time.Millisecond, func() bool {
		_, st, err := s.Conn().Exists(l.Instances("t"))
		return err == nil && st.Cversion >= 6
	}, "three registrations never ended")
	floor := backoff.Default.Delay(1, 0) + backoff.Default.Delay(2, 0)
	if d := time.Since(first); d < floor {
		t.Fatalf("three registrations within %v, before the backoff's floor of %v", d, floor)
	}
}
