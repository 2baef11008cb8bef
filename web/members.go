package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// How the overview learns the ensemble (see doc.go, "The ensemble"):
//
//   - the members are the server.N entries of /zookeeper/config (read through the
//     console's session); without any (a standalone server) they are Config.Servers;
//   - each member is probed at its client address with the four-letter word srvr,
//     which every server allows (4lw.commands.whitelist's default), or, when
//     Config.AdminAddrs names its admin port, with GET /commands/srvr there, plus
//     /metrics for the p99 request latency, which only the admin port has.
//
// A member whose client host is unspecified (0.0.0.0, ::, or a bare port) is shown and
// probed at the host of its quorum address.
const (
	// probeTimeout bounds one probe of one member.
	probeTimeout = 2 * time.Second
	// ensembleTTL is how long one probe of the ensemble answers every viewer.
	ensembleTTL = 2 * time.Second
	// probeReplyLimit bounds what the console reads of a member's srvr or /metrics.
	probeReplyLimit = 1 << 20
	// maxMembers bounds the members the console probes (one goroutine each).
	maxMembers = 64
	// configReadTimeout bounds reading /zookeeper/config, so that the overview answers
	// while the console's own session is down.
	configReadTimeout = 3 * time.Second
	// membersTTL is how long the members read from /zookeeper/config are reused.
	membersTTL = 5 * time.Second
	// p99Window is the least time over which the p99 latency is measured.
	p99Window = 10 * time.Second
)

// memberTarget is one member to probe.
type memberTarget struct {
	ID     int64  // 0 when not known (members from Config.Servers)
	Client string // host:port shown and probed with 4lw; "" when not known
	Role   string // participant or observer from the configuration, "" when not known
	Admin  string // admin HTTP host:port, "" for none
}

// MemberView is one member of the ensemble as its probe found it.
type MemberView struct {
	ID      int64  `json:"id,omitempty"`
	Address string `json:"address"`
	// Role is the member's role in the configuration: participant or observer.
	Role string `json:"role,omitempty"`
	// Up says the member answered its probe.
	Up bool `json:"up"`
	// Mode is what the member says it is: leader, follower, observer, standalone,
	// read-only, or "not serving" (up, but not serving clients).
	Mode string `json:"mode,omitempty"`
	Zxid string `json:"zxid,omitempty"` // hex, 0x...
	// LagZxids is the leader's last zxid minus this member's; absent while no leader is
	// known.
	LagZxids     *int64   `json:"lag_zxids,omitempty"`
	Connections  int64    `json:"connections"`
	Outstanding  int64    `json:"outstanding"`
	Received     int64    `json:"packets_received"`
	LatencyAvgMs float64  `json:"latency_avg_ms"`
	LatencyMaxMs int64    `json:"latency_max_ms"`
	LatencyP99Ms *float64 `json:"latency_p99_ms,omitempty"` // admin port only
	// Via is how it was probed: "4lw" (srvr on the client port) or "admin".
	Via   string `json:"via"`
	Error string `json:"error,omitempty"`

	zxid int64
}

// EnsembleView is the overview's ensemble: every member and which one leads.
type EnsembleView struct {
	Leader  string       `json:"leader,omitempty"` // the leader's address, "" when none answers as leader
	Members []MemberView `json:"members"`
	// Source says where the members were read: /zookeeper/config or the console's zk key.
	Source  string    `json:"source"`
	Checked time.Time `json:"checked"`
	Error   string    `json:"error,omitempty"`
}

// histogram is a cumulative request-latency histogram read from /metrics.
type histogram struct {
	at     time.Time
	bounds []float64 // upper bounds, seconds, ascending
	counts []uint64  // cumulative counts per finite bound
	total  uint64    // every request, the +Inf bucket
}

// p99Windows are two histograms of one member, newer taken p99Window or more after
// older: the p99 is measured from older, so over p99Window to twice that (since the
// member started at first).
type p99Windows struct{ older, newer histogram }

// prober probes the ensemble and caches the answer for ensembleTTL. It is safe for
// concurrent use.
type prober struct {
	c *Console

	mu      sync.Mutex // held across a probe, so viewers share it
	last    EnsembleView
	lastAt  time.Time
	windows map[string]p99Windows // admin addr -> where its p99 is measured from
	members *refresher[memberList]
	dialer  *net.Dialer
}

// memberList is the members as last read, and where from.
type memberList struct {
	targets []memberTarget
	source  string
}

