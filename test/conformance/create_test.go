package conformance

import "github.com/paddock/paddock/server/wire"

// scenarioCreate covers create, create2, createContainer and createTTL with their stats and
// error paths: bad paths, bad flags, bad TTLs, invalid ACLs, missing parents, existing nodes
// and children of ephemerals.
func scenarioCreate(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	sc.Note("null and empty data stay distinct")
	s1.create(sc.Path("null"), nil, 0)
	s1.getData(sc.Path("null"), false)
	s1.create(sc.Path("empty"), []byte{}, 0)
	s1.getData(sc.Path("empty"), false)
	s1.create2(sc.Path("c2"), []byte("xyz"), 0)
	s1.getData(sc.Path("c2"), false)
	s1.getData(sc.Root, false)

	sc.Note("existing node, missing parent")
	s1.create(sc.Path("c2"), nil, 0)
	s1.create2(sc.Path("c2"), nil, 0)
	s1.create(sc.Path("missing/x"), nil, 0)
	s1.create2(sc.Path("missing/x"), nil, 0)

	sc.Note("bad paths")
	for _, p := range []string{"", "noslash", sc.Root + "/", sc.Root + "//x", sc.Root + "/.", sc.Root + "/..",
		sc.Root + "/./x", sc.Root + "/a\x00b", sc.Root + "/a\x01b", sc.Root + "/a\u007fb", sc.Root + "/a\u0085b",
		sc.Root + "/a\ue000b", sc.Root + "/a\ufff0b", "/"} {
		s1.create(p, nil, 0)
	}
	s1.create(sc.Root+"/ok.dots..", nil, 0)

	sc.Note("bad flags")
	for _, f := range []int32{7, -1, 8, 1 << 20} {
		s1.create(sc.Path("flags"), nil, f)
	}
	sc.Note("TTL flags are only for createTTL")
	s1.create(sc.Path("ttlflag"), nil, wire.FlagPersistentWithTTL)
	s1.create2(sc.Path("ttlflag"), nil, wire.FlagPersistentSequentialWithTTL)
	sc.Note("the container flag on create/create2 makes a plain persistent node")
	s1.create(sc.Path("cflag"), nil, wire.FlagContainer)
	s1.create2(sc.Path("cflag2"), nil, wire.FlagContainer)

	sc.Note("ephemeral owner and no children for ephemerals")
	s1.create2(sc.Path("eph"), []byte("e"), wire.FlagEphemeral)
	s1.create(sc.Path("eph/child"), nil, 0)
	s1.create2(sc.Path("eph/child"), nil, wire.FlagEphemeral)
	s1.create(sc.Path("eph/seq-"), nil, wire.FlagEphemeralSequential)

	sc.Note("containers")
	s1.createContainer(sc.Path("cont"), []byte("c"))
	s1.create(sc.Path("cont/child"), nil, 0)
	s1.getData(sc.Path("cont"), false)
	s1.createACL(wire.OpCreateContainer, sc.Path("cont0"), nil, wire.OpenACLUnsafe, 0)
	s1.createACL(wire.OpCreateContainer, sc.Path("cont1"), nil, wire.OpenACLUnsafe, wire.FlagEphemeral)
	s1.createContainer(sc.Path("cont"), nil)
	s1.createContainer(sc.Path("missing/cont"), nil)

	sc.Note("TTL nodes (extended types on); TTL in ms, (0, 0xffffffffff]")
	s1.createTTL(sc.Path("ttl"), []byte("t"), wire.FlagPersistentWithTTL, 3600000)
	s1.createTTL(sc.Path("ttlseq-"), nil, wire.FlagPersistentSequentialWithTTL, wire.MaxTTL)
	s1.create(sc.Path("ttl/child"), nil, 0)
	for _, ttl := range []int64{0, -1, wire.MaxTTL + 1} {
		s1.createTTL(sc.Path("badttl"), nil, wire.FlagPersistentWithTTL, ttl)
	}
	// A non-TTL mode with ttl < 0 passes ZooKeeper 3.8.0's checks and then kills the server
	// (IllegalArgumentException in DataTree.processTxn, SyncThread exits), so only ttl >= 0.
	for _, f := range []int32{wire.FlagPersistent, wire.FlagEphemeral, wire.FlagPersistentSequential, wire.FlagContainer} {
		s1.createTTL(sc.Path("ttlmode"), nil, f, 1000)
	}
	s1.createTTL(sc.Path("ttl"), nil, wire.FlagPersistentWithTTL, 1000)
	s1.createTTL(sc.Path("missing/ttl"), nil, wire.FlagPersistentWithTTL, 1000)

	sc.Note("invalid ACLs; this connection has only its ip identity")
	for _, a := range [][]wire.ACL{
		{},
		nil,
		{acl(wire.PermAll, "world", "bob")},
		{acl(wire.PermAll, "digest", "nocolon")},
		{acl(wire.PermAll, "digest", "a:b:c")},
		{acl(wire.PermAll, "auth", "")},
		{acl(wire.PermAll, "ip", "not-an-ip")},
		{acl(wire.PermAll, "ip", "10.0.0.0/99")},
		{acl(wire.PermAll, "foo", "bar")},
		{acl(wire.PermAll, "super", "")},
		{acl(wire.PermAll, "world", "anyone"), acl(wire.PermAll, "foo", "bar")},
	} {
		s1.createACL(wire.OpCreate, sc.Path("acl"), nil, a, 0)
	}
	sc.Note("valid unusual ACLs: duplicates, perms 0 and out of range, ip networks")
	s1.createACL(wire.OpCreate, sc.Path("dup"), nil, []wire.ACL{acl(wire.PermAll, "world", "anyone"), acl(wire.PermAll, "world", "anyone")}, 0)
	s1.getACL(sc.Path("dup"))
	s1.createACL(wire.OpCreate, sc.Path("perm0"), nil, []wire.ACL{acl(0, "world", "anyone")}, 0)
	s1.getACL(sc.Path("perm0"))
	s1.createACL(wire.OpCreate, sc.Path("perm99"), nil, []wire.ACL{acl(99, "world", "anyone")}, 0)
	s1.getACL(sc.Path("perm99"))
	s1.createACL(wire.OpCreate2, sc.Path("ipnet"), nil, []wire.ACL{acl(wire.PermAll, "ip", "10.0.0.0/8"), acl(wire.PermRead, "ip", "127.0.0.1")}, 0)
	s1.getACL(sc.Path("ipnet"))
	sc.Note("which check comes first")
	s1.createACL(wire.OpCreate, sc.Path("missing/acl"), nil, nil, 0)
	s1.createACL(wire.OpCreate, sc.Path("c2"), nil, nil, 0)
	s1.create(sc.Path("missing/bad//path"), nil, 0)
	s1.create(sc.Path("missing/x"), nil, 9)
	s1.createTTL(sc.Path("missing/x"), nil, wire.FlagPersistentWithTTL, 0)
	s1.getChildren2(sc.Root, false)
	s1.Close()
}

