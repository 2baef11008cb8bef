package conformance

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/server/wire"
)

// scenarioGoZK drives the servers with github.com/go-zookeeper/zk, the client the paddock
// services use, and records what its API returns: the raw suite checks the wire, this
// checks that the client decodes it (it never sends the readOnly byte, sends auth and
// setWatches with normal xids, and decodes multi results of types -1, 1, 2, 5, 13 only).
func scenarioGoZK(sc *Scenario) {
	c, events, err := zk.Connect([]string{sc.Addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
	if err != nil {
		sc.Fatalf("go-zk connect: %v", err)
	}
	defer c.Close()
	waitConnected(sc, events)
	sc.T.AddSession("gozk", c.SessionID(), nil)
	rec := func(what string, err error, results ...any) {
		parts := []string{}
		for _, r := range results {
			parts = append(parts, describeGoZK(r))
		}
		sc.T.Add("gozk %s -> err=%v %s", strings.ReplaceAll(what, sc.Root, "/ROOT"), errText(err), strings.Join(parts, " "))
	}
	p, err := c.Create(sc.Root, []byte("root"), 0, zk.WorldACL(zk.PermAll))
	rec("Create", err, p)
	p, err = c.Create(sc.Path("seq-"), nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	rec("Create sequential", err, p)
	p, err = c.CreateProtectedEphemeralSequential(sc.Path("lock-"), nil, zk.WorldACL(zk.PermAll))
	rec("CreateProtectedEphemeralSequential", err, protectedRE.ReplaceAllString(p, "_c_<guid>-"))
	p, err = c.CreateContainer(sc.Path("cont"), nil, zk.FlagTTL, zk.WorldACL(zk.PermAll))
	rec("CreateContainer (flag TTL)", err, p)
	p, err = c.CreateContainer(sc.Path("cont"), nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
	rec("CreateContainer", err, p)
	p, err = c.CreateTTL(sc.Path("ttl"), nil, zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Hour)
	rec("CreateTTL", err, p)
	_, err = c.Create(sc.Root, nil, 0, zk.WorldACL(zk.PermAll))
	rec("Create existing", err)

	data, st, err := c.Get(sc.Root)
	rec("Get", err, data, st)
	st, err = c.Set(sc.Root, []byte("v1"), st.Version)
	rec("Set", err, st)
	_, err = c.Set(sc.Root, nil, 99)
	rec("Set bad version", err)
	ok, st, err := c.Exists(sc.Path("missing"))
	rec("Exists missing", err, ok, st)
	children, st, err := c.Children(sc.Root)
	for i, ch := range children {
		children[i] = protectedRE.ReplaceAllString(ch, "_c_<guid>-")
	}
	rec("Children", err, children, st)
	_, err = c.Sync(sc.Root)
	rec("Sync", err)

	sc.Note("watches through go-zk")
	_, _, wData, err := c.GetW(sc.Root)
	rec("GetW", err)
	_, _, wExists, err := c.ExistsW(sc.Path("w"))
	rec("ExistsW missing", err)
	_, _, wChildren, err := c.ChildrenW(sc.Root)
	rec("ChildrenW", err)
	_, err = c.Create(sc.Path("w"), nil, 0, zk.WorldACL(zk.PermAll))
	rec("Create w", err)
	_, err = c.Set(sc.Root, []byte("v2"), -1)
	rec("Set", err)
	for _, ch := range []<-chan zk.Event{wData, wExists, wChildren} {
		select {
		case ev := <-ch:
			rec("event", ev.Err, fmt.Sprintf("%v %s", ev.Type, ev.Path))
		case <-time.After(DefaultReadTimeout):
			sc.Fatalf("go-zk watch did not fire")
		}
	}

	sc.Note("multi through go-zk: per-op results; a failed multi applies nothing")
	res, err := c.Multi(
		&zk.CreateRequest{Path: sc.Path("m1"), Data: []byte("m"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.SetDataRequest{Path: sc.Path("m1"), Data: []byte("m2"), Version: 0},
		&zk.CheckVersionRequest{Path: sc.Path("m1"), Version: 1},
		&zk.DeleteRequest{Path: sc.Path("m1"), Version: 1},
	)
	rec("Multi", err, res)
	res, err = c.Multi(
		&zk.CreateRequest{Path: sc.Path("m2"), Acl: zk.WorldACL(zk.PermAll)},
		&zk.CreateRequest{Path: sc.Root, Acl: zk.WorldACL(zk.PermAll)},
	)
	rec("Multi failing", err, res)
	ok, _, err = c.Exists(sc.Path("m2"))
	rec("Exists m2", err, ok)

	sc.Note("ACLs through go-zk")
	err = c.AddAuth("digest", []byte("user:pw"))
	rec("AddAuth", err)
	p, err = c.Create(sc.Path("secret"), []byte("s"), 0, zk.DigestACL(zk.PermAll, "user", "pw"))
	rec("Create digest ACL", err, p)
	acls, st, err := c.GetACL(sc.Path("secret"))
	rec("GetACL", err, acls, st)
	st, err = c.SetACL(sc.Path("secret"), zk.AuthACL(zk.PermRead), -1)
	rec("SetACL auth", err, st)
	acls, _, err = c.GetACL(sc.Path("secret"))
	rec("GetACL", err, acls)
	_, err = c.Set(sc.Path("secret"), nil, -1)
	rec("Set without WRITE", err)
	err = c.Delete(sc.Path("secret"), -1)
	rec("Delete", err)
	c.Close()
	expectClosed(sc, events)
}

var protectedRE = regexp.MustCompile(`_c_[0-9a-f]{32}-`)

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

func waitConnected(sc *Scenario, events <-chan zk.Event) {
	timeout := time.After(DefaultReadTimeout)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return
			}
		case <-timeout:
			sc.Fatalf("go-zk: no session within %v", DefaultReadTimeout)
		}
	}
}

// expectClosed drains the session event channel, which go-zk closes after Close.
func expectClosed(sc *Scenario, events <-chan zk.Event) {
	timeout := time.After(DefaultReadTimeout)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-timeout:
			sc.Fatalf("go-zk: event channel not closed after Close")
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "nil"
	}
	var me interface{ Unwrap() []error }
	if errors.As(err, &me) {
		return fmt.Sprintf("%v", me.Unwrap())
	}
	return err.Error()
}

func describeGoZK(v any) string {
	switch r := v.(type) {
	case *zk.Stat:
		if r == nil {
			return "stat=nil"
		}
		return "stat=" + FormatStat(&wire.Stat{Czxid: r.Czxid, Mzxid: r.Mzxid, Ctime: r.Ctime, Mtime: r.Mtime,
			Version: r.Version, Cversion: r.Cversion, Aversion: r.Aversion, EphemeralOwner: r.EphemeralOwner,
			DataLength: r.DataLength, NumChildren: r.NumChildren, Pzxid: r.Pzxid})
	case []byte:
		return describeData(r)
	case []string:
		return describeChildren(sortedCopy(r))
	case []zk.ACL:
		a := make([]wire.ACL, len(r))
		for i, x := range r {
			a[i] = wire.ACL{Perms: wire.Perm(x.Perms), Scheme: x.Scheme, ID: x.ID}
		}
		return describeACL(a)
	case []zk.MultiResponse:
		parts := make([]string, len(r))
		for i, m := range r {
			parts[i] = fmt.Sprintf("{%q %s err=%s}", m.String, describeGoZK(m.Stat), errText(m.Error))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case string:
		return fmt.Sprintf("%q", r)
	}
	return fmt.Sprint(v)
}
