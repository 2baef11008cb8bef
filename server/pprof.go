package server

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"

	"github.com/paddock/paddock/server/admin"
	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// adminHandler serves the admin commands and metrics, and, when AdminPprof is on, Go's
// profiles under /debug/pprof/ (CPU, heap, goroutines; mutex and block contention when
// profile_contention is on). With AdminAuth the sensitive commands and the profiles
// need an Authorization header (admin.Guard). The admin port listens on loopback by
// default.
func (s *Server) adminHandler(commands http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", commands)
	if s.cfg.AdminPprof {
		if s.cfg.ProfileContention {
			runtime.SetMutexProfileFraction(100)
			runtime.SetBlockProfileRate(10_000) // one sample per 10µs blocked
		}
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if s.cfg.AdminAuth {
		if s.cfg.SuperDigest == "" {
			s.logger.Warn("admin_auth is on without super_digest: only digest identities with cdrwa on the root's ACL may run the guarded admin commands")
		}
		return admin.Guard(mux, s)
	}
	if host, _, err := net.SplitHostPort(s.cfg.AdminAddr); err == nil && !isLoopbackHost(host) {
		s.logger.Warn("the admin port listens beyond loopback without admin_auth: anyone who reaches it reads sessions, connections and watched paths",
			"admin_addr", s.cfg.AdminAddr)
	}
	return mux
}

// isLoopbackHost reports whether host names only loopback addresses: an IP of
// 127.0.0.0/8 or ::1, or localhost.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// AdminAuthorized implements admin.Authorizer. Credentials "user:password" of the digest
// scheme are authorized when their identity is the super user (SuperDigest), or when the
// root's ACL grants that digest identity every permission, as ZooKeeper 3.9 checks its
// guarded commands against the root's ACL. Unlike ZooKeeper, world:anyone on the root
// does not count: any caller could then pass.
func (s *Server) AdminAuthorized(scheme string, auth []byte) bool {
	if scheme != datatree.SchemeDigest {
		return false
	}
	id := datatree.Digest(string(auth))
	if sd := s.cfg.SuperDigest; sd != "" && subtle.ConstantTimeCompare([]byte(id), []byte(sd)) == 1 {
		return true
	}
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	root := s.tree.Get("/")
	if !root.Exists() {
		return false
	}
	for _, a := range root.ACL() {
		if a.Scheme == datatree.SchemeDigest && a.Perms&wire.PermAll == wire.PermAll &&
			subtle.ConstantTimeCompare([]byte(a.ID), []byte(id)) == 1 {
			return true
		}
	}
	return false
}
