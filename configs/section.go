package configs

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/paddock/paddock/server"
)

// A section is one top-level YAML key bound to a component's Config struct: every
// exported field is a key, named by snakeCase of the field name unless renamed.
type section struct {
	name   string // top-level key; PADDOCK_<NAME>_ is its environment prefix
	fields []field
}

// A field is one key of a section.
type field struct {
	key    string // snake_case key inside the section, e.g. "tick_time"
	index  []int  // index path of the struct field it sets (reflect.Value.FieldByIndex)
	secret bool   // a password (key *_password): errors never show its value
}

var (
	serverSection = newSection("server", server.Config{}, map[string]string{
		"PreAllocSize": "prealloc_size", // the name server.Config.Validate uses
	})

	// sections lists every section a file may hold. A later component adds its own here,
	// so that a typo in any section stops start whichever component is loading.
	sections = []*section{serverSection, masterSection, workerSection, replicatorSection, logcollectorSection, webSection}
)

var durationType = reflect.TypeFor[time.Duration]()

// newSection describes the Config struct cfg; renames maps field names to keys where
// snakeCase does not give the key the component's Validate names. It panics on a field
// type the decoder does not handle: a programming error the package's tests catch.
func newSection(name string, cfg any, renames map[string]string) *section {
	s := &section{name: name}
	s.addFields(reflect.TypeOf(cfg), nil, renames)
	return s
}

// addFields adds the exported fields of struct type t (at index path prefix) as keys.
// An embedded struct's fields are keys of the section itself (coordinator.Access's
// auth, tls_ca… in every service's section); a `config:"key"` tag names a key.
func (s *section) addFields(t reflect.Type, prefix []int, renames map[string]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		index := append(append([]int(nil), prefix...), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			s.addFields(f.Type, index, renames)
			continue
		}
		if !decodable(f.Type) {
			panic(fmt.Sprintf("configs: %s.%s has type %s, which configs cannot decode", t, f.Name, f.Type))
		}
		key := snakeCase(f.Name)
		if k := f.Tag.Get("config"); k != "" {
			key = k
		}
		if k, ok := renames[f.Name]; ok {
			key = k
		}
		s.fields = append(s.fields, field{key: key, index: index, secret: strings.HasSuffix(key, "_password") || strings.HasSuffix(key, "_passwords") || key == "auth"})
	}
}

func decodable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int32, reflect.Int64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

// lookup returns the field named key.
func (s *section) lookup(key string) (field, bool) {
	i := slices.IndexFunc(s.fields, func(f field) bool { return f.key == key })
	if i < 0 {
		return field{}, false
	}
	return s.fields[i], true
}

// keys returns the section's keys in struct order.
func (s *section) keys() []string {
	keys := make([]string, len(s.fields))
	for i, f := range s.fields {
		keys[i] = f.key
	}
	return keys
}

// envName is the environment variable that sets key, e.g. PADDOCK_SERVER_CLIENT_ADDR.
func (s *section) envName(key string) string {
	return "PADDOCK_" + strings.ToUpper(s.name) + "_" + strings.ToUpper(key)
}

func sectionNamed(name string) *section {
	i := slices.IndexFunc(sections, func(s *section) bool { return s.name == name })
	if i < 0 {
		return nil
	}
	return sections[i]
}

// snakeCase turns a Go field name into a key: ClientAddr → client_addr,
// ServerID → server_id, SkipACL → skip_acl, ACLCheck → acl_check.
func snakeCase(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) {
			prevLower := !unicode.IsUpper(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || nextLower {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
