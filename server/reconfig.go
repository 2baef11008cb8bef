package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/quorum"
	"github.com/paddock/paddock/server/txn"
	"github.com/paddock/paddock/server/wire"
)

// Dynamic reconfiguration: ZooKeeper's reconfig request, carried out as a Raft
// membership change (docs/ensemble.md). The change's context, which every member's
// confChanged gets, is the proposer's clock (ms, big-endian) and the new ensemble's
// server lines.

// reconfigure carries out a reconfig request: it checks it, proposes the membership
// change and waits until this member has applied it. It returns the code to answer.
func (r *replica) reconfigure(ctx context.Context, req *wire.ReconfigRequest, ids []wire.Identity) wire.Code {
	s := r.s
	s.treeMu.RLock()
	n := s.tree.Get(datatree.ConfigPath)
	acl, version := n.ACL(), n.Mzxid()
	s.treeMu.RUnlock()
	switch {
	case !s.cfg.SkipACL && !datatree.Allowed(acl, wire.PermWrite, ids):
		return wire.ErrNoAuth
	case req.CurConfigID != -1 && req.CurConfigID != version:
		return wire.ErrBadVersion
	}
	cur := r.membersNow()
	next, err := reconfigTarget(cur, req)
	if err != nil {
		s.logger.Info("reconfig refused", "err", err)
		return wire.ErrBadArguments
	}
	changes, err := confChanges(cur, next)
	if err != nil {
		s.logger.Info("reconfig refused", "err", err)
		return wire.ErrBadArguments
	}
	change := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixMilli()))
	change = append(change, serverLines(next)...)
	ctx, cancel := context.WithTimeout(ctx, 3*s.cfg.ElectionTimeout+2*time.Second)
	defer cancel()
	if _, err := r.node.ProposeConfChange(ctx, changes, change); err != nil {
		s.logger.Info("reconfig failed", "err", err)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return wire.ErrReconfigInProgress // Raft takes one change at a time
		case errors.Is(err, quorum.ErrRefused):
			return wire.ErrBadArguments
		}
		return wire.ErrNewConfigNoQuorum
	}
	s.logger.Info("reconfigured", "members", len(next))
	return wire.OK
}

// reconfigTarget is the ensemble a reconfig asks for: newMembers replaces the whole
// list; otherwise joiningServers ("server.N=..." entries, comma-separated) are added or
// updated and leavingServers (ids, comma-separated) removed.
func reconfigTarget(cur []Member, req *wire.ReconfigRequest) ([]Member, error) {
	byID := map[int64]Member{}
	if req.NewMembers != "" {
		if req.JoiningServers != "" || req.LeavingServers != "" {
			return nil, errors.New("newMembers together with joining or leaving servers")
		}
	} else {
		for _, m := range cur {
			byID[m.ID] = m
		}
	}
	joining := req.JoiningServers
	if req.NewMembers != "" {
		joining = req.NewMembers
	}
	for spec := range strings.SplitSeq(joining, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		rest, ok := strings.CutPrefix(spec, "server.")
		if !ok {
			return nil, fmt.Errorf("joining server %q: want server.N=...", spec)
		}
		m, err := ParseMember(rest)
		if err != nil {
			return nil, fmt.Errorf("joining server %q: %w", spec, err)
		}
		if m.ID < 1 || m.ID > 254 {
			return nil, fmt.Errorf("joining server %q: id must be in [1, 254]", spec)
		}
		byID[m.ID] = m
	}
	for id := range strings.SplitSeq(req.LeavingServers, ",") {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("leaving server %q: want an id", id)
		}
		if _, ok := byID[n]; !ok {
			return nil, fmt.Errorf("leaving server %d is not a member", n)
		}
		delete(byID, n)
	}
	next := make([]Member, 0, len(byID))
	voters := 0
	for _, m := range byID {
		next = append(next, m)
		if !m.Observer {
			voters++
		}
	}
	if voters == 0 {
		return nil, errors.New("no participant would be left")
	}
	slices.SortFunc(next, func(a, b Member) int { return int(a.ID - b.ID) })
	return next, nil
}

// confChanges is the Raft membership change from cur to next. A member whose
// addresses change without a change of role is refused: addresses change by a rolling
// restart (docs/ensemble.md).
func confChanges(cur, next []Member) ([]*raftpb.ConfChangeSingle, error) {
	old := map[int64]Member{}
	for _, m := range cur {
		old[m.ID] = m
	}
	var out []*raftpb.ConfChangeSingle
	add := func(t raftpb.ConfChangeType, id int64) {
		out = append(out, &raftpb.ConfChangeSingle{Type: t.Enum(), NodeId: new(uint64(id))})
	}
	for _, m := range next {
		o, ok := old[m.ID]
		delete(old, m.ID)
		switch {
		case ok && o.Observer == m.Observer && o != m:
			return nil, fmt.Errorf("server %d: only its addresses change: that takes a rolling restart, not a reconfig", m.ID)
		case ok && o.Observer == m.Observer:
		case m.Observer:
			add(raftpb.ConfChangeAddLearnerNode, m.ID)
		default:
			add(raftpb.ConfChangeAddNode, m.ID)
		}
	}
	for id := range old {
		add(raftpb.ConfChangeRemoveNode, id)
	}
	if len(out) == 0 {
		return nil, errors.New("the new configuration is the current one")
	}
	return out, nil
}

// confChanged applies a membership change on the apply loop, on every member: the
// change takes the next zxid, /zookeeper/config gets the new server lines and version
// (and fires its watches), and messages go to the new members. Changes without a
// context — the initial membership, Raft leaving a joint configuration — change
// nothing here.
func (r *replica) confChanged(ce *quorum.ConfEntry) {
	if len(ce.Context) == 0 {
		return
	}
	s := r.s
	mc, err := decodeMembershipChange(ce.Context)
	if err != nil { // checkConfChange made quorum skip such a change: never here
		s.logger.Error("membership change without server lines: /zookeeper/config left as it was",
			"raft_index", ce.Index, "err", err)
		return
	}
	mtime, ms := mc.mtime, mc.members
	r.lastZxid++
	zxid := r.lastZxid
	s.treeMu.Lock()
	s.tree.ReconfigTo(configData(ms, zxid), zxid, mtime)
	s.lastApplied.Store(zxid)
	s.fire(txn.Event{Type: wire.EventNodeDataChanged, Path: datatree.ConfigPath, ACL: s.tree.Get(datatree.ConfigPath).ACL()}, zxid)
	s.treeMu.Unlock()
	s.logger.Info("ensemble changed", "zxid", hexID(zxid), "members", len(ms))
	r.setMembers(ms)
}
