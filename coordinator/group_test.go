package coordinator

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/internal/testutil"
)

func memberNames(members []MemberInfo) []string {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	return names
}

// TestGroupMembership: members show up in WatchMembers, in joining order, as sessions
// join; one disappears when its session closes, another when it leaves.
func TestGroupMembership(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		obs := connect(t, addr)
		dir := testRoot(t, obs) + "/group/workers" // the group's dir does not exist yet
		ctx := ctxT(t)
		w := WatchMembers(ctx, obs, dir)
		if got := recvValue(t, w); len(got) != 0 {
			t.Fatalf("first list %v, want none", memberNames(got))
		}

		s1, s2 := connect(t, addr), connect(t, addr)
		m1, err := JoinGroup(ctx, s1, dir, []byte("one"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m1.Name(), "m-") {
			t.Errorf("member name %q, want m-...", m1.Name())
		}
		waitValue(t, w, func(ms []MemberInfo) bool {
			return len(ms) == 1 && ms[0].Name == m1.Name() && string(ms[0].Data) == "one"
		}, "the first member")
		m2, err := JoinGroup(ctx, s2, dir, []byte("two"))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{m1.Name(), m2.Name()}
		got := waitValue(t, w, func(ms []MemberInfo) bool { return len(ms) == 2 }, "two members")
		if !slices.Equal(memberNames(got), want) || string(got[1].Data) != "two" {
			t.Fatalf("members %v, want %v in joining order", memberNames(got), want)
		}
		if list, err := Members(ctx, obs, dir); err != nil || !slices.Equal(memberNames(list), want) {
			t.Errorf("Members = %v, %v; want %v", memberNames(list), err, want)
		}

		s2.Close()
		waitValue(t, w, func(ms []MemberInfo) bool {
			return slices.Equal(memberNames(ms), []string{m1.Name()})
		}, "the list without the closed session's member")
		if err := m1.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		waitValue(t, w, func(ms []MemberInfo) bool { return len(ms) == 0 }, "an empty group after Leave")
		if err := m1.Leave(ctx); err != nil {
			t.Errorf("second Leave: %v", err)
		}
		if err := m2.Leave(ctx); err != nil {
			t.Errorf("Leave after the Session closed: %v", err)
		}
	})
}

// TestGroupRejoinAfterExpiry: when a member's session expires the member joins again
// under the new session, with a new name, and the old node is gone.
func TestGroupRejoinAfterExpiry(t *testing.T) {
	onEach(t, bothBackends, func(t *testing.T, addr string) {
		cut := testutil.NewCutter()
		s := connect(t, addr, cuttable(cut))
		obs := connect(t, addr)
		dir := testRoot(t, obs) + "/g"
		ctx := ctxT(t)
		m, err := JoinGroup(ctx, s, dir, []byte("me"))
		if err != nil {
			t.Fatal(err)
		}
		first := m.Name()
		expire(t, s, cut)
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
			list, err := Members(ctx, obs, dir)
			if err != nil || len(list) != 1 || list[0].Name == first || list[0].Name != m.Name() {
				return false
			}
			ok, stat, err := obs.Conn().Exists(dir + "/" + list[0].Name)
			return err == nil && ok && stat.EphemeralOwner == s.SessionID() && string(list[0].Data) == "me"
		}, "member did not re-join under the new session (first %s, now %s)", first, m.Name())

		// Deleted by someone else while the session lives: it joins again too.
		second := m.Name()
		if err := obs.Conn().Delete(dir+"/"+second, -1); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() bool {
			list, err := Members(ctx, obs, dir)
			return err == nil && len(list) == 1 && list[0].Name != second && list[0].Name == m.Name()
		}, "member did not re-join after its node was deleted")

		if err := m.Leave(context.Background()); err != nil {
			t.Fatal(err)
		}
		if list, err := Members(ctx, obs, dir); err != nil || len(list) != 0 {
			t.Errorf("after Leave: %v, %v", memberNames(list), err)
		}
	})
}
