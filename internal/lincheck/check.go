package lincheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is what a check found.
type Verdict string

const (
	Linearizable Verdict = "linearizable"
	Violation    Verdict = "not linearizable"
	// Unknown means the check ran out of time before it found a linearization or proved
	// there is none. It is a failure to check, not a pass.
	Unknown Verdict = "unknown (check timed out)"
)

// Result is the outcome of Check.
type Result struct {
	Verdict Verdict
	// What the history held.
	Ops, Reads, CASApplied, CASBadVersion, Indefinite int
	Elapsed                                           time.Duration // time the check took

	// For WriteVisualization.
	model   porcupine.Model
	history []porcupine.Operation
	timeout time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("%s: %d ops (%d reads, %d CAS applied, %d bad version, %d indefinite), checked in %v",
		r.Verdict, r.Ops, r.Reads, r.CASApplied, r.CASBadVersion, r.Indefinite, r.Elapsed.Round(time.Millisecond))
}

// WriteVisualization writes porcupine's HTML drawing of the checked history to path: one
// lane per client, one tab per znode and, for a violation, the longest linearizable
// prefixes, which point at the operations that cannot be placed. It checks the history
// again to collect what the drawing needs (Check does not, being several times faster
// without), so it takes as long as Check did, or up to the same timeout.
func (r Result) WriteVisualization(path string) error {
	_, info := porcupine.CheckOperationsVerbose(r.model, r.history, r.timeout)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("lincheck: visualization: %w", err)
	}
	err = porcupine.Visualize(r.model, info, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("lincheck: visualization %s: %w", path, err)
	}
	return nil
}

// KeepVisualization writes the drawing into dir (a test's testutil.ArtifactDir) under
// the test's name, and logs where; a failure to write it fails the test.
func (r Result) KeepVisualization(tb testing.TB, dir string) {
	tb.Helper()
	path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name())+".html")
	if err := r.WriteVisualization(path); err != nil {
		tb.Error(err)
		return
	}
	tb.Logf("history drawn in %s", path)
}

// Check checks ops for linearizability, each znode starting at its value in init, and
// gives up after timeout (0: never; tests should give one). ops is not modified and may
// be in any order. An error means the history is malformed: a path missing from init, a
// negative client, an unknown kind, or a read with an outcome other than OK.
func Check(init map[string]Value, ops []Op, timeout time.Duration) (Result, error) {
	if err := validate(init, ops); err != nil {
		return Result{}, err
	}
	var end int64 // after every call and return
	for _, op := range ops {
		end = max(end, op.Call+1, op.Return+1)
	}
	res := Result{Ops: len(ops), model: model(init), history: make([]porcupine.Operation, len(ops)), timeout: timeout}
	for i, op := range ops {
		h := porcupine.Operation{ClientId: op.Client, Input: op.Input, Call: op.Call, Output: op.Output, Return: op.Return}
		res.count(op)
		if op.Output.Outcome == Indefinite {
			h.Return = end // never returned: porcupine's way of leaving its effect open
			h.Metadata = "indefinite: " + op.Output.Err
		}
		res.history[i] = h
	}
	start := time.Now()
	verdict := porcupine.CheckOperationsTimeout(res.model, res.history, timeout)
	res.Elapsed = time.Since(start)
	switch verdict {
	case porcupine.Ok:
		res.Verdict = Linearizable
	case porcupine.Illegal:
		res.Verdict = Violation
	default:
		res.Verdict = Unknown
	}
	return res, nil
}

func (r *Result) count(op Op) {
	switch {
	case op.Input.Kind == Read:
		r.Reads++
	case op.Output.Outcome == OK:
		r.CASApplied++
	case op.Output.Outcome == BadVersion:
		r.CASBadVersion++
	default:
		r.Indefinite++
	}
}

func validate(init map[string]Value, ops []Op) error {
	var errs []error
	for i, op := range ops {
		if _, ok := init[op.Input.Path]; !ok {
			errs = append(errs, fmt.Errorf("op %d: path %q has no initial value", i, op.Input.Path))
		}
		if op.Client < 0 {
			errs = append(errs, fmt.Errorf("op %d: negative client %d", i, op.Client))
		}
		switch {
		case op.Input.Kind == Read && op.Output.Outcome != OK:
			errs = append(errs, fmt.Errorf("op %d: a read with outcome %d (failed reads are not history)", i, op.Output.Outcome))
		case op.Input.Kind != Read && op.Input.Kind != CAS:
			errs = append(errs, fmt.Errorf("op %d: unknown kind %d", i, op.Input.Kind))
		case op.Output.Outcome < OK || op.Output.Outcome > Indefinite:
			errs = append(errs, fmt.Errorf("op %d: unknown outcome %d", i, op.Output.Outcome))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("lincheck: malformed history: %w", errors.Join(errs...))
	}
	return nil
}
