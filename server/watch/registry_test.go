package watch

import (
	"slices"
	"testing"

	"github.com/paddock/paddock/server/wire"
)

func fired(r *Registry[string], typ wire.EventType, path string) []string {
	var got []string
	r.Trigger(typ, path, func(w string) { got = append(got, w) })
	slices.Sort(got)
	return got
}

func TestTriggerRules(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *Registry[string])
		typ   wire.EventType
		path  string
		want  []string
		again []string // fired by the same event a second time
	}{
		{"one-shot data", func(r *Registry[string]) { r.Add(Data, "/a", "c1", Standard) },
			wire.EventNodeDataChanged, "/a", []string{"c1"}, nil},
		{"child watch ignores data change", func(r *Registry[string]) { r.Add(Child, "/a", "c1", Standard) },
			wire.EventNodeDataChanged, "/a", nil, nil},
		{"delete fires both tables once", func(r *Registry[string]) {
			r.Add(Data, "/a", "c1", Standard)
			r.Add(Child, "/a", "c1", Standard)
			r.Add(Child, "/a", "c2", Standard)
		}, wire.EventNodeDeleted, "/a", []string{"c1", "c2"}, nil},
		{"persistent stays", func(r *Registry[string]) { r.AddWatch("/a", "c1", false) },
			wire.EventNodeChildrenChanged, "/a", []string{"c1"}, []string{"c1"}},
		{"persistent ignores grandchildren", func(r *Registry[string]) { r.AddWatch("/a", "c1", false) },
			wire.EventNodeCreated, "/a/b/c", nil, nil},
		{"recursive hears descendants", func(r *Registry[string]) { r.AddWatch("/a", "c1", true) },
			wire.EventNodeCreated, "/a/b/c", []string{"c1"}, []string{"c1"}},
		{"recursive never hears children changed", func(r *Registry[string]) { r.AddWatch("/a", "c1", true) },
			wire.EventNodeChildrenChanged, "/a", nil, nil},
		{"recursive on root", func(r *Registry[string]) { r.AddWatch("/", "c1", true) },
			wire.EventNodeDeleted, "/x", []string{"c1"}, []string{"c1"}},
		{"one-shot beside persistent fires once then stays persistent", func(r *Registry[string]) {
			r.Add(Data, "/a", "c1", Standard)
			r.AddWatch("/a", "c1", false)
		}, wire.EventNodeDataChanged, "/a", []string{"c1"}, []string{"c1"}},
		{"sibling prefix is not an ancestor", func(r *Registry[string]) { r.AddWatch("/ab", "c1", true) },
			wire.EventNodeCreated, "/abc", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New[string]()
			tt.setup(r)
			if got := fired(r, tt.typ, tt.path); !slices.Equal(got, tt.want) {
				t.Fatalf("fired %v, want %v", got, tt.want)
			}
			if got := fired(r, tt.typ, tt.path); !slices.Equal(got, tt.again) {
				t.Fatalf("second time fired %v, want %v", got, tt.again)
			}
		})
	}
}

func TestRemoveAndCheck(t *testing.T) {
	r := New[string]()
	r.Add(Data, "/a", "c1", Standard)
	r.Add(Child, "/a", "c1", Standard)
	r.AddWatch("/p", "c1", true)
	r.AddWatch("/q", "c2", false)
	checks := []struct {
		path string
		w    string
		typ  wire.WatcherType
		want bool
	}{
		{"/a", "c1", wire.WatcherData, true},
		{"/a", "c2", wire.WatcherData, false},
		{"/q", "c2", wire.WatcherData, true},     // the data half of a persistent watch
		{"/q", "c2", wire.WatcherChildren, true}, // and its child half
		{"/p", "c1", wire.WatcherChildren, true}, // a recursive watch counts for every type
		{"/p/x/y", "c1", wire.WatcherData, true}, // and below its path
		{"/px", "c1", wire.WatcherAny, false},
		{"/a", "c1", wire.WatcherPersistent, false}, // 3.9 types are refused by 3.8
	}
	for _, c := range checks {
		if got := r.Has(c.path, c.w, c.typ); got != c.want {
			t.Errorf("Has(%s, %s, %v) = %v, want %v", c.path, c.w, c.typ, got, c.want)
		}
	}
	if !r.Remove("/a", "c1", wire.WatcherChildren) || r.Has("/a", "c1", wire.WatcherChildren) || !r.Has("/a", "c1", wire.WatcherAny) {
		t.Fatal("Remove children")
	}
	if !r.Remove("/q", "c2", wire.WatcherData) || fired(r, wire.EventNodeDataChanged, "/q") != nil {
		t.Fatal("removing the data half of a persistent watch")
	}
	if got := fired(r, wire.EventNodeChildrenChanged, "/q"); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("the child half of a persistent watch fired %v", got)
	}
	if r.Remove("/p/x", "c1", wire.WatcherAny) || !r.Remove("/p", "c1", wire.WatcherData) {
		t.Fatal("Remove recursive")
	}
	if got := fired(r, wire.EventNodeCreated, "/p/x"); got != nil {
		t.Fatalf("removed recursive watch fired: %v", got)
	}
	r.RemoveWatcher("c1")
	r.RemoveWatcher("c2")
	if r.Count() != 0 || len(r.byWatcher) != 0 || r.recursive != 0 {
		t.Fatalf("state left after RemoveWatcher: %d %v %d", r.Count(), r.byWatcher, r.recursive)
	}
}

func TestSummary(t *testing.T) {
	r := New[string]()
	r.Add(Data, "/a", "c1", Standard)
	r.Add(Data, "/b", "c1", Standard)
	r.Add(Data, "/a", "c2", Standard)
	r.Add(Child, "/c", "c3", Standard)
	if w, p, n := r.Summary(); w != 2 || p != 2 || n != 3 {
		t.Fatalf("summary %d %d %d", w, p, n)
	}
	if got := r.PathsOf("c1"); !slices.Equal(got, []string{"/a", "/b"}) {
		t.Fatalf("PathsOf %v", got)
	}
	if got := r.WatchersOf()["/a"]; len(got) != 2 {
		t.Fatalf("WatchersOf %v", got)
	}
}
