package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/paddock/paddock/task"
)

// TestTaskSubmitSelector: paddock task submit --selector records the labels a worker
// must have, refuses a bad selector as bad usage naming the flag, and get and list say
// why the task waits.
func TestTaskSubmitSelector(t *testing.T) {
	addr := startZKPaddock(t)
	keys := keyArgs(t)
	code, out, stderr := run(t, append(append([]string{"task", "--zk", addr}, keys...), "submit", "--selector", "os=linux,os=mac", "--", "true")...)
	if code != 2 || !strings.Contains(stderr, `--selector: selector entry "os=mac": key os given twice`) || out != "" {
		t.Errorf("a duplicate key: exit %d, stdout %q, stderr %q; want 2 naming --selector", code, out, stderr)
	}
	code, out, stderr = run(t, append(append([]string{"task", "--zk", addr}, keys...), "submit", "--selector", " gpu=true, os=linux", "--", "true")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id := lines[len(lines)-1]
	if code != 0 || task.CheckID(id) != nil {
		t.Fatalf("submit: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = run(t, "task", "--zk", addr, "get", id)
	var tk task.Task
	if code != 0 || json.Unmarshal([]byte(out), &tk) != nil {
		t.Fatalf("get: exit %d, %q, %q", code, out, stderr)
	}
	const why = "no live worker (it needs labels gpu=true,os=linux)"
	if tk.State != task.Pending || tk.Spec.Selector.String() != "gpu=true,os=linux" || tk.Waiting != why {
		t.Errorf("get: %s, selector %v, waiting %q; want pending, gpu=true,os=linux, %q", tk.State, tk.Spec.Selector, tk.Waiting, why)
	}
	code, out, _ = run(t, "task", "--zk", addr, "list")
	if code != 0 || !strings.Contains(out, "WAITING") || !strings.Contains(out, why) {
		t.Errorf("list: exit %d:\n%s\nwant the reason it waits", code, out)
	}
}
