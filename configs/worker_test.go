package configs

import (
	"strings"
	"testing"
)

// TestLoadWorkerRunAs: run_as, allow_root and use_cgroup come from the file, the
// environment and flags like the worker's other keys, and a bad run_as is refused
// naming the key and where it came from.
func TestLoadWorkerRunAs(t *testing.T) {
	clearPaddockEnv(t)
	file := writeFile(t, "w.yaml", "worker:\n  id: w1\n  signers_file: /etc/paddock/signers\n  run_as: nobody\n  use_cgroup: false\n")
	w, err := LoadWorker(Options{File: file})
	if err != nil || w.RunAs != "nobody" || w.AllowRoot || w.UseCgroup {
		t.Fatalf("from the file: run_as %q, allow_root %v, use_cgroup %v, %v", w.RunAs, w.AllowRoot, w.UseCgroup, err)
	}
	t.Setenv("PADDOCK_WORKER_RUN_AS", "65534:65534")
	t.Setenv("PADDOCK_WORKER_ALLOW_ROOT", "true")
	if w, err = LoadWorker(Options{File: file}); err != nil || w.RunAs != "65534:65534" || !w.AllowRoot {
		t.Fatalf("from the environment: run_as %q, allow_root %v, %v", w.RunAs, w.AllowRoot, err)
	}
	t.Setenv("PADDOCK_WORKER_RUN_AS", "4294967295")
	_, err = LoadWorker(Options{File: file})
	wantErr(t, err, "run_as", "4294967295", "PADDOCK_WORKER_RUN_AS", "uid[:gid]")
}

// TestTaskEnvironmentIsNoConfig: the variables a worker gives its tasks are no
// section's, so a task may run paddock itself: its configuration still loads.
func TestTaskEnvironmentIsNoConfig(t *testing.T) {
	clearPaddockEnv(t)
	for _, kv := range []string{"PADDOCK_TASK_ID=task-0000000001", "PADDOCK_TASK_ATTEMPT=1", "PADDOCK_TASK_RUN=0123456789abcdef/task-0000000001.1"} {
		name, value, _ := strings.Cut(kv, "=")
		t.Setenv(name, value)
	}
	if _, err := LoadWorker(Options{File: writeFile(t, "w.yaml", "worker:\n  id: w1\n  signers_file: /etc/paddock/signers\n")}); err != nil {
		t.Fatalf("with a task's environment: %v", err)
	}
}
