package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/paddock/paddock/server/datatree"
)

// Known digests (docs/security.md, "Requiring authentication" and "The server audit
// log"). A digest identity is whatever its client claims: addauth digest with any
// user:password succeeds, as in ZooKeeper, and gives the connection
// digest:<user>:base64(sha1(<user>:<password>)). An ACL entry of that id lets in only
// whoever has the password, but the identity by itself proves nothing: anyone may hold
// digest:admin:<anything>. It proves a user only when its id is one the server knows —
// the super digest, or an entry of known_digests_file — since only whoever has that
// user's password can produce that id.
//
// Invariants: with enforce_auth_known_digests_only, a digest identity satisfies
// enforce.auth only if known (conn.mayProceed); and every audit line marks each digest
// identity super, known or claimed (auditIdentities), so a made-up digest:admin is never
// written as the real one.

// maxKnownDigestsFile bounds known_digests_file, which is read whole at start.
const maxKnownDigestsFile = 1 << 20

// knownDigests is the set of digest ids ("user:base64 SHA-1") the server knows. Read
// at New, never changed: safe for concurrent use.
type knownDigests map[string]struct{}

// loadKnownDigests returns the digest ids cfg knows: the super digest's and those of
// KnownDigestsFile.
func loadKnownDigests(cfg *Config) (knownDigests, error) {
	k := knownDigests{}
	if cfg.SuperDigest != "" {
		k[cfg.SuperDigest] = struct{}{}
	}
	if cfg.KnownDigestsFile == "" {
		return k, nil
	}
	f, err := os.Open(cfg.KnownDigestsFile)
	if err != nil {
		return nil, fmt.Errorf("known_digests_file: %w", err)
	}
	defer f.Close()
	if err := k.read(io.LimitReader(f, maxKnownDigestsFile+1)); err != nil {
		return nil, fmt.Errorf("known_digests_file %s: %w", cfg.KnownDigestsFile, err)
	}
	return k, nil
}

// errKnownDigestsTooLarge refuses a known_digests_file past maxKnownDigestsFile.
var errKnownDigestsTooLarge = errors.New("larger than 1 MiB")

// read adds the digest ids of r, one a line in the roles file's format that paddock up
// writes, [role=]scheme:id: blank lines and # comments are skipped, and so are ids of
// other schemes (x509, sasl), which prove themselves. A malformed line is named by its
// number only: its id is a password's equivalent.
func (k knownDigests) read(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(data) > maxKnownDigestsFile {
		return errKnownDigestsTooLarge
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxKnownDigestsFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if role, entry, ok := strings.Cut(line, "="); ok && !strings.Contains(role, ":") {
			line = entry // role=scheme:id; a digest's base64 ends in = too, after a colon
		}
		scheme, id, ok := strings.Cut(line, ":")
		switch {
		case !ok || scheme == "":
			return fmt.Errorf("line %d: want [role=]scheme:id, as digest:<user>:<base64 SHA-1>", n)
		case scheme != datatree.SchemeDigest:
			continue
		case !superDigestRE.MatchString(id):
			return fmt.Errorf("line %d: want digest:<user>:<base64 SHA-1> (value hidden)", n)
		}
		k[id] = struct{}{}
	}
	return sc.Err()
}

// has reports whether the digest id ("user:hash") is known.
func (k knownDigests) has(id string) bool {
	_, ok := k[id]
	return ok
}
