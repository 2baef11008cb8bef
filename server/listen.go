package server

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listenTCP listens on addr, the value of the configuration key key. An address another
// process holds is said in words, with the key and the address, so that a member of an
// ensemble started beside another server says why it stopped.
func listenTCP(key, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("server: %s %s: the address is in use by another process (another paddock or ZooKeeper?): %w",
			key, addr, syscall.EADDRINUSE)
	}
	return nil, fmt.Errorf("server: %s: %w", key, err)
}
