package main

import "testing"

// TestServiceErrorsSayItOnce: the service commands' errors name the command, the step,
// the object and what went wrong, each once.
func TestServiceErrorsSayItOnce(t *testing.T) {
	addr := startZKPaddock(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"task", "--zk", addr, "get", "task-0000000009"}, 1, "paddock task: get task-0000000009: no such task\n"},
		{[]string{"task", "--zk", addr, "cancel", "task-0000000009"}, 1, "paddock task: cancel task-0000000009: no such task\n"},
		{[]string{"task", "--zk", addr, "wait", "task-0000000009"}, 1, "paddock task: wait task-0000000009: no such task\n"},
		{[]string{"task", "--zk", addr, "get", "bogus"}, 1, "paddock task: id \"bogus\": want task- and 10 digits, such as task-0000000042\n"},
		{[]string{"replicator", "task", "--zk", addr, "get", "orders"}, 1, "paddock replicator task: no such task: orders\n"},
		{[]string{"logcollector", "source", "--zk", addr, "rm", "web"}, 1, "paddock logcollector source: no such source: web\n"},
		{[]string{"replicator", "task", "--zk", addr, "get", "bad/name"}, 1,
			"paddock replicator task: task name \"bad/name\": want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit\n"},
		{[]string{"logcollector", "source", "--zk", addr, "add", "bad/id", "--host", "h", "--path", "/var/log/x.log"}, 1,
			"paddock logcollector source: source id \"bad/id\": want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit\n"},
		{[]string{"zk", "--zk", addr, "get", "/missing"}, 1, "paddock zk: node does not exist: /missing\n"},
	}
	for _, tt := range tests {
		code, _, stderr := run(t, tt.args...)
		if code != tt.code || stderr != tt.want {
			t.Errorf("paddock %q: exit %d, stderr %q; want %d, %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
}