func newProber(c *Console) *prober {
	p := &prober{c: c, windows: map[string]p99Windows{}, dialer: &net.Dialer{}}
	var known []memberTarget // the members last read from /zookeeper/config; only reads touch it
	p.members = &refresher[memberList]{ttl: membersTTL, read: func(ctx context.Context) (memberList, error) {
		targets, source, err := c.memberTargets(ctx)
		switch {
		case source == "/zookeeper/config":
			known = targets
		case err != nil && known != nil: // the members are still there
			return memberList{known, "/zookeeper/config, as last read"}, err
		}
		return memberList{targets, source}, err
	}}
	return p
}

// view returns the ensemble, probed at most ensembleTTL ago.
func (p *prober) view(ctx context.Context) EnsembleView {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.lastAt) < ensembleTTL {
		return p.last
	}
	p.last, p.lastAt = p.probeLocked(ctx), time.Now()
	return p.last
}

func (p *prober) probeLocked(ctx context.Context) EnsembleView {
	list, err, at := p.members.get(ctx, configReadTimeout)
	targets, source := list.targets, list.source
	if at.IsZero() { // the first read is still waiting for the console's session
		targets, source = p.c.serverTargets(), "zk key"
		err = errors.New("/zookeeper/config not read yet: the console's session is not connected")
	}
	v := EnsembleView{Source: source, Checked: time.Now().UTC(), Members: make([]MemberView, len(targets))}
	if err != nil {
		v.Error = err.Error()
	}
	hists := make([]*histogram, len(targets)) // from the members probed at their admin port
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v.Members[i], hists[i] = p.probe(ctx, t)
		}()
	}
	wg.Wait()
	for i, h := range hists {
		if h != nil {
			p.setP99Locked(targets[i].Admin, *h, &v.Members[i])
		}
	}
	var leader *MemberView
	for i := range v.Members {
		if m := &v.Members[i]; m.Up && (m.Mode == "leader" || m.Mode == "standalone") {
			leader = m
		}
	}
	if leader != nil {
		v.Leader = leader.Address
		for i := range v.Members {
			if m := &v.Members[i]; m.Up && m.Zxid != "" {
				lag := max(leader.zxid-m.zxid, 0)
				m.LagZxids = &lag
			}
		}
	}
	return v
}

// memberTargets reads the members from /zookeeper/config, else Config.Servers.
func (c *Console) memberTargets(ctx context.Context) ([]memberTarget, string, error) {
	admins, _ := parseAdminAddrs(c.cfg.AdminAddrs) // Validate checked them
	var data []byte
	err := c.read(ctx, func() (err error) {
		data, _, err = c.conn.Get("/zookeeper/config")
		return err
	})
	targets := parseDynamicConfig(string(data))
	if len(targets) > maxMembers {
		targets = targets[:maxMembers]
	}
	if len(targets) > 0 {
		for i := range targets {
			targets[i].Admin = admins[targets[i].ID]
		}
		return targets, "/zookeeper/config", nil
	}
	targets = c.serverTargets()
	if err != nil {
		err = fmt.Errorf("read /zookeeper/config: %w; the members are the console's zk key", err)
	}
	return targets, "zk key", err
}

// serverTargets are the members when /zookeeper/config names none: Config.Servers,
// the only one's admin port Config.AdminAddr.
func (c *Console) serverTargets() []memberTarget {
	var targets []memberTarget
	for _, s := range c.cfg.Servers {
		targets = append(targets, memberTarget{Client: s})
	}
	if len(targets) == 1 {
		targets[0].Admin = c.cfg.AdminAddr
	}
	return targets
}

// parseAdminAddrs parses Config.AdminAddrs entries "ID=host:port".
func parseAdminAddrs(entries []string) (map[int64]string, error) {
	out := map[int64]string{}
	var errs []error
	for i, e := range entries {
		id, addr, _ := strings.Cut(e, "=")
		n, err := strconv.ParseInt(id, 10, 64)
		if _, _, aerr := net.SplitHostPort(addr); err != nil || n < 1 || aerr != nil {
			errs = append(errs, fmt.Errorf("admin_addrs[%d] = %s: want ID=host:port, the server id and its admin port", i, e))
			continue
		}
		out[n] = addr
	}
	return out, errors.Join(errs...)
}

