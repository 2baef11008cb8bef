package web

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

const (
	defaultPageSize = 100
	maxPageSize     = 1000
	// deleteBatch is how many deletes a recursive delete sends in one multi.
	deleteBatch = 500
)

// checkPath reports what is wrong with a znode path, in ZooKeeper's rules.
func checkPath(p string) error { return coordinator.PathProblem(p) }

func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func join(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// zkStatus maps a ZooKeeper error to an HTTP status and words; the one table of the
// console's error mapping.
func zkStatus(err error) (int, string) {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return http.StatusNotFound, "no such znode"
	case errors.Is(err, zk.ErrNodeExists):
		return http.StatusConflict, "the znode already exists"
	case errors.Is(err, zk.ErrNotEmpty):
		return http.StatusConflict, "the znode has children: delete them first, or delete recursively"
	case errors.Is(err, zk.ErrBadVersion):
		return http.StatusConflict, "version conflict: the znode was changed since it was read"
	case errors.Is(err, zk.ErrNoAuth):
		return http.StatusForbidden, "the znode's ACL does not allow the console this"
	case errors.Is(err, zk.ErrShortBuffer):
		return http.StatusRequestEntityTooLarge, "the request is larger than the servers' jute.maxbuffer (the console's max_buffer)"
	case errors.Is(err, zk.ErrInvalidACL):
		return http.StatusBadRequest, "invalid ACL"
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return http.StatusBadRequest, "ephemeral znodes cannot have children"
	case errors.Is(err, zk.ErrInvalidFlags), errors.Is(err, zk.ErrBadArguments):
		return http.StatusBadRequest, "invalid request: " + err.Error()
	case coordinator.IsConnLoss(err), errors.Is(err, zk.ErrClosing), errors.Is(err, coordinator.ErrClosed),
		errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the coordination service is unreachable: try again"
	}
	return http.StatusInternalServerError, "unexpected error: " + err.Error()
}

// zkError answers a ZooKeeper error about path.
func (c *Console) zkError(g *gin.Context, path string, err error) {
	status, msg := zkStatus(err)
	if status == http.StatusInternalServerError {
		c.logger.Error("request failed", "path", path, "err", err)
	}
	apiError(g, status, path+": "+msg)
}

// nearestExisting returns the nearest ancestor of path that exists ("/" at worst).
func (c *Console) nearestExisting(ctx context.Context, path string) string {
	for p := parentOf(path); p != "/"; p = parentOf(p) {
		var ok bool
		err := c.read(ctx, func() (err error) {
			ok, _, err = c.conn.Exists(p)
			return err
		})
		if err == nil && ok {
			return p
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			break
		}
	}
	return "/"
}

// readProblem is why a znode could not be read, for the page and the API: a missing
// node names its nearest existing ancestor, a forbidden one the console's identities.
type readProblem struct {
	Status     int
	Msg        string
	Nearest    string   // missing: the nearest ancestor that exists
	Identities []string // forbidden: who the console is to the servers
}

func (c *Console) readProblemOf(ctx context.Context, path string, err error) readProblem {
	status, msg := zkStatus(err)
	p := readProblem{Status: status, Msg: path + ": " + msg}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		p.Nearest = c.nearestExisting(ctx, path)
		p.Msg = path + ": no such znode; the nearest that exists is " + p.Nearest
	case errors.Is(err, zk.ErrNoAuth):
		p.Identities = c.identities()
		p.Msg = fmt.Sprintf("%s: forbidden: the console's identities (%s) may not read it: its ACL grants none of them r",
			path, strings.Join(p.Identities, ", "))
	}
	return p
}

// readError answers a failed read of path.
func (c *Console) readError(g *gin.Context, path string, err error) {
	p := c.readProblemOf(g.Request.Context(), path, err)
	if p.Status == http.StatusInternalServerError {
		c.logger.Error("request failed", "path", path, "err", err)
	}
	body := gin.H{"error": p.Msg}
	if p.Nearest != "" {
		body["nearest"] = p.Nearest
	}
	if p.Identities != nil {
		body["identities"] = p.Identities
	}
	g.JSON(p.Status, body)
}

// requestOverhead is the bytes of a setData frame (acl nil) or create frame besides its
// data: the header (xid, opcode), the path, the data's length, the version or flags,
// and a create's ACL.
func requestOverhead(path string, acl []zk.ACL) int {
	n := 8 + 4 + len(path) + 4 + 4
	if acl != nil {
		n += 4
	}
	for _, a := range acl {
		n += 4 + 4 + len(a.Scheme) + 4 + len(a.ID)
	}
	return n
}

