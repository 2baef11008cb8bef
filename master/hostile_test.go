package master

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/internal/testutil"
	"github.com/paddock/paddock/task"
)

// hostileRounds is how many rounds TestHostileItemsKeepMastership plays, each of one to
// five hostile items and a probe: 40 in make test, PADDOCK_HOSTILE_ROUNDS for more.
const hostileRounds = 40

// hostile makes items a submitter alone may make under role ACLs, with a random
// generator: a submitter creates task nodes and job nodes with any ACL it likes
// (ZooKeeper lets the creator choose), and, granting itself create on them, any
// children under them — a task's status, cancel, attempt and lost records, a job's fires
// directory, fire records and shard plan — with any data and ACL of their own.
type hostile struct {
	t   *testing.T
	rnd *rand.Rand
	s   *coordinator.Session // the submitter's
	l   task.Layout
}

// acl is a random ACL that keeps the submitter all it needs to make children, and
// gives the master, the worker, the console and the world random permissions (none
// included).
func (h *hostile) acl() []zk.ACL {
	acl := []zk.ACL{digestACL(coordinator.RoleSubmitter, zk.PermAll)}
	for _, role := range []string{coordinator.RoleMaster, coordinator.RoleWorker, coordinator.RoleConsole} {
		if p := h.perms(); p != 0 {
			acl = append(acl, digestACL(role, p))
		}
	}
	if h.rnd.IntN(4) == 0 {
		if p := h.perms(); p != 0 {
			acl = append(acl, zk.ACL{Perms: p, Scheme: "world", ID: "anyone"})
		}
	}
	return acl
}

// perms is a random permission set: often all or none, else any subset.
func (h *hostile) perms() int32 {
	switch h.rnd.IntN(4) {
	case 0:
		return 0
	case 1:
		return zk.PermAll
	}
	return h.rnd.Int32N(zk.PermAll + 1)
}

// data is random contents for a node that should hold v: v itself, v with a field
// broken, JSON of another shape, bytes that are not JSON, or nothing.
func (h *hostile) data(v any) []byte {
	good, _ := json.Marshal(v)
	switch h.rnd.IntN(6) {
	case 0:
		return nil
	case 1:
		return []byte(`{"` + strings.Repeat("x", h.rnd.IntN(64)) + `":[1,{}`)
	case 2:
		return []byte(`[1,2,3]`)
	case 3:
		junk := make([]byte, h.rnd.IntN(512))
		for i := range junk {
			junk[i] = byte(h.rnd.IntN(256))
		}
		return junk
	}
	return good
}

// name is a job name: of any valid length (1 to 128), sometimes one CheckJobName
// refuses.
func (h *hostile) name() string {
	const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	const rest = first + "._-"
	n := []int{1, 2, 127, 128, 1 + h.rnd.IntN(128)}[h.rnd.IntN(5)]
	b := []byte{first[h.rnd.IntN(len(first))]}
	for len(b) < n {
		b = append(b, rest[h.rnd.IntN(len(rest))])
	}
	if h.rnd.IntN(10) == 0 {
		b[0] = '.' // refused by CheckJobName: the master leaves it alone
	}
	return string(b)
}

// create creates p, ignoring a refusal: what the submitter cannot make (a child under
// an ACL that gives it no create, a name taken) it does not make.
func (h *hostile) create(p string, data []byte, flags int32, acl []zk.ACL) string {
	got, err := h.s.Conn().Create(p, data, flags, acl)
	if err != nil {
		return ""
	}
	return got
}

// job makes a hostile job and, maybe, its fires directory, fire records and shard plan.
func (h *hostile) job() {
	name := h.name()
	j := task.Job{Task: task.Spec{Command: "true"}, Schedule: "@every 1s", Enabled: true,
		EnabledSince: time.Now().Add(-time.Duration(h.rnd.IntN(5)) * time.Second).UTC()}
	switch h.rnd.IntN(6) {
	case 0: // sharded, its fire's tasks together past the servers' request limit
		j.Shards = task.MaxShards
		j.Task.Env = map[string]string{"PAD": strings.Repeat("p", 12<<10)}
	case 1:
		j.Shards = 1 + h.rnd.IntN(3)
	case 2:
		j.Concurrency, j.History = task.ConcurrencyQueue, 1
	case 3:
		j.Misfire, j.MisfireThreshold = task.MisfireSkip, task.Duration(time.Millisecond)
	}
	if h.create(h.l.Job(name), h.data(j), 0, h.acl()) == "" {
		return
	}
	if h.rnd.IntN(2) == 0 {
		h.create(h.l.Fires(name), h.data(nil), 0, h.acl())
		for range h.rnd.IntN(4) {
			at := time.Now().Add(time.Duration(h.rnd.IntN(20)-10) * time.Second)
			h.create(h.l.Fire(name, task.FireName(at)), h.data(task.Fire{Scheduled: at, Outcome: task.FireQueued}), 0, h.acl())
		}
		if h.rnd.IntN(3) == 0 {
			h.create(h.l.Fire(name, "junk-"+strconv.Itoa(h.rnd.IntN(100))), nil, 0, h.acl())
		}
	}
	if h.rnd.IntN(3) == 0 {
		h.create(h.l.Shards(name), h.data(task.ShardPlan{"w1": {"0"}}), 0, h.acl())
	}
}

