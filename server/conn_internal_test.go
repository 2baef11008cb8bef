package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

func TestRequestWeight(t *testing.T) {
	for _, tc := range []struct {
		size int
		want int64
	}{{0, 1}, {100, 1}, {requestUnit - 1, 1}, {requestUnit, 2}, {1 << 20, 17}} {
		if got := requestWeight(tc.size); got != tc.want {
			t.Errorf("requestWeight(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// TestAddIdentity: identities are added in the order given, each once, and all or none
// of them: a call that would go past maxIdentities adds nothing.
func TestAddIdentity(t *testing.T) {
	c := &conn{}
	ids := []wire.Identity{{Scheme: "ip", ID: "127.0.0.1"}}
	c.ids.Store(&ids)
	super, digest := wire.Identity{Scheme: "super"}, wire.Identity{Scheme: "digest", ID: "super:D/InIHSb7yEEbrWz8b9l71RjZJU="}
	if !c.addIdentity(super, digest, super) || !c.addIdentity(digest) {
		t.Fatal("addIdentity refused")
	}
	if want := []wire.Identity{ids[0], super, digest}; !slices.Equal(c.identities(), want) {
		t.Fatalf("identities %v, want %v", c.identities(), want)
	}
	if c.addIdentity(wire.Identity{Scheme: "digest", ID: strings.Repeat("u", maxIdentityLength)}) {
		t.Fatal("an identity longer than maxIdentityLength added")
	}
	for i := len(c.identities()); i < maxIdentities-1; i++ {
		c.addIdentity(wire.Identity{Scheme: "digest", ID: fmt.Sprintf("u%d:x", i)})
	}
	before := c.identities()
	if c.addIdentity(wire.Identity{Scheme: "super", ID: "CN=a"}, wire.Identity{Scheme: "x509", ID: "CN=a"}) {
		t.Fatal("two identities added past maxIdentities")
	}
	if !slices.Equal(c.identities(), before) || len(before) != maxIdentities-1 {
		t.Fatalf("a refused call changed the identities: %d, want %d", len(c.identities()), maxIdentities-1)
	}
	if !c.addIdentity(super, wire.Identity{Scheme: "x509", ID: "CN=a"}) || len(c.identities()) != maxIdentities {
		t.Fatal("the last identity refused")
	}
}
