package lincheck

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Recorder performs reads and CASes through go-zookeeper connections and records them
// as a history. It is safe for concurrent use; use one per test, shared by all clients,
// so that every timestamp is on its clock.
type Recorder struct {
	start time.Time // the zero of Call and Return; read monotonically by time.Since

	mu  sync.Mutex
	ops []Op // guarded by mu; CASes from their call, successful reads once they return
}

// NewRecorder returns an empty Recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

func (r *Recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *Recorder) add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Read does conn.Sync(path) then conn.Get(path) for client and returns what it got. A
// successful read is recorded; a failed one is not (a read has no effect), and its
// error, which wraps go-zk's, says which step failed.
func (r *Recorder) Read(client int, conn *zk.Conn, path string) (data []byte, version int32, err error) {
	call := r.now()
	if _, err := conn.Sync(path); err != nil {
		return nil, 0, fmt.Errorf("lincheck: sync %s: %w", path, err)
	}
	data, stat, err := conn.Get(path)
	ret := r.now()
	if err != nil {
		return nil, 0, fmt.Errorf("lincheck: get %s: %w", path, err)
	}
	r.add(Op{
		Client: client,
		Input:  Input{Kind: Read, Path: path},
		Output: Output{Outcome: OK, Value: Value{Data: string(data), Version: stat.Version}},
		Call:   call, Return: ret,
	})
	return data, stat.Version, nil
}

// CAS does conn.Set(path, data, version) for client, records it whatever happened, and
// returns the znode's new version. The error wraps go-zk's; OutcomeOf(err) says how it
// was recorded: zk.ErrBadVersion as a definite failure, any other error as Indefinite.
// The CAS is in the history from its call: until it returns it counts as Indefinite, so
// a check made while a client is stuck in Set does not fail on reads that saw its data.
func (r *Recorder) CAS(client int, conn *zk.Conn, path string, data []byte, version int32) (newVersion int32, err error) {
	op := Op{
		Client: client,
		Input:  Input{Kind: CAS, Path: path, Data: string(data), Version: version},
		Output: Output{Outcome: Indefinite, Err: "in flight"},
	}
	r.mu.Lock()
	op.Call = r.now()
	i := len(r.ops)
	r.ops = append(r.ops, op)
	r.mu.Unlock()

	stat, err := conn.Set(path, data, version)
	op.Return = r.now()
	op.Output = Output{Outcome: OutcomeOf(err)}
	switch op.Output.Outcome {
	case OK:
		op.Output.Value.Version = stat.Version
	case Indefinite:
		op.Output.Err = err.Error()
	}
	r.mu.Lock()
	r.ops[i] = op
	r.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("lincheck: set %s: %w", path, err)
	}
	return stat.Version, nil
}

// Len returns the number of operations recorded so far, CASes in flight included.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Ops returns a copy of the history so far: every CAS called (those still in flight as
// Indefinite) and every read that succeeded.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// Check checks the history so far; see the package function Check. Call it once the
// clients have stopped: a CAS still in flight is checked as Indefinite, and a read still
// in flight is left out.
func (r *Recorder) Check(init map[string]Value, timeout time.Duration) (Result, error) {
	return Check(init, r.Ops(), timeout)
}
