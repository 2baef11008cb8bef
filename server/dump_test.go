package server

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/server/store"
)

func TestDumpStore(t *testing.T) {
	cfg := testConfig(t)
	cfg.SnapCount = 4
	s := startTest(t, cfg)
	c, _, err := zk.Connect([]string{s.Addr().String()}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/d", "/d/text"} {
		if _, err := c.Create(p, []byte("hello"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Multi(&zk.CreateRequest{Path: "/d/bin", Data: []byte{0, 1, 2}, Acl: zk.WorldACL(zk.PermRead)},
		&zk.SetDataRequest{Path: "/d", Data: []byte("v2"), Version: -1}); err != nil {
		t.Fatal(err)
	}
	c.Delete("/missing", -1)
	waitFor(t, "a snapshot", func() bool { return snapshotCount(t, s) >= 1 && !s.log.(*solo).snapshotting.Load() })
	s.Close()

	var out bytes.Buffer
	if err := DumpStore(&out, cfg.DataDir, ""); err != nil {
		t.Fatalf("dump: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"snapshot " + filepath.Join(cfg.DataDir, "snap", "snapshot."),
		`/d/text czxid=`, `data="hello"`,
		`multi [create path="/d/bin" flags=0 acl=[world:anyone:1] data=0x000102; setData path="/d" version=-1 data="v2"]`,
		`delete path="/missing" version=-1`,
		"createSession timeout=",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dump lacks %q:\n%s", want, out.String())
		}
	}

	// Damage the log's first record: the dump says where and fails.
	segs, _ := filepath.Glob(filepath.Join(cfg.DataDir, "log", "*.wal"))
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	b[40] ^= 0xff
	os.WriteFile(segs[0], b, 0o640)
	out.Reset()
	err = DumpStore(&out, cfg.DataDir, "")
	if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(out.String(), "! log ends:") {
		t.Fatalf("a damaged log: err %v\n%s", err, out.String())
	}
}
