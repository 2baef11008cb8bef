package web

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"
)

// The znode browser page and its forms.

type crumb struct{ Name, Path string }

type znodesPage struct {
	// Input is the path box's value: the path asked for, as typed.
	Input       string
	Path        string
	Crumbs      []crumb
	Parent      string
	Children    ChildPage
	ChildPaths  []crumb
	Prev, Next  int
	First, Last int // 1-based positions of the page's first and last child
	HasPrev     bool
	Znode       ZnodeView
	JSON        string
	Hex         string
	HexCut      bool
	Binary      bool
	// Problem, if set, is why the znode could not be shown: the page then has no forms.
	Problem *readProblem
	// ProblemACL is the ACL of a znode the console may not read, when it may read that.
	ProblemACL []ACLView
	// Identities are the console's own ZooKeeper identities.
	Identities []string
	// CanEditACL: the user is an admin.
	CanEditACL bool
	ACLText    string
	// MaxData is the most data the servers take in one write (jute.maxbuffer).
	MaxBuffer int
	BodyLimit int
	Schemes   string
}

func breadcrumbs(p string) []crumb {
	out := []crumb{{"/", "/"}}
	if p == "/" {
		return out
	}
	acc := ""
	for _, name := range strings.Split(p[1:], "/") {
		acc += "/" + name
		out = append(out, crumb{name, acc})
	}
	return out
}

func (c *Console) znodesPage(g *gin.Context) {
	path := g.DefaultQuery("path", "/")
	p := znodesPage{Input: path, Path: path, Identities: c.identities(), MaxBuffer: c.session.MaxBuffer(),
		BodyLimit: znodeBodyLimit, Schemes: "world, auth, digest, ip, x509, sasl"}
	if err := checkPath(path); err != nil {
		p.Path, p.Crumbs = "", breadcrumbs("/")
		p.Problem = &readProblem{Status: http.StatusBadRequest, Msg: pathError(path, err).Error()}
		c.render(g, p.Problem.Status, "znodes", "Znodes", p)
		return
	}
	p.Crumbs, p.Parent = breadcrumbs(path), parentOf(path)
	offset, _ := strconv.Atoi(g.Query("offset"))
	offset = max(offset, 0)
	ctx := g.Request.Context()
	var err error
	if p.Znode, err = c.znode(ctx, path); err == nil {
		p.Children, err = c.children(ctx, path, offset, defaultPageSize)
	}
	if err != nil {
		pr := c.readProblemOf(ctx, path, err)
		p.Problem = &pr
		if errors.Is(err, zk.ErrNoAuth) {
			if acl, _, aerr := c.conn.GetACL(path); aerr == nil {
				p.ProblemACL = aclViews(acl)
			}
		}
		c.render(g, pr.Status, "znodes", path, p)
		return
	}
	p.CanEditACL = sessionOf(g).role >= roleAdmin
	p.ACLText = aclText(p.Znode.ACL)
	for _, n := range p.Children.Children {
		p.ChildPaths = append(p.ChildPaths, crumb{n, join(path, n)})
	}
	p.HasPrev, p.Prev = offset > 0, max(offset-defaultPageSize, 0)
	p.First, p.Last = offset+1, offset+len(p.Children.Children)
	if p.Children.Next != nil {
		p.Next = *p.Children.Next
	}
	data := p.Znode.Data
	p.Binary = p.Znode.Text == nil
	var pretty bytes.Buffer
	if json.Valid(data) && json.Indent(&pretty, data, "", "  ") == nil {
		p.JSON = pretty.String()
	}
	if len(data) > hexViewLimit {
		data, p.HexCut = data[:hexViewLimit], true
	}
	p.Hex = hex.Dump(data)
	c.render(g, http.StatusOK, "znodes", path, p)
}

// formDone redirects back to the browser at path with a message.
func formDone(g *gin.Context, path, key, msg string) {
	g.Redirect(http.StatusSeeOther, "/znodes?"+url.Values{"path": {path}, key: {msg}}.Encode())
}

func formError(g *gin.Context, path string, err error) {
	var re *requestError
	msg := err.Error()
	if !errors.As(err, &re) {
		_, msg = zkStatus(err)
		msg = path + ": " + msg
	}
	formDone(g, path, "error", msg)
}

func (c *Console) createForm(g *gin.Context) {
	parent, name := g.PostForm("parent"), g.PostForm("name")
	path := join(parent, name)
	if name == "" || strings.Contains(name, "/") {
		formDone(g, parent, "error", "name: want one node name, without /")
		return
	}
	created, err := c.doCreate(g, path, []byte(g.PostForm("data")), g.DefaultPostForm("flags", "persistent"))
	if err != nil {
		formError(g, parent, err)
		return
	}
	formDone(g, created, "flash", "created "+created)
}

func (c *Console) editForm(g *gin.Context) {
	path := g.PostForm("path")
	version, err := strconv.Atoi(g.PostForm("version"))
	if err != nil {
		formDone(g, path, "error", "version: want an integer")
		return
	}
	st, err := c.doSet(g, path, []byte(g.PostForm("data")), int32(version))
	if err != nil {
		formError(g, path, err)
		return
	}
	formDone(g, path, "flash", "saved: version "+strconv.Itoa(int(st.Version)))
}

func (c *Console) deleteForm(g *gin.Context) {
	path := g.PostForm("path")
	version, err := strconv.Atoi(g.DefaultPostForm("version", "-1"))
	if err != nil {
		formDone(g, path, "error", "version: want an integer")
		return
	}
	recursive := g.PostForm("recursive") == "true"
	n, err := c.doDelete(g, path, int32(version), recursive, g.PostForm("confirm"))
	if err != nil {
		formError(g, path, err)
		return
	}
	formDone(g, parentOf(path), "flash", "deleted "+path+" ("+strconv.Itoa(n)+" znodes)")
}

// aclForm sets a znode's ACL from the page: the entries as text (scheme:id:perms a
// line) and, optionally, a digest user with a password the console hashes.
func (c *Console) aclForm(g *gin.Context) {
	path := g.PostForm("path")
	version, err := strconv.Atoi(g.PostForm("aversion"))
	if err != nil {
		formDone(g, path, "error", "aversion: want an integer")
		return
	}
	entries, err := parseACLText(g.PostForm("acl"))
	if err != nil {
		formDone(g, path, "error", err.Error())
		return
	}
	if user := strings.TrimSpace(g.PostForm("digest_user")); user != "" {
		entries = append(entries, ACLEntry{Scheme: "digest", ID: user, Password: g.PostForm("digest_password"),
			Perms: g.PostForm("digest_perms")})
	}
	st, err := c.doSetACL(g, path, entries, int32(version))
	if err != nil {
		if errors.Is(err, zk.ErrBadVersion) {
			formDone(g, path, "error", path+": ACL version conflict: the ACL was changed since it was read; "+
				"reload and edit it again")
			return
		}
		formError(g, path, err)
		return
	}
	formDone(g, path, "flash", "ACL saved: aversion "+strconv.Itoa(int(st.Aversion)))
}
