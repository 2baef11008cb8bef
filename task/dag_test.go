package task

import (
	"strings"
	"testing"
)

func node(name string, after ...string) DAGNode {
	return DAGNode{Name: name, Spec: Spec{Command: "true"}, After: after}
}

func TestCheckDAGOrder(t *testing.T) {
	nodes := []DAGNode{node("load", "transform"), node("extract"), node("transform", "extract", "fetch"), node("fetch")}
	order, err := CheckDAG(nodes)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for k, i := range order {
		pos[nodes[i].Name] = k
	}
	for _, n := range nodes {
		for _, p := range n.After {
			if pos[p] > pos[n.Name] {
				t.Errorf("%s comes before %s, which it waits for: %v", n.Name, p, order)
			}
		}
	}
	if len(order) != len(nodes) {
		t.Fatalf("order %v", order)
	}
}

func TestCheckDAGRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []DAGNode
		want  string
	}{
		{"cycle", []DAGNode{node("a", "c"), node("b", "a"), node("c", "b"), node("d")}, "a cycle: "},
		{"self", []DAGNode{node("a", "a")}, "the task itself"},
		{"unknown parent", []DAGNode{node("a", "ghost")}, `a waits for "ghost", which is not a task of the DAG`},
		{"name twice", []DAGNode{node("a"), node("a")}, `task name "a" given twice`},
		{"bad name", []DAGNode{node("-a")}, "name"},
		{"empty", nil, "0 tasks"},
		{"bad spec", []DAGNode{{Name: "a"}}, "command"},
		{"bad policy", []DAGNode{{Name: "a", Spec: Spec{Command: "x"}, OnParentFailure: "maybe"}}, "on_parent_failure"},
	} {
		_, err := CheckDAG(tc.nodes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// The cycle is named in the order the tasks would run, closing on its first.
	_, err := CheckDAG([]DAGNode{node("a", "c"), node("b", "a"), node("c", "b")})
	msg := err.Error()
	cycle := msg[strings.Index(msg, ": ")+len(": a cycle: "):]
	parts := strings.Split(cycle, " → ")
	if len(parts) != 4 || parts[0] != parts[3] {
		t.Fatalf("cycle %q", cycle)
	}
	runsBefore := map[string]string{"c": "a", "a": "b", "b": "c"} // x → y: y waits for x
	for i := range 3 {
		if runsBefore[parts[i]] != parts[i+1] {
			t.Fatalf("cycle %q: %s → %s is not an edge", cycle, parts[i], parts[i+1])
		}
	}
}
