package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/server"
)

// The configuration both targets run with. It is the one place to look when mirroring the
// reference in paddock: referenceOptions is the Apache ZooKeeper side, configurePaddock
// the same settings as server.Config.
//
//	tickTime 500 ms               session timeouts negotiate into [1000, 10000] ms
//	extended types on             TTL nodes (createTTL, flags 5/6)
//	super digest super:test       digest auth "super:test" passes every ACL check
//	container check every 200 ms  empty containers and expired TTL nodes are reaped quickly
//	4lw whitelist *               every four-letter word answers
//	jute.maxbuffer 0xfffff        the default: larger request frames close the connection
//	admin server off
const (
	tickTime               = 500 * time.Millisecond
	containerCheckInterval = 200 * time.Millisecond
	juteMaxBuffer          = 0xfffff
)

var referenceOptions = testutil.ZooKeeperOptions{
	TickTime:               tickTime,
	ExtendedTypes:          true,
	SuperDigest:            testutil.SuperDigestTest,
	ContainerCheckInterval: containerCheckInterval,
	FourLetterWords:        "*",
	JuteMaxBuffer:          juteMaxBuffer,
}

// configurePaddock sets a paddock server.Config to match referenceOptions.
func configurePaddock(c *server.Config) {
	c.TickTime = tickTime
	c.ExtendedTypes = true
	c.SuperDigest = testutil.SuperDigestTest
	c.ContainerCheckInterval = containerCheckInterval
	c.FourLetterWords = []string{"*"}
	c.MaxBuffer = juteMaxBuffer
	c.AdminAddr = ""
}

// defaultsOptions and configurePaddockDefaults are the second pair of targets, for what
// only shows with ZooKeeper's defaults: a four-letter word outside the default whitelist
// ("srvr" only) and createTTL with extended types off.
var defaultsOptions = testutil.ZooKeeperOptions{TickTime: tickTime}

func configurePaddockDefaults(c *server.Config) {
	c.TickTime = tickTime
	c.ExtendedTypes = false
	c.FourLetterWords = []string{"srvr"}
	c.AdminAddr = ""
}

// startPaddock starts an in-process paddock server for tb configured by configure and
// returns its client address; it is stopped when tb ends.
func startPaddock(tb testing.TB, configure func(*server.Config)) string {
	tb.Helper()
	return testutil.StartPaddock(tb, configure)
}

// A target is a server the suite runs scenarios against.
type target struct {
	name string // "reference" or "subject"
	kind string // "zookeeper", "paddock" or "address"
	addr string
}

func (tg target) String() string { return fmt.Sprintf("%s (%s %s)", tg.name, tg.kind, tg.addr) }
