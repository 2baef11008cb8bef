package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
	"github.com/paddock/paddock/provenance"
)

// Provenance. A task's spec and a job's definition are signed by whoever authored them
// (provenance.Message: the domain below, the czxid of the znode that holds them, and
// their exact bytes), in a sig child of that znode written after it, since the czxid
// is known only once the node exists:
//
//	/tasks/task-<seq>/sig   by the submitter (or the master, for a job's fire): a signature record
//	/jobs/<job>/sig         by the submitter; an update rewrites it in the multi that sets the job
//
// A worker runs a task only if its signature verifies against a key trusted for
// TaskSigners; the master assigns only such tasks and fires only jobs whose definition
// verifies against JobSigners. What decides what runs (command, args, env, dir,
// selector, shard...) is in the signed bytes, and the czxid is the node's own, so
// neither a change to the spec nor a signature copied onto another node verifies,
// whatever the nodes' ACLs (docs/security.md, "Provenance").

// The domains of the signatures: what the signed bytes are.
const (
	SpecDomain = "paddock task v1"
	JobDomain  = "paddock job v1"
)

// sigName is the signature's node under a task or a job.
const sigName = "sig"

// TaskSig and JobSig are the signature nodes of a task and a job.
func (l Layout) TaskSig(id string) string  { return l.join("tasks", id, sigName) }
func (l Layout) JobSig(name string) string { return l.join("jobs", name, sigName) }

// The roles trusted to author tasks and jobs. The master signs the tasks of the jobs it
// fires; a worker signs nothing a worker or master would act on.
var (
	TaskSigners = []string{coordinator.RoleSubmitter, coordinator.RoleConsole, coordinator.RoleAdmin, coordinator.RoleMaster}
	JobSigners  = []string{coordinator.RoleSubmitter, coordinator.RoleConsole, coordinator.RoleAdmin}
)

// ErrNoSigner says the client has no signing key: what it would create would never run.
var ErrNoSigner = errors.New("no signing key (signing_key, or tls_cert and tls_key): workers run only signed tasks and the master fires only signed jobs")

// VerifySpec checks sig, the signature node's data, against the spec data held by the
// task node of czxid. Its error says "task not signed by a trusted submitter, not run"
// and why (wrapping provenance's).
func VerifySpec(t *provenance.Trust, czxid int64, data, sig []byte) (provenance.Signed, error) {
	s, err := t.Verify(SpecDomain, czxid, data, sig, TaskSigners...)
	if err != nil {
		return s, fmt.Errorf("task not signed by a trusted submitter, not run: %w", err)
	}
	return s, nil
}

// VerifyJob checks sig against the job definition data held by the job node of czxid.
// Its error says "job not signed by a trusted submitter, not fired" and why.
func VerifyJob(t *provenance.Trust, czxid int64, data, sig []byte) (provenance.Signed, error) {
	s, err := t.Verify(JobDomain, czxid, data, sig, JobSigners...)
	if err != nil {
		return s, fmt.Errorf("job not signed by a trusted submitter, not fired: %w", err)
	}
	return s, nil
}

// ReadSig reads the signature node at p: nil data, no error, if there is none.
func ReadSig(conn *zk.Conn, p string) ([]byte, error) {
	data, _, err := conn.Get(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return data, err
}

// signCreated signs nodes this client has just created, paths[i] holding datas[i], in
// one multi of sig creates, all or none. A node whose data is not what was written
// (deleted and made again by someone else) is an error and nothing is signed; a
// signature already there that this signer made (a try whose answer was lost) is kept,
// one by anyone else is an error.
func (c *Client) signCreated(ctx context.Context, domain string, paths []string, datas [][]byte) error {
	signer := c.s.Signer()
	if signer == nil {
		return ErrNoSigner
	}
	conn := c.s.Conn()
	for first := true; ; first = false {
		var ops []any
		for i, p := range paths {
			var data []byte
			var st *zk.Stat
			if err := c.retry(ctx, func() (err error) { data, st, err = conn.Get(p); return err }); err != nil {
				return fmt.Errorf("sign %s: %w", p, err)
			}
			if !bytes.Equal(data, datas[i]) {
				return fmt.Errorf("sign %s: its data is not what this client wrote: not signing it", p)
			}
			sp := p + "/" + sigName
			if !first { // an earlier try may have signed it
				var have []byte
				if err := c.retry(ctx, func() (err error) { have, err = ReadSig(conn, sp); return err }); err != nil {
					return fmt.Errorf("sign %s: %w", p, err)
				}
				if have != nil && signer.Made(domain, st.Czxid, data, have) {
					continue
				}
				if have != nil {
					return fmt.Errorf("sign %s: a signature this client did not make is there already", p)
				}
			}
			rec, err := signer.Sign(domain, st.Czxid, data)
			if err != nil {
				return err
			}
			ops = append(ops, &zk.CreateRequest{Path: sp, Data: rec, Acl: c.s.ACLFor(sp)})
		}
		if len(ops) == 0 {
			return nil
		}
		_, err := multiErr(conn.Multi(ops...))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zk.ErrNodeExists):
			continue // made by a lost try, or by someone else: read them
		case errors.Is(err, zk.ErrNoNode):
			return fmt.Errorf("sign: %w (deleted meanwhile)", err)
		}
		if err := c.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("sign: %w", err)
		}
	}
}

// SignedSpec returns the spec of task id if its signature verifies with the client's
// trust; an error wrapping ErrNotFound if there is no such task. What a client submits
// again in its own name (the console's retry of a task) must be a spec a trusted key
// signed, or the client would vouch for what anyone wrote.
func (c *Client) SignedSpec(ctx context.Context, id string) (Spec, error) {
	var spec Spec
	if err := CheckID(id); err != nil {
		return spec, err
	}
	var data []byte
	var st *zk.Stat
	err := c.retry(ctx, func() (err error) { data, st, err = c.s.Conn().Get(c.l.Task(id)); return err })
	if errors.Is(err, zk.ErrNoNode) {
		err = ErrNotFound
	}
	if err == nil {
		err = c.verifyNode(ctx, c.l.TaskSig(id), st.Czxid, data, VerifySpec)
	}
	if err == nil {
		err = json.Unmarshal(data, &spec)
	}
	if err != nil {
		return spec, fmt.Errorf("read %s: %w", id, err)
	}
	return spec, nil
}

// verifyNode reads the signature at sigPath and checks it, with the client's trust and
// verify (VerifySpec or VerifyJob), against data read from the node of czxid.
func (c *Client) verifyNode(ctx context.Context, sigPath string, czxid int64, data []byte,
	verify func(*provenance.Trust, int64, []byte, []byte) (provenance.Signed, error)) error {
	if c.s.Trust().Empty() {
		return errors.New("no signers to check its signature against (signers_file, or tls_ca and roles)")
	}
	var sig []byte
	if err := c.retry(ctx, func() (err error) { sig, err = ReadSig(c.s.Conn(), sigPath); return err }); err != nil {
		return err
	}
	_, err := verify(c.s.Trust(), czxid, data, sig)
	return err
}