// checkSize refuses data the servers would refuse (their jute.maxbuffer), naming both
// limits a znode write meets: the console's body cap and the servers' buffer.
func (c *Console) checkSize(path string, data []byte, acl []zk.ACL) error {
	max := c.session.MaxBuffer()
	room := max - requestOverhead(path, acl)
	if len(data) <= room {
		return nil
	}
	return &requestError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf(
		"%s: data of %d bytes is too large: the servers take requests of at most %d bytes (jute.maxbuffer; "+
			"the console's max_buffer), which leaves %d bytes of data for this znode; the console's own cap on a "+
			"znode write's body is %d bytes", path, len(data), max, room, znodeBodyLimit)}
}

// znodeLimitNote says, after the console's body cap, the other limit on a znode's data.
func znodeLimitNote(maxBuffer int) string {
	return fmt.Sprintf(" (the console's cap on a znode write's body); a znode's data is also bounded by the "+
		"servers' jute.maxbuffer, %d bytes per request", maxBuffer)
}

// read runs a read, retrying it across connection loss until ctx ends (at most 10 s).
func (c *Console) read(ctx context.Context, op func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err := op()
		if err == nil || !coordinator.IsConnLoss(err) {
			return err
		}
		if werr := c.session.WaitToRetry(ctx, err); werr != nil {
			return err
		}
	}
}

// StatView is a znode's Stat as the console shows it.
type StatView struct {
	Czxid          string    `json:"czxid"`
	Mzxid          string    `json:"mzxid"`
	Pzxid          string    `json:"pzxid"`
	Ctime          time.Time `json:"ctime"`
	Mtime          time.Time `json:"mtime"`
	Version        int32     `json:"version"`
	Cversion       int32     `json:"cversion"`
	Aversion       int32     `json:"aversion"`
	EphemeralOwner string    `json:"ephemeral_owner"`
	DataLength     int32     `json:"data_length"`
	NumChildren    int32     `json:"num_children"`
}

func statView(st *zk.Stat) StatView {
	return StatView{
		Czxid: hex64(st.Czxid), Mzxid: hex64(st.Mzxid), Pzxid: hex64(st.Pzxid),
		Ctime: time.UnixMilli(st.Ctime).UTC(), Mtime: time.UnixMilli(st.Mtime).UTC(),
		Version: st.Version, Cversion: st.Cversion, Aversion: st.Aversion,
		EphemeralOwner: hex64(st.EphemeralOwner), DataLength: st.DataLength, NumChildren: st.NumChildren,
	}
}

func hex64(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// ACLView is one ACL entry: scheme, id and permissions as zkCli prints them (cdrwa).
type ACLView struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  string `json:"perms"`
}

func aclViews(acl []zk.ACL) []ACLView {
	out := make([]ACLView, len(acl))
	for i, a := range acl {
		var p strings.Builder
		for _, f := range []struct {
			bit int32
			c   byte
		}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
			if a.Perms&f.bit != 0 {
				p.WriteByte(f.c)
			}
		}
		out[i] = ACLView{Scheme: a.Scheme, ID: a.ID, Perms: p.String()}
	}
	return out
}

// ChildPage is one page of a znode's children, sorted by name.
type ChildPage struct {
	Path     string   `json:"path"`
	Stat     StatView `json:"stat"`
	Children []string `json:"children"`
	Total    int      `json:"total"`
	Offset   int      `json:"offset"`
	// Next is the offset of the next page, absent on the last one.
	Next *int `json:"next,omitempty"`
}

// children reads path's children with one getChildren and returns the page
// [offset, offset+limit): no per-child reads, so a node with 100k children stays
// usable.
func (c *Console) children(ctx context.Context, path string, offset, limit int) (ChildPage, error) {
	var names []string
	var st *zk.Stat
	err := c.read(ctx, func() (err error) {
		names, st, err = c.conn.Children(path)
		return err
	})
	if err != nil {
		return ChildPage{}, err
	}
	slices.Sort(names)
	page := ChildPage{Path: path, Stat: statView(st), Total: len(names), Offset: offset}
	lo, hi := min(offset, len(names)), min(offset+limit, len(names))
	page.Children = names[lo:hi]
	if hi < len(names) {
		page.Next = &hi
	}
	return page, nil
}

