package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/logcollector"
)

// LogsView is the log collection: the rebalancer (its election node's data, nil when
// none is elected), one page of sources, and the collectors.
type LogsView struct {
	Rebalancer map[string]any            `json:"rebalancer"`
	Sources    []logcollector.SourceView `json:"sources"`
	Total      int                       `json:"total"`
	Offset     int                       `json:"offset"`
	// Next is the offset of the next page of sources, absent on the last one.
	Next       *int                         `json:"next,omitempty"`
	Collectors []logcollector.CollectorView `json:"collectors"`
}

func (c *Console) logsLayout() logcollector.Layout {
	l, _ := logcollector.NewLayout(c.cfg.Root) // Config.Validate checked the root
	return l
}

func (c *Console) logsAdmin() *logcollector.Admin {
	return logcollector.NewAdmin(c.session, c.logsLayout())
}

func (c *Console) logsView(ctx context.Context, offset, limit int) (LogsView, error) {
	l := c.logsLayout()
	v := LogsView{Offset: offset, Collectors: []logcollector.CollectorView{}}
	var reb map[string]any
	switch err := c.readJSON(ctx, l.Rebalancer(), &reb); {
	case err == nil, errors.Is(err, zk.ErrNoNode):
		v.Rebalancer = reb
	default:
		if status, _ := zkStatus(err); status != http.StatusInternalServerError {
			return v, err
		}
		v.Rebalancer = map[string]any{"error": "unreadable data"} // not JSON
	}
	sources, err := c.logsAdmin().Sources(ctx)
	if err != nil {
		return v, err
	}
	v.Total = len(sources)
	lo, hi := min(offset, len(sources)), min(offset+limit, len(sources))
	v.Sources = append([]logcollector.SourceView{}, sources[lo:hi]...)
	if hi < len(sources) {
		v.Next = &hi
	}
	collectors, err := c.logsAdmin().Collectors(ctx)
	if err != nil {
		return v, err
	}
	v.Collectors = append(v.Collectors, collectors...)
	return v, nil
}

// checkSource reports what is wrong with a new source, naming the field, before the
// admin is asked (whose own refusals are not told apart from other errors).
func checkSource(id, host, path string) error {
	var errs []string
	if err := logcollector.CheckID("source", id); err != nil {
		errs = append(errs, "id: "+err.Error())
	}
	if strings.TrimSpace(host) == "" {
		errs = append(errs, "host: empty")
	}
	if !strings.HasPrefix(path, "/") {
		errs = append(errs, fmt.Sprintf("path %q: want an absolute path or glob", path))
	} else if _, err := filepath.Match(path, ""); err != nil {
		errs = append(errs, fmt.Sprintf("path %q: %v", path, err))
	}
	if len(errs) > 0 {
		return badRequest("%s", strings.Join(errs, "; "))
	}
	return nil
}

func (c *Console) doAddSource(g *gin.Context, id, host, path string) error {
	if err := checkSource(id, host, path); err != nil {
		return err
	}
	if err := c.logsAdmin().AddSource(g.Request.Context(), id, host, path); err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "logs.source.add", Target: id, Before: snapshotOf(nil, nil),
		After: c.getForAudit(c.logsLayout().Source(id))})
	return nil
}

func (c *Console) doRemoveSource(g *gin.Context, id string) error {
	if err := logcollector.CheckID("source", id); err != nil {
		return badRequest("%v", err)
	}
	before := c.getForAudit(c.logsLayout().Source(id))
	if err := c.logsAdmin().RemoveSource(g.Request.Context(), id); err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "logs.source.remove", Target: id, Before: before, After: snapshotOf(nil, nil)})
	return nil
}

func (c *Console) apiLogs(g *gin.Context) {
	offset, err1 := queryInt(g, "offset", 0)
	limit, err2 := queryInt(g, "limit", defaultPageSize)
	if err1 != nil || err2 != nil || offset < 0 || limit < 1 || limit > maxPageSize {
		apiError(g, http.StatusBadRequest, fmt.Sprintf("offset: want 0 or more; limit: want 1 to %d", maxPageSize))
		return
	}
	v, err := c.logsView(g.Request.Context(), offset, limit)
	if err != nil {
		c.serviceError(g, "logs", err)
		return
	}
	g.JSON(http.StatusOK, v)
}

type sourceRequest struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	Path string `json:"path"`
}

func (c *Console) apiAddSource(g *gin.Context) {
	var r sourceRequest
	dec := json.NewDecoder(g.Request.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		apiError(g, http.StatusBadRequest, "want a JSON body {\"id\", \"host\", \"path\"}: "+err.Error())
		return
	}
	if err := c.doAddSource(g, r.ID, r.Host, r.Path); err != nil {
		c.serviceError(g, r.ID, err)
		return
	}
	g.JSON(http.StatusCreated, r)
}

func (c *Console) apiRemoveSource(g *gin.Context) {
	id := g.Param("id")
	if err := c.doRemoveSource(g, id); err != nil {
		c.serviceError(g, id, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"id": id, "deleted": true})
}

