package admin

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/paddock/paddock/server/wire"
)

// /metrics uses github.com/prometheus/client_golang rather than a hand-written exposition:
// it is what etcd and most Go servers export with, so scrapers and dashboards get the forms
// they expect (text and OpenMetrics negotiation, gzip, label escaping, _bucket/_sum/_count
// with +Inf) without us re-deriving them, and the Go runtime and process collectors come
// free. Its cost stays off the request path: Histogram.Observe is lock-free and allocation-
// free, and each opcode's histogram is looked up once and then cached in an array indexed
// by opcode, so ObserveRequest never hashes labels or takes the vector's lock. The
// server-wide gauges are read from Source.Stats only when Prometheus scrapes.

// Histogram buckets in seconds. Requests answered from memory take tens of microseconds;
// writes wait for an fsync (about 0.2 ms on our machines) or a quorum round trip.
var (
	requestBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	fsyncBuckets   = []float64{.00005, .0001, .0002, .0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5}
)

// opSlots covers opcodes -16..111 (every ZooKeeper opcode); others share the "unknown" label.
const (
	opMin   = -16
	opSlots = 128
)

type promMetrics struct {
	reg      *prometheus.Registry
	requests *prometheus.HistogramVec
	fsync    prometheus.Histogram
	stages   [numStages]prometheus.Observer
	// byOp caches requests' child for opcode opMin+i, created on first use so that only
	// opcodes clients actually send get series.
	byOp [opSlots]atomic.Pointer[prometheus.Observer]
}

func newPromMetrics(a *Admin) *promMetrics {
	m := &promMetrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "paddock", Name: "request_duration_seconds",
			Help:    "Time from reading a client request to writing its reply, by opcode name.",
			Buckets: requestBuckets,
		}, []string{"op"}),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "paddock", Name: "fsync_duration_seconds",
			Help:    "Duration of the log's fsyncs.",
			Buckets: fsyncBuckets,
		}),
	}
	stages := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "paddock", Name: "write_stage_seconds",
		Help: "Time writes spend in each stage of the write path: queue (request read to proposed to the log), " +
			"commit (proposed to applied on the member that proposed it), log_append (one write of the log " +
			"with its fdatasync), replicate (on an ensemble's leader: entries handed to its log and sent to the " +
			"followers, to known committed), apply (committed entries handed over, to applied).",
		Buckets: requestBuckets,
	}, []string{"stage"})
	for st := range numStages {
		m.stages[st] = stages.WithLabelValues(st.String())
	}
	m.reg.MustRegister(m.requests, m.fsync, stages, newStatsCollector(a),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *promMetrics) observer(op wire.Op) prometheus.Observer {
	i := int(op) - opMin
	if i < 0 || i >= opSlots { // a bad opcode, answered with an error: rare, not worth a slot
		return m.requests.WithLabelValues("unknown")
	}
	if o := m.byOp[i].Load(); o != nil {
		return *o
	}
	name := op.String()
	if strings.HasPrefix(name, "op(") { // not an opcode wire knows: bound the label values
		name = "unknown"
	}
	o := m.requests.WithLabelValues(name)
	m.byOp[i].Store(&o) // a racing first use stores the same child: harmless
	return o
}

// ObserveRequest records one answered request: op is its opcode, d the time from reading
// the request to writing its reply. Call it once per request, pings and the connect
// request included (ZooKeeper's latency figures count both), from the goroutine that
// completes the request. It is lock-free and does not allocate after an opcode's first use.
func (a *Admin) ObserveRequest(op wire.Op, d time.Duration) {
	ms := d.Milliseconds()
	a.latency.observe(ms)
	if op.IsWrite() {
		a.update.observe(ms)
	} else {
		a.read.observe(ms)
	}
	a.prom.observer(op).Observe(d.Seconds())
}

