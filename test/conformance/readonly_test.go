package conformance

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/server/wire"
)

// TestReadOnlyMode compares read-only mode on a member cut off from its ensemble: on each
// side a 3-member ensemble with read-only mode on (Apache ZooKeeper 3.8 started with
// -Dreadonlymode.enabled=true, paddock with ReadOnlyMode) gets some data, then loses
// members 2 and 3; member 1, read-only once it notices, runs scenarioReadOnly. Then member
// 2 comes back: on both sides the read-only session's connection is closed, isro says rw,
// and a client asking for a read-only session gets an ordinary one.
//
// ZooKeeper runs with local sessions on (localSessionsEnabled, and upgrading for the
// session with an ephemeral): a read-only server then keeps its sessions local, as
// paddock's always are; with them off, ZooKeeper gives each session made while read-only
// a zxid in its memory alone, which the ensemble later discards (docs/ensemble.md).
// The pair always starts its own ensembles: a server given by address cannot be cut off.
func TestReadOnlyMode(t *testing.T) {
	var ref, sub roEnsemble
	var refErr, subErr error
	var wg sync.WaitGroup
	wg.Go(func() { ref, refErr = startZooKeeperRO(t) })
	if subject.kind == "zookeeper" {
		wg.Go(func() { sub, subErr = startZooKeeperRO(t) })
	} else {
		sub = startPaddockRO(t)
	}
	wg.Wait()
	if err := errors.Join(refErr, subErr); err != nil {
		t.Fatal(err)
	}
	refRoot, subRoot := roots(t)
	var refSetup, subSetup roSetup
	wg.Go(func() { refSetup, refErr = prepareRO(ref, refRoot) })
	wg.Go(func() { subSetup, subErr = prepareRO(sub, subRoot) })
	wg.Wait()
	if err := errors.Join(refErr, subErr); err != nil {
		t.Fatal(err)
	}

	refTarget := target{name: "reference", kind: "zookeeper", addr: ref.addr(0)}
	subTarget := target{name: "subject", kind: subject.kind, addr: sub.addr(0)}
	compareAt(t, refTarget, subTarget, refRoot, subRoot, scenarioReadOnly(refSetup), scenarioReadOnly(subSetup))

	// Member 2 back: a quorum again. Each side's read-only session is closed.
	wg.Go(func() { refErr = rejoinRO(ref) })
	wg.Go(func() { subErr = rejoinRO(sub) })
	wg.Wait()
	if refErr != nil {
		t.Fatalf("reference %v: %v", refTarget, refErr)
	}
	if subErr != nil {
		t.Errorf("subject %v: %v", subTarget, subErr)
	}
	compareAt(t, refTarget, subTarget, refRoot+"-rw", subRoot+"-rw", scenarioReadWriteAgain, scenarioReadWriteAgain)
}

// roEnsemble is one side's ensemble: member i's client address, and its stop and start.
type roEnsemble interface {
	addr(i int) string
	stop(i int)
	start(i int) error
}

type zkEnsemble struct{ *testutil.ZooKeeperEnsemble }

func (e zkEnsemble) addr(i int) string { return e.Addr(i) }
func (e zkEnsemble) stop(i int)        { e.Stop(i) }
func (e zkEnsemble) start(i int) error { return e.Start(i) }

// startZooKeeperRO starts three Apache ZooKeeper members configured as referenceOptions,
// with read-only mode and local sessions on.
func startZooKeeperRO(t *testing.T) (zkEnsemble, error) {
	o := referenceOptions
	o.Config = []string{"localSessionsEnabled=true", "localSessionsUpgradingEnabled=true"}
	o.ExtraJVMFlags = []string{"-Dreadonlymode.enabled=true"}
	e, err := testutil.StartZooKeeperEnsemble(t, 3, o)
	return zkEnsemble{e}, err
}

type paddockEnsemble struct{ e *testutil.Ensemble }

func (p paddockEnsemble) addr(i int) string { return p.e.Addrs()[i] }
func (p paddockEnsemble) stop(i int)        { p.e.Stop(i) }
func (p paddockEnsemble) start(i int) error {
	p.e.Start(i)
	return nil
}