// parseDynamicConfig reads ZooKeeper's dynamic configuration lines
// "server.<id>=<host>:<quorum port>:<election port>[:<role>][;[<client host>:]<client port>]".
func parseDynamicConfig(s string) []memberTarget {
	var out []memberTarget
	for _, line := range strings.Split(s, "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), "=")
		idText, isServer := strings.CutPrefix(key, "server.")
		id, err := strconv.ParseInt(idText, 10, 64)
		if !ok || !isServer || err != nil {
			continue
		}
		quorum, client, _ := strings.Cut(val, ";")
		host, rest := splitHost(quorum)
		t := memberTarget{ID: id, Role: "participant"}
		if parts := strings.Split(rest, ":"); len(parts) >= 3 && parts[2] != "" {
			t.Role = parts[2]
		}
		t.Client = clientAddr(host, strings.TrimSpace(client))
		out = append(out, t)
	}
	return out
}

// splitHost splits "host:rest" or "[v6]:rest" into host and rest.
func splitHost(s string) (string, string) {
	if strings.HasPrefix(s, "[") {
		if i := strings.Index(s, "]"); i > 0 {
			return s[1:i], strings.TrimPrefix(s[i+1:], ":")
		}
	}
	host, rest, _ := strings.Cut(s, ":")
	return host, rest
}

// clientAddr is the address to reach a member at: its client address, with an
// unspecified or missing host replaced by its quorum host.
func clientAddr(quorumHost, client string) string {
	if client == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(client)
	if err != nil { // a bare port
		host, port = "", client
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = quorumHost
	}
	return net.JoinHostPort(host, port)
}

// probe probes one member, and reads its latency histogram when it has an admin port
// (nil otherwise, or when that read failed).
func (p *prober) probe(ctx context.Context, t memberTarget) (MemberView, *histogram) {
	m := MemberView{ID: t.ID, Address: t.Client, Role: t.Role, Via: "4lw"}
	if m.Address == "" {
		m.Address = "(no client address)"
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var err error
	switch {
	case t.Admin != "":
		m.Via = "admin"
		err = p.probeAdmin(ctx, t.Admin, &m)
	case t.Client != "":
		err = p.probe4lw(ctx, t.Client, &m)
	default:
		err = errors.New("its configuration entry has no client address, and admin_addrs names no admin port for it")
	}
	if err != nil {
		m.Up, m.Mode, m.Error = false, "", err.Error()
		return m, nil
	}
	if t.Admin == "" {
		return m, nil
	}
	h, err := p.c.latencyHistogram(ctx, t.Admin)
	if err != nil {
		return m, nil // the p99 stays unknown; the member answered
	}
	return m, &h
}

// probe4lw sends srvr to addr and reads its answer.
func (p *prober) probe4lw(ctx context.Context, addr string, m *MemberView) error {
	conn, err := p.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("srvr at %s: %w", addr, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return fmt.Errorf("srvr at %s: %w", addr, err)
	}
	return parseSrvr(io.LimitReader(conn, probeReplyLimit), m)
}

// parseSrvr reads srvr's text answer into m.
func parseSrvr(r io.Reader, m *MemberView) error {
	sc := bufio.NewScanner(r)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "not currently serving") {
			m.Up, m.Mode = true, "not serving"
			return nil
		}
		if strings.Contains(line, "not in the whitelist") {
			return errors.New("srvr is not in the member's 4lw.commands.whitelist: allow it, or name its admin port in admin_addrs")
		}
		key, val, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch key {
		case "Mode":
			m.Mode, seen = val, true
		case "Zxid":
			z, _ := strconv.ParseUint(strings.TrimPrefix(val, "0x"), 16, 64)
			m.zxid, m.Zxid = int64(z), hex64(int64(z))
		case "Connections":
			m.Connections, _ = strconv.ParseInt(val, 10, 64)
		case "Outstanding":
			m.Outstanding, _ = strconv.ParseInt(val, 10, 64)
		case "Received":
			m.Received, _ = strconv.ParseInt(val, 10, 64)
		case "Latency min/avg/max":
			if f := strings.Split(val, "/"); len(f) == 3 {
				m.LatencyAvgMs, _ = strconv.ParseFloat(f[1], 64)
				m.LatencyMaxMs, _ = strconv.ParseInt(f[2], 10, 64)
			}
		}
	}
	if !seen {
		return errors.New("srvr: the answer has no Mode line")
	}
	m.Up = true
	return nil
}

