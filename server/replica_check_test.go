package server

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// The invariant of a snapshot another member streams (replica_check.go): whatever its
// records, CheckSnapshot refuses it — an error, no panic, nothing kept — or proves it:
// the Restore that may follow installs what it built and cannot fail, and the member
// then answers reads of every node and takes writes. A snapshot of the member's own
// disk that is not restorable makes Restore fail, never panic, and leaves the state as
// it was.

var snapCheckSeeds = flag.Int("snapcheck.seeds", 2000, "seeds of TestSnapshotCheckProvesRestore (make fuzz runs FORGE_SEEDS)")

// checkMembers is the ensemble of these tests: voters 1, 2, 3.
var checkMembers = []string{"1=127.0.0.1:1:2:participant;127.0.0.1:3", "2=127.0.0.1:4:5:participant;127.0.0.1:6",
	"3=127.0.0.1:7:8:participant;127.0.0.1:9"}

// newCheckReplica returns member 1 of checkMembers, not started: its CheckSnapshot
// and Restore work on its tree alone.
func newCheckReplica(t *testing.T) *replica {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Ensemble, cfg.ServerID, cfg.ClientAddr = t.TempDir(), checkMembers, 1, "127.0.0.1:3"
	s, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r := s.log.(*replica)
	ms, err := cfg.Members()
	if err != nil {
		t.Fatal(err)
	}
	r.members = ms
	s.tree.SetConfig(configData(ms, 0))
	return r
}

// sourceTree is a leader's tree: the ensemble's config, nodes with data, ACLs, an
// ephemeral and a session.
func sourceTree(t *testing.T, rng *rand.Rand) *datatree.Tree {
	t.Helper()
	ms := make([]Member, 0, len(checkMembers))
	for _, spec := range checkMembers {
		m, err := ParseMember(spec)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	tree := datatree.New()
	tree.SetConfig(configData(ms, 0))
	zxid := int64(2 << 32)
	apply := func(x *txn.Txn) {
		zxid++
		x.Zxid, x.Time = zxid, 1000
		txn.Apply(tree, x, txn.Options{ExtendedTypes: true})
	}
	sess := int64(1<<56 | 7)
	apply(&txn.Txn{Session: sess, Op: wire.OpCreateSession, Req: &txn.CreateSession{Timeout: 4000, Password: make([]byte, 16)}})
	paths := []string{"/a"}
	for i := range 5 + rng.IntN(30) {
		parent := paths[rng.IntN(len(paths))]
		p := fmt.Sprintf("%s/n%d", parent, i)
		mode := int32(0)
		if rng.IntN(8) == 0 {
			mode = 1 // ephemeral: not a parent
		} else {
			paths = append(paths, p)
		}
		data := bytes.Repeat([]byte{byte(i)}, rng.IntN(200))
		if parent == "/a" && i == 0 {
			apply(&txn.Txn{Session: sess, Op: wire.OpCreate, Ids: []wire.Identity{{Scheme: "super"}},
				Req: &wire.CreateRequest{Path: "/a", ACL: wire.OpenACLUnsafe}})
		}
		apply(&txn.Txn{Session: sess, Op: wire.OpCreate, Ids: []wire.Identity{{Scheme: "super"}},
			Req: &wire.CreateRequest{Path: p, Data: data, ACL: wire.OpenACLUnsafe, Flags: mode}})
	}
	return tree
}

func recordsOf(t *testing.T, tree *datatree.Tree) [][]byte {
	t.Helper()
	var recs [][]byte
	if err := tree.Snapshot().Records(func(p []byte) error {
		recs = append(recs, bytes.Clone(p))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// readOf yields recs as a received snapshot's state machine records; cut, if not nil,
// ends the stream with that error after the records (a broken connection).
func readOf(recs [][]byte, cut error) quorum.ReadFunc {
	return func(fn func([]byte) error) error {
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return cut
	}
}

var checkConf = &raftpb.ConfState{Voters: []uint64{1, 2, 3}}

func checkMeta(cs *raftpb.ConfState) *raftpb.SnapshotMetadata {
	return &raftpb.SnapshotMetadata{Index: new(uint64(500)), Term: new(uint64(9)), ConfState: cs}
}

// mutation is one way a peer's snapshot may be broken; it returns the records sent,
// the membership its message claims and a stream error.
type mutation struct {
	name string
	fn   func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error)
}

func pick(rng *rand.Rand, recs [][]byte) int { return rng.IntN(len(recs)) }

var mutations = []mutation{
	{"intact", func(_ *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) { return recs, checkConf, nil }},
	{"a record dropped", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		i := pick(rng, recs)
		return slices.Delete(slices.Clone(recs), i, i+1), checkConf, nil
	}},
	{"a record twice", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		i := pick(rng, recs)
		return slices.Insert(slices.Clone(recs), i, recs[i]), checkConf, nil
	}},
	{"two records swapped", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		out := slices.Clone(recs)
		i, j := pick(rng, recs), pick(rng, recs)
		out[i], out[j] = out[j], out[i]
		return out, checkConf, nil
	}},
	{"a record cut short", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		out := slices.Clone(recs)
		i := pick(rng, recs)
		out[i] = out[i][:rng.IntN(len(out[i]))]
		return out, checkConf, nil
	}},
	{"bytes changed", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		out := slices.Clone(recs)
		for range 1 + rng.IntN(4) {
			i := pick(rng, recs)
			out[i] = bytes.Clone(out[i])
			out[i][rng.IntN(len(out[i]))] = byte(rng.Uint32())
		}
		return out, checkConf, nil
	}},
	{"the stream truncated", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		return recs[:rng.IntN(len(recs))], checkConf, nil
	}},
	{"the stream broken", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		return recs[:rng.IntN(len(recs)+1)], checkConf, errors.New("connection reset")
	}},
	{"garbage appended", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		junk := make([]byte, rng.IntN(64))
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		return append(slices.Clone(recs), junk), checkConf, nil
	}},
	{"another membership", func(rng *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		cs := []*raftpb.ConfState{{Voters: []uint64{1, 2}}, {Voters: []uint64{1, 2, 3, 4}},
			{Voters: []uint64{1, 2}, Learners: []uint64{3}}, {Voters: []uint64{2, 3, 4}}}
		return recs, cs[rng.IntN(len(cs))], nil
	}},
	{"only the root (issue 31)", func(_ *rand.Rand, recs [][]byte) ([][]byte, *raftpb.ConfState, error) {
		return onlyRoot(recs), checkConf, nil
	}},
}

