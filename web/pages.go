package web

import (
	"bytes"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var assetFS embed.FS

func staticFS() http.FileSystem {
	sub, _ := fs.Sub(assetFS, "static")
	return http.FS(sub)
}

// hexViewLimit bounds the hex dump shown of a znode's data.
const hexViewLimit = 16 << 10

// pageSet holds one template set per page, each with the shared layout.
type pageSet map[string]*template.Template

func parsePages() (pageSet, error) {
	set := pageSet{}
	return set, addPages(set, "login", "overview", "server", "znodes", "audit")
}

// pageData is what every page gets; Page is the page's own.
type pageData struct {
	Title    string
	User     string
	Role     string
	CSRF     string
	CanWrite bool
	Flash    string
	Error    string
	Topic    string // the page's event topic (GET /api/v1/events), "" for none
	Page     any
}

func (c *Console) render(g *gin.Context, status int, name, title string, page any) {
	d := pageData{Title: title, Page: page, Flash: g.Query("flash"), Error: g.Query("error")}
	if v, ok := g.Get(ctxSession); ok {
		d.Topic = c.pageTopic(g, name)
		ws := v.(*webSession)
		d.User, d.Role, d.CSRF, d.CanWrite = ws.user, ws.role.String(), ws.csrf, ws.role >= roleOperator
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "layout", d); err != nil {
		c.logger.Error("render page", "page", name, "err", err)
		g.String(http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	g.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

func (c *Console) loginPage(g *gin.Context) {
	c.render(g, http.StatusOK, "login", "Log in", nil)
}

func (c *Console) loginForm(g *gin.Context) {
	ws, lerr := c.authenticate(g.ClientIP(), deviceOf(g), g.PostForm("user"), g.PostForm("password"))
	if lerr != nil {
		lerr.writeHeader(g)
		g.Request.URL.RawQuery = url.Values{"error": {lerr.msg}}.Encode()
		c.render(g, lerr.status, "login", "Log in", nil)
		return
	}
	c.setSessionCookies(g, ws)
	g.Redirect(http.StatusSeeOther, "/")
}

type crumb struct{ Name, Path string }

type znodesPage struct {
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
	if err := checkPath(path); err != nil {
		c.render(g, http.StatusBadRequest, "znodes", "Znodes", znodesPage{Path: "/", Crumbs: breadcrumbs("/"),
			Parent: "/"})
		return
	}
	offset, _ := strconv.Atoi(g.Query("offset"))
	offset = max(offset, 0)
	ctx := g.Request.Context()
	p := znodesPage{Path: path, Crumbs: breadcrumbs(path), Parent: parentOf(path)}
	var err error
	if p.Znode, err = c.znode(ctx, path); err == nil {
		p.Children, err = c.children(ctx, path, offset, defaultPageSize)
	}
	if err != nil {
		status, msg := zkStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {path + ": " + msg}}.Encode()
		c.render(g, status, "znodes", path, p)
		return
	}
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

type auditPage struct {
	Records []AuditRecord
	Next    int64
}

func (c *Console) auditPage(g *gin.Context) {
	before, _ := strconv.ParseInt(g.Query("before"), 10, 64)
	recs, err := c.listAudit(g.Request.Context(), 100, before)
	if err != nil {
		_, msg := zkStatus(err)
		g.Request.URL.RawQuery = url.Values{"error": {msg}}.Encode()
	}
	p := auditPage{Records: recs}
	if len(recs) == 100 {
		p.Next = recs[len(recs)-1].Seq
	}
	c.render(g, http.StatusOK, "audit", "Audit log", p)
}
