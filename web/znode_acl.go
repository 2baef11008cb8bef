package web

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-zookeeper/zk"

	"github.com/paddock/paddock/coordinator"
)

// ACL editing: the page's form and PUT /api/v1/acl take the same entries, checked here
// before the server sees them, and record the change in the audit log.

// aclSchemes are the schemes the console writes, with what each id must be.
var aclSchemes = map[string]string{
	"world":  "anyone",
	"auth":   "empty: the server puts the console's own identities",
	"digest": "user:hash, where hash is base64(sha1(user:password)); or the user with a password the console hashes",
	"ip":     "an address or a network, as 10.0.0.1 or 10.0.0.0/8",
	"x509":   "a certificate subject, as CN=worker-1,O=example",
	"sasl":   "a SASL user name",
}

// maxACLEntries bounds the entries of one ACL the console writes.
const maxACLEntries = 64

// ACLEntry is one ACL entry of a change: Perms in cdrwa letters. A digest entry gives
// either ID "user:hash" or ID "user" with Password, which the console hashes (and
// never stores, shows or logs).
type ACLEntry struct {
	Scheme   string `json:"scheme"`
	ID       string `json:"id"`
	Perms    string `json:"perms"`
	Password string `json:"password,omitempty"`
}

var permLetters = []struct {
	bit int32
	c   byte
}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}}

func parsePerms(s string) (int32, error) {
	if s == "" {
		return 0, fmt.Errorf("perms: empty: want some of cdrwa")
	}
	var p int32
	for i := 0; i < len(s); i++ {
		j := slices.IndexFunc(permLetters, func(l struct {
			bit int32
			c   byte
		}) bool {
			return l.c == s[i]
		})
		if j < 0 {
			return 0, fmt.Errorf("perms %q: %q is not one of c (create), d (delete), r (read), w (write), a (admin)", s, s[i])
		}
		p |= permLetters[j].bit
	}
	return p, nil
}

// toACL checks e and returns the ACL entry the server gets.
func (e ACLEntry) toACL() (zk.ACL, error) {
	perms, err := parsePerms(e.Perms)
	if err != nil {
		return zk.ACL{}, err
	}
	id := e.ID
	bad := func(why string) (zk.ACL, error) {
		return zk.ACL{}, fmt.Errorf("%s:%s: %s; want %s", e.Scheme, id, why, aclSchemes[e.Scheme])
	}
	if e.Password != "" && e.Scheme != "digest" {
		return zk.ACL{}, fmt.Errorf("%s: a password goes only with the digest scheme", e.Scheme)
	}
	switch e.Scheme {
	case "world":
		if id != "anyone" {
			return bad("not a world id")
		}
	case "auth":
		if id != "" {
			return bad("the id is not used")
		}
	case "digest":
		if e.Password != "" {
			if id == "" || strings.Contains(id, ":") {
				return zk.ACL{}, fmt.Errorf("digest: with a password, id is the user name alone, without ':'")
			}
			id = coordinator.DigestID(id, e.Password)
			break
		}
		user, hash, ok := strings.Cut(id, ":")
		if !ok || user == "" {
			return bad("no user")
		}
		if b, err := base64.StdEncoding.DecodeString(hash); err != nil || len(b) != 20 {
			return bad("the hash is not base64 of a SHA-1 (28 characters)")
		}
	case "ip":
		if net.ParseIP(id) == nil {
			if _, _, err := net.ParseCIDR(id); err != nil {
				return bad("not an address or network")
			}
		}
	case "x509", "sasl":
		if strings.TrimSpace(id) == "" {
			return bad("empty")
		}
	default:
		return zk.ACL{}, fmt.Errorf("scheme %q: want world, auth, digest, ip, x509 or sasl", e.Scheme)
	}
	return zk.ACL{Scheme: e.Scheme, ID: id, Perms: perms}, nil
}

// parseACLText parses the page's ACL text: one entry a line, scheme:id:perms as zkCli
// prints them (world:anyone:cdrwa, digest:bob:Hk3…=:r, auth::cdrwa), blank lines ignored.
func parseACLText(text string) ([]ACLEntry, error) {
	var out []ACLEntry
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		scheme, rest, ok1 := strings.Cut(line, ":")
		j := strings.LastIndexByte(rest, ':')
		if !ok1 || j < 0 {
			return nil, fmt.Errorf("ACL line %d %q: want scheme:id:perms, as world:anyone:cdrwa", i+1, line)
		}
		out = append(out, ACLEntry{Scheme: scheme, ID: rest[:j], Perms: rest[j+1:]})
	}
	return out, nil
}

// aclText is acl as parseACLText reads it.
func aclText(acl []ACLView) string {
	var b strings.Builder
	for _, a := range acl {
		fmt.Fprintf(&b, "%s:%s:%s\n", a.Scheme, a.ID, a.Perms)
	}
	return b.String()
}