// ObserveFsync records one fsync of the log taking d. Lock-free and allocation-free.
func (a *Admin) ObserveFsync(d time.Duration) {
	a.fsync.observe(d.Milliseconds())
	if d > a.cfg.FsyncWarning {
		a.fsyncSlow.inc()
	}
	a.prom.fsync.Observe(d.Seconds())
}

// Stage is a stage of the write path, timed by ObserveStage.
type Stage int

// The stages of the write path (docs/performance.md draws them).
const (
	StageQueue     Stage = iota // a write request read, to proposed to the log
	StageCommit                 // proposed, to applied on the member that proposed it
	StageLogAppend              // one write of the log, with its fdatasync
	StageReplicate              // an ensemble leader's entries handed to its log and sent, to known committed
	StageApply                  // committed entries handed over, to applied
	numStages
)

func (st Stage) String() string {
	switch st {
	case StageQueue:
		return "queue"
	case StageCommit:
		return "commit"
	case StageLogAppend:
		return "log_append"
	case StageReplicate:
		return "replicate"
	case StageApply:
		return "apply"
	}
	return "unknown"
}

// ObserveStage records that a write, or a batch of them, spent d in stage st.
// Lock-free and allocation-free.
func (a *Admin) ObserveStage(st Stage, d time.Duration) {
	if st >= 0 && st < numStages {
		a.prom.stages[st].Observe(d.Seconds())
	}
}

// statsCollector exports Source.Stats at scrape time.
type statsCollector struct {
	a                                                       *Admin
	info, znodes, dataSize, ephemerals, watches, sessions   *prometheus.Desc
	connections, outstanding, received, sent, fsyncSlowDesc *prometheus.Desc
	sessionlessExpired, framesRejected, largeResponses      *prometheus.Desc
	connsDropped, throttleWaits, connThrottleWaits, queued  *prometheus.Desc
	readOnlyRefused                                         *prometheus.Desc
	peerRefused, raftTerm, termCatchUps                     *prometheus.Desc
	quotaAudit                                              *prometheus.Desc
	tlsHandshakesFailed                                     *prometheus.Desc
}

func newStatsCollector(a *Admin) *statsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("paddock_"+name, help, labels, nil)
	}
	return &statsCollector{
		a:             a,
		info:          d("server_info", "Always 1; labels give the ZooKeeper version reported and the server state.", "version", "state"),
		znodes:        d("znodes", "Number of znodes."),
		dataSize:      d("approximate_data_size_bytes", "Sum over znodes of path and data length."),
		ephemerals:    d("ephemerals", "Number of ephemeral znodes."),
		watches:       d("watches", "Number of registered watches."),
		sessions:      d("sessions", "Number of live sessions."),
		connections:   d("connections", "Number of open client connections."),
		outstanding:   d("outstanding_requests", "Requests read from clients and not yet answered."),
		received:      d("packets_received_total", "Packets received from clients (reset by srst)."),
		sent:          d("packets_sent_total", "Packets sent to clients (reset by srst)."),
		fsyncSlowDesc: d("fsync_threshold_exceeded_total", "Fsyncs slower than the fsync warning threshold (reset by srst)."),

		sessionlessExpired: d("sessionless_connections_expired_total", "Connections closed for sending no connect request within the handshake timeout."),
		framesRejected:     d("frames_rejected_total", "Connections closed for a frame announced longer than allowed (connect frame cap, jute.maxbuffer)."),
		largeResponses:     d("large_responses_rejected_total", "Reads refused because their reply would be larger than a client may read."),
		connsDropped:       d("connection_drops_total", "Connections closed because the replies queued for them passed the connection's or the server's limit."),
		throttleWaits:      d("request_throttle_waits_total", "Times a connection stopped reading because the server had its limit of requests outstanding."),
		connThrottleWaits:  d("connection_throttle_waits_total", "Times a connection stopped reading because it had its own limit of requests outstanding."),
		queued:             d("queued_bytes", "Bytes of replies and notifications queued for clients and not yet written."),
		readOnlyRefused:    d("readonly_sessions_refused_total", "Read-only sessions a read-only member refused: its table full, or the client's address keeping as many as it may."),
		quotaAudit:         d("quota_audit_total", "Quota refusals (quota_refused), quota limits passed without a refusal (quota_exceeded), audit lines written (audit_written) and lost (audit_dropped).", "event"),
		tlsHandshakesFailed: d("tls_handshakes_failed_total",
			"Connections to the secure client port closed because their TLS handshake failed or timed out."),
		peerRefused: d("peer_refused_total", "What an ensemble member refused of the other members' input, by kind: "+
			"connections, frames, raft messages, proposals, notes, snapshots; committed entries skipped or undecodable; "+
			"appends conflicting with committed entries (a forged log).", "kind"),
		raftTerm: d("raft_term", "An ensemble member's Raft term."),
		termCatchUps: d("raft_term_catch_ups_total", "Messages an ensemble member took with a term past the jump bound, "+
			"at most one an election timeout: catching up after missed elections, or a forger spending the allowance."),
	}
}

