package lincheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkTimeout bounds every check in these tests; none comes near it.
const checkTimeout = 10 * time.Second

func read(client int, path string, call, ret int64, data string, version int32) Op {
	return Op{Client: client, Input: Input{Kind: Read, Path: path},
		Output: Output{Outcome: OK, Value: Value{Data: data, Version: version}}, Call: call, Return: ret}
}

// cas is a CAS of data expecting version; newVersion matters only for an OK outcome.
func cas(client int, path string, call, ret int64, data string, version int32, outcome Outcome, newVersion int32) Op {
	op := Op{Client: client, Input: Input{Kind: CAS, Path: path, Data: data, Version: version},
		Output: Output{Outcome: outcome}, Call: call, Return: ret}
	switch outcome {
	case OK:
		op.Output.Value.Version = newVersion
	case Indefinite:
		op.Output.Err = "zk: connection closed"
	}
	return op
}

func TestCheckSynthetic(t *testing.T) {
	init := map[string]Value{"/a": {"x", 0}, "/b": {"p", 3}}
	tests := []struct {
		name string
		ops  []Op
		want Verdict
	}{
		{"concurrent CAS, one wins", []Op{
			cas(0, "/a", 0, 10, "y", 0, OK, 1),
			cas(1, "/a", 1, 9, "z", 0, BadVersion, 0),
			read(2, "/a", 2, 3, "x", 0), // before either took effect
			read(2, "/a", 11, 12, "y", 1),
		}, Linearizable},
		{"loser finished before the winner started", []Op{
			read(1, "/a", 0, 1, "x", 0),
			cas(0, "/a", 2, 3, "y", 0, OK, 1),
			cas(1, "/a", 4, 5, "z", 0, BadVersion, 0),
			cas(1, "/a", 6, 7, "z", 1, OK, 2),
			read(2, "/a", 8, 9, "z", 2),
		}, Linearizable},
		{"read of a value overwritten before it began", []Op{
			cas(0, "/a", 0, 5, "y", 0, OK, 1),
			read(1, "/a", 6, 7, "x", 0),
		}, Violation},
		{"read of a stale version", []Op{
			cas(0, "/a", 0, 5, "y", 0, OK, 1),
			read(1, "/a", 6, 7, "y", 0),
		}, Violation},
		{"read of a version never written", []Op{
			read(1, "/a", 0, 1, "x", 7),
		}, Violation},
		{"two CAS succeed on the same version", []Op{
			cas(0, "/a", 0, 10, "y", 0, OK, 1),
			cas(1, "/a", 2, 8, "z", 0, OK, 1),
		}, Violation},
		{"two CAS succeed on the same version, second claims the next", []Op{
			cas(0, "/a", 0, 10, "y", 0, OK, 1),
			cas(1, "/a", 2, 8, "z", 0, OK, 2),
		}, Violation},
		{"CAS skips a version", []Op{
			cas(0, "/a", 0, 1, "y", 0, OK, 2),
		}, Violation},
		{"bad version though nothing changed it", []Op{
			cas(0, "/a", 0, 1, "y", 0, BadVersion, 0),
		}, Violation},
		{"unconditional set", []Op{
			cas(0, "/b", 0, 1, "q", -1, OK, 4),
			read(0, "/b", 2, 3, "q", 4),
		}, Linearizable},
		{"indefinite CAS that applied", []Op{
			cas(0, "/a", 0, 5, "y", 0, Indefinite, 0),
			read(1, "/a", 10, 11, "y", 1),
			cas(1, "/a", 12, 13, "w", 1, OK, 2),
		}, Linearizable},
		{"indefinite CAS that did not apply", []Op{
			cas(0, "/a", 0, 5, "y", 0, Indefinite, 0),
			read(1, "/a", 10, 11, "x", 0),
			cas(1, "/a", 12, 13, "z", 0, OK, 1),
			read(1, "/a", 14, 15, "z", 1),
		}, Linearizable},
		{"indefinite CAS that applied after the client gave up", []Op{
			cas(0, "/a", 0, 5, "y", 0, Indefinite, 0),
			read(1, "/a", 10, 11, "x", 0),
			read(1, "/a", 20, 21, "y", 1),
		}, Linearizable},
		{"indefinite CAS cannot apply on a version mismatch", []Op{
			cas(0, "/a", 0, 5, "y", 5, Indefinite, 0),
			read(1, "/a", 10, 11, "y", 1),
		}, Violation},
		{"indefinite CAS cannot apply before its call", []Op{
			read(1, "/a", 0, 1, "y", 1),
			cas(0, "/a", 2, 5, "y", 0, Indefinite, 0),
		}, Violation},
		{"znodes are independent", []Op{
			cas(0, "/a", 0, 5, "y", 0, OK, 1),
			cas(1, "/b", 0, 5, "q", 3, OK, 4),
			read(2, "/a", 6, 7, "y", 1),
			read(2, "/b", 6, 7, "q", 4),
		}, Linearizable},
		{"a violation on one znode fails the history", []Op{
			cas(0, "/a", 0, 5, "y", 0, OK, 1),
			cas(1, "/b", 0, 5, "q", 3, OK, 4),
			read(2, "/a", 6, 7, "y", 1),
			read(2, "/b", 6, 7, "p", 3),
		}, Violation},
		{"empty history", nil, Linearizable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Check(init, tt.ops, checkTimeout)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tt.want {
				t.Fatalf("verdict %q, want %q; history:\n%s", res.Verdict, tt.want, history(tt.ops))
			}
			if res.Ops != len(tt.ops) || res.Reads+res.CASApplied+res.CASBadVersion+res.Indefinite != len(tt.ops) {
				t.Errorf("counts do not add up: %s", res)
			}
		})
	}
}

