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
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/logcollector"
)

// collectorLiveWithin: a collector whose status was updated this recently is live.
const collectorLiveWithin = 10 * time.Second

// CollectorView is one collector: its assignment, its last status, and whether that
// status is fresh.
type CollectorView struct {
	Host       string                   `json:"host"`
	Assignment *logcollector.Assignment `json:"assignment"`
	Status     *logcollector.Status     `json:"status"`
	Live       bool                     `json:"live"`
}

// LogsView is the log collection: the rebalancer (its election node's data, nil when
// none is elected), one page of sources, and the collectors.
type LogsView struct {
	Rebalancer map[string]any            `json:"rebalancer"`
	Sources    []logcollector.SourceView `json:"sources"`
	Total      int                       `json:"total"`
	Offset     int                       `json:"offset"`
	// Next is the offset of the next page of sources, absent on the last one.
	Next       *int            `json:"next,omitempty"`
	Collectors []CollectorView `json:"collectors"`
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
	v := LogsView{Offset: offset, Collectors: []CollectorView{}}
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
	hosts, err := c.childrenOf(ctx, l.Collectors())
	if err != nil {
		return v, err
	}
	for _, h := range hosts {
		cv := CollectorView{Host: h}
		var a logcollector.Assignment
		if c.readJSON(ctx, l.Collector(h), &a) == nil {
			cv.Assignment = &a
		}
		var st logcollector.Status
		if c.readJSON(ctx, l.Status(h), &st) == nil {
			cv.Status = &st
			cv.Live = time.Since(st.Updated) < collectorLiveWithin
		}
		v.Collectors = append(v.Collectors, cv)
	}
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
