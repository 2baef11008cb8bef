package testutil

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestStartZooKeeper(t *testing.T) {
	zk, err := StartZooKeeper(t, ZooKeeperOptions{
		TickTime:               500 * time.Millisecond,
		ExtendedTypes:          true,
		SuperDigest:            SuperDigestTest,
		ContainerCheckInterval: 100 * time.Millisecond,
		FourLetterWords:        "*",
		JuteMaxBuffer:          1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(zk.Addr, "127.0.0.1:") {
		t.Errorf("Addr = %q, want 127.0.0.1:port", zk.Addr)
	}
	conf, err := FourLetterWord(zk.Addr, "conf", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tickTime=500\n", "minSessionTimeout=1000\n", "maxSessionTimeout=10000\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf output lacks %q:\n%s", want, conf)
		}
	}
	// "*" whitelists every word, so envi answers; it shows the system properties we set.
	envi, err := FourLetterWord(zk.Addr, "envi", 5*time.Second)
	if err != nil || !strings.Contains(envi, "zookeeper.version=3.8") {
		t.Errorf("envi = %q, %v; want a 3.8 zookeeper.version", envi, err)
	}

	if err := zk.Stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", zk.Addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Stop", zk.Addr)
	}
	zk.Stop() // idempotent
}

func TestStartZooKeeperDefaultWhitelist(t *testing.T) {
	zk, err := StartZooKeeper(nil, ZooKeeperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer zk.Stop()
	out, err := FourLetterWord(zk.Addr, "stat", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := "stat is not executed because it is not in the whitelist.\n"; out != want {
		t.Errorf("stat = %q, want %q", out, want)
	}
}

func TestZooCfg(t *testing.T) {
	got := ZooKeeperOptions{TickTime: 250 * time.Millisecond, FourLetterWords: "*"}.zooCfg("/d", 1234)
	want := "tickTime=250\ndataDir=/d/data\nclientPort=1234\nclientPortAddress=127.0.0.1\n" +
		"admin.enableServer=false\n4lw.commands.whitelist=*\n"
	if got != want {
		t.Errorf("zooCfg =\n%s\nwant\n%s", got, want)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, time.Second, time.Millisecond, func() bool { n++; return n == 3 }, "never reached %d", 3)
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
	if WaitFor(20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("WaitFor reported true for a condition that never holds")
	}
}

func TestStartZooKeeperWithoutJava(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := StartZooKeeper(t, ZooKeeperOptions{})
	if err == nil || !strings.Contains(err.Error(), "make test") {
		t.Fatalf("err = %v, want one that says to run make test", err)
	}
}