type logsPage struct {
	LogsView
	Prev    int
	HasPrev bool
	NextOff int
}

func (c *Console) logsPage(g *gin.Context) {
	offset, _ := strconv.Atoi(g.Query("offset"))
	offset = max(offset, 0)
	v, err := c.logsView(g.Request.Context(), offset, defaultPageSize)
	if err != nil {
		_, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
	}
	p := logsPage{LogsView: v, HasPrev: offset > 0, Prev: max(offset-defaultPageSize, 0)}
	if v.Next != nil {
		p.NextOff = *v.Next
	}
	c.render(g, http.StatusOK, "logs", "Log collection", p)
}

func (c *Console) addSourceForm(g *gin.Context) {
	id := strings.TrimSpace(g.PostForm("id"))
	if err := c.doAddSource(g, id, strings.TrimSpace(g.PostForm("host")), g.PostForm("path")); err != nil {
		formFailed(g, "/logs", err)
		return
	}
	redirectWith(g, "/logs", "flash", "added source "+id)
}

func (c *Console) removeSourceForm(g *gin.Context) {
	id := g.Param("id")
	if err := c.doRemoveSource(g, id); err != nil {
		formFailed(g, "/logs", err)
		return
	}
	redirectWith(g, "/logs", "flash", "removed source "+id)
}

// logsStatus is serviceStatus, knowing the collectors' errors.
func logsStatus(err error) (int, string) {
	switch {
	case errors.Is(err, logcollector.ErrNoCollector):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, logcollector.ErrCollectorLive), errors.Is(err, logcollector.ErrCollectorBusy):
		return http.StatusConflict, err.Error()
	}
	return serviceStatus(err)
}

// collectorAction is drain, undrain or remove.
type collectorAction string

const (
	actionDrain   collectorAction = "drain"
	actionUndrain collectorAction = "undrain"
	actionRemove  collectorAction = "remove"
)

// doCollector does action to collector id and audits it (logs.collector.drain,
// .undrain, .remove): the drained node's before and after for drain and undrain, the
// collector node's for remove.
func (c *Console) doCollector(g *gin.Context, action collectorAction, id string, force bool) error {
	if err := logcollector.CheckID("collector", id); err != nil {
		return badRequest("%v", err)
	}
	l, adm, ctx := c.logsLayout(), c.logsAdmin(), g.Request.Context()
	path := l.Drained(id)
	if action == actionRemove {
		path = l.Collector(id)
	}
	before := c.getForAudit(path)
	var err error
	switch action {
	case actionDrain:
		err = adm.Drain(ctx, id)
	case actionUndrain:
		err = adm.Undrain(ctx, id)
	default:
		err = adm.RemoveCollector(ctx, id, force)
	}
	if err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "logs.collector." + string(action), Target: id, Before: before, After: c.getForAudit(path)})
	return nil
}

// logsCollectorAPIRoutes registers the collectors' API on /api/v1, and
// logsCollectorFormRoutes their forms on the pages' group: drain, undrain and remove,
// for operators.
func (c *Console) logsCollectorAPIRoutes(r *gin.RouterGroup, operator gin.HandlerFunc) {
	for _, a := range []collectorAction{actionDrain, actionUndrain} {
		r.POST("/logs/collectors/:id/"+string(a), operator, c.apiCollector(a))
	}
	r.DELETE("/logs/collectors/:id", operator, c.apiCollector(actionRemove))
}

func (c *Console) logsCollectorFormRoutes(r *gin.RouterGroup, operator gin.HandlerFunc) {
	for _, a := range []collectorAction{actionDrain, actionUndrain} {
		r.POST("/logs/collectors/:id/"+string(a), operator, c.collectorForm(a))
	}
	r.POST("/logs/collectors/:id/delete", operator, c.collectorForm(actionRemove))
}

func (c *Console) apiCollector(action collectorAction) gin.HandlerFunc {
	return func(g *gin.Context) {
		id := g.Param("id")
		if err := c.doCollector(g, action, id, g.Query("force") == "true"); err != nil {
			status, msg := logsStatus(err)
			if status == http.StatusInternalServerError {
				c.serviceError(g, id, err)
				return
			}
			apiError(g, status, msg)
			return
		}
		g.JSON(http.StatusOK, gin.H{"id": id, "action": string(action)})
	}
}

func (c *Console) collectorForm(action collectorAction) gin.HandlerFunc {
	return func(g *gin.Context) {
		id := g.Param("id")
		if err := c.doCollector(g, action, id, g.PostForm("force") == "true"); err != nil {
			_, msg := logsStatus(err)
			redirectWith(g, "/logs", "error", msg)
			return
		}
		done := map[collectorAction]string{actionDrain: "drained collector ", actionUndrain: "undrained collector ",
			actionRemove: "removed collector "}[action]
		redirectWith(g, "/logs", "flash", done+id)
	}
}
