package logcollector

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

// checkPlan checks that p assigns every source once, to live collectors only, counts
// within one of each other.
func checkPlan(t *testing.T, p map[string][]string, live, sources []string) {
	t.Helper()
	seen := map[string]string{}
	lo, hi := len(sources), 0
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
			t.Fatalf("dead collector %s in the plan", c)
		}
	}
	if len(seen) != len(sources) {
		t.Fatalf("%d of %d sources assigned", len(seen), len(sources))
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: %d to %d sources per collector: %v", lo, hi, p)
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
	sources := ids("s", 20)
	three := []string{"a", "b", "c"}
	p := plan(nil, three, sources)
	checkPlan(t, p, three, sources)

	// A fourth joins: it takes 5, and only 5 move (20/4 each; the minimum).
	four := append(slices.Clone(three), "d")
	p4 := plan(p, four, sources)
	checkPlan(t, p4, four, sources)
	if n := moved(p, p4); n != 5 {
		t.Errorf("a fourth collector moved %d sources, want 5", n)
	}
	// One dies: only its sources move.
	alive := []string{"a", "c", "d"}
	p3 := plan(p4, alive, sources)
	checkPlan(t, p3, alive, sources)
	if n := moved(p4, p3); n != len(p4["b"]) {
		t.Errorf("losing b moved %d sources, want its %d", n, len(p4["b"]))
	}
	// A source added goes to one of the least loaded; one removed moves nothing else.
	more := append(slices.Clone(sources), "s99")
	pm := plan(p3, alive, more)
	checkPlan(t, pm, alive, more)
	if n := moved(p3, pm); n != 0 {
		t.Errorf("adding a source moved %d others", n)
	}
	fewer := slices.DeleteFunc(slices.Clone(more), func(s string) bool { return s == "s00" })
	pf := plan(pm, alive, fewer)
	checkPlan(t, pf, alive, fewer)
	if n := moved(pm, pf); n > 1 {
		t.Errorf("removing a source moved %d others, want at most 1 (to rebalance)", n)
	}
	// Stable: the same input gives the same plan.
	if again := plan(pf, alive, fewer); !maps.EqualFunc(again, pf, slices.Equal) {
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
		sources := ids("s", r.IntN(40))
		next := plan(cur, live, sources)
		checkPlan(t, next, live, sources)
		cur = next
	}
	if p := plan(map[string][]string{"x": {"s1"}}, nil, []string{"s1"}); len(p) != 0 {
		t.Errorf("no live collector: %v", p)
	}
}

// TestPlanByHost: a source goes only to a collector of its host; one of a host without
// a collector goes nowhere.
func TestPlanByHost(t *testing.T) {
	hosts := map[string]string{"a1": "A", "a2": "A", "b1": "B"}
	sources := map[string]string{"x1": "A", "x2": "A", "x3": "A", "y1": "B", "z1": "C"}
	p := planByHost(map[string][]string{"b1": {"x1"}}, hosts, sources)
	got := map[string]string{}
	for c, ss := range p {
		for _, s := range ss {
			if prev, dup := got[s]; dup {
				t.Errorf("%s planned on %s and %s", s, prev, c)
			}
			got[s] = c
		}
	}
	for s, h := range sources {
		c, ok := got[s]
		switch {
		case h == "C" && ok:
			t.Errorf("%s of host C (no collector) planned on %s", s, c)
		case h != "C" && hosts[c] != h:
			t.Errorf("%s of host %s planned on %q (host %q)", s, h, c, hosts[c])
		}
	}
	if n1, n2 := len(p["a1"]), len(p["a2"]); n1+n2 != 3 || n1-n2 > 1 || n2-n1 > 1 {
		t.Errorf("host A unbalanced: %v", p)
	}
}
