// Package metricsserver serves one Prometheus registry on /metrics at its own address:
// the HTTP endpoint the services (master, worker, replicator) share.
package metricsserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is /metrics of a registry. Listen binds its address at once, so that the
// address is known (and a taken port reported) before the service runs; Serve starts
// answering; Close stops.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{} // closed when Serve's goroutine returns
}

// Listen binds addr (host:port; port 0 picks one) for reg's /metrics. An address
// another process holds is said in words; the caller names the key and the address.
func Listen(addr string, reg *prometheus.Registry) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("the address is in use by another process: %w", syscall.EADDRINUSE)
	}
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// Addr returns the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers on a goroutine of its own until Close; an unexpected end is logged.
func (s *Server) Serve(logger *slog.Logger) {
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "err", err)
		}
	}()
}

// Close lets requests in flight finish for a moment, then closes the server and its
// listener; it waits for Serve's goroutine if there is one.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	s.ln.Close() // Shutdown closes it only if Serve ran
	if s.done != nil {
		<-s.done
	}
}
