package conformance

import "github.com/paddock/paddock/server/wire"

// scenarioWatches covers one-shot watches from exists, getData and getChildren seen from
// two sessions: what each registers (exists on a missing node does, getData does not), one
// notification per connection per change, NodeDeleted once for data and child watchers,
// setACL firing nothing, and notifications arriving before the reply of the write that
// fired them. Barriers show that nothing else arrives.
func scenarioWatches(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s2 := sc.Connect("s2", ConnectOptions{})
	w := sc.Path("w")
	s1.create(sc.Root, nil, 0)
	s1.create(w, []byte("a"), 0)
	s2.exists(w, true)
	s2.getData(w, true)
	s2.getChildren(w, true)
	s2.exists(sc.Path("new"), true)
	s2.getData(sc.Path("new2"), true)
	s2.getChildren(sc.Path("new3"), true)
	s2.getChildren2(sc.Root, true)

	sc.Note("a data change fires once for exists+getData")
	s1.setData(w, []byte("b"), -1)
	s2.Barrier()
	s1.setData(w, []byte("c"), -1)
	s2.Barrier()
	sc.Note("creates fire the exists watch and the parent's child watch; getData on a missing node left none")
	s1.create(sc.Path("new"), nil, 0)
	s2.Barrier()
	s1.create(sc.Path("new2"), nil, 0)
	s1.create(sc.Path("new3"), nil, 0)
	s2.Barrier()
	s1.create(w+"/c", nil, 0)
	s2.Barrier()

	sc.Note("delete fires NodeDeleted once for data and child watchers, and the parent's child watch")
	s2.getData(w+"/c", true)
	s2.getChildren(w+"/c", true)
	s2.exists(w+"/c", true)
	s2.getChildren(w, true)
	s1.delete(w+"/c", -1)
	s2.Barrier()
	s2.getChildren(w, true)
	s2.exists(w, true)
	s1.delete(w, -1)
	s2.Barrier()

	sc.Note("setACL fires nothing; the watch is still there afterwards")
	s1.create(w, nil, 0)
	s2.getData(w, true)
	s1.setACL(w, wire.OpenACLUnsafe, -1)
	s2.Barrier()
	s1.setData(w, nil, -1)
	s2.Barrier()

	sc.Note("a session that watches and then writes sees its notification before its reply")
	s1.getData(w, true)
	s2.exists(w, true)
	s1.setData(w, []byte("self"), -1)
	s2.Barrier()
	s1.getChildren(w, true)
	s1.exists(w+"/k", true)
	s1.create(w+"/k", nil, 0)
	s1.exists(w, true)
	s1.getChildren(w, true)
	s1.delete(w+"/k", -1)
	s1.multi(opSetData(w, []byte("m"), -1), opCreate(wire.OpCreate, w+"/k", nil, 0))
	s1.Barrier()
	s1.Close()
	s2.Close()
}

// scenarioPersistentWatches covers addWatch in both modes, checkWatches and removeWatches:
// persistent watches stay after firing and after the node is deleted; recursive watches see
// NodeCreated/Deleted/DataChanged for the whole subtree and never NodeChildrenChanged.
func scenarioPersistentWatches(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s2 := sc.Connect("s2", ConnectOptions{})
	s3 := sc.Connect("s3", ConnectOptions{})
	p := sc.Path("p")
	s1.create(sc.Root, nil, 0)
	s2.addWatch(p, wire.AddWatchPersistent)
	s3.addWatch(sc.Root, wire.AddWatchPersistentRecursive)
	step := func(what string, write func()) {
		sc.Note("%s", what)
		write()
		s2.Barrier()
		s3.Barrier()
	}
	step("create the watched node", func() { s1.create(p, []byte("0"), 0) })
	step("create a child", func() { s1.create(p+"/c", nil, 0) })
	step("create a grandchild", func() { s1.create(p+"/c/g", nil, 0) })
	step("set the node", func() { s1.setData(p, []byte("1"), -1) })
	step("set the grandchild", func() { s1.setData(p+"/c/g", []byte("1"), -1) })
	step("delete grandchild and child", func() { s1.delete(p+"/c/g", -1); s1.delete(p+"/c", -1) })
	step("delete the node", func() { s1.delete(p, -1) })
	step("create it again: persistent watches survive the delete", func() { s1.create(p, nil, 0) })
	step("a multi", func() { s1.multi(opCreate(wire.OpCreate, p+"/m", nil, 0), opSetData(p, nil, -1)) })

	sc.Note("checkWatches and removeWatches by type: 1 children, 2 data, 3 any")
	for _, typ := range []wire.WatcherType{wire.WatcherChildren, wire.WatcherData, wire.WatcherAny} {
		s2.checkWatches(p, typ)
		s3.checkWatches(sc.Root, typ)
		s3.checkWatches(p, typ)
	}
	s2.checkWatches(sc.Path("none"), wire.WatcherAny)
	s2.removeWatches(sc.Path("none"), wire.WatcherAny)
	s2.removeWatches(p, wire.WatcherData)
	s2.checkWatches(p, wire.WatcherData)
	s2.checkWatches(p, wire.WatcherChildren)
	step("after removing the data part", func() { s1.setData(p, nil, -1); s1.create(p+"/n", nil, 0) })
	s2.removeWatches(p, wire.WatcherAny)
	s2.checkWatches(p, wire.WatcherAny)
	s3.removeWatches(sc.Root, wire.WatcherAny)
	step("after removing everything", func() { s1.setData(p, nil, -1); s1.create(p+"/o", nil, 0) })

	sc.Note("one-shot watches: check and remove by type")
	s2.getData(p, true)
	s2.getChildren(p, true)
	s2.checkWatches(p, wire.WatcherData)
	s2.removeWatches(p, wire.WatcherData)
	s2.checkWatches(p, wire.WatcherData)
	s2.checkWatches(p, wire.WatcherChildren)
	step("only the child watch is left", func() { s1.setData(p, nil, -1); s1.create(p+"/q", nil, 0) })

	sc.Note("one-shot and persistent watches on one node fire once")
	s2.addWatch(p, wire.AddWatchPersistent)
	s2.getData(p, true)
	step("both registered", func() { s1.setData(p, nil, -1) })

	sc.Note("odd modes and types")
	s2.addWatch(p, 2)
	s2.addWatch(p, -1)
	s2.checkWatches(p, 4)
	s2.checkWatches(p, 5)
	s2.removeWatches(p, 0)
	s2.removeWatches(p, 9)
	s1.Close()
	s2.Close()
	s3.Close()
}

