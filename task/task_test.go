package task

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string // substrings of the error; none for a valid spec
	}{
		{"minimal", Spec{Command: "true"}, nil},
		{"full", Spec{Command: "sh", Args: []string{"-c", "x"}, Env: map[string]string{"A": "1"}, Dir: "/tmp",
			Timeout: Duration(time.Second), Retries: 3, RetryDelay: Duration(time.Second), Priority: -5}, nil},
		{"no command", Spec{Command: "  "}, []string{"command: empty"}},
		{"everything wrong", Spec{Command: "a\x00", Args: []string{"\x00"}, Env: map[string]string{"A=B": "", "": "x"},
			Timeout: -1, Retries: MaxRetries + 1, RetryDelay: -1, Priority: MaxPriority + 1},
			[]string{"command: contains a NUL", "args[0]", `"A=B"`, "timeout", "retries: 101", "retry_delay", "priority"}},
		{"selector", Spec{Command: "x", Selector: Selector{"os": "linux", "gpu": ""}}, nil},
		{"bad selector", Spec{Command: "x", Selector: Selector{"": "x", "os": "a\x00"}},
			[]string{`selector: "=x": want a key`, `selector: "os=a\x00": the value contains a NUL`}},
		{"too large", Spec{Command: "x", Args: []string{strings.Repeat("a", MaxSpecSize)}}, []string{"size"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestDurationJSON(t *testing.T) {
	b, _ := json.Marshal(Spec{Command: "x", Timeout: Duration(90 * time.Second)})
	if !strings.Contains(string(b), `"timeout":"1m30s"`) {
		t.Fatalf("marshalled %s", b)
	}
	var s Spec
	for in, want := range map[string]time.Duration{`"2s"`: 2 * time.Second, `1000`: 1000} {
		if err := json.Unmarshal([]byte(`{"timeout":`+in+`}`), &s); err != nil || time.Duration(s.Timeout) != want {
			t.Errorf("timeout %s: %v, %v; want %v", in, s.Timeout, err, want)
		}
	}
	if err := json.Unmarshal([]byte(`{"timeout":"soon"}`), &s); err == nil {
		t.Error("timeout \"soon\" was accepted")
	}
}

func TestLayout(t *testing.T) {
	l, err := NewLayout("/paddock")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{l.Master(), l.Worker("w1"), l.Status("task-0000000001"), l.Attempt("task-0000000001", 2),
		l.Lost("task-0000000001", 3), l.Assignment("w1", "task-0000000001")}
	want := []string{"/paddock/master", "/paddock/workers/w1", "/paddock/tasks/task-0000000001/status",
		"/paddock/tasks/task-0000000001/attempt-0000000002", "/paddock/tasks/task-0000000001/lost-0000000003",
		"/paddock/assign/w1/task-0000000001"}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("path %d: %s, want %s", i, got[i], want[i])
		}
	}
	if DefaultLayout.Tasks() != "/tasks" {
		t.Errorf("default tasks: %s", DefaultLayout.Tasks())
	}
	for _, bad := range []string{"relative", "/trailing/", "/a//b"} {
		if _, err := NewLayout(bad); err == nil {
			t.Errorf("NewLayout(%q) accepted", bad)
		}
	}
}

func TestParseChildren(t *testing.T) {
	c := ParseChildren([]string{"attempt-0000000001", "lost-0000000002", "attempt-0000000003", "cancel", "status", "other"})
	if !c.Status || !c.Cancel || len(c.Failures) != 2 || len(c.Lost) != 1 || c.Runs() != 3 {
		t.Fatalf("%+v", c)
	}
}

func TestIDs(t *testing.T) {
	for id, ok := range map[string]bool{"task-0000000042": true, "task-42": false, "job-0000000042": false} {
		if (CheckID(id) == nil) != ok {
			t.Errorf("CheckID(%q): ok=%v", id, !ok)
		}
	}
	for id, ok := range map[string]bool{"w1": true, "worker-1.a_b": true, "-w": false, "": false, "a/b": false} {
		if (CheckWorkerID(id) == nil) != ok {
			t.Errorf("CheckWorkerID(%q): ok=%v", id, !ok)
		}
	}
}
