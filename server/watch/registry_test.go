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
	if !r.Has("/a", "c1", wire.WatcherData) || r.Has("/a", "c2", wire.WatcherData) || r.Has("/a", "c1", wire.WatcherPersistent) {
		t.Fatal("Has")
	}
	if !r.Remove("/a", "c1", wire.WatcherChildren) || r.Has("/a", "c1", wire.WatcherChildren) || !r.Has("/a", "c1", wire.WatcherAny) {
		t.Fatal("Remove children")
	}
	if r.Remove("/p", "c1", wire.WatcherPersistent) || !r.Remove("/p", "c1", wire.WatcherPersistentRecursive) {
		t.Fatal("Remove recursive")
	}
	if got := fired(r, wire.EventNodeCreated, "/p/x"); got != nil {
		t.Fatalf("removed recursive watch fired: %v", got)
	}
	r.AddWatch("/q", "c2", false)
	if r.Count() != 3 {
		t.Fatalf("count %d", r.Count())
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
