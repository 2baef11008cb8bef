package master

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/task"
)

// The master acts only on what a trusted key signed (task/sign.go): it assigns a task
// only once its spec's signature verifies against a key trusted for submitting, and
// fires a job only while its definition's verifies against one trusted for jobs. A
// task's signature is written after the task (its author learns the czxid from the
// create), so an unsigned task is given Config.SignGrace, by the servers' clock, for it
// to come; a task still unsigned then, or signed badly, is ended failed with the reason
// and never runs. The tasks the master creates for a fire it signs itself, in the multi
// that links them to the fire's record.

// checkSig verifies the signature of t, whose spec's data is data (nil: read it again),
// once its sig node is there: t is then signed, or untrusted with the reason.
func (l *leader) checkSig(t *taskState, data []byte) error {
	if data == nil {
		d, st, err := l.conn.Get(l.l.Task(t.id))
		if errors.Is(err, zk.ErrNoNode) {
			return nil // deleted: the children watch says so
		}
		if err != nil {
			return err
		}
		if st.Czxid != t.czxid {
			t.untrusted = fmt.Errorf("task node %s was deleted and made again under the same name, not run", t.id)
			return nil
		}
		data = d
	}
	sig, err := task.ReadSig(l.conn, l.l.TaskSig(t.id))
	if err != nil {
		return err
	}
	signed, err := task.VerifySpec(l.s.Trust(), t.czxid, data, sig)
	if err != nil {
		t.untrusted = err
		return nil
	}
	// What is assigned is what was signed: the spec as verified.
	l.parseSpec(t, data)
	t.signed = true
	l.logger.Debug("task signature verified", "task", t.id, "by", signed.By, "role", signed.Role)
	return nil
}

// expireUnsigned marks untrusted the pending tasks still unsigned SignGrace after they
// were created, by the servers' clock. It reads the clock only when such a task waits.
func (l *leader) expireUnsigned() {
	grace := l.m.cfg.SignGrace
	var now time.Time
	for _, t := range l.tasks {
		if t.signed || t.untrusted != nil || t.invalid != nil || t.worker != "" || time.Since(t.seen) < grace {
			continue
		}
		if now.IsZero() {
			var err error
			if now, err = task.ServerNow(l.s, l.l); err != nil {
				l.logger.Warn("cannot read the servers' clock: unsigned tasks wait on", "err", err)
				return
			}
		}
		if now.Sub(t.created) >= grace {
			t.untrusted = fmt.Errorf("task not signed by a trusted submitter within %v of its creation, not run", grace)
		}
	}
}

// signFireTasks returns the creates of the signatures of the tasks a fire's multi made:
// created are that multi's task creates, res their results. A task whose data is not
// what the master wrote is not signed.
func (l *leader) signFireTasks(created []any, res []zk.MultiResponse) ([]any, error) {
	signer := l.s.Signer()
	var ops []any
	for i, r := range res {
		id := path.Base(r.String)
		data, st, err := l.conn.Get(l.l.Task(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if c, ok := created[i].(*zk.CreateRequest); !ok || !bytes.Equal(c.Data, data) {
			l.logger.Warn("a task of a fire holds what the master did not write: not signing it", "task", id)
			continue
		}
		rec, err := signer.Sign(task.SpecDomain, st.Czxid, data)
		if err != nil {
			return nil, err
		}
		ops = append(ops, l.create(l.l.TaskSig(id), rec))
	}
	return ops, nil
}

// readJobSig reads job j's signature, with a watch unless one is armed, so that a
// signature written after the job is seen; nil if there is none.
func (l *leader) readJobSig(ctx context.Context, j *jobState) ([]byte, error) {
	p := l.l.JobSig(j.name)
	if j.sigArmed {
		return task.ReadSig(l.conn, p)
	}
	sig, _, ev, err := l.conn.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		var ok bool
		if ok, _, ev, err = l.conn.ExistsW(p); err == nil && ok {
			return l.readJobSig(ctx, j) // made meanwhile: read it
		}
		sig = nil
	}
	if err != nil {
		return nil, err
	}
	j.sigArmed = true
	name := j.name
	l.watch(ctx, ev, func(d *dirtySet) { d.markJobSig(name) })
	return sig, nil
}

// verifyJob says why job j's definition, data as read from its node at st, is not to be
// fired, its signature being sig: it does not verify against a key trusted for jobs,
// or this master has no key to sign the tasks of a fire with. nil: it may be fired.
func (l *leader) verifyJob(st *zk.Stat, data, sig []byte) error {
	if _, err := task.VerifyJob(l.s.Trust(), st.Czxid, data, sig); err != nil {
		return err
	}
	if l.s.Signer() == nil {
		return errors.New("this master has no signing key (signing_key) to sign the job's tasks with: not fired")
	}
	return nil
}
