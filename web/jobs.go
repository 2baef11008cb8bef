package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/paddock/paddock/task"
)

// Jobs, through task.Client's job methods. What the console answers and audits of a
// job holds its task's secrets masked (maskSpec); an update that carries them masked,
// as it read them, keeps the stored ones (keepSecrets).

// maskJobView masks the secrets of v's task, or its DAG's tasks, in place.
func maskJobView(v *task.JobView) *task.JobView {
	if v != nil {
		maskJob(&v.Job)
	}
	return v
}

// maskJob masks the secrets of j's task and of each task of its DAG, in place (the DAG
// is copied: j may share it).
func maskJob(j *task.Job) {
	maskSpec(&j.Task)
	if len(j.DAG) > 0 {
		j.DAG = slices.Clone(j.DAG)
		for i := range j.DAG {
			maskSpec(&j.DAG[i].Spec)
		}
	}
}

// keepJobSecrets is keepSecrets for a job's task and each task of its DAG, matched by
// name to old's (nil for a new job).
func keepJobSecrets(j *task.Job, old *task.Job) error {
	var oldTask *task.Spec
	oldDAG := map[string]*task.Spec{}
	if old != nil {
		oldTask = &old.Task
		for i := range old.DAG {
			oldDAG[old.DAG[i].Name] = &old.DAG[i].Spec
		}
	}
	errs := []error{keepSecrets(&j.Task, oldTask)}
	for i := range j.DAG {
		if err := keepSecrets(&j.DAG[i].Spec, oldDAG[j.DAG[i].Name]); err != nil {
			errs = append(errs, fmt.Errorf("dag %s: %w", j.DAG[i].Name, err))
		}
	}
	return errors.Join(errs...)
}

// jobSnapshot is the audit snapshot of a job: its definition, its task masked.
func (c *Console) jobSnapshot(name string) *Snapshot {
	data, st, err := c.conn.Get(c.taskLayout().Job(name))
	if err != nil {
		return snapshotOf(nil, nil)
	}
	var j task.Job
	if err := json.Unmarshal(data, &j); err != nil {
		return snapshotOf(data, st) // masked as text
	}
	maskJob(&j)
	b, _ := json.Marshal(j)
	return snapshotOf(b, st)
}

// keepSecrets makes spec, about to replace old (nil for a new job), keep old's
// secrets where spec holds them as the console showed them, masked: an env value
// equal to old's masked value of the same name, or an argument equal to one of old's
// masked arguments, becomes old's. A mask left that old does not explain is refused,
// naming where it is: the console never stores the mask as a secret.
func keepSecrets(spec *task.Spec, old *task.Spec) error {
	if old == nil {
		old = &task.Spec{}
	}
	shown := *old
	maskSpec(&shown)
	var unexplained []string
	for k, v := range spec.Env {
		if ov, ok := old.Env[k]; ok && ov != v && shown.Env[k] == v {
			spec.Env[k] = ov
			continue
		}
		if hasMask(k, v) {
			unexplained = append(unexplained, "env "+k)
		}
	}
	// An argument is matched by value, so that arguments added or removed around it do
	// not matter; two different secrets masked alike restore neither.
	originals := map[string]string{}
	for i, a := range old.Args {
		if m := shown.Args[i]; m != a {
			if o, dup := originals[m]; dup && o != a {
				originals[m] = ""
			} else {
				originals[m] = a
			}
		}
	}
	restored := make([]string, len(spec.Args))
	for i, a := range spec.Args {
		restored[i] = a
		if o := originals[a]; o != "" {
			restored[i] = o
		} else if hasMask(argKey(spec.Args, i), a) {
			unexplained = append(unexplained, fmt.Sprintf("args[%d]", i))
		}
	}
	if len(spec.Args) > 0 {
		spec.Args = restored
	}
	if len(unexplained) > 0 {
		return badRequest("task: %s holds a masked secret (%s) that the console cannot restore: leave masked values "+
			"exactly as read, or type the secret", strings.Join(unexplained, ", "), secretMask)
	}
	return nil
}

// bindJob decodes a request's job; unknown fields are refused, and a bad value is
// named by its field (task.timeout), which encoding/json does not say for a duration.
func bindJob(g *gin.Context) (task.Job, bool) {
	var j task.Job
	body, err := io.ReadAll(g.Request.Body) // in memory already, and capped: limitBody
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(&j)
	}
	if err != nil {
		var syntax *json.SyntaxError
		if field := failingField(body, func() any { return new(task.Job) }); field != "" && !errors.As(err, &syntax) {
			err = fmt.Errorf("%s: %w", field, err)
		}
		apiError(g, http.StatusBadRequest, `want a JSON job {"name", "schedule", "time_zone", "task": {"command", …}, `+
			`"enabled", …}: `+err.Error())
		return j, false
	}
	return j, true
}