// toACLs checks entries and returns the ACL the server gets.
func toACLs(entries []ACLEntry) ([]zk.ACL, error) {
	if len(entries) == 0 {
		return nil, badRequest("acl: empty: a znode needs at least one entry")
	}
	if len(entries) > maxACLEntries {
		return nil, badRequest("acl: %d entries: at most %d", len(entries), maxACLEntries)
	}
	acl := make([]zk.ACL, 0, len(entries))
	for i, e := range entries {
		a, err := e.toACL()
		if err != nil {
			return nil, badRequest("acl entry %d: %v", i+1, err)
		}
		acl = append(acl, a)
	}
	return acl, nil
}

func aclString(acl []ACLView) string {
	s := make([]string, len(acl))
	for i, a := range acl {
		s[i] = a.Scheme + ":" + a.ID + ":" + a.Perms
	}
	return strings.Join(s, ",")
}

// doSetACL sets path's ACL if its ACL version is version (-1: any), and audits it.
func (c *Console) doSetACL(g *gin.Context, path string, entries []ACLEntry, version int32) (*zk.Stat, error) {
	if err := checkPath(path); err != nil {
		return nil, pathError(path, err)
	}
	if err := c.checkAuditWrite(path, false); err != nil {
		return nil, err
	}
	acl, err := toACLs(entries)
	if err != nil {
		return nil, err
	}
	old, _, _ := c.conn.GetACL(path) // for the audit record only
	before := c.getForAudit(path)
	st, err := c.conn.SetACL(path, acl, version)
	if err != nil {
		return nil, err
	}
	after, _, _ := c.conn.GetACL(path)
	c.audit(g, AuditRecord{Action: "znode.setacl", Target: path, Before: before, After: snapshotOf(nil, st),
		Note: fmt.Sprintf("acl %s (aversion %d) -> %s (aversion %d)", aclString(aclViews(old)), st.Aversion-1,
			aclString(aclViews(after)), st.Aversion)})
	return st, nil
}

// identities returns the console's own ZooKeeper identities, as ACL ids.
func (c *Console) identities() []string {
	out := []string{"world:anyone"}
	for _, id := range c.session.Identities() {
		out = append(out, id.String())
	}
	return out
}

// aclChangeError answers an ACL change refused for its version, naming the current one.
func (c *Console) aclChangeError(g *gin.Context, path string, err error) {
	if errors.Is(err, zk.ErrBadVersion) {
		if _, st, e := c.conn.Exists(path); e == nil && st != nil {
			g.JSON(http.StatusConflict, gin.H{"error": fmt.Sprintf("%s: ACL version conflict: the ACL is now at aversion %d",
				path, st.Aversion), "aversion": st.Aversion})
			return
		}
	}
	c.changeError(g, path, err)
}

func (c *Console) apiGetACL(g *gin.Context) {
	path := g.Query("path")
	if err := checkPath(path); err != nil {
		apiError(g, http.StatusBadRequest, pathError(path, err).Error())
		return
	}
	var acl []zk.ACL
	var st *zk.Stat
	err := c.read(g.Request.Context(), func() (err error) {
		acl, st, err = c.conn.GetACL(path)
		return err
	})
	if err != nil {
		c.readError(g, path, err)
		return
	}
	g.JSON(http.StatusOK, gin.H{"path": path, "acl": aclViews(acl), "aversion": st.Aversion,
		"identities": c.identities()})
}

type aclRequest struct {
	Path    string     `json:"path"`
	ACL     []ACLEntry `json:"acl"`
	Version *int32     `json:"version"` // the ACL version (aversion) read, or -1; required
}

func (c *Console) apiSetACL(g *gin.Context) {
	var req aclRequest
	if err := g.ShouldBindJSON(&req); err != nil {
		apiError(g, http.StatusBadRequest, "want a JSON body {\"path\", \"acl\": [{\"scheme\", \"id\", \"perms\"}], \"version\"}: "+
			err.Error())
		return
	}
	if req.Version == nil {
		apiError(g, http.StatusBadRequest, "version: required, the ACL version (aversion) read (or -1 to overwrite any)")
		return
	}
	st, err := c.doSetACL(g, req.Path, req.ACL, *req.Version)
	if err != nil {
		c.aclChangeError(g, req.Path, err)
		return
	}
	acl, _, _ := c.conn.GetACL(req.Path)
	g.JSON(http.StatusOK, gin.H{"path": req.Path, "acl": aclViews(acl), "aversion": st.Aversion})
}

func (c *Console) apiIdentity(g *gin.Context) {
	g.JSON(http.StatusOK, gin.H{"identities": c.identities()})
}
