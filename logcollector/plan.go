package logcollector

import (
	"cmp"
	"maps"
	"path/filepath"
	"slices"
)

// plan returns the assignment the rebalancer aims for: every source assigned to one
// live collector, the counts differing by at most one (balanced), and as few sources
// moved from where they are as that allows (sticky). current maps collectors to the
// sources they hold (dead collectors and unknown sources may appear in it); live and
// sources are the live collectors and the defined sources. With no live collector it
// returns an empty plan.
func plan(current map[string][]string, live, sources []string) map[string][]string {
	out := make(map[string][]string, len(live))
	if len(live) == 0 {
		return out
	}
	live = slices.Sorted(slices.Values(live))
	defined := make(map[string]bool, len(sources))
	for _, s := range sources {
		defined[s] = true
	}
	// Keep what each live collector holds, each source once.
	taken := map[string]bool{}
	for _, c := range live {
		for _, s := range slices.Sorted(slices.Values(current[c])) {
			if defined[s] && !taken[s] {
				taken[s] = true
				out[c] = append(out[c], s)
			}
		}
	}
	// Shares: base each, one more for the first extra collectors, chosen among those
	// holding the most, so that the fewest sources have to move.
	base, extra := len(sources)/len(live), len(sources)%len(live)
	byHeld := slices.Clone(live)
	slices.SortStableFunc(byHeld, func(a, b string) int { return cmp.Compare(len(out[b]), len(out[a])) })
	share := make(map[string]int, len(live))
	for i, c := range byHeld {
		share[c] = base
		if i < extra {
			share[c]++
		}
	}
	// Release what is over a share; then hand out what is free to those under theirs.
	var free []string
	for _, c := range live {
		if n := len(out[c]); n > share[c] {
			free = append(free, out[c][share[c]:]...)
			out[c] = out[c][:share[c]]
		}
	}
	for _, s := range sources {
		if !taken[s] {
			free = append(free, s)
		}
	}
	slices.Sort(free)
	for _, c := range live {
		for len(out[c]) < share[c] && len(free) > 0 {
			out[c] = append(out[c], free[0])
			free = free[1:]
		}
		slices.Sort(out[c])
	}
	return out
}

// planByHost returns the plan per host: the sources of each host (sources maps ids to
// hosts) go to the collectors on that host (hosts maps the collectors that may take
// sources to their hosts), as plan divides them. A source whose host has no such
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
		maps.Copy(out, plan(current, live, ss))
	}
	return out
}

// globValid checks a glob's syntax (filepath.Match's).
func globValid(pattern string) (bool, error) { return filepath.Match(pattern, "") }
