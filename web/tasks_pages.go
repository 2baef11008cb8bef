package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/paddock/paddock/task"
)

type tasksPage struct {
	TaskPage
	Prev    int
	HasPrev bool
	NextOff int
	First   int
	Last    int
}

func (c *Console) tasksPage(g *gin.Context) {
	offset, _ := strconv.Atoi(g.Query("offset"))
	offset = max(offset, 0)
	p, err := c.listTasks(g.Request.Context(), offset, defaultTaskPage)
	if err != nil {
		_, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
	}
	v := tasksPage{TaskPage: p, HasPrev: offset > 0, Prev: max(offset-defaultTaskPage, 0),
		First: offset + 1, Last: offset + len(p.Tasks)}
	if p.Next != nil {
		v.NextOff = *p.Next
	}
	c.render(g, http.StatusOK, "tasks", "Tasks", v)
}

func (c *Console) taskPage(g *gin.Context) {
	id := g.Param("id")
	if err := task.CheckID(id); err != nil {
		c.deny(g, http.StatusBadRequest, err.Error())
		return
	}
	t, err := c.taskClient().Get(g.Request.Context(), id)
	if err != nil {
		status, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
		c.render(g, status, "task", id, nil)
		return
	}
	c.render(g, http.StatusOK, "task", id, maskTask(t))
}

// specForm reads the submit form: command, args one per line, env K=V lines, timeout,
// retries, priority, selector (k=v,k=v). A field that does not parse is a requestError
// naming it.
func specForm(g *gin.Context) (task.Spec, error) {
	spec := task.Spec{Command: strings.TrimSpace(g.PostForm("command")), Args: formLines(g.PostForm("args"))}
	for i, l := range formLines(g.PostForm("env")) {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return spec, badRequest("env line %d %q: want NAME=value", i+1, l)
		}
		if spec.Env == nil {
			spec.Env = map[string]string{}
		}
		spec.Env[k] = v
	}
	if s := strings.TrimSpace(g.PostForm("timeout")); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return spec, badRequest("timeout %q: want a duration such as 90s or 5m, or empty for none", s)
		}
		spec.Timeout = task.Duration(d)
	}
	sel, err := task.ParseSelector(g.PostForm("selector"))
	if err != nil {
		return spec, badRequest("%v", err)
	}
	spec.Selector = sel
	for _, f := range []struct {
		key string
		to  *int
	}{{"retries", &spec.Retries}, {"priority", &spec.Priority}} {
		if s := strings.TrimSpace(g.PostForm(f.key)); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return spec, badRequest("%s %q: want an integer", f.key, s)
			}
			*f.to = n
		}
	}
	return spec, nil
}

// formLines splits a textarea into its non-empty lines.
func formLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSuffix(l, "\r"); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (c *Console) submitForm(g *gin.Context) {
	spec, err := specForm(g)
	if err == nil {
		var id string
		if id, err = c.doSubmit(g, spec, ""); err == nil {
			redirectWith(g, "/tasks/"+id, "flash", "submitted "+id)
			return
		}
	}
	formFailed(g, "/tasks", err)
}

func (c *Console) cancelForm(g *gin.Context) {
	id := g.Param("id")
	if err := c.doCancel(g, id); err != nil {
		formFailed(g, "/tasks/"+url.PathEscape(id), err)
		return
	}
	redirectWith(g, "/tasks/"+id, "flash", "cancel requested")
}

func (c *Console) retryForm(g *gin.Context) {
	id := g.Param("id")
	newID, err := c.doRetry(g, id)
	if err != nil {
		formFailed(g, "/tasks/"+url.PathEscape(id), err)
		return
	}
	redirectWith(g, "/tasks/"+newID, "flash", "submitted "+newID+", a retry of "+id)
}
