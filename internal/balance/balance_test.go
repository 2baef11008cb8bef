package balance

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

// checkPlan checks that p assigns every item once, to live members only, counts
// within one of each other.
func checkPlan(t *testing.T, p map[string][]string, live, items []string) {
	t.Helper()
	seen := map[string]string{}
	lo, hi := len(items), 0
	for _, c := range live {
		lo, hi = min(lo, len(p[c])), max(hi, len(p[c]))
		for _, s := range p[c] {
			if other, dup := seen[s]; dup {
				t.Fatalf("%s assigned to %s and %s", s, other, c)
			}
			seen[s] = c
		}
	}
	for c := range p {
		if !slices.Contains(live, c) {
			t.Fatalf("dead member %s in the plan", c)
		}
	}
	if len(seen) != len(items) {
		t.Fatalf("%d of %d items assigned", len(seen), len(items))
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: %d to %d items per member: %v", lo, hi, p)
	}
}

func moved(before, after map[string][]string) int {
	owner := map[string]string{}
	for c, ss := range before {
		for _, s := range ss {
			owner[s] = c
		}
	}
	n := 0
	for c, ss := range after {
		for _, s := range ss {
			if o, ok := owner[s]; ok && o != c {
				n++
			}
		}
	}
	return n
}

func TestPlanBalancedAndSticky(t *testing.T) {
	items := ids("s", 20)
	three := []string{"a", "b", "c"}
	p := Plan(nil, three, items)
	checkPlan(t, p, three, items)

	// A fourth joins: it takes 5, and only 5 move (20/4 each; the minimum).
	four := append(slices.Clone(three), "d")
	p4 := Plan(p, four, items)
	checkPlan(t, p4, four, items)
	if n := moved(p, p4); n != 5 {
		t.Errorf("a fourth member moved %d items, want 5", n)
	}
	// One dies: only its items move.
	alive := []string{"a", "c", "d"}
	p3 := Plan(p4, alive, items)
	checkPlan(t, p3, alive, items)
	if n := moved(p4, p3); n != len(p4["b"]) {
		t.Errorf("losing b moved %d items, want its %d", n, len(p4["b"]))
	}
	// A item added goes to one of the least loaded; one removed moves nothing else.
	more := append(slices.Clone(items), "s99")
	pm := Plan(p3, alive, more)
	checkPlan(t, pm, alive, more)
	if n := moved(p3, pm); n != 0 {
		t.Errorf("adding a item moved %d others", n)
	}
	fewer := slices.DeleteFunc(slices.Clone(more), func(s string) bool { return s == "s00" })
	pf := Plan(pm, alive, fewer)
	checkPlan(t, pf, alive, fewer)
	if n := moved(pm, pf); n > 1 {
		t.Errorf("removing a item moved %d others, want at most 1 (to rebalance)", n)
	}
	// Stable: the same input gives the same plan.
	if again := Plan(pf, alive, fewer); !maps.EqualFunc(again, pf, slices.Equal) {
		t.Errorf("plan is not stable: %v then %v", pf, again)
	}
}

func TestPlanRandomized(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cur := map[string][]string{}
	for range 200 {
		live := ids("c", 1+r.IntN(6))[:]
		live = slices.DeleteFunc(live, func(string) bool { return r.IntN(4) == 0 })
		if len(live) == 0 {
			live = []string{"c00"}
		}
		items := ids("s", r.IntN(40))
		next := Plan(cur, live, items)
		checkPlan(t, next, live, items)
		cur = next
	}
	if p := Plan(map[string][]string{"x": {"s1"}}, nil, []string{"s1"}); len(p) != 0 {
		t.Errorf("no live member: %v", p)
	}
}
