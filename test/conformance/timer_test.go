package conformance

import (
	"time"

	"github.com/paddock/paddock/server/wire"
)

// reapWait bounds the wait for a container or TTL node to be deleted by the server's
// periodic check (every containerCheckInterval on both targets).
const reapWait = 15 * time.Second

// scenarioContainers covers container reaping: a container whose last child goes is deleted
// by the server (a normal delete: watchers see it); one that never had a child stays.
func scenarioContainers(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	c1, c2 := sc.Path("c1"), sc.Path("c2")
	s1.createContainer(c1, []byte("c"))
	s1.createContainer(c2, nil)
	s1.create(c1+"/child", nil, 0)
	s1.createContainer(sc.Path("c3"), nil)
	s1.create(sc.Path("c3/eph"), nil, wire.FlagEphemeral)
	s1.exists(c1, true)
	s1.getChildren(sc.Root, true)
	s1.delete(c1+"/child", -1)
	sc.Note("wait for the reaper: NodeDeleted, then the parent's NodeChildrenChanged")
	s1.ReadWithin(reapWait)
	s1.Read()
	s1.exists(c1, false)
	sc.Note("the never-used container was looked at in the same pass and stays")
	s1.exists(c2, false)
	s1.exists(sc.Path("c3"), false)
	s1.getChildren2(sc.Root, false)

	sc.Note("a container emptied by its child's session closing is reaped too")
	s2 := sc.Connect("s2", ConnectOptions{})
	s2.exists(sc.Path("c3"), true)
	s1.Close()
	s2.ReadWithin(reapWait)
	s2.Close()
}

// scenarioTTL covers TTL nodes: deleted once unchanged for longer than their TTL and
// childless; a TTL node with a child stays until the child goes.
func scenarioTTL(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	t1, t2 := sc.Path("t1"), sc.Path("t2")
	s1.createTTL(t2, nil, wire.FlagPersistentWithTTL, 100)
	s1.create(t2+"/child", nil, 0)
	s1.createTTL(t1, []byte("t"), wire.FlagPersistentWithTTL, 100)
	s1.exists(t1, true)
	sc.Note("wait for the reaper")
	s1.ReadWithin(reapWait)
	s1.exists(t1, false)
	sc.Note("t2 expired as long ago as t1 but has a child")
	s1.getData(t2, false)
	s1.exists(t2, true)
	s1.delete(t2+"/child", -1)
	s1.ReadWithin(reapWait)
	s1.createTTL(sc.Path("s-"), nil, wire.FlagPersistentSequentialWithTTL, 100)
	s1.Close()
}
