package configs

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/paddock/paddock/logcollector"
	"github.com/paddock/paddock/master"
	"github.com/paddock/paddock/replicator"
	"github.com/paddock/paddock/server"
	"github.com/paddock/paddock/web"
	"github.com/paddock/paddock/worker"
)

// sampleFile is the sample configuration users copy: every key of every section.
const sampleFile = "server.yaml"

var (
	sampleSection = regexp.MustCompile(`^([a-z]+):\s*$`)
	sampleKey     = regexp.MustCompile(`^  ([a-z0-9_]+):`)
)

// sampleKeys returns the keys of each section of the sample, in file order, and for
// each key whether a comment says what it is: the line above it, or above the keys
// that share one comment (tls_cert and tls_key).
func sampleKeys(t *testing.T) (keys map[string][]string, commented map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(sampleFile)
	if err != nil {
		t.Fatal(err)
	}
	keys, commented = map[string][]string{}, map[string]bool{}
	section, afterComment := "", false
	for line := range strings.SplitSeq(string(data), "\n") {
		if m := sampleSection.FindStringSubmatch(line); m != nil {
			section, afterComment = m[1], false
			continue
		}
		if m := sampleKey.FindStringSubmatch(line); m != nil && section != "" {
			keys[section] = append(keys[section], m[1])
			commented[section+"."+m[1]] = afterComment
			continue
		}
		afterComment = strings.HasPrefix(line, "  # ")
	}
	return keys, commented
}

// TestSampleCoversEverySection: the sample holds every key of every section configs
// knows, each once and with a comment, and no other; a key added to a component's
// Config fails here until the sample shows it.
func TestSampleCoversEverySection(t *testing.T) {
	keys, commented := sampleKeys(t)
	for _, s := range sections {
		got := keys[s.name]
		if got == nil {
			t.Errorf("%s has no %s section", sampleFile, s.name)
			continue
		}
		for _, key := range s.keys() {
			switch n := count(got, key); {
			case n == 0:
				t.Errorf("%s lacks %s.%s", sampleFile, s.name, key)
			case n > 1:
				t.Errorf("%s shows %s.%s %d times", sampleFile, s.name, key, n)
			case !commented[s.name+"."+key]:
				t.Errorf("%s: %s.%s has no comment above it", sampleFile, s.name, key)
			}
		}
		for _, key := range got {
			if _, ok := s.lookup(key); !ok {
				t.Errorf("%s shows %s.%s, which is no key", sampleFile, s.name, key)
			}
		}
	}
	for name := range keys {
		if sectionNamed(name) == nil {
			t.Errorf("%s has a section %s, which is none", sampleFile, name)
		}
	}
}

func count(keys []string, key string) int {
	return len(slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k != key }))
}

// TestSampleIsTheDefaults: each section of the sample loads as its component's
// defaults, so the values it shows are the ones a missing key gets. The keys that have
// no default (worker.id, replicator.tasks in hot mode, web.users, master.signing_key,
// signers_file of the master and the worker) are given as flags.
func TestSampleIsTheDefaults(t *testing.T) {
	clearPaddockEnv(t)
	flags := pflag.NewFlagSet("sample", pflag.ContinueOnError)
	flags.String("id", "", "")
	flags.StringSlice("tasks", nil, "")
	flags.StringSlice("users", nil, "")
	hash, err := web.HashPassword("sample")
	if err != nil {
		t.Fatal(err)
	}
	user := "admin:admin:" + hash
	if err := flags.Parse([]string{"--id", "w1", "--tasks", "orders", "--users", user}); err != nil {
		t.Fatal(err)
	}
	// The master and the worker act only on what a trusted key signed: they need
	// signers_file, and the master signing_key, which have no default either.
	keyed := func(args ...string) Options {
		f := pflag.NewFlagSet("sample keys", pflag.ContinueOnError)
		f.String("id", "", "")
		f.String("signers-file", "", "")
		f.String("signing-key", "", "")
		if err := f.Parse(args); err != nil {
			t.Fatal(err)
		}
		return Options{File: sampleFile, Flags: f}
	}
	opts, required := Options{File: sampleFile}, Options{File: sampleFile, Flags: flags}
	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s section: %v", name, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s section loads as\n%+v\nwant the defaults\n%+v", name, got, want)
		}
	}
	srv, err := LoadServer(opts)
	check("server", srv, server.DefaultConfig(), err)
	m, err := LoadMaster(keyed("--signers-file", "signers", "--signing-key", "master.key"))
	md := master.DefaultConfig()
	md.SignersFile, md.SigningKey = "signers", "master.key"
	check("master", m, md, err)
	w, err := LoadWorker(keyed("--id", "w1", "--signers-file", "signers"))
	wd := worker.DefaultConfig()
	wd.ID, wd.SignersFile = "w1", "signers"
	check("worker", w, wd, err)
	r, err := LoadReplicator(required)
	rd := replicator.DefaultConfig()
	rd.Tasks = []string{"orders"}
	check("replicator", r, rd, err)
	l, err := LoadLogCollector(opts)
	check("logcollector", l, logcollector.DefaultConfig(), err)
	wc, err := LoadWeb(required)
	webd := web.DefaultConfig()
	webd.Users = []string{user}
	check("web", wc, webd, err)
}

// TestSectionKeysUnique: no two fields of a section share a key, which would set both
// from one value (as the console's HTTPS certificate and its client certificate did).
func TestSectionKeysUnique(t *testing.T) {
	for _, s := range sections {
		seen := map[string]bool{}
		for _, key := range s.keys() {
			if seen[key] {
				t.Errorf("section %s: two fields are key %s", s.name, key)
			}
			seen[key] = true
		}
	}
}
