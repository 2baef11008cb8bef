package conformance

import "github.com/paddock/paddock/server/wire"

// scenarioMulti covers multi (with check) and multiRead: every result entry with its type,
// all-or-nothing failure lists, the events a multi fires, and malformed op mixes.
func scenarioMulti(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s2 := sc.Connect("s2", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	m1 := sc.Path("m1")
	s2.exists(m1, true)
	s2.getChildren(sc.Root, true)
	sc.Note("success: one result per op, all with the multi's zxid")
	s1.multi(
		opCreate(wire.OpCreate, m1, []byte("1"), 0),
		opCreate(wire.OpCreate2, sc.Path("m2"), nil, 0),
		opCreate(wire.OpCreateContainer, sc.Path("mc"), nil, wire.FlagContainer),
		opCreateTTL(sc.Path("mt"), wire.FlagPersistentWithTTL, 3600000),
		opCreate(wire.OpCreate, sc.Path("seq-"), nil, wire.FlagPersistentSequential),
		opSetData(m1, []byte("one"), 0),
		opCheck(m1, 1),
		opDelete(sc.Path("m2"), 0),
		opCreate(wire.OpCreate, sc.Path("m2"), []byte("again"), wire.FlagEphemeral),
	)
	s2.Barrier()
	s1.getChildren2(sc.Root, false)
	s1.getData(m1, false)

	sc.Note("failure: nothing applied; ops before the failing one err 0, after it -2; header err 0")
	s1.multi(
		opCreate(wire.OpCreate, sc.Path("f1"), nil, 0),
		opSetData(sc.Path("missing"), nil, -1),
		opCreate(wire.OpCreate, sc.Path("f2"), nil, 0),
	)
	s1.exists(sc.Path("f1"), false)
	s1.multi(opCheck(m1, 0), opSetData(m1, nil, -1))
	s1.multi(opCheck(sc.Path("missing"), -1))
	s1.multi(opSetData(m1, []byte("x"), -1), opCheck(m1, 1))
	s1.multi(opCreate(wire.OpCreate, m1, nil, 0))
	s1.multi(opDelete(sc.Root, -1))
	s1.multi(opCreate(wire.OpCreate, sc.Path("bad//path"), nil, 0), opCreate(wire.OpCreate, sc.Path("f3"), nil, 0))
	s1.multi(opCreate(wire.OpCreate, sc.Path("m2/child"), nil, 0))
	s1.multi(opCreateTTL(sc.Path("t0"), wire.FlagPersistentWithTTL, 0))
	s1.multi(opCreate(wire.OpCreate, sc.Path("f4"), nil, 0), opCreate(wire.OpCreate, sc.Path("f4"), nil, 0))
	s1.getData(m1, false)

	sc.Note("empty multi; the container flag on a plain create inside multi")
	s1.multi()
	s1.multi(opCreate(wire.OpCreate, sc.Path("mc2"), nil, wire.FlagContainer))
	s1.multi(opCreate(wire.OpCreate2, sc.Path("mc3"), nil, wire.FlagContainer))
	s1.multi(opCreate(wire.OpCreate, sc.Path("mc4"), nil, wire.FlagPersistentWithTTL))

	sc.Note("reads inside multi, writes inside multiRead")
	s1.multi(opGetData(m1))
	s1.multi(opSetData(m1, nil, -1), opGetData(m1))
	s1.multiRead(opSetData(m1, nil, -1))
	s1.multiRead(opCheck(m1, -1))
	s1.getData(m1, false)

	sc.Note("multiRead: not atomic, one result or error per op")
	s1.multiRead(opGetData(m1), opGetChildren(sc.Root), opGetData(sc.Path("missing")),
		opGetChildren(sc.Path("missing")), opGetData(sc.Path("mt")))
	s1.multiRead()
	s1.Close()
	s2.Close()
}
