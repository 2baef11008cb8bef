package web

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/paddock/paddock/task"
)

// Bounds of the platform summary: it reads the services' znodes read-only, at most
// once per platformTTL whatever the number of viewers.
const (
	platformTTL = 10 * time.Second
	// platformTimeout bounds the wait for a fresh summary, so that the overview
	// answers while the console's own session is down.
	platformTimeout = 5 * time.Second
	// summaryTaskLimit is how many of the newest tasks are counted by state.
	summaryTaskLimit = 100
	// summaryListLimit bounds the workers, replication tasks and collectors listed.
	summaryListLimit = 100
)

// StateCount is how many tasks are in one state.
type StateCount struct {
	State string `json:"state"`
	Count int    `json:"count"`
}

// TaskSummary counts the newest tasks by state.
type TaskSummary struct {
	ByState []StateCount `json:"by_state"` // every state, in lifecycle order
	Counted int          `json:"counted"`  // the newest summaryTaskLimit at most
	Total   int          `json:"total"`
	Error   string       `json:"error,omitempty"`
}

// WorkerLoad is one live worker: its slots and what it holds.
type WorkerLoad struct {
	ID       string `json:"id"`
	Capacity int    `json:"capacity"`
	Assigned int    `json:"assigned"`
	Running  int    `json:"running"`
}

// WorkersSummary is the task cluster's master and workers.
type WorkersSummary struct {
	Master  string       `json:"master,omitempty"` // "" when none is elected
	Workers []WorkerLoad `json:"workers"`
	Error   string       `json:"error,omitempty"`
}

// ReplTaskHealth is one replication task's health and lag.
type ReplTaskHealth struct {
	Name         string   `json:"name"`
	Enabled      bool     `json:"enabled"`
	Health       string   `json:"health"` // the monitor's verdict, "unjudged" before any
	LagSeconds   *float64 `json:"lag_seconds,omitempty"`
	EventsBehind int64    `json:"events_behind"`
}

// ReplSummary counts the replication tasks by health.
type ReplSummary struct {
	ByHealth []StateCount     `json:"by_health"`
	Tasks    []ReplTaskHealth `json:"tasks"`
	Error    string           `json:"error,omitempty"`
}

// CollectorSummary is one log collector.
type CollectorSummary struct {
	ID      string `json:"id"`
	Host    string `json:"host,omitempty"` // the machine it runs on
	Live    bool   `json:"live"`
	State   string `json:"state,omitempty"` // judged by the servers' clock: running, draining, drained, dead…
	Sources int    `json:"sources"`         // in its assignment
}

// CollectorsSummary is the log collection's collectors and sources.
type CollectorsSummary struct {
	Sources    int                `json:"sources"`
	Collectors []CollectorSummary `json:"collectors"`
	Error      string             `json:"error,omitempty"`
}

// PlatformView is the overview's platform summary.
type PlatformView struct {
	Tasks       TaskSummary       `json:"tasks"`
	Workers     WorkersSummary    `json:"workers"`
	Replication ReplSummary       `json:"replication"`
	Collection  CollectorsSummary `json:"collection"`
	Checked     time.Time         `json:"checked"`
	Error       string            `json:"error,omitempty"`
}

// OverviewView is GET /api/v1/overview.
type OverviewView struct {
	Ensemble EnsembleView `json:"ensemble"`
	Platform PlatformView `json:"platform"`
}

func (c *Console) newPlatformCache() *refresher[PlatformView] {
	return &refresher[PlatformView]{ttl: platformTTL, read: func(ctx context.Context) (PlatformView, error) {
		return PlatformView{Tasks: c.taskSummary(ctx), Workers: c.workersSummary(ctx), Replication: c.replSummary(ctx),
			Collection: c.collectorsSummary(ctx), Checked: time.Now().UTC()}, nil
	}}
}

func (c *Console) newReplCache() *refresher[ReplSummary] {
	return &refresher[ReplSummary]{ttl: sampleInterval / 2, read: func(ctx context.Context) (ReplSummary, error) {
		return c.replSummary(ctx), nil
	}}
}

// platform returns the summary, read at most platformTTL ago when the console's
// session is connected, else the last one read (Checked says when).
func (c *Console) platform(ctx context.Context) PlatformView {
	v, _, at := c.platformCache.get(ctx, platformTimeout)
	if at.IsZero() {
		v.Error = "not read yet: the console's session is not connected"
	} else if time.Since(at) > 2*platformTTL {
		v.Error = "as read at " + at.UTC().Format(time.TimeOnly) + " UTC: the console's session is not connected"
	}
	return v
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	_, msg := zkStatus(err)
	return msg
}

func (c *Console) taskSummary(ctx context.Context) TaskSummary {
	p, err := c.listTasks(ctx, 0, summaryTaskLimit)
	s := TaskSummary{Total: p.Total, Counted: len(p.Tasks), Error: errText(err)}
	counts := map[task.State]int{}
	for _, t := range p.Tasks {
		counts[t.State]++
	}
	for _, st := range []task.State{task.Pending, task.Assigned, task.Running, task.Done, task.Failed, task.Cancelled, task.Skipped} {
		s.ByState = append(s.ByState, StateCount{string(st), counts[st]})
	}
	return s
}

