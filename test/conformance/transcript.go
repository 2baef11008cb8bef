package conformance

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// A Transcript is the text of everything the sessions of one scenario sent and saw, in
// order, with the values that legitimately differ between two servers replaced by tokens
// that keep their equality (and, for zxids, order) relations:
//
//   - zxids become Z1, Z2, ... by rank among the distinct zxids of the scenario, so "same
//     txn", "later txn" and "a failed write consumed a zxid" survive, but not the absolute
//     counter (a long-running server has a history). 0 and -1 are kept: they are meaningful.
//   - ctime/mtime become T@<zxid token> of the txn that set them (czxid for ctime, mzxid for
//     mtime), after checking that they are milliseconds within the scenario's run and that
//     every time stamped by one txn is the same. Two txns in the same millisecond are not
//     "equal" in any way a client may rely on, so times are not compared with each other.
//   - session ids (also as ephemeralOwner) become the label of the session that got them
//     (s1, s2, ...), unknown ones S?1, S?2; passwords become P(<label>) for the password a
//     session was given, or zero16 for 16 zero bytes.
//   - the scenario's root path becomes /ROOT (each target and run gets a fresh one).
//
// Lines are recorded with placeholders and rendered once the scenario is over, when all
// values are known. A Transcript is safe for concurrent use.
type Transcript struct {
	mu        sync.Mutex
	lines     []string
	root      string
	start     time.Time
	sessions  map[int64]string // session id -> label
	passwords map[string]string
}

// NewTranscript returns an empty transcript for a scenario working under root.
func NewTranscript(root string) *Transcript {
	return &Transcript{root: root, start: time.Now(), sessions: map[int64]string{}, passwords: map[string]string{}}
}

// Placeholders: \x00 kind value \x00, replaced when rendering.
func zxidMark(z int64) string { return fmt.Sprintf("\x00z%d\x00", z) }
func timeMark(ms, zxid int64) string {
	return fmt.Sprintf("\x00t%d/%d\x00", ms, zxid)
}
func sessionMark(id int64) string { return fmt.Sprintf("\x00s%d\x00", id) }

var markRE = regexp.MustCompile("\x00([zts])(-?[0-9]+)(?:/(-?[0-9]+))?\x00")

// AddSession labels a session id and its password.
func (t *Transcript) AddSession(label string, id int64, passwd []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.sessions[id]; !ok && id != 0 {
		t.sessions[id] = label
		t.passwords[string(passwd)] = label
	}
}

// SessionLabel returns the label of a session id, or "" if it is unknown.
func (t *Transcript) SessionLabel(id int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[id]
}

// Sessions returns the known session ids and their labels.
func (t *Transcript) Sessions() map[int64]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := make(map[int64]string, len(t.sessions))
	for k, v := range t.sessions {
		m[k] = v
	}
	return m
}

// Add appends a line. Use the Z, T, Session and Stat helpers for values to normalise.
func (t *Transcript) Add(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, fmt.Sprintf(format, args...))
}

// Z formats a zxid for normalisation.
func Z(z int64) string {
	if z == 0 || z == -1 {
		return strconv.FormatInt(z, 10)
	}
	return zxidMark(z)
}

// SID formats a session id (or ephemeralOwner) for normalisation.
func SID(id int64) string {
	if id == 0 {
		return "0"
	}
	return sessionMark(id)
}

// Password formats a session password.
func (t *Transcript) Password(p []byte) string {
	if p == nil {
		return "null"
	}
	if len(p) == wire.PasswordLen && string(p) == string(make([]byte, wire.PasswordLen)) {
		return "zero16"
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.passwords[string(p)]; ok {
		return "P(" + l + ")"
	}
	return fmt.Sprintf("unknown%d", len(p))
}

// FormatStat formats a Stat for normalisation.
func FormatStat(s *wire.Stat) string {
	return fmt.Sprintf("{czxid=%s mzxid=%s ctime=%s mtime=%s version=%d cversion=%d aversion=%d owner=%s dataLength=%d numChildren=%d pzxid=%s}",
		Z(s.Czxid), Z(s.Mzxid), timeMark(s.Ctime, s.Czxid), timeMark(s.Mtime, s.Mzxid),
		s.Version, s.Cversion, s.Aversion, SID(s.EphemeralOwner), s.DataLength, s.NumChildren, Z(s.Pzxid))
}

// Render returns the normalised transcript text.
func (t *Transcript) Render() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := strings.Join(t.lines, "\n") + "\n"
	end := time.Now()

	zxids := map[int64]bool{}
	times := map[int64]map[int64]bool{} // zxid -> distinct ms stamped by it
	for _, m := range markRE.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseInt(m[2], 10, 64)
		switch m[1] {
		case "z":
			zxids[v] = true
		case "t":
			z, _ := strconv.ParseInt(m[3], 10, 64)
			if times[z] == nil {
				times[z] = map[int64]bool{}
			}
			times[z][v] = true
			if z != 0 && z != -1 {
				zxids[z] = true
			}
		}
	}
	rank := map[int64]string{}
	sorted := make([]int64, 0, len(zxids))
	for z := range zxids {
		sorted = append(sorted, z)
	}
	slices.Sort(sorted)
	for i, z := range sorted {
		rank[z] = "Z" + strconv.Itoa(i+1)
	}
	unknown := map[int64]string{}
	lo, hi := t.start.Add(-10*time.Second).UnixMilli(), end.Add(10*time.Second).UnixMilli()
	text = markRE.ReplaceAllStringFunc(text, func(s string) string {
		m := markRE.FindStringSubmatch(s)
		v, _ := strconv.ParseInt(m[2], 10, 64)
		switch m[1] {
		case "z":
			return rank[v]
		case "t":
			z, _ := strconv.ParseInt(m[3], 10, 64)
			return t.renderTime(v, z, rank, len(times[z]) > 1, lo, hi)
		default:
			if l, ok := t.sessions[v]; ok {
				return l
			}
			if _, ok := unknown[v]; !ok {
				unknown[v] = "S?" + strconv.Itoa(len(unknown)+1)
			}
			return unknown[v]
		}
	})
	if t.root != "" {
		text = strings.ReplaceAll(text, t.root, "/ROOT")
	}
	return text
}

// renderTime turns a ctime/mtime into a token naming the txn that set it, or an error token
// that will show up in a diff.
func (t *Transcript) renderTime(ms, zxid int64, rank map[int64]string, inconsistent bool, lo, hi int64) string {
	if zxid == 0 {
		if ms == 0 {
			return "0" // nodes of the initial tree
		}
		return fmt.Sprintf("BAD(time %d for zxid 0)", ms)
	}
	tok := "T@" + rank[zxid]
	switch {
	case inconsistent:
		return tok + "!INCONSISTENT"
	case ms < lo || ms > hi:
		return fmt.Sprintf("%s!IMPLAUSIBLE(%d not ms in this run)", tok, ms)
	}
	return tok
}

// SortedLines is a helper for shapes whose order is unspecified: it sorts lines in place.
func SortedLines(lines []string) []string {
	sort.Strings(lines)
	return lines
}
