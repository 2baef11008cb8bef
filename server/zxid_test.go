package server

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paddock/paddock/server/quorum"
)

// legacyZxid is how a member gave a txn its zxid before issue 31: the epoch was the
// Raft term of its entry.
func legacyZxid(last int64, term uint64) int64 { return max(int64(term)<<32|1, last+1) }

// leadership is one term of an applied log and the txns committed in it.
type leadership struct {
	term uint64
	txns int
}

// zxidsOf gives the txns of log their zxids as the apply loop does: the epoch's zero at
// each new term (epochStart), then one zxid a txn.
func zxidsOf(log []leadership) []int64 {
	var out []int64
	last := int64(0)
	for _, l := range log {
		last = epochStart(last, l.term)
		for range l.txns {
			last++
			out = append(out, last)
		}
	}
	return out
}

// TestZxidsFollowTermsInReach: while each term is at most epochReach past the last
// (elections, however many split), a txn's zxid is the one it had when the epoch was the
// term: a log written before issue 31 replays to the same zxids.
func TestZxidsFollowTermsInReach(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 31))
		var log []leadership
		term := uint64(1)
		for range 1 + rng.IntN(40) {
			term += 1 + rng.Uint64N(epochReach)
			log = append(log, leadership{term, rng.IntN(5)})
		}
		got := zxidsOf(log)
		var want []int64
		last := int64(0)
		for _, l := range log {
			for range l.txns {
				last = legacyZxid(last, l.term)
				want = append(want, last)
			}
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("seed %d: txn %d has zxid %#x, %#x before issue 31 (log %v)", seed, i, got[i], want[i], log)
			}
		}
	}
}

// TestZxidsUnderForgedTerms: whatever terms the log holds — pushed to 2³¹−1, to MaxTerm,
// by every size of jump — zxids only grow, stay positive, and a leadership raises the
// epoch by at most epochReach; spending every epoch takes 2²² leaderships.
func TestZxidsUnderForgedTerms(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 32))
		var log []leadership
		term := uint64(1)
		for range 1 + rng.IntN(200) {
			switch rng.IntN(4) {
			case 0:
				term++
			case 1:
				term += rng.Uint64N(1 << 20)
			case 2:
				term = max(term+1, []uint64{1<<31 - 1, 1 << 31, quorum.MaxTerm}[rng.IntN(3)])
			default:
				term += quorum.TermCatchUp
			}
			term = min(term, quorum.MaxTerm)
			log = append(log, leadership{term, rng.IntN(4)})
		}
		last, epoch := int64(0), int64(0)
		for _, l := range log {
			next := epochStart(last, l.term)
			if e := next >> 32; e-epoch > epochReach || e > int64(min(l.term, maxEpoch)) {
				t.Fatalf("seed %d: term %d raised the epoch from %d to %d", seed, l.term, epoch, e)
			}
			last, epoch = next, next>>32
			for range l.txns {
				last++
			}
			if last <= 0 {
				t.Fatalf("seed %d: zxid %#x", seed, last)
			}
		}
		zs := zxidsOf(log)
		for i := 1; i < len(zs); i++ {
			if zs[i] <= zs[i-1] {
				t.Fatalf("seed %d: zxid %#x after %#x", seed, zs[i], zs[i-1])
			}
		}
	}
	// The epochs spent: a forger's every leadership at the top of the terms.
	last := int64(0)
	for range maxEpoch/epochReach + 2 {
		last = epochStart(last, quorum.MaxTerm)
	}
	if last>>32 != maxEpoch {
		t.Fatalf("epoch %d after %d leaderships at the top term, want %d", last>>32, maxEpoch/epochReach+2, maxEpoch)
	}
	if next := epochStart(last, math.MaxUint64); next != last || next+1 <= 0 {
		t.Fatalf("past the last epoch: %#x, then %#x", last, next)
	}
}
