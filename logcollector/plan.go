package logcollector

import (
	"maps"
	"path/filepath"
	"slices"

	"github.com/paddock/paddock/internal/balance"
)

// planByHost returns the plan per host: the sources of each host (sources maps ids to
// hosts) go to the collectors on that host (hosts maps the collectors that may take
// sources to their hosts), as balance.Plan divides them. A source whose host has no such
// collector is in no one's plan: it is unplaced, never read from another machine.
func planByHost(current map[string][]string, hosts map[string]string, sources map[string]string) map[string][]string {
	byHost := map[string][]string{}
	for c, h := range hosts {
		byHost[h] = append(byHost[h], c)
	}
	out := map[string][]string{}
	for h, live := range byHost {
		var ss []string
		for s, sh := range sources {
			if sh == h {
				ss = append(ss, s)
			}
		}
		slices.Sort(ss)
		maps.Copy(out, balance.Plan(current, live, ss))
	}
	return out
}

// globValid checks a glob's syntax (filepath.Match's).
func globValid(pattern string) (bool, error) { return filepath.Match(pattern, "") }