// failingField returns the dotted path (task.timeout) of the first field of the JSON
// object body whose value alone does not decode into fresh(), "" if none does.
func failingField(body []byte, fresh func() any) string {
	var walk func(path []string, raw json.RawMessage) string
	walk = func(path []string, raw json.RawMessage) string {
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return ""
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			// The value alone, nested as in body: {"task": {"timeout": "soon"}}.
			doc := obj[k]
			for i := len(path); i >= 0; i-- {
				key := k
				if i < len(path) {
					key = path[i]
				}
				name, _ := json.Marshal(key)
				doc = json.RawMessage(fmt.Sprintf("{%s:%s}", name, doc))
			}
			if json.Unmarshal(doc, fresh()) != nil {
				if sub := walk(append(slices.Clone(path), k), obj[k]); sub != "" {
					return sub
				}
				return strings.Join(append(slices.Clone(path), k), ".")
			}
		}
		return ""
	}
	return walk(nil, body)
}

// jobName is the :name of the request, or a 400 answered.
func jobName(g *gin.Context) (string, bool) {
	name := g.Param("name")
	if err := task.CheckJobName(name); err != nil {
		apiError(g, http.StatusBadRequest, err.Error())
		return "", false
	}
	return name, true
}

func (c *Console) apiJobs(g *gin.Context) {
	vs, err := c.taskClient().ListJobs(g.Request.Context())
	if err != nil {
		c.serviceError(g, "jobs", err)
		return
	}
	if vs == nil {
		vs = []*task.JobView{}
	}
	for _, v := range vs {
		maskJobView(v)
	}
	g.JSON(http.StatusOK, gin.H{"jobs": vs})
}

func (c *Console) apiJob(g *gin.Context) {
	name, ok := jobName(g)
	if !ok {
		return
	}
	v, err := c.taskClient().GetJob(g.Request.Context(), name)
	if err != nil {
		c.serviceError(g, name, err)
		return
	}
	g.JSON(http.StatusOK, maskJobView(v))
}

// answerJob answers status with the job as it is now, or with its name alone if it
// cannot be read back.
func (c *Console) answerJob(g *gin.Context, status int, name string) {
	v, err := c.taskClient().GetJob(g.Request.Context(), name)
	if err != nil {
		g.JSON(status, gin.H{"name": name})
		return
	}
	g.JSON(status, maskJobView(v))
}

func (c *Console) apiCreateJob(g *gin.Context) {
	j, ok := bindJob(g)
	if !ok {
		return
	}
	if err := c.doCreateJob(g, j); err != nil {
		c.serviceError(g, "jobs", err)
		return
	}
	c.answerJob(g, http.StatusCreated, j.Name)
}

// doCreateJob checks j and creates it, audited; bad input is a requestError naming the
// field. The API and the create form go through it.
func (c *Console) doCreateJob(g *gin.Context, j task.Job) error {
	err := keepJobSecrets(&j, nil)
	if err == nil {
		if verr := task.CheckJob(&j); verr != nil {
			err = badRequest("%v", verr)
		}
	}
	if err == nil {
		err = c.taskClient().CreateJob(g.Request.Context(), j)
	}
	if err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "job.create", Target: j.Name, Before: snapshotOf(nil, nil), After: c.jobSnapshot(j.Name)})
	return nil
}

// apiUpdateJob replaces a job's definition with the body's, at the version given
// (?version=N, a JobView's version) or else at the version it reads.
func (c *Console) apiUpdateJob(g *gin.Context) {
	name, ok := jobName(g)
	if !ok {
		return
	}
	version := int32(-1)
	if s := g.Query("version"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			apiError(g, http.StatusBadRequest, fmt.Sprintf("version %q: want the version the job was read at, 0 or more", s))
			return
		}
		version = int32(n)
	}
	j, ok := bindJob(g)
	if !ok {
		return
	}
	if j.Name != "" && j.Name != name {
		apiError(g, http.StatusBadRequest, "name: a job cannot be renamed; leave it out or give "+name)
		return
	}
	j.Name = name
	ctx := g.Request.Context()
	client := c.taskClient()
	old, err := client.GetJob(ctx, name)
	if errors.Is(err, task.ErrJobNotFound) {
		err = fmt.Errorf("update job %s: %w", name, task.ErrJobNotFound)
	}
	if err == nil {
		if version < 0 {
			version = old.Version // the secrets kept are that version's
		}
		err = keepJobSecrets(&j, &old.Job)
	}
	if err == nil {
		if verr := task.CheckJob(&j); verr != nil {
			err = badRequest("%v", verr)
		}
	}
	var before *Snapshot
	if err == nil {
		before = c.jobSnapshot(name)
		err = client.UpdateJobAt(ctx, j, version)
	}
	if err != nil {
		c.serviceError(g, name, err)
		return
	}
	c.audit(g, AuditRecord{Action: "job.update", Target: name, Before: before, After: c.jobSnapshot(name)})
	c.answerJob(g, http.StatusOK, name)
}

