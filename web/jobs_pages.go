package web

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// The job pages: /jobs (every job with its next fire time, last fire and active runs;
// the create form) and /jobs/:name (the definition, the next fire times, the run
// history and, for a sharded job, where its items are placed), with their forms. What
// they show of a job's task is masked as the API's answers are (maskJobView), and a
// shard parameter too (maskValue).

// jobStatesLimit bounds how many tasks of the run history the job page reads the state
// of (the newest first); the others are shown as links only.
const jobStatesLimit = 50

// jobsPageView is the /jobs page.
type jobsPageView struct {
	Jobs          []*task.JobView
	Misfires      []string
	Concurrencies []string
	MaxShards     int
}

func (c *Console) jobsPage(g *gin.Context) {
	vs, err := c.taskClient().ListJobs(g.Request.Context())
	if err != nil {
		_, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
	}
	for _, v := range vs {
		maskJobView(v)
	}
	c.render(g, http.StatusOK, "jobs", "Jobs", jobsPageView{Jobs: vs,
		Misfires:      []string{task.MisfireRunOnce, task.MisfireSkip},
		Concurrencies: []string{task.ConcurrencySkip, task.ConcurrencyQueue, task.ConcurrencyAllow},
		MaxShards:     task.MaxShards})
}

// jobPageView is the /jobs/:name page.
type jobPageView struct {
	*task.JobView
	// ShardParams are the job's shard parameters, masked.
	ShardParams []string
	Fires       []fireRow
	// Placement is a sharded job's plan, by worker; Unplaced the items it does not
	// place. PlanNote says why there is no placement to show, if there is none.
	Placement []placementRow
	Unplaced  []string
	PlanNote  string
	// StatesCut says the states of the older fires' tasks were not read.
	StatesCut bool
}

// fireRow is one fire record with its tasks.
type fireRow struct {
	task.FireView
	Runs []fireRun
}

// fireRun is a task a fire started: Item is its shard item, -1 if the job is not
// sharded; State is "" when it was not read, or the task is gone.
type fireRun struct {
	Item  int
	ID    string
	State task.State
}

// placementRow is a worker's items in a sharded job's plan.
type placementRow struct {
	Worker string
	Items  []shardItem
}

type shardItem struct {
	Item  string
	Param string
}

func (c *Console) jobPage(g *gin.Context) {
	name := g.Param("name")
	if err := task.CheckJobName(name); err != nil {
		c.deny(g, http.StatusBadRequest, err.Error())
		return
	}
	ctx := g.Request.Context()
	v, err := c.taskClient().GetJob(ctx, name)
	if err != nil {
		status, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
		c.render(g, status, "job", name, nil)
		return
	}
	p := jobPageView{JobView: maskJobView(v)}
	for _, s := range v.Job.ShardParams {
		p.ShardParams = append(p.ShardParams, maskValue("", s))
	}
	var ids []string
	for _, f := range v.Fires {
		row := fireRow{FireView: f}
		if f.Task != "" {
			row.Runs = append(row.Runs, fireRun{Item: -1, ID: f.Task})
		}
		for i, id := range f.Tasks {
			row.Runs = append(row.Runs, fireRun{Item: i, ID: id})
		}
		for _, r := range row.Runs {
			switch {
			case task.CheckID(r.ID) != nil:
			case len(ids) < jobStatesLimit:
				ids = append(ids, r.ID)
			default:
				p.StatesCut = true
			}
		}
		p.Fires = append(p.Fires, row)
	}
	states := map[string]task.State{}
	if tasks, err := c.taskClient().GetEach(ctx, ids); err == nil {
		for _, t := range tasks {
			states[t.ID] = t.State
		}
	} else {
		c.logger.Warn("job page: read the states of its tasks", "job", name, "err", err)
	}
	for i := range p.Fires {
		for k := range p.Fires[i].Runs {
			p.Fires[i].Runs[k].State = states[p.Fires[i].Runs[k].ID]
		}
	}
	if v.Job.Shards > 0 {
		c.readPlacement(ctx, &p)
	}
	c.render(g, http.StatusOK, "job", name, p)
}

// readPlacement fills in where a sharded job's items are placed, from the plan the
// master keeps at /jobs/<job>/shards.
func (c *Console) readPlacement(ctx context.Context, p *jobPageView) {
	var data []byte
	err := c.read(ctx, func() (err error) {
		data, _, err = c.conn.Get(c.taskLayout().Shards(p.Job.Name))
		return err
	})
	var plan task.ShardPlan
	switch {
	case errors.Is(err, zk.ErrNoNode):
		p.PlanNote = "The master has not placed the items yet: it does once it runs and sees the job."
		return
	case err != nil:
		_, msg := zkStatus(err)
		p.PlanNote = "The plan could not be read: " + msg
		return
	case json.Unmarshal(data, &plan) != nil:
		p.PlanNote = "The plan node does not hold a plan; the master makes a new one."
		return
	}
	placed := map[string]bool{}
	for _, w := range slices.Sorted(maps.Keys(plan)) {
		row := placementRow{Worker: w}
		items := slices.Clone(plan[w])
		slices.SortFunc(items, func(a, b string) int { return itemOrder(a) - itemOrder(b) })
		for _, it := range items {
			si := shardItem{Item: it}
			if n, err := strconv.Atoi(it); err == nil && n >= 0 && n < len(p.ShardParams) {
				si.Param = p.ShardParams[n]
			}
			row.Items = append(row.Items, si)
			placed[it] = true
		}
		if len(row.Items) > 0 {
			p.Placement = append(p.Placement, row)
		}
	}
	for _, it := range p.Job.ShardItems() {
		if !placed[it] {
			p.Unplaced = append(p.Unplaced, it)
		}
	}
}