// scenarioSetWatches covers reconnecting with setWatches (and setWatches2): changes made
// while the client was away, after its relativeZxid, fire at once and before the reply;
// watches on unchanged nodes are registered and fire later. The reply echoes xid -8.
func scenarioSetWatches(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s2 := sc.Connect("s2", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	for _, n := range []string{"d", "c", "gone", "stable", "early"} {
		s1.create(sc.Path(n), []byte(n), 0)
	}
	s1.setData(sc.Path("early"), []byte("changed before relativeZxid"), -1)
	s2.getData(sc.Path("d"), true)
	s2.exists(sc.Path("new"), true)
	s2.getChildren(sc.Path("c"), true)
	s2.getData(sc.Path("gone"), true)
	s2.getData(sc.Path("stable"), true)
	s2.Drop()

	s1.setData(sc.Path("d"), []byte("d2"), -1)
	s1.create(sc.Path("new"), nil, 0)
	s1.create(sc.Path("c/x"), nil, 0)
	s1.delete(sc.Path("gone"), -1)

	sc.Note("reconnect and re-register: the changes since relativeZxid fire before the reply")
	s2.Reconnect(ConnectOptions{})
	s2.CallXid(wire.XidSetWatches, wire.OpSetWatches, &wire.SetWatches{
		RelativeZxid: s2.Conn().LastZxid,
		Data:         []string{sc.Path("d"), sc.Path("gone"), sc.Path("stable"), sc.Path("early")},
		Exist:        []string{sc.Path("new"), sc.Path("absent")},
		Child:        []string{sc.Path("c"), sc.Path("stable"), sc.Path("nochild")},
	})
	sc.Note("the watches on unchanged nodes were registered")
	s1.setData(sc.Path("stable"), nil, -1)
	s1.setData(sc.Path("early"), nil, -1)
	s1.create(sc.Path("absent"), nil, 0)
	s1.create(sc.Path("stable/k"), nil, 0)
	s2.Barrier()

	sc.Note("relativeZxid 0: everything counts as changed; a normal xid is echoed")
	s2.CallXid(41, wire.OpSetWatches, &wire.SetWatches{
		Data:  []string{sc.Path("d")},
		Exist: []string{sc.Path("new")},
		Child: []string{sc.Path("c")},
	})
	sc.Note("setWatches2 with persistent and recursive watches")
	s3 := sc.Connect("s3", ConnectOptions{})
	s3.CallXid(wire.XidSetWatches, wire.OpSetWatches2, &wire.SetWatches{V2: true,
		RelativeZxid:        s3.Conn().LastZxid,
		Persistent:          []string{sc.Path("p2")},
		PersistentRecursive: []string{sc.Path("r2")},
	})
	s1.create(sc.Path("p2"), nil, 0)
	s1.create(sc.Path("p2/x"), nil, 0)
	s1.create(sc.Path("r2"), nil, 0)
	s1.create(sc.Path("r2/x"), nil, 0)
	s3.Barrier()
	s1.Close()
	s2.Close()
	s3.Close()
}