// scenarioSequential covers sequential names: %010d of the parent's child-create counter,
// which non-sequential creates also advance and deletes never rewind, and the trailing-slash
// form.
func scenarioSequential(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	p := sc.Path("p")
	s1.create(p, nil, 0)
	s1.create(p+"/a-", nil, wire.FlagPersistentSequential)
	s1.create(p+"/plain", nil, 0)
	s1.create2(p+"/b-", []byte("b"), wire.FlagPersistentSequential)
	s1.delete(p+"/plain", -1)
	s1.create(p+"/c-", nil, wire.FlagEphemeralSequential)
	s1.getChildren2(p, false)
	sc.Note("trailing slash: the name is just the number; not allowed without the sequential flag")
	s1.create(p+"/", nil, wire.FlagPersistentSequential)
	s1.create2(p+"/", nil, wire.FlagEphemeralSequential)
	s1.create(p+"/", nil, 0)
	s1.createTTL(p+"/", nil, wire.FlagPersistentSequentialWithTTL, 60000)
	sc.Note("failed creates do not advance the counter")
	s1.create(p+"/a-0000000000", nil, 0)
	s1.create(p+"/missing/x", nil, 0)
	s1.create(p+"/d-", nil, wire.FlagPersistentSequential)
	sc.Note("a sequential name that already exists")
	s1.create(p+"/x0000000009", nil, 0)
	s1.create(p+"/x", nil, wire.FlagPersistentSequential)
	s1.create(p+"/x", nil, wire.FlagPersistentSequential)
	s1.getChildren2(p, false)
	s1.Call(wire.OpGetAllChildrenNumber, &wire.PathRecord{Path: sc.Root})
	s1.Close()
}
