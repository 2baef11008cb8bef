package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/provenance"
)

// randomSpec is a spec with every field set to something drawn from rng.
func randomSpec(rng *rand.Rand) Spec {
	word := func() string { return fmt.Sprintf("w%x", rng.Uint32()) }
	return Spec{
		Command: "/bin/" + word(), Args: []string{word(), word()}, Env: map[string]string{"A": word(), "B": word()},
		Dir: "/tmp/" + word(), Timeout: Duration(rng.IntN(1000)) * Duration(time.Second), Retries: rng.IntN(MaxRetries),
		RetryDelay: Duration(rng.IntN(60)) * Duration(time.Second), Priority: rng.IntN(100) - 50,
		Selector: Selector{"os": word()}, Submitted: time.Unix(rng.Int64N(1<<33), 0).UTC(), Token: word(),
		Job: word(), Scheduled: time.Unix(rng.Int64N(1<<33), 0).UTC(), DAG: word(), Name: word(), After: []string{word()},
		OnParentFailure: OnParentFailureSkip, Shard: &Shard{Item: rng.IntN(10), Total: 10, Param: word()},
	}
}

// fieldMutations returns data with each top-level field of its JSON object changed in
// turn (a string gets a character more, a number one more, anything else replaced by
// a string), and with each field removed.
func fieldMutations(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for k, v := range obj {
		changed := map[string]json.RawMessage{}
		for k2, v2 := range obj {
			changed[k2] = v2
		}
		var str string
		var num float64
		switch {
		case json.Unmarshal(v, &str) == nil:
			changed[k], _ = json.Marshal(str + "x")
		case json.Unmarshal(v, &num) == nil:
			changed[k], _ = json.Marshal(num + 1)
		default:
			changed[k] = json.RawMessage(`"x"`)
		}
		out["changed "+k], _ = json.Marshal(changed)
		delete(changed, k)
		out["removed "+k], _ = json.Marshal(changed)
	}
	return out
}

// TestSignedSpecAndJobMutations is the property of what a worker and the master
// check: over generated specs and jobs, each signed at a random czxid by the key of a
// random role, only the intact triple by a role trusted for it verifies. Every field
// changed or removed, the data truncated or a byte changed, the czxid off by one, a
// task's signature shown as a job's (or the other way), and the signature record
// mutated: none verifies. A worker's key signs nothing trusted, and the master's key
// signs tasks, not jobs. 200 rounds (40 under the race detector, which slows the
// cryptography tenfold), about 45 mutations each; PADDOCK_SIGN_SEED replays a run.
func TestSignedSpecAndJobMutations(t *testing.T) {
	keys := testutil.NewKeys(t)
	rng := rand.New(rand.NewPCG(testutil.Seed(t, "PADDOCK_SIGN_SEED"), 2))
	roles := []string{coordinator.RoleSubmitter, coordinator.RoleConsole, coordinator.RoleAdmin, coordinator.RoleMaster, coordinator.RoleWorker}
	rounds := 200
	if testutil.RaceEnabled {
		rounds = 40
	}
	checked := 0
	for round := range rounds {
		spec := randomSpec(rng)
		job := Job{Name: "j", Task: randomSpec(rng), Schedule: "@every 1m", Enabled: rng.IntN(2) == 0, Shards: rng.IntN(4)}
		for _, kind := range []struct {
			domain  string
			v       any
			verify  func(*provenance.Trust, int64, []byte, []byte) (provenance.Signed, error)
			signers []string
		}{
			{SpecDomain, spec, VerifySpec, TaskSigners},
			{JobDomain, job, VerifyJob, JobSigners},
		} {
			data, _ := json.Marshal(kind.v)
			czxid := rng.Int64N(1 << 40)
			role := roles[rng.IntN(len(roles))]
			sig, err := keys.Signer(role).Sign(kind.domain, czxid, data)
			if err != nil {
				t.Fatal(err)
			}
			_, err = kind.verify(keys.Trust(), czxid, data, sig)
			if trusted := slices.Contains(kind.signers, role); trusted != (err == nil) {
				t.Fatalf("round %d, %s signed by %s: %v (trusted %v)", round, kind.domain, role, err, trusted)
			}
			if err != nil {
				continue
			}
			check := func(what string, c int64, d, s []byte) {
				t.Helper()
				checked++
				if _, err := kind.verify(keys.Trust(), c, d, s); err == nil {
					t.Fatalf("round %d, %s by %s: %s verified", round, kind.domain, role, what)
				}
			}
			for what, d := range fieldMutations(t, data) {
				check(what, czxid, d, sig)
			}
			check("czxid+1", czxid+1, data, sig)
			check("czxid-1", czxid-1, data, sig)
			check("truncated", czxid, data[:rng.IntN(len(data))], sig)
			flipped := bytes.Clone(data)
			flipped[rng.IntN(len(flipped))] ^= byte(1 + rng.IntN(255))
			check("a byte changed", czxid, flipped, sig)
			check("no signature", czxid, data, nil)
			check("signature truncated", czxid, data, sig[:rng.IntN(len(sig))])
			other := SpecDomain
			if kind.domain == SpecDomain {
				other = JobDomain
			}
			moved, _ := keys.Signer(role).Sign(other, czxid, data)
			check("signed for the other kind", czxid, data, moved)
		}
	}
	t.Logf("%d rounds, %d mutations refused", rounds, checked)
}