// onlyRoot is the attack of issue 31: a header announcing one node, and the root.
func onlyRoot(recs [][]byte) [][]byte {
	var e wire.Encoder
	e.Int(1) // header
	e.Int(1) // version
	e.Long(5 << 32)
	e.Long(1)                           // nodes
	e.Long(0)                           // sessions
	return [][]byte{e.Bytes(), recs[1]} // the root sorts first
}

// TestSnapshotCheckProvesRestore: over seeded mutations of a real snapshot, a snapshot
// CheckSnapshot passes restores and serves; one it refuses leaves nothing kept, and
// restored from disk as it is fails with an error, the tree untouched.
func TestSnapshotCheckProvesRestore(t *testing.T) {
	seeds := *snapCheckSeeds
	accepted := map[string]int{}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 31))
		m := mutations[int(seed)%len(mutations)]
		src := sourceTree(t, rng)
		recs, cs, cut := m.fn(rng, recordsOf(t, src))
		r := newCheckReplica(t)
		before := r.s.tree.Digest()
		err := r.CheckSnapshot(readOf(recs, cut), checkMeta(cs))
		if m.name == "intact" && err != nil {
			t.Fatalf("seed %d: an intact snapshot refused: %v", seed, err)
		}
		if m.name == "only the root (issue 31)" && (err == nil || !strings.Contains(err.Error(), "no /zookeeper")) {
			t.Fatalf("seed %d: a snapshot of the root alone: %v; want refused for lacking /zookeeper", seed, err)
		}
		if err != nil {
			if r.prepared.Load() != nil {
				t.Fatalf("seed %d (%s): refused (%v) but kept", seed, m.name, err)
			}
			if cut != nil {
				continue
			}
			// Had it been kept on this member's disk (a snapshot of its own it read at
			// start), Restore either restores what the records hold or fails with the
			// tree as it was.
			if rerr := r.Restore(readOf(recs, nil), 500, 9); rerr != nil {
				if r.s.tree.Digest() != before {
					t.Fatalf("seed %d (%s): a failed restore (%v) changed the tree", seed, m.name, rerr)
				}
			} else {
				serves(t, seed, r, 0)
			}
			continue
		}
		accepted[m.name]++
		// Raft takes it: Restore must install it without reading anything.
		if err := r.Restore(readOf(nil, errors.New("read: Restore must use the proven tree")), 500, 9); err != nil {
			t.Fatalf("seed %d (%s): a proven snapshot failed to restore: %v", seed, m.name, err)
		}
		serves(t, seed, r, 3)
	}
	if accepted["intact"] == 0 || accepted["only the root (issue 31)"] != 0 {
		t.Fatalf("accepted by mutation: %v", accepted)
	}
	t.Logf("%d seeds; accepted by mutation: %v", seeds, accepted)
}

// serves checks the restored member: every node reads, a create applies, and the
// config names members members (0: any, for a snapshot of the member's own disk,
// which holds what this member wrote).
func serves(t *testing.T, seed uint64, r *replica, members int) {
	t.Helper()
	s := r.s
	for _, p := range []string{"/", datatree.ProcPath, datatree.QuotaPath, datatree.ConfigPath} {
		if !s.tree.Get(p).Exists() {
			t.Fatalf("seed %d: restored tree lacks %s", seed, p)
		}
	}
	n := 0
	s.tree.Walk(func(node datatree.Node) {
		if got := s.tree.Get(node.Path()); !got.Exists() {
			t.Fatalf("seed %d: %s walked, not found", seed, node.Path())
		}
		node.DataStat()
		n++
	})
	if n+1 != s.tree.NodeCount() { // ZooKeeper counts the root twice
		t.Fatalf("seed %d: walked %d nodes, the tree counts %d", seed, n, s.tree.NodeCount())
	}
	res := txn.Apply(s.tree, &txn.Txn{Zxid: s.tree.LastZxid() + 1, Op: wire.OpCreate, Ids: []wire.Identity{{Scheme: "super"}},
		Req: &wire.CreateRequest{Path: "/after-restore", ACL: wire.OpenACLUnsafe}}, txn.Options{})
	if res.Err != nil {
		t.Fatalf("seed %d: a create after the restore: %v", seed, res.Err)
	}
	if got := len(r.membersNow()); members > 0 && got != members {
		t.Fatalf("seed %d: %d members after the restore, want %d", seed, got, members)
	}
}
