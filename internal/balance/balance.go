// Package balance places items on members, balanced and sticky (Plan).
package balance

import (
	"cmp"
	"slices"
)

// Plan returns an assignment of items to members: every item assigned to one member,
// the counts differing by at most one (balanced), and as few items moved from where
// they are as that allows (sticky). current maps members to the items they hold (gone
// members and unknown items may appear in it); live and items are the members that may
// take items and the items to place. With no live member it returns an empty plan. The
// same input gives the same plan. The log member's rebalancer places items on
// members with it, the master a sharded job's items on workers.
func Plan(current map[string][]string, live, items []string) map[string][]string {
	out := make(map[string][]string, len(live))
	if len(live) == 0 {
		return out
	}
	live = slices.Sorted(slices.Values(live))
	defined := make(map[string]bool, len(items))
	for _, s := range items {
		defined[s] = true
	}
	// Keep what each live member holds, each item once.
	taken := map[string]bool{}
	for _, c := range live {
		for _, s := range slices.Sorted(slices.Values(current[c])) {
			if defined[s] && !taken[s] {
				taken[s] = true
				out[c] = append(out[c], s)
			}
		}
	}
	// Shares: base each, one more for the first extra members, chosen among those
	// holding the most, so that the fewest items have to move.
	base, extra := len(items)/len(live), len(items)%len(live)
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
	for _, s := range items {
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
