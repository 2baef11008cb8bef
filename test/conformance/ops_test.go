package conformance

import "github.com/paddock/paddock/server/wire"

// scenarioReadWrite covers delete, exists, getData, setData, getChildren, getChildren2,
// getAllChildrenNumber, sync and ping with their error paths and the stat fields after
// each operation (version, cversion and pzxid rules; parents untouched by a child's data).
func scenarioReadWrite(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	n := sc.Path("n")
	s1.create(n, []byte("v0"), 0)
	s1.exists(n, false)
	s1.setData(n, []byte("v1"), 0)
	s1.setData(n, []byte("v2"), 0)
	s1.setData(n, []byte("v2"), -1)
	s1.setData(n, nil, 2)
	s1.getData(n, false)
	s1.setData(n, []byte{}, -1)
	s1.getData(n, false)
	s1.setData(sc.Path("missing"), []byte("x"), -1)
	s1.setData(sc.Path("missing"), []byte("x"), 7)
	s1.exists(sc.Path("missing"), false)
	s1.getData(sc.Path("missing"), false)
	s1.getChildren(sc.Path("missing"), false)
	s1.getChildren2(sc.Path("missing"), false)
	s1.Call(wire.OpGetAllChildrenNumber, &wire.PathRecord{Path: sc.Path("missing")})

	sc.Note("a child's create, setData and delete: parent cversion/pzxid/numChildren move, mzxid/mtime do not")
	s1.getData(sc.Root, false)
	s1.create(n+"/c1", []byte("c"), 0)
	s1.create(n+"/c2", nil, 0)
	s1.create(n+"/c1/g", nil, 0)
	s1.getData(n, false)
	s1.setData(n+"/c1", []byte("cc"), -1)
	s1.getChildren2(n, false)
	s1.getChildren(n, false)
	s1.Call(wire.OpGetAllChildrenNumber, &wire.PathRecord{Path: sc.Root})
	s1.Call(wire.OpGetAllChildrenNumber, &wire.PathRecord{Path: n + "/c2"})

	sc.Note("delete: bad version, not empty, missing, bad paths")
	s1.delete(n+"/c2", 5)
	s1.delete(n+"/c1", -1)
	s1.delete(n+"/c1/g", 0)
	s1.delete(n+"/c1/g", -1)
	s1.delete(sc.Path("missing"), -1)
	s1.delete(sc.Path("missing/deeper"), -1)
	s1.delete(n+"/", -1)
	s1.delete("noslash", -1)
	s1.delete(n+"/c2", 0)
	s1.getChildren2(n, false)
	s1.getData(n+"/c1", false)

	sc.Note("bad paths on reads")
	notePartialStat(sc, s1, "") // "" reads as the root; the root's counters depend on history
	s1.getData("noslash", false)
	s1.getChildren2(n+"/", false)
	s1.setData(n+"//x", nil, -1)

	sc.Note("sync echoes the path; ping answers with xid -2")
	s1.Call(wire.OpSync, &wire.PathRecord{Path: n})
	s1.Call(wire.OpSync, &wire.PathRecord{Path: sc.Path("missing")})
	s1.CallXid(wire.XidPing, wire.OpPing, nil)
	s1.Close()
}

// scenarioEphemerals covers getEphemerals and closeSession: a closed session's ephemerals
// are deleted, which watchers see, and its connection is closed after the reply.
func scenarioEphemerals(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s2 := sc.Connect("s2", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	s1.create(sc.Path("q"), nil, 0)
	s2.create(sc.Path("e1"), []byte("1"), wire.FlagEphemeral)
	s2.create(sc.Path("q/e2"), nil, wire.FlagEphemeral)
	s2.create(sc.Path("q/s-"), nil, wire.FlagEphemeralSequential)
	s1.create(sc.Path("mine"), nil, wire.FlagEphemeral)
	for _, prefix := range []string{sc.Root, sc.Path("q"), sc.Path("e"), sc.Path("q/e2"), sc.Path("nothing")} {
		s2.Call(wire.OpGetEphemerals, &wire.PathRecord{Path: prefix})
	}
	s1.Call(wire.OpGetEphemerals, &wire.PathRecord{Path: sc.Root})
	s1.getData(sc.Path("e1"), false)
	s1.exists(sc.Path("e1"), true)
	s1.getChildren(sc.Root, true)
	sc.Note("closeSession: reply, then the server closes the connection; watchers see the deletes")
	s2.Close()
	s1.Read()
	s1.Read()
	s1.Barrier()
	s1.getChildren2(sc.Root, false)
	s1.getChildren2(sc.Path("q"), false)
	s1.Close()
	sc.Note("after close the session's ephemerals are gone")
	s3 := sc.Connect("s3", ConnectOptions{})
	s3.exists(sc.Path("mine"), false)
	s3.Close()
}
