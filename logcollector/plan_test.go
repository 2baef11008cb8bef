package logcollector

import (
	"testing"
)

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