// task makes a hostile task and, maybe, records under it.
func (h *hostile) task() {
	spec := task.Spec{Command: "true", Submitted: time.Now().UTC(), Retries: h.rnd.IntN(3)}
	if h.rnd.IntN(4) == 0 {
		spec.Env = map[string]string{"PAD": strings.Repeat("p", h.rnd.IntN(200<<10))}
	}
	p := h.create(h.l.Task("task-"), h.data(spec), zk.FlagSequence, h.acl())
	if p == "" {
		return
	}
	id := p[strings.LastIndexByte(p, '/')+1:]
	for range h.rnd.IntN(4) {
		n := []int{0, 1, 2, 1 << 30, h.rnd.IntN(10)}[h.rnd.IntN(5)]
		switch h.rnd.IntN(5) {
		case 0:
			h.create(h.l.Status(id), h.data(task.Status{State: task.Done, Finished: time.Now()}), 0, h.acl())
		case 1:
			h.create(h.l.Cancel(id), h.data(nil), 0, h.acl())
		case 2:
			h.create(h.l.Attempt(id, n), h.data(task.Attempt{N: n, Finished: time.Now()}), 0, h.acl())
		case 3:
			h.create(h.l.Lost(id, n), h.data(task.Attempt{N: n, Lost: true}), 0, h.acl())
		default:
			h.create(h.l.Task(id)+"/junk-"+strconv.Itoa(n), nil, 0, h.acl())
		}
	}
}

// TestHostileItemsKeepMastership is the property of items in error: whatever jobs and
// tasks a submitter alone makes — any ACLs, broken or oversized data, names of any
// length, records under them of any shape — the master keeps its one term and goes on
// assigning. Each round makes one to five random hostile items, then submits a probe
// task that must be assigned; at the end the master is in its first term and every job
// in error is one that exists.
func TestHostileItemsKeepMastership(t *testing.T) {
	rounds := hostileRounds
	if s := os.Getenv("PADDOCK_HOSTILE_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("PADDOCK_HOSTILE_ROUNDS=%q: want a positive integer", s)
		}
		rounds = n
	}
	seed := testutil.Seed(t, "PADDOCK_HOSTILE_SEED")
	c := newRoleCluster(t)
	m, _ := c.startMaster("m1")
	czxid := c.masterCzxid("m1")
	w := c.roleWorker("w1", 100_000)
	subSession := c.as(coordinator.RoleSubmitter)
	for _, dir := range []string{c.layout.Jobs(), c.layout.Tasks()} {
		if err := subSession.MakeDirs(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
	}
	h := &hostile{t: t, rnd: rand.New(rand.NewPCG(seed, 0)), s: subSession, l: c.layout}
	sub := task.NewClient(subSession, c.layout)
	for range rounds {
		for range 1 + h.rnd.IntN(5) {
			if h.rnd.IntN(2) == 0 {
				h.job()
			} else {
				h.task()
			}
		}
		c.keepsAssigning(t, sub, w)
	}
	c.checkOneTerm(m, czxid)
	names, _, err := c.s.Conn().Children(c.layout.JobFaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if ok, _, _ := c.s.Conn().Exists(c.layout.Job(name)); !ok {
			t.Errorf("job %s is in error and does not exist", name)
		}
	}
	t.Logf("%d rounds; in error at the end: %v jobs, %v tasks; %d job records", rounds,
		metric(t, m, `paddock_master_items_in_error{kind="job"}`), metric(t, m, `paddock_master_items_in_error{kind="task"}`), len(names))
}