func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.znodes, c.dataSize, c.ephemerals, c.watches,
		c.sessions, c.connections, c.outstanding, c.received, c.sent, c.fsyncSlowDesc,
		c.sessionlessExpired, c.framesRejected, c.largeResponses, c.connsDropped, c.throttleWaits,
		c.connThrottleWaits, c.queued, c.readOnlyRefused, c.peerRefused, c.raftTerm, c.termCatchUps, c.quotaAudit, c.tlsHandshakesFailed} {
		ch <- d
	}
}

func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.a.src.Stats()
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	count := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(c.info, 1, Version, st.Mode)
	gauge(c.znodes, st.Nodes)
	gauge(c.dataSize, st.DataSize)
	gauge(c.ephemerals, st.Ephemerals)
	gauge(c.watches, st.Watches)
	gauge(c.sessions, st.Sessions)
	gauge(c.connections, st.Connections)
	gauge(c.outstanding, st.Outstanding)
	count(c.received, st.PacketsReceived)
	count(c.sent, st.PacketsSent)
	count(c.fsyncSlowDesc, c.a.fsyncSlow.load())
	l := &st.Limits
	count(c.sessionlessExpired, l.SessionlessExpired)
	count(c.framesRejected, l.FramesRejected)
	count(c.largeResponses, l.LargeResponsesRejected)
	count(c.connsDropped, l.ConnectionsDropped)
	count(c.throttleWaits, l.ThrottleWaits)
	count(c.connThrottleWaits, l.ConnThrottleWaits)
	count(c.tlsHandshakesFailed, l.TLSHandshakesFailed)
	gauge(c.queued, l.QueuedBytes)
	count(c.readOnlyRefused, l.ReadOnlyRefused)
	qa := &st.QuotaAudit
	for event, v := range map[string]int64{"quota_refused": qa.QuotaRefused, "quota_exceeded": qa.QuotaExceeded,
		"audit_written": qa.AuditWritten, "audit_dropped": qa.AuditDropped} {
		ch <- prometheus.MustNewConstMetric(c.quotaAudit, prometheus.CounterValue, float64(v), event)
	}
	if q := st.Quorum; q != nil {
		r := q.Refused
		for kind, v := range map[string]int64{"connection": r.Connections, "frame": r.Frames, "message": r.Messages,
			"proposal": r.Proposals, "note": r.Notes, "snapshot": r.Snapshots, "entry_skipped": r.EntriesSkipped,
			"entry_undecodable": r.EntriesUndecodable, "committed_conflict": r.CommittedConflicts} {
			ch <- prometheus.MustNewConstMetric(c.peerRefused, prometheus.CounterValue, float64(v), kind)
		}
		ch <- prometheus.MustNewConstMetric(c.raftTerm, prometheus.GaugeValue, float64(q.Term))
		ch <- prometheus.MustNewConstMetric(c.termCatchUps, prometheus.CounterValue, float64(q.TermCatchUps))
	}
}
