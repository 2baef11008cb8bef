package ensemble

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

// paddock is the binary under test, built on first use.
var paddock testutil.Binary

func TestMain(m *testing.M) { paddock.Main(m) }

const (
	// tickTime is every member's zoo.cfg tickTime: sessions may last 2 to 20 ticks.
	tickTime = 200 * time.Millisecond
	// electionTimeout is every member's election_timeout (PADDOCK_SERVER_ELECTION_TIMEOUT):
	// a follower that hears nothing from its leader for 1 to 2 of them stands for
	// election, and a leader that hears from no quorum for one steps down (CheckQuorum).
	electionTimeout = 500 * time.Millisecond
	// sessionTimeout is the clients' session timeout, the largest tickTime allows.
	sessionTimeout = 20 * tickTime
	// failoverBound is how soon after the leader's death the others must have elected a
	// new one: an election timeout or two to notice, a pre-vote and a vote, and the slack
	// a race-instrumented binary on a loaded two-core machine needs.
	failoverBound = 8 * time.Second
	// recoverBound bounds waits for a member to serve again after a fault has healed or
	// a restart, and for clients to get through again.
	recoverBound = 30 * time.Second
)

// newRand returns a generator for one stream of choices of a seeded test.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}
