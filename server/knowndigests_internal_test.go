package server

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/paddock/paddock/server/datatree"
	"github.com/paddock/paddock/server/wire"
)

// The known digests file reads paddock up's roles file and ZooKeeper-style digest ids,
// skips other schemes, comments and blank lines, and refuses a malformed digest line by
// its number, without its value.
func TestKnownDigestsRead(t *testing.T) {
	a, w := datatree.Digest("admin:pw"), datatree.Digest("worker:pw")
	for _, tc := range []struct {
		name, file string
		want       []string
		err        string
	}{
		{"roles", "admin=digest:" + a + "\nworker=digest:" + w + "\n", []string{a, w}, ""},
		{"bare ids, comments, blanks", "# x\n\n  digest:" + a + "  \n", []string{a}, ""},
		{"other schemes skipped", "submitter=x509:CN=s,O=acme\nx509:CN=t\nsasl:bob\nworker=digest:" + w, []string{w}, ""},
		{"a short hash", "admin=digest:admin:SECRET=\n", nil, "line 1: want digest:<user>:<base64 SHA-1> (value hidden)"},
		{"no user", "digest:" + strings.SplitN(a, ":", 2)[1] + "\n", nil, "line 1: want digest"},
		{"no scheme", "\n\njust-a-word\n", nil, "line 3: want [role=]scheme:id"},
		{"too large", strings.Repeat("#\n", maxKnownDigestsFile), nil, "larger than 1 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := knownDigests{}
			err := k.read(strings.NewReader(tc.file))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "SECRET") {
					t.Fatalf("read: %v, want %q and no value", err, tc.err)
				}
				return
			}
			if err != nil || len(k) != len(tc.want) {
				t.Fatalf("read: %v, %d ids, want %d", err, len(k), len(tc.want))
			}
			for _, id := range tc.want {
				if !k.has(id) {
					t.Errorf("%s not known", id)
				}
			}
		})
	}
}

// TestAuditIdentities: for generated sessions (seeded) — digest identities super, known
// and made up, with user names holding every character that could split an entry or
// forge a mark, ip, x509 and sasl identities, super or not — the identities field reads
// back as exactly the session's identities but super, in order, each digest marked what
// it is and every other marked super exactly when it is the super user; no hash is
// written.
func TestAuditIdentities(t *testing.T) {
	const alphabet = "ab;()%:,\t=x "
	users := func(rng *rand.Rand) string {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return strings.ReplaceAll(string(b), ":", "")
	}
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 31))
		super, known := datatree.Digest(users(rng)+":pw"), datatree.Digest(users(rng)+":pw")
		s := &Server{cfg: Config{SuperDigest: super, X509SuperUser: "CN=root", SASLSuperUser: "root"},
			known: knownDigests{super: {}, known: {}}}
		var ids []wire.Identity
		var want []string
		for range 1 + rng.IntN(6) {
			var id wire.Identity
			mark := ""
			switch rng.IntN(7) {
			case 0:
				id, mark = wire.Identity{Scheme: "digest", ID: super}, "super"
			case 1:
				id, mark = wire.Identity{Scheme: "digest", ID: known}, "known"
			case 2:
				id, mark = wire.Identity{Scheme: "digest", ID: datatree.Digest(users(rng) + ":guess")}, "claimed"
			case 3:
				id = wire.Identity{Scheme: "ip", ID: fmt.Sprintf("10.0.0.%d", rng.IntN(255))}
			case 4:
				id = wire.Identity{Scheme: "x509", ID: []string{"CN=root", "CN=a\\;b,O=x"}[rng.IntN(2)]}
			case 5:
				id = wire.Identity{Scheme: "sasl", ID: []string{"root", users(rng)}[rng.IntN(2)]}
			default:
				id = wire.Identity{Scheme: "super"}
			}
			if id.ID == "CN=root" || id.Scheme == "sasl" && id.ID == "root" {
				mark = "super"
			}
			ids = append(ids, id)
			if id.Scheme != "super" {
				name, _, _ := strings.Cut(id.ID, ":")
				if id.Scheme != "digest" {
					name = id.ID
				}
				want = append(want, id.Scheme+":"+name+"|"+mark)
			}
		}
		got := s.auditIdentities(ids)
		var read []string
		if got != "" {
			for entry := range strings.SplitSeq(got, ";") {
				mark := ""
				if i := strings.LastIndexByte(entry, '('); i >= 0 && strings.HasSuffix(entry, ")") {
					entry, mark = entry[:i], entry[i+1:len(entry)-1]
				}
				name, err := url.PathUnescape(entry)
				if err != nil || strings.ContainsAny(entry, ";()") {
					t.Fatalf("seed %d: entry %q of %q does not read back: %v", seed, entry, got, err)
				}
				read = append(read, name+"|"+mark)
			}
		}
		if strings.Join(read, "\n") != strings.Join(want, "\n") {
			t.Fatalf("seed %d: %q reads back as\n%s\nwant\n%s", seed, got, strings.Join(read, "\n"), strings.Join(want, "\n"))
		}
		for _, id := range ids {
			if _, hash, ok := strings.Cut(id.ID, ":"); ok && id.Scheme == "digest" && strings.Contains(got, hash) {
				t.Fatalf("seed %d: %q holds a hash", seed, got)
			}
		}
	}
}
