package server

import (
	"net/http"
	"net/http/pprof"
	"runtime"
)

// adminHandler serves the admin commands and metrics, and Go's profiles under
// /debug/pprof/ (CPU, heap, goroutines; mutex and block contention when
// profile_contention is on). The admin port listens on loopback by default.
func (s *Server) adminHandler(commands http.Handler) http.Handler {
	if s.cfg.ProfileContention {
		runtime.SetMutexProfileFraction(100)
		runtime.SetBlockProfileRate(10_000) // one sample per 10µs blocked
	}
	mux := http.NewServeMux()
	mux.Handle("/", commands)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