func TestCheckCounts(t *testing.T) {
	ops := []Op{
		read(0, "/a", 0, 1, "x", 0),
		cas(0, "/a", 2, 3, "y", 0, OK, 1),
		cas(1, "/a", 4, 5, "z", 0, BadVersion, 0),
		cas(1, "/a", 6, 7, "z", 1, Indefinite, 0),
		cas(1, "/a", 8, 9, "w", 1, Indefinite, 0),
	}
	res, err := Check(map[string]Value{"/a": {"x", 0}}, ops, checkTimeout)
	if err != nil {
		t.Fatal(err)
	}
	got := [5]int{res.Ops, res.Reads, res.CASApplied, res.CASBadVersion, res.Indefinite}
	if want := [5]int{5, 1, 1, 1, 2}; got != want || res.Verdict != Linearizable {
		t.Fatalf("%s; counts %v, want %v", res, got, want)
	}
}

func TestCheckMalformed(t *testing.T) {
	init := map[string]Value{"/a": {"x", 0}}
	tests := []struct {
		name string
		op   Op
		want string
	}{
		{"path without an initial value", read(0, "/nope", 0, 1, "x", 0), `path "/nope" has no initial value`},
		{"negative client", read(-1, "/a", 0, 1, "x", 0), "negative client"},
		{"failed read", Op{Input: Input{Kind: Read, Path: "/a"}, Output: Output{Outcome: Indefinite}}, "failed reads"},
		{"unknown kind", Op{Input: Input{Path: "/a"}, Output: Output{Outcome: OK}}, "unknown kind"},
		{"unknown outcome", Op{Input: Input{Kind: CAS, Path: "/a"}}, "unknown outcome"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(init, []Op{tt.op}, checkTimeout)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestCheckTimeout shows a check that runs out of time says Unknown, not Linearizable.
func TestCheckTimeout(t *testing.T) {
	// Thirty unconditional sets that never returned and a read of a value none wrote: to
	// prove the read impossible the checker has to try every subset of the sets (2^30).
	var ops []Op
	for c := range 30 {
		ops = append(ops, cas(c, "/a", int64(c), int64(c)+100, fmt.Sprintf("c%d", c), -1, Indefinite, 0))
	}
	ops = append(ops, read(30, "/a", 50, 60, "never written", 1))
	res, err := Check(map[string]Value{"/a": {"x", 0}}, ops, time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Unknown {
		t.Fatalf("verdict %q with a 1ns timeout, want %q (%s)", res.Verdict, Unknown, res)
	}
}

func TestWriteVisualization(t *testing.T) {
	ops := []Op{
		cas(0, "/a", 0, 5, "y", 0, OK, 1),
		cas(1, "/a", 1, 6, "z", 0, Indefinite, 0),
		read(2, "/a", 7, 8, "x", 0),
	}
	res, err := Check(map[string]Value{"/a": {"x", 0}}, ops, checkTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Violation {
		t.Fatalf("verdict %q, want %q", res.Verdict, Violation)
	}
	path := filepath.Join(t.TempDir(), "history.html")
	if err := res.WriteVisualization(path); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<html", `cas /a \"y\" if v0 -\u003e ok v1`, "indefinite: zk: connection closed"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	if err := res.WriteVisualization(filepath.Join(t.TempDir(), "no", "such", "dir.html")); err == nil {
		t.Error("writing into a missing directory did not fail")
	}
}

// history formats ops for a failure message.
func history(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "  %s\n", op)
	}
	return b.String()
}
