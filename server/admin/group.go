package admin

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Groupings of Source snapshots shared by the four-letter words and their JSON forms. Every
// grouping sorts, so output is stable whatever order the Source returns.

type sessionBucket struct {
	expires time.Time
	ids     []int64
}

// sessionBuckets groups session ids by expiry deadline, earliest first (ExpiryQueue.dump).
func sessionBuckets(ss []Session) []sessionBucket {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(x, y Session) int {
		return cmp.Or(x.Expires.Compare(y.Expires), cmp.Compare(x.ID, y.ID))
	})
	var out []sessionBucket
	for _, s := range ss {
		if n := len(out); n > 0 && out[n-1].expires.Equal(s.Expires) {
			out[n-1].ids = append(out[n-1].ids, s.ID)
			continue
		}
		out = append(out, sessionBucket{expires: s.Expires, ids: []int64{s.ID}})
	}
	return out
}

// ephemeralOwners returns the sessions that own ephemeral nodes, by id, paths sorted.
func ephemeralOwners(ss []Session) []Session {
	var out []Session
	for _, s := range ss {
		if len(s.Ephemerals) > 0 {
			s.Ephemerals = slices.Sorted(slices.Values(s.Ephemerals))
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(x, y Session) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

type connectionBucket struct {
	expires time.Time
	conns   []Connection
}

// connectionBuckets groups connections by expiry deadline, earliest first
// (NIOServerCnxnFactory.dumpConnections).
func connectionBuckets(cs []Connection) []connectionBucket {
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(x, y Connection) int {
		return cmp.Or(x.Expires.Compare(y.Expires), cmp.Compare(x.SessionID, y.SessionID), x.Remote.Compare(y.Remote))
	})
	var out []connectionBucket
	for _, c := range cs {
		if n := len(out); n > 0 && out[n-1].expires.Equal(c.Expires) {
			out[n-1].conns = append(out[n-1].conns, c)
			continue
		}
		out = append(out, connectionBucket{expires: c.Expires, conns: []Connection{c}})
	}
	return out
}

type sessionWatches struct {
	id    int64
	paths []string
}

type pathWatches struct {
	path string
	ids  []int64
}

type watchGroups struct {
	bySession []sessionWatches // by session id, paths sorted
	byPath    []pathWatches    // by path, session ids sorted
	total     int              // distinct (session, path) pairs
}

func groupWatches(ws []Watch) watchGroups {
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(x, y Watch) int {
		return cmp.Or(cmp.Compare(x.SessionID, y.SessionID), cmp.Compare(x.Path, y.Path))
	})
	ws = slices.Compact(ws)
	var g watchGroups
	g.total = len(ws)
	paths := make(map[string][]int64)
	for _, w := range ws {
		if n := len(g.bySession); n == 0 || g.bySession[n-1].id != w.SessionID {
			g.bySession = append(g.bySession, sessionWatches{id: w.SessionID})
		}
		s := &g.bySession[len(g.bySession)-1]
		s.paths = append(s.paths, w.Path)
		paths[w.Path] = append(paths[w.Path], w.SessionID) // ids arrive sorted
	}
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		g.byPath = append(g.byPath, pathWatches{path: p, ids: paths[p]})
	}
	return g
}