func (c *Console) workersSummary(ctx context.Context) WorkersSummary {
	v, err := c.cluster(ctx)
	s := WorkersSummary{Workers: []WorkerLoad{}, Error: errText(err)}
	if v.Master != nil {
		s.Master = v.Master.ID
	}
	for _, w := range v.Workers[:min(len(v.Workers), summaryListLimit)] {
		s.Workers = append(s.Workers, WorkerLoad{w.ID, w.Info.Capacity, w.Assigned, w.Running})
	}
	return s
}

func (c *Console) replSummary(ctx context.Context) ReplSummary {
	vs, err := c.replList(ctx)
	s := ReplSummary{Tasks: []ReplTaskHealth{}, Error: errText(err)}
	counts := map[string]int{}
	for _, v := range vs {
		h := ReplTaskHealth{Name: v.Name, Enabled: v.Def.Enabled, Health: "unjudged"}
		if v.Health != nil && v.Health.State != "" {
			h.Health = v.Health.State
		}
		if v.Status != nil {
			lag := v.Status.LagSeconds
			h.LagSeconds, h.EventsBehind = &lag, v.Status.EventsBehind
		}
		counts[h.Health]++
		if len(s.Tasks) < summaryListLimit {
			s.Tasks = append(s.Tasks, h)
		}
	}
	for state, n := range counts {
		s.ByHealth = append(s.ByHealth, StateCount{state, n})
	}
	slices.SortFunc(s.ByHealth, func(a, b StateCount) int { return strings.Compare(a.State, b.State) })
	return s
}

func (c *Console) collectorsSummary(ctx context.Context) CollectorsSummary {
	v, err := c.logsView(ctx, 0, 0)
	s := CollectorsSummary{Sources: v.Total, Collectors: []CollectorSummary{}, Error: errText(err)}
	for _, cv := range v.Collectors[:min(len(v.Collectors), summaryListLimit)] {
		cs := CollectorSummary{ID: cv.ID, Host: cv.Host, Live: cv.Live, State: cv.State}
		if cv.Assignment != nil {
			cs.Sources = len(cv.Assignment.Sources)
		}
		s.Collectors = append(s.Collectors, cs)
	}
	return s
}

// maxReplLag is the largest lag of the replication tasks that report one.
func (s ReplSummary) maxLag() *float64 {
	var out *float64
	for _, t := range s.Tasks {
		if t.LagSeconds != nil && (out == nil || *t.LagSeconds > *out) {
			out = t.LagSeconds
		}
	}
	return out
}

func (c *Console) overview(ctx context.Context) OverviewView {
	return OverviewView{Ensemble: c.prober.view(ctx), Platform: c.platform(ctx)}
}

// apiOverview is GET /api/v1/overview: the ensemble and the platform summary.
func (c *Console) apiOverview(g *gin.Context) {
	g.JSON(http.StatusOK, c.overview(g.Request.Context()))
}

// apiHistory is GET /api/v1/overview/history: the samples of the last hour.
func (c *Console) apiHistory(g *gin.Context) {
	g.JSON(http.StatusOK, c.history.view())
}

type overviewPage struct {
	SessionID string
	State     string
	Logins    int
	OverviewView
}

func (c *Console) overviewPage(g *gin.Context) {
	p := overviewPage{SessionID: hex64(c.session.SessionID()), State: c.session.State().String(),
		Logins: c.sessions.count(), OverviewView: c.overview(g.Request.Context())}
	c.render(g, http.StatusOK, "overview", "Overview", p)
}

// mntrHidden are the keys of the admin port's answer that are not figures.
var mntrHidden = map[string]bool{"command": true, "error": true}

type serverPage struct {
	AdminAddr string
	Error     string
	Mntr      [][2]string
}

// serverPage is GET /server: every figure of the server at Config.AdminAddr (mntr).
func (c *Console) serverPage(g *gin.Context) {
	p := serverPage{AdminAddr: c.cfg.AdminAddr}
	var m map[string]any
	if err := c.adminJSON(g.Request.Context(), "mntr", &m); err != nil {
		p.Error = err.Error()
	}
	for k, v := range m {
		if mntrHidden[k] {
			continue
		}
		b, _ := json.Marshal(v)
		p.Mntr = append(p.Mntr, [2]string{k, strings.Trim(string(b), `"`)})
	}
	slices.SortFunc(p.Mntr, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	c.render(g, http.StatusOK, "server", "Server figures", p)
}

// fmtMs formats a figure in milliseconds for the page, "–" when absent.
func fmtMs(p *float64) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'f', 1, 64)
}

// P99 is the member's p99 latency as the page shows it.
func (m MemberView) P99() string { return fmtMs(m.LatencyP99Ms) }

// Lag is the member's lag behind the leader in zxids as the page shows it.
func (m MemberView) Lag() string {
	if m.LagZxids == nil {
		return "–"
	}
	return strconv.FormatInt(*m.LagZxids, 10)
}

// Lag is the task's lag in seconds as the page shows it.
func (t ReplTaskHealth) Lag() string { return fmtMs(t.LagSeconds) }
