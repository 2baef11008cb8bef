package lincheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"
)

// Value is a znode as the model sees it.
type Value struct {
	Data    string
	Version int32 // Stat.Version: the number of Sets since the node was created
}

func (v Value) String() string { return fmt.Sprintf("%q@v%d", v.Data, v.Version) }

// Kind is an operation's kind.
type Kind uint8

const (
	Read Kind = iota + 1 // Sync then Get
	CAS                  // Set with an expected version
)

// Outcome is what the client learned of an operation.
type Outcome uint8

const (
	OK         Outcome = iota + 1 // the server answered: a read's value, or the CAS applied
	BadVersion                    // CAS only: the server refused it, nothing changed
	Indefinite                    // CAS only: no answer; it may have applied, now or later, or not
)

// OutcomeOf classifies the error of a Set: nil is OK, zk.ErrBadVersion is BadVersion and
// anything else is Indefinite. Definite refusals other than ErrBadVersion (ErrNoNode,
// say) count as indefinite too: that never makes a correct history fail the check.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, zk.ErrBadVersion):
		return BadVersion
	default:
		return Indefinite
	}
}

// Input is what a client asked for.
type Input struct {
	Kind    Kind
	Path    string
	Data    string // CAS: the data it writes
	Version int32  // CAS: the version it expects, -1 for any
}

// Output is what the client got back.
type Output struct {
	Outcome Outcome
	Value   Value  // OK read: the data and version read; OK CAS: Version is the new version
	Err     string // Indefinite: the client's error, for people; the model ignores it
}

// Op is one operation of a history.
type Op struct {
	Client int // which client made it, from 0; porcupine draws one lane per client
	Input  Input
	Output Output
	// Call and Return are nanoseconds on one monotonic clock (a Recorder's): Call before
	// the request was sent, Return after the answer came. An Indefinite op's Return is when
	// the client gave up; Check treats it as never having returned.
	Call, Return int64
}

func (o Op) String() string {
	return fmt.Sprintf("client %d [%d, %d] %s", o.Client, o.Call, o.Return, describe(o.Input, o.Output))
}

// state is one znode's model state. The zero state stands for the znode's initial
// value, which porcupine's Init cannot know (it is not told the partition's path); the
// first step looks it up.
type state struct {
	set   bool
	value Value
}

// model returns the porcupine model of znodes starting at init. Every path of the
// history must be in init.
func model(init map[string]Value) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByPath,
		Init:      func() []any { return []any{state{}} },
		Step: func(s, in, out any) []any {
			return step(init, s.(state), in.(Input), out.(Output))
		},
		Hash: hashState,
		DescribeOperation: func(in, out any) string {
			return describe(in.(Input), out.(Output))
		},
		DescribeState: func(s any) string {
			if st := s.(state); st.set {
				return st.value.String()
			}
			return "initial value"
		},
	}
	return nm.ToModel()
}

// step applies in with the result out to s and returns the states it may lead to, none
// if out is impossible from s.
func step(init map[string]Value, s state, in Input, out Output) []any {
	cur := s.value
	if !s.set {
		cur = init[in.Path]
	}
	switch in.Kind {
	case Read:
		if out.Outcome == OK && out.Value == cur {
			return []any{s}
		}
	case CAS:
		matches := in.Version == -1 || in.Version == cur.Version
		next := state{set: true, value: Value{Data: in.Data, Version: cur.Version + 1}}
		switch {
		case out.Outcome == OK && matches && out.Value.Version == next.value.Version:
			return []any{next}
		case out.Outcome == BadVersion && !matches:
			return []any{s}
		case out.Outcome == Indefinite && matches:
			return []any{s, next}
		case out.Outcome == Indefinite:
			return []any{s}
		}
	}
	return nil
}

func hashState(s any) uint64 {
	st := s.(state)
	b := binary.LittleEndian.AppendUint32(nil, uint32(st.value.Version))
	if st.set {
		b = append(b, 1)
	}
	h := fnv.New64a()
	h.Write(append(b, st.value.Data...))
	return h.Sum64()
}

// partitionByPath splits a history into one per znode, in path order.
func partitionByPath(history []porcupine.Operation) [][]porcupine.Operation {
	byPath := make(map[string][]porcupine.Operation)
	for _, op := range history {
		p := op.Input.(Input).Path
		byPath[p] = append(byPath[p], op)
	}
	var parts [][]porcupine.Operation
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		parts = append(parts, byPath[p])
	}
	return parts
}

func describe(in Input, out Output) string {
	var op string
	switch in.Kind {
	case Read:
		op = "read " + in.Path
	case CAS:
		op = fmt.Sprintf("cas %s %q if v%d", in.Path, in.Data, in.Version)
	default:
		op = fmt.Sprintf("kind %d %s", in.Kind, in.Path)
	}
	switch {
	case out.Outcome == OK && in.Kind == Read:
		return op + " -> " + out.Value.String()
	case out.Outcome == OK:
		return fmt.Sprintf("%s -> ok v%d", op, out.Value.Version)
	case out.Outcome == BadVersion:
		return op + " -> bad version"
	case out.Outcome == Indefinite:
		return op + " -> ? (" + out.Err + ")"
	}
	return fmt.Sprintf("%s -> outcome %d", op, out.Outcome)
}
