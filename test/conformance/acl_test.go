package conformance

import (
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/server/wire"
)

// digestACL builds a digest ACL entry with go-zookeeper/zk's helper (SHA-1, std base64),
// so the suite also checks that the client's digest matches the servers'.
func digestACL(perms wire.Perm, user, password string) wire.ACL {
	a := zk.DigestACL(int32(perms), user, password)[0]
	return wire.ACL{Perms: perms, Scheme: a.Scheme, ID: a.ID}
}

// scenarioACL covers auth, setACL/getACL (aversion, masking), whoAmI, and the ACL checks of
// each operation for world, auth, digest, ip and super identities.
func scenarioACL(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.whoAmI()
	sc.Note("auth echoes the xid: -4 as Java and kazoo send it, or a normal one as go-zk does")
	s1.auth("digest", "alice:secret")
	s1.CallXid(77, wire.OpAuth, &wire.AuthPacket{Scheme: "digest", Auth: []byte("alice:secret")})
	s1.whoAmI()
	s1.create(sc.Root, nil, 0)
	alice := digestACL(wire.PermAll, "alice", "secret")
	s1.createACL(wire.OpCreate, sc.Path("d"), []byte("d"), []wire.ACL{alice}, 0)
	s1.createACL(wire.OpCreate, sc.Path("auth"), []byte("a"), []wire.ACL{acl(wire.PermAll, "auth", "")}, 0)
	s1.getACL(sc.Path("auth"))
	s1.createACL(wire.OpCreate, sc.Path("ro"), []byte("r"), wire.ReadACLUnsafe, 0)
	s1.createACL(wire.OpCreate, sc.Path("ip"), []byte("i"), []wire.ACL{acl(wire.PermAll, "ip", "127.0.0.1")}, 0)
	s1.createACL(wire.OpCreate, sc.Path("ipnet"), []byte("n"), []wire.ACL{acl(wire.PermAll, "ip", "127.0.0.0/8")}, 0)
	s1.createACL(wire.OpCreate, sc.Path("other"), []byte("o"), []wire.ACL{acl(wire.PermAll, "ip", "10.0.0.0/8")}, 0)
	s1.createACL(wire.OpCreate, sc.Path("mask"), nil, []wire.ACL{alice, acl(wire.PermRead, "world", "anyone")}, 0)
	s1.createACL(wire.OpCreate, sc.Path("cr"), nil, []wire.ACL{acl(wire.PermCreate|wire.PermRead, "world", "anyone")}, 0)
	s1.create(sc.Path("cr/child"), nil, 0)
	s1.createACL(wire.OpCreate, sc.Path("d/child"), nil, wire.OpenACLUnsafe, 0)

	sc.Note("s2 has only its ip identity")
	s2 := sc.Connect("s2", ConnectOptions{})
	d := sc.Path("d")
	s2.getData(d, false)
	s2.exists(d, false)
	s2.getACL(d)
	s2.getChildren(d, false)
	s2.getChildren2(d, false)
	s2.Call(wire.OpGetAllChildrenNumber, &wire.PathRecord{Path: d})
	s2.setData(d, []byte("x"), -1)
	s2.setACL(d, wire.OpenACLUnsafe, -1)
	s2.create(d+"/x", nil, 0)
	s2.delete(d+"/child", -1)
	s2.multiRead(opGetData(d), opGetChildren(d), opGetData(sc.Path("ro")))
	s2.multi(opCheck(d, -1))
	s2.multi(opSetData(d, nil, -1))
	s2.getACL(sc.Path("mask"))
	s2.getData(sc.Path("ro"), false)
	s2.setData(sc.Path("ro"), nil, -1)
	s2.create(sc.Path("ro/x"), nil, 0)
	s2.setACL(sc.Path("ro"), wire.OpenACLUnsafe, -1)
	s2.getData(sc.Path("ip"), false)
	s2.getData(sc.Path("ipnet"), false)
	s2.getData(sc.Path("other"), false)
	s2.getACL(sc.Path("other"))
	s2.create(sc.Path("cr/new"), nil, 0)
	s2.delete(sc.Path("cr/child"), -1)
	s2.getData(sc.Path("auth"), false)

	sc.Note("watches on nodes the watcher cannot read")
	s2.exists(d, true)
	s1.setData(d, []byte("d2"), -1)
	s2.Barrier()

	sc.Note("more identities: a wrong digest adds nothing useful, the right one grants access")
	s2.auth("digest", "alice:wrong")
	s2.getData(d, false)
	s2.auth("digest", "alice:secret")
	s2.auth("digest", "blah")
	s2.auth("ip", "")
	s2.whoAmI()
	s2.getData(d, false)
	s2.getACL(sc.Path("mask"))

	sc.Note("setACL: aversion check, invalid ACLs, NoNode")
	o := sc.Path("open")
	s1.create(o, nil, 0)
	s1.setACL(o, []wire.ACL{alice, acl(wire.PermRead, "world", "anyone")}, 0)
	s1.setACL(o, wire.OpenACLUnsafe, 0)
	s1.setACL(o, wire.OpenACLUnsafe, 1)
	s1.setACL(o, nil, -1)
	s1.setACL(o, []wire.ACL{acl(wire.PermAll, "world", "bob")}, -1)
	s1.setACL(sc.Path("missing"), wire.OpenACLUnsafe, -1)
	s1.getACL(o)
	s1.getACL(sc.Path("missing"))
	s1.exists(o, false)

	sc.Note("super (digest super:test) passes every check")
	s3 := sc.Connect("s3", ConnectOptions{})
	s3.auth("digest", "super:test")
	s3.whoAmI()
	s3.getData(d, false)
	s3.getACL(sc.Path("mask"))
	s3.setData(sc.Path("other"), []byte("s"), -1)
	s3.setACL(sc.Path("ro"), wire.OpenACLUnsafe, -1)
	s3.delete(sc.Path("cr/child"), -1)

	sc.Note("whoAmI's order after the identity table grows: ip and 14 digests, one repeated")
	s6 := sc.Connect("s6", ConnectOptions{})
	for i := 1; i <= 14; i++ {
		s6.auth("digest", fmt.Sprintf("u%d:pw", i))
		if i == 10 || i == 11 {
			s6.whoAmI() // 11 and 12 identities: the 12th doubles the table
		}
	}
	s6.auth("digest", "u3:pw")
	s6.auth("digest", "super:test")
	s6.whoAmI()
	s6.Close()

	sc.Note("whoAmI's order when digests share a bin: the ids of these users hash alike in their low 7 bits")
	s7 := sc.Connect("s7", ConnectOptions{})
	for i, user := range []string{"t62", "t214", "t340", "t572", "t587", "t796", "t816", "t1195", "t1222", "t1377", "t1408", "t1528"} {
		s7.auth("digest", user+":pw")
		if i == 7 || i == 8 || i == 9 {
			s7.whoAmI() // 8 in one bin; the 9th grows the table to 128 bins; the 10th makes the bin a tree
		}
	}
	s7.whoAmI()
	s7.Close()

	sc.Note("an unknown scheme: AuthFailed with the request's xid, then the connection closes")
	s4 := sc.Connect("s4", ConnectOptions{})
	s4.auth("foo", "bar")
	s4.ExpectClosed()
	s5 := sc.Connect("s5", ConnectOptions{})
	s5.CallXid(9, wire.OpAuth, &wire.AuthPacket{Scheme: "world", Auth: []byte("anyone")})
	s5.ExpectClosed()
	s1.Close()
	s2.Close()
	s3.Close()
}