// ZnodeView is a znode's data, stat and ACL.
type ZnodeView struct {
	Path string `json:"path"`
	Data []byte `json:"data"` // base64 in JSON
	// Text is the data when it is valid UTF-8.
	Text *string   `json:"text,omitempty"`
	Stat StatView  `json:"stat"`
	ACL  []ACLView `json:"acl"`
}

func (c *Console) znode(ctx context.Context, path string) (ZnodeView, error) {
	var data []byte
	var st *zk.Stat
	var acl []zk.ACL
	err := c.read(ctx, func() (err error) {
		if data, st, err = c.conn.Get(path); err != nil {
			return err
		}
		acl, _, err = c.conn.GetACL(path)
		return err
	})
	if err != nil {
		return ZnodeView{}, err
	}
	data = maskSecrets(data) // the console never shows a password
	v := ZnodeView{Path: path, Data: data, Stat: statView(st), ACL: aclViews(acl)}
	if v.Data == nil {
		v.Data = []byte{}
	}
	if utf8.Valid(data) {
		s := string(data)
		v.Text = &s
	}
	return v, nil
}

// getForAudit reads path's data and stat for an audit snapshot; a missing node or an
// error gives a snapshot that says it does not exist.
func (c *Console) getForAudit(path string) *Snapshot {
	data, st, err := c.conn.Get(path)
	if err != nil {
		return snapshotOf(nil, nil)
	}
	return snapshotOf(data, st)
}

// createModes are the kinds of znodes the console creates. Ephemeral ones belong to
// the console's own session and go when it ends.
var createModes = map[string]int32{
	"persistent":           zk.FlagPersistent,
	"sequential":           zk.FlagSequence,
	"container":            zk.FlagContainer,
	"ephemeral":            zk.FlagEphemeral,
	"ephemeral_sequential": zk.FlagEphemeralSequential,
}

func (c *Console) create(path string, data []byte, mode string) (string, error) {
	flags, ok := createModes[mode]
	if !ok {
		return "", badRequest("flags = %q: want persistent, sequential, container, ephemeral or ephemeral_sequential", mode)
	}
	acl := c.session.ACLFor(path)
	if err := c.checkSize(path, data, acl); err != nil {
		return "", err
	}
	if flags == zk.FlagContainer {
		return c.conn.CreateContainer(path, data, flags, acl)
	}
	return c.conn.Create(path, data, flags, acl)
}

// deleteTree deletes path and everything under it, path itself only if its version
// matches (-1: any). It returns how many znodes it deleted.
func (c *Console) deleteTree(ctx context.Context, path string, version int32) (int, error) {
	var order []string // children before parents
	var walk func(p string) error
	walk = func(p string) error {
		var names []string
		err := c.read(ctx, func() (err error) {
			names, _, err = c.conn.Children(p)
			return err
		})
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		for _, n := range names {
			if err := walk(join(p, n)); err != nil {
				return err
			}
		}
		order = append(order, p)
		return nil
	}
	if err := walk(path); err != nil {
		return 0, err
	}
	order = order[:len(order)-1] // path itself, deleted last with its version
	deleted := 0
	for len(order) > 0 {
		batch := order[:min(deleteBatch, len(order))]
		order = order[len(batch):]
		n, err := c.deleteBatch(batch)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	if err := c.conn.Delete(path, version); err != nil {
		return deleted, err
	}
	return deleted + 1, nil
}

// deleteBatch deletes paths in one multi; if that fails (one was deleted meanwhile,
// or a new child appeared) it deletes them one by one, skipping the missing.
func (c *Console) deleteBatch(paths []string) (int, error) {
	ops := make([]any, len(paths))
	for i, p := range paths {
		ops[i] = &zk.DeleteRequest{Path: p, Version: -1}
	}
	if _, err := c.conn.Multi(ops...); err == nil {
		return len(paths), nil
	}
	n := 0
	for _, p := range paths {
		switch err := c.conn.Delete(p, -1); {
		case err == nil:
			n++
		case !errors.Is(err, zk.ErrNoNode):
			return n, fmt.Errorf("%s: %w", p, err)
		}
	}
	return n, nil
}

// requestError is a request the console refuses, with its HTTP status: a bad request
// the client can fix, or one the console never does.
type requestError struct {
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) error {
	return &requestError{status: http.StatusForbidden, msg: fmt.Sprintf(format, args...)}
}

func decodeData(data, encoding string) ([]byte, error) {
	switch encoding {
	case "", "text":
		return []byte(data), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, badRequest("data: not valid base64: %v", err)
		}
		return b, nil
	}
	return nil, badRequest("data_encoding = %q: want text or base64", encoding)
}
