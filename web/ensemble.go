package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"
)

// errNoAdminAddr is why the sessions and ensemble views are empty without an admin
// address.
var errNoAdminAddr = errors.New("web: no admin address configured (web key admin_addr): the server's sessions, watches and mode are not known")

// adminReplyLimit bounds what the console reads of an admin command's answer.
const adminReplyLimit = 64 << 20

// adminJSON fetches /commands/<name> from Config.AdminAddr into v.
func (c *Console) adminJSON(ctx context.Context, name string, v any) error {
	if c.cfg.AdminAddr == "" {
		return errNoAdminAddr
	}
	url := "http://" + c.cfg.AdminAddr + "/commands/" + name
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("web: admin %s: %w", name, err)
	}
	if c.cfg.AdminUser != "" { // the admin port's admin.auth
		req.Header.Set("Authorization", "digest "+c.cfg.AdminUser+":"+c.cfg.AdminPassword)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("web: admin %s: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("web: admin %s: %s answered %s", name, c.cfg.AdminAddr, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, adminReplyLimit)).Decode(v); err != nil {
		return fmt.Errorf("web: admin %s: decode: %w", name, err)
	}
	return nil
}

// ConnectionView is one client connection of the server (cons) with the paths its
// session watches (wchc: data and exists watches; child watches are not listed, as in
// ZooKeeper).
type ConnectionView struct {
	Remote        string   `json:"remote"`
	SessionID     string   `json:"session_id"` // hex, 0x...
	Timeout       int64    `json:"session_timeout_ms"`
	LastOperation string   `json:"last_operation"`
	Established   int64    `json:"established_ms"` // Unix milliseconds
	Outstanding   int64    `json:"outstanding_requests"`
	Received      int64    `json:"packets_received"`
	Sent          int64    `json:"packets_sent"`
	Watches       []string `json:"watches"`
	Console       bool     `json:"console"` // the console's own session
}

// SessionsView is GET /api/v1/sessions.
type SessionsView struct {
	AdminAddr   string           `json:"admin_addr"`
	Connections []ConnectionView `json:"connections"`
	// Watches counts the listed watched paths over all sessions.
	Watches int `json:"watches"`
}

type consAnswer struct {
	Connections []struct {
		Remote      string `json:"remote_socket_address"`
		SessionID   int64  `json:"session_id"`
		LastOp      string `json:"last_operation"`
		Established int64  `json:"established"`
		Timeout     int64  `json:"session_timeout"`
		Outstanding int64  `json:"outstanding_requests"`
		Received    int64  `json:"packets_received"`
		Sent        int64  `json:"packets_sent"`
	} `json:"connections"`
}

type wchcAnswer struct {
	Watches map[string][]string `json:"session_id_to_watched_paths"` // decimal session id
}

func (c *Console) sessionsView(ctx context.Context) (SessionsView, error) {
	v := SessionsView{AdminAddr: c.cfg.AdminAddr, Connections: []ConnectionView{}}
	var cons consAnswer
	var wchc wchcAnswer
	if err := c.adminJSON(ctx, "cons", &cons); err != nil {
		return v, err
	}
	if err := c.adminJSON(ctx, "wchc", &wchc); err != nil {
		return v, err
	}
	own := c.session.SessionID()
	for _, k := range cons.Connections {
		w := wchc.Watches[strconv.FormatInt(k.SessionID, 10)]
		slices.Sort(w)
		v.Watches += len(w)
		v.Connections = append(v.Connections, ConnectionView{Remote: k.Remote, SessionID: hex64(k.SessionID),
			Timeout: k.Timeout, LastOperation: k.LastOp, Established: k.Established, Outstanding: k.Outstanding,
			Received: k.Received, Sent: k.Sent, Watches: append([]string{}, w...), Console: k.SessionID == own})
	}
	return v, nil
}

func (c *Console) apiSessions(g *gin.Context) {
	v, err := c.sessionsView(g.Request.Context())
	if err != nil {
		apiError(g, http.StatusServiceUnavailable, err.Error())
		return
	}
	g.JSON(http.StatusOK, v)
}

type sessionsPage struct {
	SessionsView
	Error string
}

func (c *Console) sessionsPage(g *gin.Context) {
	v, err := c.sessionsView(g.Request.Context())
	p := sessionsPage{SessionsView: v}
	if err != nil {
		p.Error = err.Error()
	}
	c.render(g, http.StatusOK, "sessions", "Sessions and watches", p)
}
