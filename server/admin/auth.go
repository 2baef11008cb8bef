package admin

import (
	"net/http"
	"strings"
)

// An Authorizer decides whether the credentials of an admin request may run the
// commands that need authentication. The server implements it.
type Authorizer interface {
	// AdminAuthorized reports whether scheme and auth, as the Authorization header
	// "<scheme> <auth>" gives them (digest user:password), may run them. It must be
	// safe for concurrent use and must not block on client I/O.
	AdminAuthorized(scheme string, auth []byte) bool
}

// sensitive lists the commands that need authentication when the admin port asks for
// it (admin.auth): those that show sessions, connections, ephemeral or watched paths
// or the server's environment and files, and those that reset statistics. ZooKeeper
// 3.9 asks for it on snapshot, restore and its watch details; paddock has none of
// those and guards these instead.
var sensitive = map[string]bool{
	"cons": true, "stat": true, "dump": true, "wchc": true, "wchp": true,
	"envi": true, "conf": true, "crst": true, "srst": true,
}

// NeedsAuth reports whether the admin command name (any of its names or aliases)
// needs authentication when the admin port asks for it.
func NeedsAuth(name string) bool {
	c, ok := byName[name]
	return ok && sensitive[c.word]
}

// Guard returns h with authentication required, as ZooKeeper 3.9's AdminServer asks
// for it, on the sensitive commands under /commands/ and on everything under
// /debug/: the request must carry "Authorization: digest user:password" that az
// authorizes. No header is 401 ("Auth info is missing for the command"), an unknown
// scheme 401 ("Not authenticated"), credentials az refuses 403 ("Not authorized"), in
// ZooKeeper's CommandResponse shape.
func Guard(h http.Handler, az Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, isCommand := strings.CutPrefix(r.URL.Path, "/commands/")
		if !(isCommand && NeedsAuth(name)) && !strings.HasPrefix(r.URL.Path, "/debug/") {
			h.ServeHTTP(w, r)
			return
		}
		if name == "" {
			name = r.URL.Path
		}
		header := r.Header.Get("Authorization")
		scheme, auth, _ := strings.Cut(header, " ")
		switch {
		case header == "":
			writeJSON(w, http.StatusUnauthorized, object{{"command", name}, {"error", "Auth info is missing for the command"}})
		case scheme != "digest" || auth == "":
			writeJSON(w, http.StatusUnauthorized, object{{"command", name}, {"error", "Not authenticated"}})
		case !az.AdminAuthorized(scheme, []byte(auth)):
			writeJSON(w, http.StatusForbidden, object{{"command", name}, {"error", "Not authorized"}})
		default:
			h.ServeHTTP(w, r)
		}
	})
}
