package web

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"

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
