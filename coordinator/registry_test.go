package coordinator

import (
	"errors"
	"slices"
	"testing"
)

func endpointAddrs(eps []Endpoint) []string {
	addrs := make([]string, len(eps))
	for i, ep := range eps {
		addrs[i] = ep.Addr
	}
	return addrs
}

// TestRegistryResolveAndWatch: two endpoints registered from two sessions resolve, sorted,
// with their metadata; Watch reports a deregistration and a closed session's endpoint
// going away.
func TestRegistryResolveAndWatch(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		obs := connect(t, addr)
		root := testRoot(t, obs) + "/services"
		ctx := ctxT(t)
		s1, s2 := connect(t, addr), connect(t, addr)
		r1, err := NewRegistry(s1, root).Register(ctx, "api", "10.0.0.2:8080", []byte("b"))
		if err != nil {
			t.Fatal(err)
		}
		r2, err := NewRegistry(s2, root).Register(ctx, "api", "10.0.0.1:8080", []byte("a"))
		if err != nil {
			t.Fatal(err)
		}
		reg := NewRegistry(obs, root)
		eps, err := reg.Resolve(ctx, "api")
		if err != nil {
			t.Fatal(err)
		}
		want := []Endpoint{{"10.0.0.1:8080", []byte("a")}, {"10.0.0.2:8080", []byte("b")}}
		if !slices.EqualFunc(eps, want, func(a, b Endpoint) bool { return a.Addr == b.Addr && string(a.Meta) == string(b.Meta) }) {
			t.Fatalf("Resolve = %v, want %v", eps, want)
		}
		if eps, err := reg.Resolve(ctx, "none"); err != nil || len(eps) != 0 {
			t.Errorf("Resolve of an unknown service = %v, %v", eps, err)
		}

		// Errors: a bad address, an address another session holds.
		if _, err := reg.Register(ctx, "api", "bad/addr", nil); err == nil {
			t.Error("Register accepted an address with a slash")
		}
		if _, err := reg.Register(ctx, "api", "10.0.0.1:8080", nil); !errors.Is(err, ErrNodeTaken) {
			t.Errorf("Register of another session's address = %v, want ErrNodeTaken", err)
		}

		w := reg.Watch(ctx, "api")
		if got := recvValue(t, w); !slices.Equal(endpointAddrs(got), endpointAddrs(want)) {
			t.Fatalf("first watch value %v", endpointAddrs(got))
		}
		if err := r1.Deregister(ctx); err != nil {
			t.Fatal(err)
		}
		waitValue(t, w, func(eps []Endpoint) bool {
			return slices.Equal(endpointAddrs(eps), []string{"10.0.0.1:8080"})
		}, "the list without the deregistered endpoint")
		s2.Close()
		waitValue(t, w, func(eps []Endpoint) bool { return len(eps) == 0 }, "an empty list after the session closed")
		if r2.Addr() != "10.0.0.1:8080" || r2.Service() != "api" {
			t.Errorf("registration %s/%s", r2.Service(), r2.Addr())
		}
	})
}
