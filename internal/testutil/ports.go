package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports are drawn from below the kernel's ephemeral range: a port taken from that range
// (by listening on port 0) is also what the kernel hands to outgoing connections, so
// between FreePort closing it and a server binding it, any test's client connection can
// take it ("address already in use"). Below the range only another listener can.
const (
	portLow  = 20000
	portHigh = 32000
)

var ports struct {
	sync.Mutex
	given map[int]bool // never handed out twice in one process
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and that this
// process has not handed out before. Another process can still bind it first, so a
// caller that starts a server on it should retry with a new port if the bind fails.
func FreePort() (int, error) {
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = make(map[int]bool)
	}
	if low := ephemeralLow(); low > portLow {
		high := min(portHigh, low)
		for range 1000 {
			p := portLow + rand.IntN(high-portLow)
			if ports.given[p] {
				continue
			}
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				continue
			}
			ln.Close()
			ports.given[p] = true
			return p, nil
		}
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("testutil: find a free port: %w", err)
		}
		p := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !ports.given[p] {
			ports.given[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("testutil: find a free port: none left")
}

// ephemeralLow is the first port of the kernel's ephemeral range, 0 if unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}
