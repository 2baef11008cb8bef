package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-zookeeper/zk"
)

// Registry is a naming service: each instance of a service registers its address as an
// ephemeral node root/<service>/<addr> holding its metadata, and clients resolve a
// service to the addresses registered (Curator's ServiceDiscovery, without its
// serialisation: the metadata is opaque bytes).
//
// A registration is kept through the Session (KeepEphemeral): re-created under the new
// session after an expiry, and after a delete by someone else. While the Session is
// suspended the endpoint may or may not still be listed; once the session is lost it is
// gone until the new session re-creates it. A Registry is safe for concurrent use.
//
//	reg := coordinator.NewRegistry(s, "/services")
//	r, err := reg.Register(ctx, "billing", "10.0.0.7:7000", []byte(`{"zone":"a"}`))
//	if err != nil {
//		return err
//	}
//	defer r.Deregister(context.Background())
//	endpoints, err := reg.Resolve(ctx, "billing")
type Registry struct {
	s    *Session
	root string
}

// Endpoint is one registered instance of a service.
type Endpoint struct {
	Addr string
	Meta []byte
}

// Registration is one endpoint this process registered; Deregister ends it.
type Registration struct {
	e       *Ephemeral
	service string
	addr    string
}

// NewRegistry returns the registry rooted at root.
func NewRegistry(s *Session, root string) *Registry { return &Registry{s: s, root: root} }

// Register registers addr (any valid node name; host:port is fine) for service with
// meta, creating the service's directory as needed, and keeps the registration until
// Deregister or until the Session closes. An address already registered by another
// session fails with ErrNodeTaken.
func (r *Registry) Register(ctx context.Context, service, addr string, meta []byte) (*Registration, error) {
	dir, err := r.serviceDir(service)
	if err != nil {
		return nil, err
	}
	if err := checkNodeName(addr); err != nil {
		return nil, fmt.Errorf("coordinator: register %s: address: %w", dir, err)
	}
	if err := r.retry(ctx, "register in "+dir, func() error { return r.s.MakeDirs(ctx, dir) }); err != nil {
		return nil, err
	}
	for {
		e, err := r.s.KeepEphemeral(ctx, childPath(dir, addr), meta)
		if err == nil {
			return &Registration{e: e, service: service, addr: addr}, nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			// The directory went meanwhile: create it again.
			err = r.s.MakeDirs(ctx, dir)
			if err == nil {
				continue
			}
		}
		if err := r.s.WaitToRetry(ctx, err); err != nil {
			return nil, fmt.Errorf("coordinator: register %s: %w", childPath(dir, addr), err)
		}
	}
}

// Service returns the service registered.
func (g *Registration) Service() string { return g.service }

// Addr returns the address registered.
func (g *Registration) Addr() string { return g.addr }

// Deregister stops keeping the registration and deletes its node.
func (g *Registration) Deregister(ctx context.Context) error { return g.e.Remove(ctx) }

// Resolve returns the endpoints registered for service, sorted by address; none if the
// service has none. It waits out connection losses until ctx ends.
func (r *Registry) Resolve(ctx context.Context, service string) ([]Endpoint, error) {
	dir, err := r.serviceDir(service)
	if err != nil {
		return nil, err
	}
	var endpoints []Endpoint
	err = r.retry(ctx, "resolve "+dir, func() error {
		endpoints, err = readEndpoints(r.s, dir)
		return err
	})
	return endpoints, err
}

func readEndpoints(s *Session, dir string) ([]Endpoint, error) {
	names, _, err := s.Conn().Children(dir)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	endpoints := make([]Endpoint, 0, len(names))
	for _, name := range names {
		data, _, err := s.Conn().Get(childPath(dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // deregistered meanwhile
		}
		if err != nil {
			return nil, err
		}
		endpoints = append(endpoints, Endpoint{Addr: name, Meta: nonNil(data)})
	}
	return endpoints, nil
}

// Watch sends the endpoints of service (as Resolve returns them), then the endpoints
// after each change. A reader that falls behind misses intermediate lists, never the
// latest: only the newest waits to be received. The channel is closed when ctx ends or
// the Session closes (at once if service is not a valid name).
func (r *Registry) Watch(ctx context.Context, service string) <-chan []Endpoint {
	dir, err := r.serviceDir(service)
	if err != nil {
		r.s.Logger().Warn("cannot watch service", "service", service, "err", err)
		out := make(chan []Endpoint)
		close(out)
		return out
	}
	return followTree(ctx, r.s, dir, 1, func(tc *TreeCache) []Endpoint {
		var endpoints []Endpoint
		for _, name := range tc.Children(dir) {
			if data, _, ok := tc.Get(childPath(dir, name)); ok {
				endpoints = append(endpoints, Endpoint{Addr: name, Meta: data})
			}
		}
		return endpoints
	}, func(a, b []Endpoint) bool {
		return slices.EqualFunc(a, b, func(x, y Endpoint) bool {
			return x.Addr == y.Addr && bytes.Equal(x.Meta, y.Meta)
		})
	})
}

// serviceDir returns root/service after checking both.
func (r *Registry) serviceDir(service string) (string, error) {
	if err := checkPath(r.root); err != nil {
		return "", err
	}
	if err := checkNodeName(service); err != nil {
		return "", fmt.Errorf("coordinator: service %q: %w", service, err)
	}
	return childPath(r.root, service), nil
}

// retry runs step until it succeeds, waiting out connection losses.
func (r *Registry) retry(ctx context.Context, what string, step func() error) error {
	for {
		err := step()
		if err == nil {
			return nil
		}
		if err := r.s.WaitToRetry(ctx, err); err != nil {
			return fmt.Errorf("coordinator: %s: %w", what, err)
		}
	}
}
