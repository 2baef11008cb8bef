package web

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
)

// Request body caps. A body is read whole, up to its cap, before any handler sees it:
// a Content-Length over the cap is refused unread, and a chunked body as soon as it
// passes the cap (the server then closes the connection rather than drain it).
const (
	// loginBodyLimit bounds POST /login and /api/v1/login: a name and a password.
	loginBodyLimit = 4 << 10
	// znodeBodyLimit bounds the znode writes (POST and PUT /api/v1/znode, the create
	// and edit forms): ZooKeeper's 1 MiB of data, base64 or JSON-escaped.
	znodeBodyLimit = 2 << 20
	// jobFormBodyLimit bounds the job create form (POST /jobs): a job's fields, as much
	// as the API takes of a job in JSON.
	jobFormBodyLimit = 64 << 10
	// jobActionBodyLimit bounds the job pages' button forms (POST /jobs/<job>/enable,
	// /disable, /run, /clear-error and /delete): a CSRF token, where to go back to and the
	// job's name typed to confirm a delete.
	jobActionBodyLimit = 2 << 10
	// defaultBodyLimit bounds every other request.
	defaultBodyLimit = 64 << 10
)

// bodyLimit returns the cap on the body of a request to path.
func bodyLimit(path string) int64 {
	switch path {
	case "/login", "/api/v1/login":
		return loginBodyLimit
	case "/api/v1/znode", "/znodes/create", "/znodes/edit":
		return znodeBodyLimit
	case "/jobs":
		return jobFormBodyLimit
	}
	if rest, ok := strings.CutPrefix(path, "/jobs/"); ok {
		switch _, action, _ := strings.Cut(rest, "/"); action {
		case "enable", "disable", "run", "clear-error", "delete":
			return jobActionBodyLimit
		}
	}
	return defaultBodyLimit
}

// limitBody reads the request's body up to its cap into memory, and answers 413 when
// it is larger.
func (c *Console) limitBody(g *gin.Context) {
	limit := bodyLimit(g.Request.URL.Path)
	r := g.Request
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	if limit > loginBodyLimit && c.liveSession(g) == nil {
		// requireSession answers 401 without reading it.
		g.Header("Connection", "close")
		r.Body = http.MaxBytesReader(g.Writer, r.Body, 0)
		return
	}
	if r.ContentLength > limit {
		c.tooLarge(g, limit)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		c.deny(g, http.StatusBadRequest, "request body: "+err.Error())
		return
	}
	if int64(len(body)) > limit {
		c.tooLarge(g, limit)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
}

func (c *Console) tooLarge(g *gin.Context, limit int64) {
	g.Header("Connection", "close") // do not read the rest of the body
	msg := fmt.Sprintf("request body too large: %s takes at most %d bytes", g.Request.URL.Path, limit)
	if limit == znodeBodyLimit {
		msg += znodeLimitNote(c.session.MaxBuffer())
	}
	c.deny(g, http.StatusRequestEntityTooLarge, msg)
}

// logNameLimit bounds a user name as logged.
const logNameLimit = 64

// logName returns a name a client sent, for a log line: cut to 64 bytes, with control
// and non-ASCII characters escaped as Go escapes them, so that it is one short line.
func logName(s string) string {
	return truncate(s, logNameLimit)
}

// truncate returns s escaped (strconv.QuoteToASCII without the quotes) and cut to max
// bytes of s, saying how long it was when cut.
func truncate(s string, max int) string {
	suffix := ""
	if len(s) > max {
		suffix = "...(" + strconv.Itoa(len(s)) + " bytes)"
		s = s[:max] // a rune cut in two shows as \x escapes
	}
	q := strconv.QuoteToASCII(s)
	return strings.TrimSuffix(strings.TrimPrefix(q, `"`), `"`) + suffix
}
