package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"
)

// auditDataLimit bounds the data kept in an audit record's before and after.
const auditDataLimit = 4 << 10

// auditPrefix names the audit znodes: AuditRoot/entry-0000000042.
const auditPrefix = "entry-"

// An AuditRecord is one change made through the console, stored as JSON in a
// persistent-sequential znode under Config.AuditRoot.
type AuditRecord struct {
	// Seq is the znode's sequence number; set when read back, not stored.
	Seq    int64     `json:"seq"`
	Time   time.Time `json:"time"`
	User   string    `json:"user"`
	Role   string    `json:"role"`
	Method string    `json:"method"` // the HTTP request's
	URL    string    `json:"url"`    // the HTTP request's path
	Action string    `json:"action"` // such as znode.create, znode.set, znode.delete
	Target string    `json:"target"` // such as the znode's path
	Before *Snapshot `json:"before,omitempty"`
	After  *Snapshot `json:"after,omitempty"`
	Note   string    `json:"note,omitempty"`
}

// A Snapshot is what a target looked like before or after a change.
type Snapshot struct {
	Exists bool `json:"exists"`
	// Data is the znode's data as text when it is valid UTF-8, else base64
	// (DataEncoding says which), cut to 4 KiB (Truncated).
	Data         string `json:"data,omitempty"`
	DataEncoding string `json:"data_encoding,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
	Version      int32  `json:"version"`
	NumChildren  int32  `json:"num_children,omitempty"`
}

func snapshotOf(data []byte, st *zk.Stat) *Snapshot {
	if st == nil {
		return &Snapshot{Exists: false, Version: -1}
	}
	s := &Snapshot{Exists: true, Version: st.Version, NumChildren: st.NumChildren}
	data = maskSecrets(data) // the audit log never holds a password
	if len(data) > auditDataLimit {
		data, s.Truncated = data[:auditDataLimit], true
	}
	if utf8.Valid(data) || s.Truncated && utf8.Valid(trimPartialRune(data)) {
		s.Data, s.DataEncoding = string(data), "text"
	} else if len(data) > 0 {
		s.Data, s.DataEncoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	return s
}

// trimPartialRune drops a rune cut in two at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if r, _ := utf8.DecodeLastRune(b); r != utf8.RuneError {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// audit records rec, filled in with who and what request made it. The change is done
// whatever happens here: a failure is logged at error level and reported to the
// client in the X-Audit-Error header, so call audit before writing the response.
func (c *Console) audit(g *gin.Context, rec AuditRecord) {
	ws := sessionOf(g)
	rec.Time = time.Now().UTC()
	rec.User, rec.Role = ws.user, ws.role.String()
	rec.Method, rec.URL = g.Request.Method, g.Request.URL.Path
	if err := c.writeAudit(rec); err != nil {
		c.logger.Error("audit record not written", "user", rec.User, "action", rec.Action, "target", rec.Target, "err", err)
		g.Header("X-Audit-Error", "the change was made but not recorded in the audit log: "+err.Error())
	}
}

func (c *Console) writeAudit(rec AuditRecord) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	_, err = c.conn.Create(c.cfg.AuditRoot+"/"+auditPrefix, body, zk.FlagSequence, c.session.ACLFor(c.cfg.AuditRoot+"/"+auditPrefix))
	if err == zk.ErrNoNode { // the root was deleted through the console, say
		if err = c.session.MakeDirs(context.Background(), c.cfg.AuditRoot); err == nil {
			_, err = c.conn.Create(c.cfg.AuditRoot+"/"+auditPrefix, body, zk.FlagSequence, c.session.ACLFor(c.cfg.AuditRoot+"/"+auditPrefix))
		}
	}
	return err
}

// auditSeq parses the sequence number of an audit znode's name; -1 if it is not one.
func auditSeq(name string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(name, auditPrefix), 10, 64)
	if !strings.HasPrefix(name, auditPrefix) || err != nil {
		return -1
	}
	return n
}

// listAudit returns up to limit records newest first, those before seq before if it is
// positive. Records deleted meanwhile are skipped.
func (c *Console) listAudit(ctx context.Context, limit int, before int64) ([]AuditRecord, error) {
	var names []string
	err := c.read(ctx, func() (err error) {
		names, _, err = c.conn.Children(c.cfg.AuditRoot)
		return err
	})
	if err == zk.ErrNoNode {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var seqs []int64
	for _, n := range names {
		if s := auditSeq(n); s >= 0 && (before <= 0 || s < before) {
			seqs = append(seqs, s)
		}
	}
	slices.Sort(seqs)
	slices.Reverse(seqs)
	seqs = seqs[:min(limit, len(seqs))]
	recs := make([]AuditRecord, 0, len(seqs))
	for _, s := range seqs {
		var data []byte
		err := c.read(ctx, func() (err error) {
			data, _, err = c.conn.Get(fmt.Sprintf("%s/%s%010d", c.cfg.AuditRoot, auditPrefix, s))
			return err
		})
		if err == zk.ErrNoNode {
			continue
		}
		if err != nil {
			return nil, err
		}
		var rec AuditRecord
		if json.Unmarshal(data, &rec) != nil {
			rec = AuditRecord{Note: "unreadable record"}
		}
		rec.Seq = s
		recs = append(recs, maskRecord(rec))
	}
	return recs, nil
}

// maskRecord masks the secrets of a record read back: one written before the console
// masked its snapshots, or by another client, may hold a password.
func maskRecord(rec AuditRecord) AuditRecord {
	for _, s := range []*Snapshot{rec.Before, rec.After} {
		if s != nil && s.DataEncoding != "base64" {
			s.Data = string(maskSecrets([]byte(s.Data)))
		}
	}
	rec.Note = string(maskSecrets([]byte(rec.Note)))
	rec.Target = string(maskSecrets([]byte(rec.Target)))
	return rec
}

func (c *Console) apiAudit(g *gin.Context) {
	limit, err1 := queryInt(g, "limit", 50)
	before, err2 := queryInt(g, "before", 0)
	if err1 != nil || err2 != nil || limit < 1 || limit > 1000 {
		apiError(g, http.StatusBadRequest, "limit: want 1 to 1000; before: want a sequence number")
		return
	}
	recs, err := c.listAudit(g.Request.Context(), limit, int64(before))
	if err != nil {
		c.zkError(g, c.cfg.AuditRoot, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"records": recs})
}

func queryInt(g *gin.Context, key string, def int) (int, error) {
	v := g.Query(key)
	if v == "" {
		return def, nil
	}
	return strconv.Atoi(v)
}