// adminGet fetches http://addr/path with the console's admin credentials.
func (c *Console) adminGet(ctx context.Context, addr, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	if c.cfg.AdminUser != "" {
		req.Header.Set("Authorization", "digest "+c.cfg.AdminUser+":"+c.cfg.AdminPassword)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s%s answered %s", addr, path, resp.Status)
	}
	return resp, nil
}

type srvrJSON struct {
	Error *string `json:"error"`
	Stats struct {
		State       string  `json:"server_state"`
		Zxid        int64   `json:"last_processed_zxid"`
		Outstanding int64   `json:"outstanding_requests"`
		Avg         float64 `json:"avg_latency"`
		Max         int64   `json:"max_latency"`
		Connections int64   `json:"num_alive_client_connections"`
		Received    int64   `json:"packets_received"`
	} `json:"server_stats"`
}

func (p *prober) probeAdmin(ctx context.Context, addr string, m *MemberView) error {
	resp, err := p.c.adminGet(ctx, addr, "/commands/srvr")
	if err != nil {
		return fmt.Errorf("admin srvr: %w", err)
	}
	defer resp.Body.Close()
	var a srvrJSON
	if err := json.NewDecoder(io.LimitReader(resp.Body, probeReplyLimit)).Decode(&a); err != nil {
		return fmt.Errorf("admin srvr at %s: decode: %w", addr, err)
	}
	if a.Error != nil {
		m.Up, m.Mode = true, "not serving"
		return nil
	}
	s := a.Stats
	m.Up, m.Mode, m.zxid, m.Zxid = true, s.State, s.Zxid, hex64(s.Zxid)
	m.Connections, m.Outstanding, m.Received = s.Connections, s.Outstanding, s.Received
	m.LatencyAvgMs, m.LatencyMaxMs = s.Avg, s.Max
	return nil
}

// setP99Locked sets m's p99 latency from h, its admin port addr's histogram now
// (p99Windows); none when no request came in that time.
func (p *prober) setP99Locked(addr string, h histogram, m *MemberView) {
	w, ok := p.windows[addr]
	if !ok || len(w.newer.counts) != len(h.counts) || h.total < w.newer.total { // first, or a restart
		zero := histogram{bounds: h.bounds, counts: make([]uint64, len(h.counts))}
		w = p99Windows{older: zero, newer: h}
	} else if h.at.Sub(w.newer.at) >= p99Window {
		w.older, w.newer = w.newer, h
	}
	p.windows[addr] = w
	if q, ok := quantile(0.99, w.older, h); ok {
		q *= 1000
		m.LatencyP99Ms = &q
	}
}

// latencyHistogram reads paddock_request_duration_seconds from addr's /metrics,
// summed over its opcodes.
func (c *Console) latencyHistogram(ctx context.Context, addr string) (histogram, error) {
	resp, err := c.adminGet(ctx, addr, "/metrics")
	if err != nil {
		return histogram{}, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, probeReplyLimit))
	if err != nil && fams == nil {
		return histogram{}, err
	}
	fam, ok := fams["paddock_request_duration_seconds"]
	if !ok {
		return histogram{}, errors.New("no paddock_request_duration_seconds")
	}
	return sumHistograms(fam.GetMetric(), time.Now()), nil
}

func sumHistograms(ms []*dto.Metric, at time.Time) histogram {
	h := histogram{at: at}
	for _, m := range ms {
		h.total += m.GetHistogram().GetSampleCount()
		for i, b := range m.GetHistogram().GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				break
			}
			if i == len(h.bounds) {
				h.bounds = append(h.bounds, b.GetUpperBound())
				h.counts = append(h.counts, 0)
			}
			if h.bounds[i] == b.GetUpperBound() {
				h.counts[i] += b.GetCumulativeCount()
			}
		}
	}
	return h
}

// quantile estimates the q quantile of the requests between two cumulative histograms,
// interpolating linearly inside the bucket it falls in, as Prometheus's
// histogram_quantile does; false when no request fell between them.
func quantile(q float64, from, to histogram) (float64, bool) {
	n := len(to.counts)
	if n == 0 || len(from.counts) != n {
		return 0, false
	}
	total := float64(to.total - from.total)
	if total <= 0 {
		return 0, false
	}
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for i := range n {
		c := float64(to.counts[i] - from.counts[i])
		if c >= rank {
			return prevBound + (to.bounds[i]-prevBound)*(rank-prevCount)/(c-prevCount), true
		}
		prevBound, prevCount = to.bounds[i], c
	}
	return to.bounds[n-1], true
}
