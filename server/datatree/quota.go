package datatree

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Quotas, as ZooKeeper 3.7+ keeps them (docs/quotas.md). A quota on the path P is two
// nodes that clients (zkCli's setquota) create: QuotaPath+P+"/zookeeper_limits", whose data
// holds the limits, and QuotaPath+P+"/zookeeper_stats", whose data the tree keeps equal
// to the node count and data bytes of P's subtree, P included. Both hold a StatsTrack
// string. The tree indexes the quota'd paths (quotas), so that a write finds the quota
// that covers it by looking up its own path's ancestors: O(depth), never a walk of the
// tree. Only creating a stats node counts its subtree, as ZooKeeper does.
const (
	QuotaLimitNode = "zookeeper_limits"
	QuotaStatNode  = "zookeeper_stats"
)

// ErrQuotaExceeded is a write refused because it would take a subtree past a hard quota
// while quotas are enforced (QuotaExceeded in ZooKeeper).
var ErrQuotaExceeded = errors.New("datatree: quota exceeded")

// StatsTrack keys (org.apache.zookeeper.StatsTrack).
const (
	statCount          = "count"
	statBytes          = "bytes"
	statCountHardLimit = "countHardLimit"
	statByteHardLimit  = "byteHardLimit"
)

// StatsTrack is the key=value content of a limits or stats node. A missing key reads as -1
// (no limit). Parsing never fails: a pair that is not key=number is left out, where
// ZooKeeper's parser throws.
type StatsTrack map[string]int64

var statsPairSep = regexp.MustCompile(`[,;]+`)

// ParseStatsTrack reads the data of a limits or stats node, in any of the forms ZooKeeper
// writes: "count=N,bytes=M" (before 3.7) and "count=N,bytes=M=;byteHardLimit=B;countHardLimit=C".
func ParseStatsTrack(data []byte) StatsTrack {
	st := StatsTrack{}
	if len(data) == 0 {
		return st
	}
	for _, pair := range statsPairSep.Split(string(data), -1) {
		kv := strings.Split(pair, "=")
		for len(kv) > 0 && kv[len(kv)-1] == "" { // Java's split drops trailing empty strings
			kv = kv[:len(kv)-1]
		}
		if len(kv) < 2 {
			continue
		}
		v, err := strconv.ParseInt(kv[1], 10, 64)
		if err != nil {
			continue
		}
		st[kv[0]] = v
	}
	return st
}

func (st StatsTrack) get(key string) int64 {
	if v, ok := st[key]; ok {
		return v
	}
	return -1
}

// Count, Bytes, CountHardLimit and ByteHardLimit return the values, -1 where unset.
func (st StatsTrack) Count() int64          { return st.get(statCount) }
func (st StatsTrack) Bytes() int64          { return st.get(statBytes) }
func (st StatsTrack) CountHardLimit() int64 { return st.get(statCountHardLimit) }
func (st StatsTrack) ByteHardLimit() int64  { return st.get(statByteHardLimit) }

// String formats st as ZooKeeper 3.7+ does: count and bytes first, then, if there are
// other keys, "=" and ";key=value" for each in key order.
func (st StatsTrack) String() string {
	var b strings.Builder
	b.WriteString("count=" + strconv.FormatInt(st.Count(), 10) + ",bytes=" + strconv.FormatInt(st.Bytes(), 10))
	others := slices.Sorted(maps.Keys(st))
	others = slices.DeleteFunc(others, func(k string) bool { return k == statCount || k == statBytes })
	if len(others) > 0 {
		b.WriteByte('=')
		for _, k := range others {
			b.WriteString(";" + k + "=" + strconv.FormatInt(st[k], 10))
		}
	}
	return b.String()
}

// QuotaViolation describes a write that takes a quota'd subtree past one of its limits.
type QuotaViolation struct {
	Quota string // the quota'd path
	Kind  string // "count" or "bytes"
	Value int64  // the count or bytes the write would make
	Limit int64
	Hard  bool // the limit is a hard one (enforced when quotas are enforced)
}

// quotaOf returns the quota'd path that covers path (path itself or its nearest quota'd
// ancestor), or "". The root never has a quota, as in ZooKeeper.
func (t *Tree) quotaOf(path string) string {
	if len(t.quotas) == 0 {
		return ""
	}
	for p := path; p != RootPath && p != ""; p, _ = splitPath(p) {
		if _, ok := t.quotas[p]; ok {
			return p
		}
	}
	return ""
}

// CheckQuota reports the limits that a write under path would pass: a create adds one
// node (countDiff 1) and its data's bytes; a setData adds the difference in data length.
// As ZooKeeper's checkQuota, a hard limit, where set, replaces the soft one of its kind,
// and only growth is checked. It returns nil in the common case of no quota.
func (t *Tree) CheckQuota(path string, bytesDiff, countDiff int64) []QuotaViolation {
	q := t.quotaOf(path)
	if q == "" {
		return nil
	}
	limitNode, statNode := t.Get(QuotaPath+q+"/"+QuotaLimitNode), t.Get(QuotaPath+q+"/"+QuotaStatNode)
	if !limitNode.Exists() || !statNode.Exists() {
		return nil
	}
	limits, stats := ParseStatsTrack(limitNode.Data()), ParseStatsTrack(statNode.Data())
	var out []QuotaViolation
	check := func(kind string, diff, current, soft, hard int64) {
		limit, isHard := soft, hard > -1
		if isHard {
			limit = hard
		}
		if diff > 0 && limit > -1 && current+diff > limit {
			out = append(out, QuotaViolation{Quota: q, Kind: kind, Value: current + diff, Limit: limit, Hard: isHard})
		}
	}
	check("count", countDiff, stats.Count(), limits.Count(), limits.CountHardLimit())
	check("bytes", bytesDiff, stats.Bytes(), limits.Bytes(), limits.ByteHardLimit())
	return out
}

