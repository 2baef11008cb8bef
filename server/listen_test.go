package server

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
)

// TestListenAddressInUse: a server whose client or peer address another process holds
// stops at start, naming the key, the address and that it is in use. (A taken admin
// address is not fatal: TestAdminAddrInUse.)
func TestListenAddressInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	addr := held.Addr().String()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := other.Addr().(*net.TCPAddr).Port
	other.Close() // member 2's peer port: never dialled before the start fails
	tests := []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"client", func(c *Config) { c.ClientAddr = addr },
			"server: client_addr " + addr + ": the address is in use by another process (another paddock or ZooKeeper?): address already in use"},
		{"peer", func(c *Config) {
			c.Ensemble = []string{"1=" + addr + ":" + fmt.Sprint(held.Addr().(*net.TCPAddr).Port) + ":participant",
				fmt.Sprintf("2=127.0.0.1:%d:%d", free, free)}
		}, "server: start ensemble member: quorum: peer address " + addr + " of server.1: the address is in use by another process (another member or ZooKeeper?): address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.set(&cfg)
			s, err := New(cfg, testLogger())
			if err != nil {
				t.Fatal(err)
			}
			err = s.Start()
			if err == nil {
				s.Close()
				t.Fatal("started on an address in use")
			}
			if err.Error() != tt.want || !errors.Is(err, syscall.EADDRINUSE) {
				t.Errorf("start: %q\nwant %q (and EADDRINUSE)", err, tt.want)
			}
		})
	}
}
