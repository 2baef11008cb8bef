package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// The DAG view, /dags/<dag>[?task=<id>]: the tasks of a DAG (task.Client.SubmitDAG)
// laid out in columns by depth — a task that waits for none is in the first, every
// other one column after the deepest task it waits for — each with its state and the
// tasks it waits for. A DAG task's page links to it.
//
// The DAG's tasks are found by their spec.dag. SubmitDAG creates them in one multi, so
// their sequence numbers follow each other: the page reads task specs outward from
// ?task (a task of the DAG), or else back from the newest task, and stops where the
// run of the DAG's tasks ends. Without ?task it looks among the newest dagScanLimit
// tasks only.

// dagScanLimit bounds how many task specs a DAG page without ?task reads.
const dagScanLimit = 2000

// dagNode is a task of the DAG view.
type dagNode struct {
	*task.Task
	// Missing are the tasks it waits for that are not among the DAG's tasks found.
	Missing []string
	// Current: the page was opened from this task.
	Current bool
}

type stateCount struct {
	State task.State
	N     int
}

// dagPageView is the DAG view: its tasks by level, level 0 first.
type dagPageView struct {
	ID     string
	Levels [][]dagNode
	Total  int
	Counts []stateCount
}

func (c *Console) dagPage(g *gin.Context) {
	dag := strings.TrimPrefix(g.Param("dag"), "/")
	if dag == "" || len(dag) > 256 || strings.ContainsRune(dag, 0) {
		c.deny(g, http.StatusBadRequest, fmt.Sprintf("DAG id %q: want the id of a DAG, 1 to 256 bytes (a DAG task's spec.dag)", dag))
		return
	}
	near := g.Query("task")
	if near != "" {
		if err := task.CheckID(near); err != nil {
			c.deny(g, http.StatusBadRequest, "task: "+err.Error())
			return
		}
	}
	ctx := g.Request.Context()
	ids, err := c.dagTaskIDs(ctx, dag, near)
	var tasks []*task.Task
	if err == nil {
		tasks, err = c.taskClient().GetEach(ctx, ids)
	}
	title := "DAG " + dag
	if err != nil {
		status, msg := serviceStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
		c.render(g, status, "dag", title, nil)
		return
	}
	if len(tasks) == 0 {
		msg := fmt.Sprintf("no task of DAG %s found: the page looks around the task it was opened from, "+
			"else among the newest %d tasks", dag, dagScanLimit)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
		c.render(g, http.StatusNotFound, "dag", title, nil)
		return
	}
	for _, t := range tasks {
		maskTask(t)
	}
	c.render(g, http.StatusOK, "dag", title, layoutDAG(dag, tasks, near))
}

// layoutDAG places the tasks (in creation order) in levels: a task's level is one more
// than its deepest parent's, 0 for one that waits for none of them.
func layoutDAG(dag string, tasks []*task.Task, current string) dagPageView {
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		if _, dup := index[t.Spec.Name]; !dup {
			index[t.Spec.Name] = i
		}
	}
	const (
		unseen = iota
		visiting
		placed
	)
	level := make([]int, len(tasks))
	mark := make([]int, len(tasks))
	nodes := make([]dagNode, len(tasks))
	var place func(i int) int
	place = func(i int) int {
		switch mark[i] {
		case placed:
			return level[i]
		case visiting: // a cycle, which SubmitDAG refuses: break it here
			return 0
		}
		mark[i] = visiting
		nodes[i] = dagNode{Task: tasks[i], Current: tasks[i].ID == current}
		for _, p := range tasks[i].Spec.After {
			j, ok := index[p]
			if !ok {
				nodes[i].Missing = append(nodes[i].Missing, p)
				continue
			}
			level[i] = max(level[i], place(j)+1)
		}
		mark[i] = placed
		return level[i]
	}
	v := dagPageView{ID: dag, Total: len(tasks)}
	counts := map[task.State]int{}
	for i := range tasks {
		l := place(i)
		for len(v.Levels) <= l {
			v.Levels = append(v.Levels, nil)
		}
		counts[tasks[i].State]++
	}
	for i := range tasks {
		v.Levels[level[i]] = append(v.Levels[level[i]], nodes[i])
	}
	for _, s := range []task.State{task.Pending, task.Assigned, task.Running, task.Done, task.Failed, task.Skipped, task.Cancelled} {
		if counts[s] > 0 {
			v.Counts = append(v.Counts, stateCount{s, counts[s]})
		}
	}
	return v
}

// dagTaskIDs returns the ids of DAG dag's tasks, oldest first: the run of consecutive
// tasks around near (a task of the DAG, if not ""), or the first such run back from the
// newest task among the newest dagScanLimit.
func (c *Console) dagTaskIDs(ctx context.Context, dag, near string) ([]string, error) {
	var ids []string
	err := c.read(ctx, func() (err error) {
		ids, _, err = c.conn.Children(c.taskLayout().Tasks())
		return err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return task.CheckID(id) != nil })
	slices.Sort(ids)
	// of reads a task's DAG id: ok is false if the task is gone.
	of := func(id string) (string, bool, error) {
		var data []byte
		err := c.read(ctx, func() (err error) { data, _, err = c.conn.Get(c.taskLayout().Task(id)); return err })
		if errors.Is(err, zk.ErrNoNode) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		var spec struct {
			DAG string `json:"dag"`
		}
		_ = json.Unmarshal(data, &spec) // a task that is not JSON is of no DAG
		return spec.DAG, true, nil
	}
	// scan reads from ids[from] in direction step (at most limit tasks) and returns the
	// DAG's tasks up to the first task of another DAG after one of this DAG's.
	scan := func(from, step, limit int, found bool) ([]string, error) {
		var out []string
		for i, n := from, 0; i >= 0 && i < len(ids) && n < limit; i, n = i+step, n+1 {
			d, ok, err := of(ids[i])
			if err != nil {
				return nil, err
			}
			switch {
			case !ok:
			case d == dag:
				out, found = append(out, ids[i]), true
			case found:
				return out, nil
			}
		}
		return out, nil
	}
	if at, ok := slices.BinarySearch(ids, near); near != "" && ok {
		d, exists, err := of(near)
		if err != nil {
			return nil, err
		}
		if exists && d == dag {
			before, err := scan(at-1, -1, task.MaxDAGSize-1, true)
			if err != nil {
				return nil, err
			}
			after, err := scan(at+1, 1, task.MaxDAGSize-1, true)
			if err != nil {
				return nil, err
			}
			slices.Reverse(before)
			return append(append(before, near), after...), nil
		}
	}
	out, err := scan(len(ids)-1, -1, dagScanLimit, false)
	slices.Reverse(out)
	return out, err
}

// dagHref is the DAG view of a DAG task's DAG, opened from task id.
func dagHref(dag, id string) string {
	return "/dags/" + url.PathEscape(dag) + "?" + url.Values{"task": {id}}.Encode()
}
