package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"
)

// The changes below are shared by the API and the page forms; each records itself in
// the audit log once it is made.

func (c *Console) doCreate(g *gin.Context, path string, data []byte, mode string) (string, error) {
	if err := checkPath(path); err != nil || path == "/" {
		return "", pathError(path, err)
	}
	if err := c.checkAuditWrite(path, false); err != nil {
		return "", err
	}
	data, err := restoreSecrets(data, nil) // a new node has no secret to keep
	if err != nil {
		return "", err
	}
	created, err := c.create(path, data, mode)
	if err != nil {
		return "", err
	}
	c.audit(g, AuditRecord{Action: "znode.create", Target: created, Note: "mode " + mode,
		Before: snapshotOf(nil, nil), After: c.getForAudit(created)})
	return created, nil
}

func (c *Console) doSet(g *gin.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if err := checkPath(path); err != nil {
		return nil, pathError(path, err)
	}
	if err := c.checkAuditWrite(path, false); err != nil {
		return nil, err
	}
	old, _, err := c.conn.Get(path)
	if err != nil {
		return nil, err
	}
	// Masked secrets read through the console keep their stored values.
	if data, err = restoreSecrets(data, old); err != nil {
		return nil, err
	}
	if err := c.checkSize(path, data, nil); err != nil {
		return nil, err
	}
	before := c.getForAudit(path)
	st, err := c.conn.Set(path, data, version)
	if err != nil {
		return nil, err
	}
	c.audit(g, AuditRecord{Action: "znode.set", Target: path, Before: before, After: snapshotOf(data, st)})
	return st, nil
}

func (c *Console) doDelete(g *gin.Context, path string, version int32, recursive bool, confirm string) (int, error) {
	if err := checkPath(path); err != nil || path == "/" {
		return 0, pathError(path, err)
	}
	if err := c.checkAuditWrite(path, true); err != nil {
		return 0, err
	}
	if recursive && confirm != path {
		return 0, badRequest("%s: a recursive delete needs confirm set to the path itself", path)
	}
	before := c.getForAudit(path)
	n, err := 1, error(nil)
	if recursive {
		n, err = c.deleteTree(g.Request.Context(), path, version)
	} else {
		err = c.conn.Delete(path, version)
	}
	if n > 0 && (err == nil || recursive) {
		note := fmt.Sprintf("deleted %d znodes", n)
		if err != nil {
			note += ", then failed: " + err.Error()
		}
		c.audit(g, AuditRecord{Action: "znode.delete", Target: path, Before: before, After: c.getForAudit(path), Note: note})
	}
	return n, err
}

// checkAuditWrite refuses changes to the audit log: the console only appends to it
// (writeAudit), for every user whatever the role. A delete of an ancestor of the audit
// root (recursive or not) is refused too.
func (c *Console) checkAuditWrite(path string, deleting bool) error {
	root := c.cfg.AuditRoot
	under := path == root || strings.HasPrefix(path, root+"/")
	above := deleting && (path == "/" || strings.HasPrefix(root, path+"/"))
	if under || above {
		return forbidden("%s: the audit log %s is append-only: the console neither changes nor deletes it", path, root)
	}
	return nil
}

func pathError(path string, err error) error {
	if err == nil {
		return badRequest("path %q: the root cannot be created or deleted", path)
	}
	return badRequest("path %q: %v", path, err)
}

// changeError answers the error of a change.
func (c *Console) changeError(g *gin.Context, path string, err error) {
	var re *requestError
	if errors.As(err, &re) {
		apiError(g, re.status, re.msg)
		return
	}
	if errors.Is(err, zk.ErrBadVersion) {
		if _, st, e := c.conn.Exists(path); e == nil && st != nil {
			g.JSON(http.StatusConflict, gin.H{"error": path + ": version conflict: the znode is now at version " +
				strconv.Itoa(int(st.Version)), "version": st.Version})
			return
		}
	}
	c.zkError(g, path, err)
}

func (c *Console) apiChildren(g *gin.Context) {
	path := g.DefaultQuery("path", "/")
	if err := checkPath(path); err != nil {
		apiError(g, http.StatusBadRequest, pathError(path, err).Error())
		return
	}
	offset, err1 := queryInt(g, "offset", 0)
	limit, err2 := queryInt(g, "limit", defaultPageSize)
	if err1 != nil || err2 != nil || offset < 0 || limit < 1 || limit > maxPageSize {
		apiError(g, http.StatusBadRequest, fmt.Sprintf("offset: want 0 or more; limit: want 1 to %d", maxPageSize))
		return
	}
	page, err := c.children(g.Request.Context(), path, offset, limit)
	if err != nil {
		c.readError(g, path, err)
		return
	}
	g.JSON(http.StatusOK, page)
}

func (c *Console) apiGetZnode(g *gin.Context) {
	path := g.Query("path")
	if err := checkPath(path); err != nil {
		apiError(g, http.StatusBadRequest, pathError(path, err).Error())
		return
	}
	v, err := c.znode(g.Request.Context(), path)
	if err != nil {
		c.readError(g, path, err)
		return
	}
	g.JSON(http.StatusOK, v)
}

type writeRequest struct {
	Path         string `json:"path"`
	Data         string `json:"data"`
	DataEncoding string `json:"data_encoding"` // text (default) or base64
	Flags        string `json:"flags"`         // create only; persistent by default
	Version      *int32 `json:"version"`       // set only; required (-1: any)
}

func (c *Console) bindWrite(g *gin.Context) (writeRequest, []byte, bool) {
	var req writeRequest
	if err := g.ShouldBindJSON(&req); err != nil {
		apiError(g, http.StatusBadRequest, "want a JSON body {\"path\", \"data\", \"data_encoding\", …}: "+err.Error())
		return req, nil, false
	}
	data, err := decodeData(req.Data, req.DataEncoding)
	if err != nil {
		apiError(g, http.StatusBadRequest, err.Error())
		return req, nil, false
	}
	return req, data, true
}

func (c *Console) apiCreateZnode(g *gin.Context) {
	req, data, ok := c.bindWrite(g)
	if !ok {
		return
	}
	if req.Flags == "" {
		req.Flags = "persistent"
	}
	created, err := c.doCreate(g, req.Path, data, req.Flags)
	if err != nil {
		c.changeError(g, req.Path, err)
		return
	}
	g.JSON(http.StatusCreated, gin.H{"path": created})
}

func (c *Console) apiSetZnode(g *gin.Context) {
	req, data, ok := c.bindWrite(g)
	if !ok {
		return
	}
	if req.Version == nil {
		apiError(g, http.StatusBadRequest, "version: required, the version read (or -1 to overwrite any)")
		return
	}
	st, err := c.doSet(g, req.Path, data, *req.Version)
	if err != nil {
		c.changeError(g, req.Path, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"path": req.Path, "stat": statView(st)})
}

func (c *Console) apiDeleteZnode(g *gin.Context) {
	path := g.Query("path")
	version, err := queryInt(g, "version", -1)
	if err != nil {
		apiError(g, http.StatusBadRequest, "version = "+g.Query("version")+": want an integer, or -1 for any")
		return
	}
	n, err := c.doDelete(g, path, int32(version), g.Query("recursive") == "true", g.Query("confirm"))
	if err != nil {
		c.changeError(g, path, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"path": path, "deleted": n})
}