// TestSubmitSigns: a submitted task, a DAG's tasks and a job carry their author's
// signature, which verifies; a client without a signer creates nothing; signing again
// what a lost try signed is a no-op, and a signature someone else put there first is
// refused.
func TestSubmitSigns(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	conn := jc.s.Conn()
	verified := func(id string) error {
		data, st, err := conn.Get(jc.l.Task(id))
		if err != nil {
			return err
		}
		sig, err := ReadSig(conn, jc.l.TaskSig(id))
		if err != nil {
			return err
		}
		_, err = VerifySpec(jc.keys.Trust(), st.Czxid, data, sig)
		return err
	}
	id, err := jc.c.Submit(ctx, Spec{Command: "true"})
	if err != nil || verified(id) != nil {
		t.Fatalf("submit: %s, %v; signature: %v", id, err, verified(id))
	}
	ids, err := jc.c.SubmitDAG(ctx, []DAGNode{node("a"), node("b", "a")})
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		if err := verified(id); err != nil {
			t.Errorf("dag task %s (%s): %v", name, id, err)
		}
	}
	if err := jc.c.CreateJob(ctx, nightly("nightly")); err != nil {
		t.Fatal(err)
	}
	if _, err := jc.c.RunNow(ctx, "nightly"); err != nil {
		t.Errorf("run now of a signed job: %v", err)
	}

	unsigned := NewClient(jc.connectWithout(), jc.l)
	before, _, _ := conn.Children(jc.l.Tasks())
	if _, err := unsigned.Submit(ctx, Spec{Command: "true"}); !errors.Is(err, ErrNoSigner) {
		t.Errorf("submit without a signer: %v, want %v", err, ErrNoSigner)
	}
	if err := unsigned.CreateJob(ctx, nightly("unsigned")); !errors.Is(err, ErrNoSigner) {
		t.Errorf("create job without a signer: %v, want %v", err, ErrNoSigner)
	}
	if after, _, _ := conn.Children(jc.l.Tasks()); len(after) != len(before) || jc.exists(jc.l.Job("unsigned")) {
		t.Errorf("a client without a signer created something: %d tasks, then %d", len(before), len(after))
	}

	data, _, _ := conn.Get(jc.l.Task(id))
	if err := jc.c.signCreated(ctx, SpecDomain, []string{jc.l.Task(id)}, [][]byte{data}); err != nil {
		t.Errorf("signing again what a lost try signed: %v", err)
	}
	raw, err := json.Marshal(Spec{Command: "true", Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := conn.Create(jc.l.Task(taskPrefix), raw, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(p+"/sig", []byte(`{}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := jc.c.signCreated(ctx, SpecDomain, []string{p}, [][]byte{raw}); err == nil {
		t.Error("signing over a signature someone else put there first: no error")
	}
	if err := jc.c.signCreated(ctx, SpecDomain, []string{jc.l.Task(id)}, [][]byte{raw}); err == nil ||
		!strings.Contains(err.Error(), "not what this client wrote") {
		t.Errorf("signing a node that holds other data: %v", err)
	}
}

// connectWithout is a session with the keys' trust and no signer.
func (jc *jobCluster) connectWithout() *coordinator.Session {
	jc.t.Helper()
	s, err := coordinator.Connect(jobCtx(jc.t), coordinator.Config{Servers: []string{jc.addr}, SessionTimeout: 4 * time.Second, Trust: jc.keys.Trust()})
	if err != nil {
		jc.t.Fatal(err)
	}
	jc.t.Cleanup(func() { s.Close() })
	return s
}

// TestNoOracle: a client signs only what a trusted key signed before it: run-now and
// enabling a job whose definition was forged (written without a signature, or changed
// after it was signed) are refused, as is taking a forged task's spec (the console's
// retry), and an update signs the definition anew.
func TestNoOracle(t *testing.T) {
	jc := newJobCluster(t)
	ctx := jobCtx(t)
	conn := jc.s.Conn()
	evil, _ := json.Marshal(Job{Task: Spec{Command: "sh", Args: []string{"-c", "touch /tmp/pwned"}}, Schedule: "@every 1s"})
	if err := jc.s.MakeDirs(ctx, jc.l.Jobs()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create(jc.l.Job("forged"), evil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := jc.c.CreateJob(ctx, nightly("altered")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(jc.l.Job("altered"), evil, -1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"forged", "altered"} {
		if _, err := jc.c.RunNow(ctx, name); err == nil || !strings.Contains(err.Error(), "not signed by a trusted submitter") {
			t.Errorf("run now of the %s job: %v", name, err)
		}
		if err := jc.c.SetJobEnabled(ctx, name, true); err == nil || !strings.Contains(err.Error(), "not signed by a trusted submitter") {
			t.Errorf("enable the %s job: %v", name, err)
		}
	}
	if err := jc.c.UpdateJob(ctx, nightly("altered")); err != nil {
		t.Fatal(err)
	}
	if _, err := jc.c.RunNow(ctx, "altered"); err != nil {
		t.Errorf("run now once an update signed it anew: %v", err)
	}
	if err := jc.s.MakeDirs(ctx, jc.l.Tasks()); err != nil {
		t.Fatal(err)
	}
	p, err := conn.Create(jc.l.Task(taskPrefix), []byte(`{"command":"sh"}`), zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jc.c.SignedSpec(ctx, baseName(p)); err == nil || !strings.Contains(err.Error(), "not signed by a trusted submitter") {
		t.Errorf("the spec of a forged task: %v", err)
	}
	id, err := jc.c.Submit(ctx, Spec{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if spec, err := jc.c.SignedSpec(ctx, id); err != nil || spec.Command != "true" {
		t.Errorf("the spec of a signed task: %+v, %v", spec, err)
	}
}
