package admin

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
)

// The four-letter words' answers. Each writes what ZooKeeper 3.8's command of the same name
// writes (server/command/*.java), checked byte for byte against a running 3.8 server; where
// paddock differs on purpose, the function says so.

func (a *Admin) ruokText(b *bytes.Buffer) { b.WriteString("imok") }

// isroText is IsroCommand: "null" while a member serves no client at all (no leader,
// not read-only), "ro" in read-only mode, "rw" otherwise.
func (a *Admin) isroText(b *bytes.Buffer) {
	switch st := a.src.Stats(); {
	case st.NotServing:
		b.WriteString("null")
	case st.Mode == ModeReadOnly:
		b.WriteString("ro")
	default:
		b.WriteString("rw")
	}
}

func (a *Admin) srvrText(b *bytes.Buffer) { a.writeStat(b, false) }
func (a *Admin) statText(b *bytes.Buffer) { a.writeStat(b, true) }

// writeStat is StatCommand: srvr, and stat when clients is set. ZooKeeper adds a
// "Proposal sizes" line on a leader; paddock has no proposal sizes and leaves it out.
func (a *Admin) writeStat(b *bytes.Buffer, clients bool) {
	st := a.src.Stats()
	fmt.Fprintf(b, "Zookeeper version: %s\n", a.version)
	if st.Mode == ModeReadOnly {
		b.WriteString("READ-ONLY mode; serving only read-only clients\n")
	}
	if clients {
		b.WriteString("Clients:\n")
		for _, c := range sortConnections(a.src.Connections()) {
			writeConnection(b, &c, true)
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	l := a.latency.snapshot()
	fmt.Fprintf(b, "Latency min/avg/max: %d/%s/%d\n", l.min, javaDouble(l.avg), l.max)
	fmt.Fprintf(b, "Received: %d\nSent: %d\nConnections: %d\nOutstanding: %d\n",
		st.PacketsReceived, st.PacketsSent, st.Connections, st.Outstanding)
	fmt.Fprintf(b, "Zxid: 0x%s\nMode: %s\nNode count: %d\n", javaHex(st.Zxid), st.Mode, st.Nodes)
}

// writeConnection is ServerCnxn.dumpConnectionInfo. ZooKeeper prints the NIO selector's
// interest ops in the brackets ("1" reading, "0" while the connection is paused); paddock's
// connections have no interest ops and always print 1.
func writeConnection(b *bytes.Buffer, c *Connection, brief bool) {
	fmt.Fprintf(b, " /%s[1](queued=%d,recved=%d,sent=%d", javaHostPort(c.Remote), c.Queued, c.Received, c.Sent)
	if !brief && c.SessionID != 0 {
		lop := c.LastOp
		if lop == "" {
			lop = "NA"
		}
		fmt.Fprintf(b, ",sid=0x%s,lop=%s", javaHex(c.SessionID), lop)
		if !c.Established.IsZero() {
			fmt.Fprintf(b, ",est=%d", c.Established.UnixMilli())
		}
		fmt.Fprintf(b, ",to=%d", c.Timeout.Milliseconds())
		if c.LastCxid >= 0 {
			fmt.Fprintf(b, ",lcxid=0x%s", javaHex(c.LastCxid))
		}
		fmt.Fprintf(b, ",lzxid=0x%s,lresp=%d,llat=%d,minlat=%d,avglat=%d,maxlat=%d",
			javaHex(c.LastZxid), javaMillis(c.LastResponse), c.LastLatency.Milliseconds(),
			c.MinLatency.Milliseconds(), c.AvgLatency.Milliseconds(), c.MaxLatency.Milliseconds())
	}
	b.WriteByte(')')
}

func (a *Admin) consText(b *bytes.Buffer) {
	for _, c := range sortConnections(a.src.Connections()) {
		writeConnection(b, &c, false)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
}

func (a *Admin) crstText(b *bytes.Buffer) {
	a.src.ResetConnectionStats()
	b.WriteString("Connection stats reset.\n")
}

func (a *Admin) srstText(b *bytes.Buffer) {
	a.resetStats()
	b.WriteString("Server stats reset.\n")
}

// confText is ZooKeeperServer.dumpConf for a standalone server. clientPortListenBacklog
// is always -1: paddock uses the OS backlog.
func (a *Admin) confText(b *bytes.Buffer) {
	c := a.conf()
	fmt.Fprintf(b, "clientPort=%d\nsecureClientPort=%d\n", c.ClientPort, c.SecureClientPort)
	fmt.Fprintf(b, "dataDir=%s\ndataDirSize=%d\n", c.dataDir, c.dataDirSize)
	fmt.Fprintf(b, "dataLogDir=%s\ndataLogSize=%d\n", c.dataLogDir, c.dataLogSize)
	fmt.Fprintf(b, "tickTime=%d\nmaxClientCnxns=%d\n", c.TickTime.Milliseconds(), c.MaxClientCnxns)
	fmt.Fprintf(b, "minSessionTimeout=%d\nmaxSessionTimeout=%d\n",
		c.MinSessionTimeout.Milliseconds(), c.MaxSessionTimeout.Milliseconds())
	fmt.Fprintf(b, "clientPortListenBacklog=-1\nserverId=%d\n", c.ServerID)
}

func (a *Admin) dirsText(b *bytes.Buffer) {
	c := a.conf()
	fmt.Fprintf(b, "datadir_size: %d\nlogdir_size: %d\n", c.dataDirSize, c.dataLogSize)
}

// dumpText is DumpCommand. ZooKeeper's expiry queues also list buckets that have emptied
// and count them in "Sets (n)"; paddock's buckets come from the sessions, so never empty.
func (a *Admin) dumpText(b *bytes.Buffer) {
	sessions := a.src.Sessions()
	buckets := sessionBuckets(sessions)
	fmt.Fprintf(b, "SessionTracker dump:\nSession Sets (%d)/(%d):\n", len(buckets), len(sessions))
	for _, bk := range buckets {
		fmt.Fprintf(b, "%d expire at %s:\n", len(bk.ids), javaDate(bk.expires))
		for _, id := range bk.ids {
			fmt.Fprintf(b, "\t0x%s\n", javaHex(id))
		}
	}
	owners := ephemeralOwners(sessions)
	fmt.Fprintf(b, "ephemeral nodes dump:\nSessions with Ephemerals (%d):\n", len(owners))
	for _, s := range owners {
		fmt.Fprintf(b, "0x%s:\n", javaHex(s.ID))
		for _, p := range s.Ephemerals {
			fmt.Fprintf(b, "\t%s\n", p)
		}
	}
	conns := a.src.Connections()
	cb := connectionBuckets(conns)
	fmt.Fprintf(b, "Connections dump:\nConnections Sets (%d)/(%d):\n", len(cb), len(conns))
	for _, bk := range cb {
		fmt.Fprintf(b, "%d expire at %s:\n", len(bk.conns), javaDate(bk.expires))
		for _, c := range bk.conns {
			fmt.Fprintf(b, "\tip: /%s sessionId: 0x%s\n", javaHostPort(c.Remote), javaHex(c.SessionID))
		}
	}
}

func (a *Admin) enviText(b *bytes.Buffer) {
	b.WriteString("Environment:\n")
	for _, f := range a.environment() {
		fmt.Fprintf(b, "%s=%s\n", f.key, f.val)
	}
}

// mntrText is MonitorCommand: "zk_<key>\t<value>" lines, integers in decimal and doubles
// as Java prints them.
func (a *Admin) mntrText(b *bytes.Buffer) {
	for _, f := range a.monitor() {
		var v string
		switch x := f.val.(type) {
		case int64:
			v = strconv.FormatInt(x, 10)
		case float64:
			v = javaDouble(x)
		default:
			v = fmt.Sprint(x)
		}
		fmt.Fprintf(b, "zk_%s\t%s\n", f.key, v)
	}
}

// The watch words. Like ZooKeeper 3.8 they list the data-watch table only (Source.Watches):
// a path watched only for its children does not show.

func (a *Admin) wchsText(b *bytes.Buffer) {
	ws := groupWatches(a.src.Watches())
	fmt.Fprintf(b, "%d connections watching %d paths\nTotal watches:%d\n", len(ws.bySession), len(ws.byPath), ws.total)
}

func (a *Admin) wchcText(b *bytes.Buffer) {
	for _, s := range groupWatches(a.src.Watches()).bySession {
		fmt.Fprintf(b, "0x%s\n", javaHex(s.id))
		for _, p := range s.paths {
			fmt.Fprintf(b, "\t%s\n", p)
		}
	}
	b.WriteByte('\n')
}

func (a *Admin) wchpText(b *bytes.Buffer) {
	for _, p := range groupWatches(a.src.Watches()).byPath {
		fmt.Fprintf(b, "%s\n", p.path)
		for _, id := range p.ids {
			fmt.Fprintf(b, "\t0x%s\n", javaHex(id))
		}
	}
	b.WriteByte('\n')
}

// resetStats is srst: the server's packet counters and admin's latency figures. The
// Prometheus histograms are not reset: Prometheus counters must only grow.
func (a *Admin) resetStats() {
	a.src.ResetStats()
	for _, s := range []*avgMinMax{&a.latency, &a.read, &a.update, &a.fsync} {
		s.reset()
	}
	a.fsyncSlow.reset()
}

// monitor returns mntr's values in the order it prints them: zk_version and
// zk_server_state first, as ZooKeeper, then the gauges that mean something for paddock, then
// avg/min/max/cnt/sum of the latency summaries ZooKeeper's dashboards read (without
// ZooKeeper's p50..p999, which would need a quantile sketch on the hot path).
func (a *Admin) monitor() object {
	st := a.src.Stats()
	l := a.latency.snapshot()
	o := object{
		{"version", a.version},
		{"server_state", st.Mode},
		{"avg_latency", l.avg},
		{"max_latency", l.max},
		{"min_latency", l.min},
		{"packets_received", st.PacketsReceived},
		{"packets_sent", st.PacketsSent},
		{"num_alive_connections", st.Connections},
		{"outstanding_requests", st.Outstanding},
		{"uptime", a.uptime().Milliseconds()},
		{"znode_count", st.Nodes},
		{"watch_count", st.Watches},
		{"ephemerals_count", st.Ephemerals},
		{"approximate_data_size", st.DataSize},
		{"global_sessions", st.Sessions},
		{"local_sessions", 0}, // local sessions (localSessionsEnabled) do not exist in paddock
	}
	if q := st.Quorum; q != nil {
		o = append(o, field{"quorum_size", q.Size})
		if st.Mode == ModeLeader {
			// 3.8 counts every learner in zk_learners; zk_followers, which the
			// administrator's guide still shows, counts the voting ones.
			o = append(o, field{"learners", q.Followers + q.Observers}, field{"followers", q.Followers},
				field{"synced_followers", q.SyncedFollowers}, field{"synced_non_voting_followers", 0},
				field{"synced_observers", q.SyncedObservers}, field{"pending_syncs", 0})
		}
		r := q.Refused
		o = append(o, field{"peer_connections_refused", r.Connections}, field{"peer_frames_refused", r.Frames},
			field{"peer_messages_dropped", r.Messages}, field{"peer_proposals_refused", r.Proposals},
			field{"peer_notes_dropped", r.Notes}, field{"peer_snapshots_refused", r.Snapshots},
			field{"raft_entries_skipped", r.EntriesSkipped},
			field{"raft_entries_undecodable", r.EntriesUndecodable},
			field{"raft_committed_conflicts", r.CommittedConflicts},
			field{"raft_term", q.Term}, field{"raft_term_catch_ups", q.TermCatchUps})
	}
	if open, limit, ok := fileDescriptors(); ok {
		o = append(o, field{"open_file_descriptor_count", open}, field{"max_file_descriptor_count", limit})
	}
	o = a.read.appendSummary(o, "readlatency")
	o = a.update.appendSummary(o, "updatelatency")
	o = a.fsync.appendSummary(o, "fsynctime")
	return appendQuotaAudit(appendLimits(o, &st.Limits), &st.QuotaAudit)
}

// appendLimits adds the counters of the bounds at the client port, under ZooKeeper's
// names where ZooKeeper counts the same thing.
func appendLimits(o object, l *LimitStats) object {
	return append(o,
		field{"sessionless_connections_expired", l.SessionlessExpired},
		field{"frames_rejected", l.FramesRejected},
		field{"large_responses_rejected", l.LargeResponsesRejected},
		field{"connection_drop_count", l.ConnectionsDropped},
		field{"request_throttle_wait_count", l.ThrottleWaits},
		field{"connection_throttle_wait_count", l.ConnThrottleWaits},
		field{"unsuccessful_handshake", l.TLSHandshakesFailed},
		field{"queued_bytes", l.QueuedBytes},
		field{"readonly_sessions_refused", l.ReadOnlyRefused})
}

// sortConnections orders connections by when they were accepted, then by address, so
// repeated dumps list them in a stable order (ZooKeeper's is hash order).
func sortConnections(cs []Connection) []Connection {
	slices.SortFunc(cs, func(x, y Connection) int {
		if c := x.Established.Compare(y.Established); c != 0 {
			return c
		}
		return x.Remote.Compare(y.Remote)
	})
	return cs
}

// confView is the configuration with absolute paths and directory sizes filled in.
type confView struct {
	ServerConf
	dataDir, dataLogDir      string
	dataDirSize, dataLogSize int64
}

func (a *Admin) conf() confView {
	c := confView{ServerConf: a.cfg.Server}
	c.dataDir = absPath(c.DataDir)
	c.dataLogDir = c.dataDir
	if c.DataLogDir != "" {
		c.dataLogDir = absPath(c.DataLogDir)
	}
	c.dataDirSize = dirSize(c.dataDir)
	c.dataLogSize = dirSize(c.dataLogDir)
	return c
}