// startPaddockRO starts three paddock members configured as configurePaddock, with
// read-only mode on.
func startPaddockRO(t *testing.T) paddockEnsemble {
	return paddockEnsemble{testutil.StartEnsemble(t, 3, 0, func(_ int, c *server.Config) {
		configurePaddock(c)
		c.ReadOnlyMode = true
	})}
}

// roSetup is what prepareRO made before cutting member 1 off: a session of the ensemble
// (it owns root/eph).
type roSetup struct {
	globalID       int64
	globalPassword []byte
}

// prepareRO writes the scenario's data through member 1 while the ensemble is whole —
// root, root/a, root/b and the ephemeral root/eph of a session left open — then stops
// members 2 and 3 and waits until member 1 says it is read-only.
func prepareRO(e roEnsemble, root string) (roSetup, error) {
	var setup roSetup
	c, _, err := zk.Connect([]string{e.addr(0)}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return setup, err
	}
	defer c.Close()
	if isro := fourLetter(e.addr(0), "isro"); isro != "rw" {
		return setup, fmt.Errorf("isro on member 1 of a whole ensemble = %q, want rw", isro)
	}
	for _, n := range []struct{ path, data string }{{root, "root"}, {root + "/a", "A"}, {root + "/b", "B"}} {
		if _, err := c.Create(n.path, []byte(n.data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			return setup, fmt.Errorf("create %s: %w", n.path, err)
		}
	}
	// A session of the ensemble, on a raw connection: its id and password are resumed
	// later. Its ephemeral makes it global on ZooKeeper too (local sessions upgrade).
	raw, err := Dial(e.addr(0), 5*time.Second)
	if err != nil {
		return setup, err
	}
	defer raw.Close()
	if err := raw.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, wire.PasswordLen)}); err != nil {
		return setup, err
	}
	resp, _, err := raw.ReadConnectResponse(DefaultReadTimeout)
	if err != nil {
		return setup, err
	}
	setup.globalID, setup.globalPassword = resp.SessionID, resp.Password
	if err := raw.Send(1, wire.OpCreate, &wire.CreateRequest{Path: root + "/eph", Data: []byte("E"),
		ACL: wire.OpenACLUnsafe, Flags: 1}); err != nil {
		return setup, err
	}
	if f, err := raw.ReadFrame(DefaultReadTimeout); err != nil || f.Header.Err != wire.OK {
		return setup, fmt.Errorf("create %s/eph: %v %v", root, f, err)
	}
	if _, err := c.Sync(root); err != nil {
		return setup, err
	}
	e.stop(1)
	e.stop(2)
	deadline := time.Now().Add(20 * time.Second)
	for fourLetter(e.addr(0), "isro") != "ro" {
		if time.Now().After(deadline) {
			return setup, fmt.Errorf("member 1 not read-only 20 s after members 2 and 3 stopped (isro %q)",
				fourLetter(e.addr(0), "isro"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return setup, nil
}

func fourLetter(addr, word string) string {
	out, err := testutil.FourLetterWord(addr, word, 2*time.Second)
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}

// scenarioReadOnly runs on a read-only member. A client asking for a read-only session
// gets one (readOnly=true); it reads, lists, sets watches and asks whoami as ever; every
// write, and sync, is answered NotReadOnly, whatever the request's body, and the
// connection stays open; it drops its connection and resumes its session on the member;
// it closes it. Clients that do not ask for read-only, and a session of the ensemble, are
// refused (the connection closed); an unknown session is told it expired. isro says ro;
// srvr and mntr say read-only.
func scenarioReadOnly(setup roSetup) func(sc *Scenario) {
	return func(sc *Scenario) {
		sc.T.AddSession("global", setup.globalID, setup.globalPassword)
		ro := ConnectOptions{ReadOnlyByte: true, ReadOnly: true}
		s := sc.Connect("ro", ro)
		a, b, eph := sc.Path("a"), sc.Path("b"), sc.Path("eph")
		s.getData(sc.Root, false)
		s.getChildren2(sc.Root, false)
		s.exists(a, true)
		s.exists(sc.Path("missing"), true)
		s.getData(eph, false)
		s.getACL(b)
		s.multiRead(opGetData(a), opGetChildren(sc.Root), opGetData(sc.Path("missing")))
		s.whoAmI()
		s.CallXid(wire.XidPing, wire.OpPing, nil)
		s.getData(b, true)
		s.addWatch(sc.Root, wire.AddWatchPersistentRecursive)
		s.Call(wire.OpGetAllChildrenNumber, &wire.PathRecord{Path: sc.Root})

		sc.Note("every write, and sync, is refused; the connection stays open")
		s.create(sc.Path("new"), []byte("x"), 0)
		s.create2(sc.Path("new"), []byte("x"), 0)
		s.createContainer(sc.Path("cont"), nil)
		s.createTTL(sc.Path("ttl"), nil, 5, 1000)
		s.setData(a, []byte("x"), -1)
		s.delete(b, -1)
		s.setACL(b, wire.OpenACLUnsafe, -1)
		s.multi(opCheck(a, -1), opSetData(a, []byte("x"), -1))
		s.Call(wire.OpCheck, &wire.PathVersionRequest{Path: a, Version: 0})
		s.Call(wire.OpSync, &wire.PathRecord{Path: sc.Root})
		s.Call(wire.OpReconfig, &wire.ReconfigRequest{JoiningServers: "", LeavingServers: "3", NewMembers: "", CurConfigID: -1})
		s.SendBody(s.Conn().NextXid(), wire.OpCreate, []byte{0, 0, 0, 9}, "a create whose body is cut short")
		s.Read()
		s.getData(a, false)

		sc.Note("a client that does not ask for read-only, and a session of the ensemble, are refused")
		sc.Connect("plain", ConnectOptions{})
		sc.Connect("rwflag", ConnectOptions{ReadOnlyByte: true, ReadOnly: false})
		sc.Connect("global", ConnectOptions{ReadOnlyByte: true, ReadOnly: true, SessionID: setup.globalID,
			Password: setup.globalPassword})
		sc.Note("an unknown session expired")
		sc.Connect("unknown", ConnectOptions{ReadOnlyByte: true, ReadOnly: true, SessionID: s.ID ^ 0x5a5a,
			Password: make([]byte, wire.PasswordLen)})

		sc.Note("the read-only session resumes on a new connection; its watches went with the old one")
		s.Drop()
		s.Reconnect(ro)
		s.getData(a, false)
		s.checkWatches(a, wire.WatcherAny)

		for _, word := range []string{"isro", "srvr", "mntr"} {
			out := sc.Dial(word)
			out.WriteRaw([]byte(word), word)
			text := out.ReadText()
			for _, line := range Lines(text) {
				if word == "isro" || strings.HasPrefix(line, "Mode:") || strings.HasPrefix(line, "READ-ONLY") ||
					strings.HasPrefix(line, "zk_server_state") {
					sc.T.Add("%s: %s", word, line)
				}
			}
		}
		s.Close()
	}
}

// rejoinRO starts member 2 again and checks that member 1 closes a read-only session's
// connection once it serves again, and that isro then says rw.
func rejoinRO(e roEnsemble) error {
	c, err := Dial(e.addr(0), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SendConnect(&wire.ConnectRequest{Timeout: 10000, Password: make([]byte, wire.PasswordLen),
		HasReadOnly: true, ReadOnly: true}); err != nil {
		return err
	}
	if resp, _, err := c.ReadConnectResponse(DefaultReadTimeout); err != nil || !resp.ReadOnly {
		return fmt.Errorf("read-only session before member 2 is back: %+v, %v", resp, err)
	}
	if err := e.start(1); err != nil {
		return err
	}
	for {
		_, err := c.ReadFrame(30 * time.Second)
		if IsClosed(err) {
			break
		}
		if err != nil {
			return fmt.Errorf("the read-only session's connection stayed open after member 2 came back: %w", err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for fourLetter(e.addr(0), "isro") != "rw" {
		if time.Now().After(deadline) {
			return fmt.Errorf("member 1 not read-write 20 s after member 2 came back (isro %q)", fourLetter(e.addr(0), "isro"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// scenarioReadWriteAgain: once member 1 serves again, a client asking for a read-only
// session gets an ordinary one, readOnly=false, and writes.
func scenarioReadWriteAgain(sc *Scenario) {
	s := sc.Connect("ro", ConnectOptions{ReadOnlyByte: true, ReadOnly: true})
	s.create(sc.Root, []byte("rw"), 0)
	s.getData(sc.Root, false)
	out := sc.Dial("isro")
	out.WriteRaw([]byte("isro"), "isro")
	sc.T.Add("isro: %s", out.ReadText())
}