func (c *Console) apiEnableJob(enabled bool) gin.HandlerFunc {
	return func(g *gin.Context) {
		name, ok := jobName(g)
		if !ok {
			return
		}
		if err := c.doEnableJob(g, name, enabled); err != nil {
			c.serviceError(g, name, err)
			return
		}
		g.JSON(http.StatusOK, gin.H{"name": name, "enabled": enabled})
	}
}

// doEnableJob enables or disables job name, audited.
func (c *Console) doEnableJob(g *gin.Context, name string, enabled bool) error {
	if err := task.CheckJobName(name); err != nil {
		return badRequest("%v", err)
	}
	action := "job.disable"
	if enabled {
		action = "job.enable"
	}
	before := c.jobSnapshot(name)
	if err := c.taskClient().SetJobEnabled(g.Request.Context(), name, enabled); err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: action, Target: name, Before: before, After: c.jobSnapshot(name)})
	return nil
}

func (c *Console) apiRunJob(g *gin.Context) {
	name, ok := jobName(g)
	if !ok {
		return
	}
	ids, err := c.doRunJob(g, name)
	if err != nil {
		c.serviceError(g, name, err)
		return
	}
	// id is the first (the only one, unless the job is sharded: ids has one per item).
	g.JSON(http.StatusCreated, gin.H{"id": ids[0], "ids": ids, "job": name})
}

// doRunJob submits a run of job name now, audited, and returns its tasks' ids (one per
// item of a sharded job).
func (c *Console) doRunJob(g *gin.Context, name string) ([]string, error) {
	if err := task.CheckJobName(name); err != nil {
		return nil, badRequest("%v", err)
	}
	ids, err := c.taskClient().RunNow(g.Request.Context(), name)
	if err != nil {
		return nil, err
	}
	after := snapshotOf(nil, nil)
	if t, err := c.taskClient().Get(g.Request.Context(), ids[0]); err == nil {
		after = c.viewSnapshot(c.taskLayout().Task(ids[0]), maskTask(t).Spec)
	}
	c.audit(g, AuditRecord{Action: "job.run", Target: name, Note: "tasks " + strings.Join(ids, ", "),
		Before: snapshotOf(nil, nil), After: after})
	return ids, nil
}

func (c *Console) apiClearJobFault(g *gin.Context) {
	name, ok := jobName(g)
	if !ok {
		return
	}
	if err := c.doClearJobFault(g, name); err != nil {
		c.serviceError(g, name, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"name": name, "cleared": true})
}

// doClearJobFault deletes the master's record of job name in error, audited: the master
// tries the job again at once (and records it again if it fails again).
func (c *Console) doClearJobFault(g *gin.Context, name string) error {
	if err := task.CheckJobName(name); err != nil {
		return badRequest("%v", err)
	}
	before := snapshotOf(nil, nil)
	if data, st, err := c.conn.Get(c.taskLayout().JobFault(name)); err == nil {
		before = snapshotOf(data, st)
	}
	if err := c.taskClient().ClearJobFault(g.Request.Context(), name); err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "job.clear_error", Target: name, Before: before, After: snapshotOf(nil, nil)})
	return nil
}

func (c *Console) apiDeleteJob(g *gin.Context) {
	name, ok := jobName(g)
	if !ok {
		return
	}
	if err := c.doDeleteJob(g, name); err != nil {
		c.serviceError(g, name, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"name": name, "deleted": true})
}

// doDeleteJob deletes job name with its fire records, audited.
func (c *Console) doDeleteJob(g *gin.Context, name string) error {
	if err := task.CheckJobName(name); err != nil {
		return badRequest("%v", err)
	}
	before := c.jobSnapshot(name)
	if err := c.taskClient().DeleteJob(g.Request.Context(), name); err != nil {
		return err
	}
	c.audit(g, AuditRecord{Action: "job.delete", Target: name, Before: before, After: snapshotOf(nil, nil)})
	return nil
}