// itemOrder sorts shard items by number, anything else after them.
func itemOrder(item string) int {
	n, err := strconv.Atoi(item)
	if err != nil || n < 0 {
		return task.MaxShards * 2
	}
	return n
}

// jobForm reads the create form: name, schedule, time zone, the task's fields
// (specForm), shards, shard parameters one per line, misfire, concurrency and
// enabled. A field that does not parse is a requestError naming it.
func jobForm(g *gin.Context) (task.Job, error) {
	spec, err := specForm(g)
	if err != nil {
		return task.Job{}, err
	}
	j := task.Job{Name: strings.TrimSpace(g.PostForm("name")), Task: spec,
		Schedule: strings.TrimSpace(g.PostForm("schedule")), TimeZone: strings.TrimSpace(g.PostForm("time_zone")),
		Misfire: g.PostForm("misfire"), Concurrency: g.PostForm("concurrency"),
		Enabled: g.PostForm("enabled") == "true", ShardParams: paramLines(g.PostForm("shard_params"))}
	if s := strings.TrimSpace(g.PostForm("shards")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return j, badRequest("shards %q: want a whole number, 0 (not sharded) to %d", s, task.MaxShards)
		}
		j.Shards = n
	}
	return j, nil
}

// paramLines splits a textarea of shard parameters into lines, item 0's first: a
// blank line is an empty parameter, but blank lines at the end are dropped.
func paramLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		out = append(out, strings.TrimSuffix(l, "\r"))
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return out
}

func (c *Console) jobCreateForm(g *gin.Context) {
	j, err := jobForm(g)
	if err == nil {
		err = c.doCreateJob(g, j)
	}
	if err != nil {
		formFailed(g, "/jobs", err)
		return
	}
	redirectWith(g, "/jobs/"+j.Name, "flash", "created "+j.Name)
}

// jobBack is where a job's form sends the browser back to: the list if it was posted
// from there (from=list), else the job's page.
func jobBack(g *gin.Context, name string) string {
	if g.PostForm("from") == "list" || task.CheckJobName(name) != nil {
		return "/jobs"
	}
	return "/jobs/" + name
}

func (c *Console) jobEnableForm(enabled bool) gin.HandlerFunc {
	return func(g *gin.Context) {
		name := g.Param("name")
		if err := c.doEnableJob(g, name, enabled); err != nil {
			formFailed(g, jobBack(g, name), err)
			return
		}
		msg := "disabled " + name
		if enabled {
			msg = "enabled " + name
		}
		redirectWith(g, jobBack(g, name), "flash", msg)
	}
}

func (c *Console) jobRunForm(g *gin.Context) {
	name := g.Param("name")
	ids, err := c.doRunJob(g, name)
	if err != nil {
		formFailed(g, jobBack(g, name), err)
		return
	}
	redirectWith(g, jobBack(g, name), "flash", "ran "+name+" now: "+strings.Join(ids, ", "))
}

func (c *Console) jobClearFaultForm(g *gin.Context) {
	name := g.Param("name")
	if err := c.doClearJobFault(g, name); err != nil {
		formFailed(g, jobBack(g, name), err)
		return
	}
	redirectWith(g, jobBack(g, name), "flash", "cleared the error of "+name+": the master tries it again now")
}

// jobDeleteForm deletes the job if the form's confirm field repeats its name.
func (c *Console) jobDeleteForm(g *gin.Context) {
	name := g.Param("name")
	if confirm := strings.TrimSpace(g.PostForm("confirm")); confirm != name {
		formFailed(g, jobBack(g, name), badRequest("confirm: type the job's name, %s, to delete it", name))
		return
	}
	if err := c.doDeleteJob(g, name); err != nil {
		formFailed(g, jobBack(g, name), err)
		return
	}
	redirectWith(g, "/jobs", "flash", "deleted "+name+" and its fire records; the tasks it started stay")
}

// policies renders a job's policies, the defaults filled in.
func policies(j task.Job) string {
	d := j.WithDefaults()
	s := "misfire " + d.Misfire + ", concurrency " + d.Concurrency
	if j.Shards > 0 {
		s += ", " + strconv.Itoa(j.Shards) + " shards"
	}
	return s
}

// inZone renders t in the IANA zone tz (UTC if empty or unknown).
func inZone(t time.Time, tz string) string {
	loc := time.UTC
	if tz != "" {
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	return t.In(loc).Format("2006-01-02 15:04:05Z07:00")
}
