package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// DAGNode is one task of a DAG: its name in the DAG, what it runs, and the names of the
// tasks of the DAG it waits for.
type DAGNode struct {
	Name  string   `json:"name"`
	Spec  Spec     `json:"spec"`
	After []string `json:"after,omitempty"`
	// OnParentFailure: fail (default) or skip, when a task it waits for does not end done.
	OnParentFailure string `json:"on_parent_failure,omitempty"`
}

// CheckDAG checks a DAG and returns its nodes' indexes in an order where every task
// comes after those it waits for: names unique and valid, every parent a node of the
// DAG, no cycle (the error names one: "a → b → c → a"), each spec valid, at most
// MaxDAGSize tasks.
func CheckDAG(nodes []DAGNode) ([]int, error) {
	var errs []error
	if len(nodes) == 0 || len(nodes) > MaxDAGSize {
		return nil, fmt.Errorf("dag: %d tasks: want 1 to %d", len(nodes), MaxDAGSize)
	}
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if err := CheckJobName(n.Name); err != nil {
			errs = append(errs, fmt.Errorf("dag: task %d: %s", i, strings.TrimPrefix(err.Error(), "job ")))
			continue
		}
		if _, dup := index[n.Name]; dup {
			errs = append(errs, fmt.Errorf("dag: task name %q given twice", n.Name))
			continue
		}
		index[n.Name] = i
	}
	for _, n := range nodes {
		for _, p := range n.After {
			if _, ok := index[p]; !ok {
				errs = append(errs, fmt.Errorf("dag: %s waits for %q, which is not a task of the DAG", n.Name, p))
			}
		}
		spec := n.Spec
		spec.DAG, spec.Name, spec.After, spec.OnParentFailure = "x", n.Name, n.After, n.OnParentFailure
		if err := spec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("dag: %s: %w", n.Name, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cycle := findCycle(nodes, index); cycle != nil {
		return nil, fmt.Errorf("dag: a cycle: %s", strings.Join(cycle, " → "))
	}
	// Kahn's order, the given order among ready tasks.
	waiting := make([]int, len(nodes))
	children := make([][]int, len(nodes))
	for i, n := range nodes {
		waiting[i] = len(n.After)
		for _, p := range n.After {
			children[index[p]] = append(children[index[p]], i)
		}
	}
	var order, ready []int
	for i := range nodes {
		if waiting[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, c := range children[i] {
			if waiting[c]--; waiting[c] == 0 {
				ready = append(ready, c)
			}
		}
	}
	return order, nil
}

// findCycle returns the names along a cycle, the first repeated at the end, or nil.
func findCycle(nodes []DAGNode, index map[string]int) []string {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(nodes))
	var path []int
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = onPath
		path = append(path, i)
		for _, p := range nodes[i].After {
			j := index[p]
			switch state[j] {
			case onPath:
				at := slices.Index(path, j)
				var names []string
				// path runs child → parent; a cycle reads parent → child, as the tasks run.
				for k := len(path) - 1; k >= at; k-- {
					names = append(names, nodes[path[k]].Name)
				}
				return append(names, nodes[path[len(path)-1]].Name)
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i := range nodes {
		if state[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}

// SubmitDAG checks the DAG and creates all its tasks in one multi — all of them or none —
// then signs them all in a second, and returns their ids by name. Each task waits, on
// the master, for the tasks it names to end done (Spec.After); the DAG's id is a new
// token, shared by its tasks.
func (c *Client) SubmitDAG(ctx context.Context, nodes []DAGNode) (map[string]string, error) {
	order, err := CheckDAG(nodes)
	if err != nil {
		return nil, err
	}
	dag := newToken()
	now := time.Now().UTC()
	specs := make([]Spec, len(order))
	for k, i := range order {
		n := nodes[i]
		spec := n.Spec
		spec.DAG, spec.Name, spec.After, spec.OnParentFailure = dag, n.Name, n.After, n.OnParentFailure
		if spec.Submitted.IsZero() {
			spec.Submitted = now
		}
		spec.Token = dag + "/" + n.Name
		specs[k] = spec
	}
	created, err := c.submitAll(ctx, specs)
	if err != nil {
		return nil, fmt.Errorf("submit dag: %w", err)
	}
	ids := make(map[string]string, len(nodes))
	for k, i := range order {
		ids[nodes[i].Name] = created[k]
	}
	return ids, nil
}

// submitAll creates the tasks of specs, each with its own token, in one multi — all of
// them or none — signs them in another, and returns their ids in order. A multi whose
// answer is lost is found by its tokens, as Submit does.
func (c *Client) submitAll(ctx context.Context, specs []Spec) ([]string, error) {
	if c.s.Signer() == nil {
		return nil, ErrNoSigner
	}
	ops := make([]any, len(specs))
	datas := make([][]byte, len(specs))
	tokens := make(map[string]int, len(specs))
	for i, spec := range specs {
		data, err := json.Marshal(spec)
		if err != nil {
			return nil, err
		}
		ops[i] = &zk.CreateRequest{Path: c.l.Task(taskPrefix), Data: data, Flags: zk.FlagSequence,
			Acl: c.s.ACLFor(c.l.Task(taskPrefix))}
		datas[i] = data
		tokens[spec.Token] = i
	}
	if err := c.s.MakeDirs(ctx, c.l.Tasks()); err != nil {
		return nil, err
	}
	conn := c.s.Conn()
	for {
		var from int32
		if err := c.retry(ctx, func() error {
			_, st, err := conn.Exists(c.l.Tasks())
			from = st.Cversion
			return err
		}); err != nil {
			return nil, err
		}
		res, err := conn.Multi(ops...)
		if err == nil {
			ids := make([]string, len(res))
			for i, r := range res {
				ids[i] = path.Base(r.String)
			}
			return c.signAll(ctx, ids, datas)
		}
		if !coordinator.IsConnLoss(err) || coordinator.WriteNotSent(err) {
			if err := c.s.WaitToRetry(ctx, err); err != nil {
				return nil, err
			}
			continue
		}
		// The answer was lost: the multi was applied whole, or not at all. The tokens say
		// which.
		ids, err := c.idsByToken(ctx, tokens, int64(from))
		if err != nil {
			return nil, err
		}
		if len(ids) == len(specs) {
			return c.signAll(ctx, ids, datas)
		}
	}
}

// signAll signs the tasks of ids, just created with datas, in one multi; it returns ids,
// with the error if they could not be signed.
func (c *Client) signAll(ctx context.Context, ids []string, datas [][]byte) ([]string, error) {
	if _, err := c.signSubmitted(ctx, ids, datas); err != nil {
		return ids, err
	}
	return ids, nil
}

// idsByToken finds the tasks numbered from on whose tokens are keys of tokens, and
// returns their ids at the tokens' indexes; nil if not all are there.
func (c *Client) idsByToken(ctx context.Context, tokens map[string]int, from int64) ([]string, error) {
	names, err := c.children(ctx, c.l.Tasks())
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(tokens))
	found := 0
	for _, id := range names {
		if seqOf(id) < from {
			continue
		}
		var spec Spec
		if err := c.readJSON(ctx, c.l.Task(id), &spec); err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			return nil, err
		}
		if i, ok := tokens[spec.Token]; ok && ids[i] == "" {
			ids[i] = id
			found++
		}
	}
	if found != len(tokens) {
		return nil, nil
	}
	return ids, nil
}