// Quotas returns the quota'd paths in order.
func (t *Tree) Quotas() []string { return slices.Sorted(maps.Keys(t.quotas)) }

// quotaNamed returns the quota'd path that the nodes under /zookeeper/quota whose parent
// is parent name (QuotaPath+P/zookeeper_limits names P); ok is false elsewhere.
func quotaNamed(parent string) (quota string, ok bool) {
	quota, ok = strings.CutPrefix(parent, QuotaPath)
	return quota, ok && strings.HasPrefix(quota, "/")
}

// quotaOfNode is quotaOf of n's path, which it builds only when there are quotas.
func (t *Tree) quotaOfNode(n Node) string {
	if len(t.quotas) == 0 {
		return ""
	}
	return t.quotaOf(n.Path())
}

// quotaCreated keeps the quotas up to date after n was created.
func (t *Tree) quotaCreated(n Node) {
	if q, ok := quotaNamed(n.parent); ok {
		switch n.name() {
		case QuotaLimitNode:
			t.addQuota(q)
		case QuotaStatNode:
			t.recountQuota(q)
		}
	}
	if q := t.quotaOfNode(n); q != "" {
		t.addQuotaStat(q, int64(len(n.Data())), 1)
	}
}

// quotaDeleted keeps the quotas up to date after n was deleted.
func (t *Tree) quotaDeleted(n Node) {
	if q, ok := quotaNamed(n.parent); ok && n.name() == QuotaLimitNode {
		if _, had := t.quotas[q]; had {
			delete(t.quotas, q)
			if t.recording {
				t.record(func() { t.quotas[q] = struct{}{} })
			}
		}
	}
	if q := t.quotaOfNode(n); q != "" {
		t.addQuotaStat(q, -int64(len(n.Data())), -1)
	}
}

// quotaDataChanged keeps the quotas up to date after n's data changed length.
func (t *Tree) quotaDataChanged(n Node, bytesDiff int64) {
	if bytesDiff == 0 {
		return
	}
	if q := t.quotaOfNode(n); q != "" {
		t.addQuotaStat(q, bytesDiff, 0)
	}
}

func (t *Tree) addQuota(q string) {
	if _, had := t.quotas[q]; had {
		return
	}
	q = strings.Clone(q) // not a piece of a node's record, which would keep it alive
	t.quotas[q] = struct{}{}
	if t.recording {
		t.record(func() { delete(t.quotas, q) })
	}
}

// addQuotaStat adds to the count and bytes of q's stats node, if it exists.
func (t *Tree) addQuotaStat(q string, bytesDiff, countDiff int64) {
	path := QuotaPath + q + "/" + QuotaStatNode
	n := t.Get(path)
	if !n.Exists() {
		return
	}
	st := ParseStatsTrack(n.Data())
	st[statCount] = st.Count() + countDiff
	st[statBytes] = st.Bytes() + bytesDiff
	t.setStatData(n, []byte(st.String()))
}

// recountQuota sets q's stats node to the count and bytes of q's subtree, q included
// (DataTree.updateQuotaForPath). It walks the subtree.
func (t *Tree) recountQuota(q string) {
	var count, bytes int64
	if n := t.Get(q); n.Exists() {
		count, bytes = 1, int64(len(n.Data()))
		var visit func(p string)
		visit = func(p string) {
			t.eachChild(p, func(c Node) {
				count++
				st, flags, at := c.decode()
				bytes += int64(c.dataLen(flags, at))
				if st.numChildren > 0 {
					visit(c.Path())
				}
			})
		}
		visit(q)
	}
	if n := t.Get(QuotaPath + q + "/" + QuotaStatNode); n.Exists() {
		t.setStatData(n, []byte(StatsTrack{statCount: count, statBytes: bytes}.String()))
	}
}

// setStatData replaces a stats node's data without changing its stat, as ZooKeeper does
// (no version, mzxid or watch): the stats are the server's bookkeeping, not a client write.
func (t *Tree) setStatData(old Node, data []byte) {
	n := old.withData(data, func(*stat) {})
	diff := int64(len(data) - len(old.Data()))
	t.dataSize += diff
	t.replace(old, n)
	if t.recording {
		t.record(func() { t.dataSize -= diff })
	}
}

// loadQuotas indexes the quotas of a tree loaded from a snapshot. The stats nodes are
// not recounted, where ZooKeeper recounts them at load: their data is part of the
// replicated state, and a member that recounted could differ from one that did not.
func (t *Tree) loadQuotas() {
	var visit func(p string)
	visit = func(p string) {
		t.eachChild(p, func(c Node) {
			if q, ok := quotaNamed(c.parent); ok && c.name() == QuotaLimitNode {
				t.quotas[strings.Clone(q)] = struct{}{}
			}
			if c.NumChildren() > 0 {
				visit(c.Path())
			}
		})
	}
	visit(QuotaPath)
}
