package worker

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"
)

// runAsSpec is the run_as key as written: a user name, or a uid with an optional gid.
type runAsSpec struct {
	name     string // the user's name; "" for a uid
	uid, gid uint32 // for a uid; gid only if withGID
	withGID  bool
}

// maxRunAsName bounds a user name in run_as; the longest Linux tools accept is 32.
const maxRunAsName = 256

// errRunAsSyntax is the rule run_as follows, for its errors.
var errRunAsSyntax = errors.New("want a user name, or uid[:gid] (numbers from 0 to 4294967294)")

// parseRunAs reads run_as: "" (tasks run as the worker), a user name (letters, digits,
// '.', '_', '-', not starting with '-', optionally ending in a '$' that is not all of
// it, not all digits: up to maxRunAsName bytes), "uid"
// or "uid:gid". (uid_t)-1, 4294967295, means "no change" to setuid and is refused.
func parseRunAs(s string) (runAsSpec, bool, error) {
	if s == "" {
		return runAsSpec{}, false, nil
	}
	if u, g, hasGID := strings.Cut(s, ":"); allDigits(u) {
		uid, err := parseID(u)
		if err != nil {
			return runAsSpec{}, false, err
		}
		spec := runAsSpec{uid: uid}
		if hasGID {
			if spec.gid, err = parseID(g); err != nil {
				return runAsSpec{}, false, err
			}
			spec.withGID = true
		}
		return spec, true, nil
	}
	if !validUserName(s) {
		return runAsSpec{}, false, errRunAsSyntax
	}
	return runAsSpec{name: s}, true, nil
}

// parseID reads a uid or gid: decimal, below 4294967295.
func parseID(s string) (uint32, error) {
	if !allDigits(s) {
		return 0, errRunAsSyntax
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, errRunAsSyntax
	}
	return uint32(n), nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validUserName follows useradd's rule for names, with '$' allowed last (Samba's
// machine accounts).
func validUserName(s string) bool {
	if s == "" || len(s) > maxRunAsName || s[0] == '-' || s[0] == '$' || allDigits(s) {
		return false
	}
	for i := range len(s) {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' ||
			c == '$' && i == len(s)-1
		if !ok {
			return false
		}
	}
	return true
}

// identity is who a task runs as: the worker itself (set false), or a user whose uid,
// gid and supplementary groups the task's first process takes before exec.
type identity struct {
	set      bool
	uid, gid uint32
	groups   []uint32 // supplementary groups; empty clears the worker's
	name     string   // from the user database; "" for a uid it does not know
	home     string
}

// String names the identity for logs and errors: "nobody (uid 65534, gid 65534)".
func (id identity) String() string {
	if !id.set {
		return "the worker's own user"
	}
	s := fmt.Sprintf("uid %d, gid %d", id.uid, id.gid)
	if id.name != "" {
		return id.name + " (" + s + ")"
	}
	return s
}

// resolveRunAs looks run_as up in the user database: a name gives its uid, primary
// gid and groups; a uid alone must be known, and gives its gid and groups; uid:gid is
// taken as given, with no supplementary groups.
func resolveRunAs(s string) (identity, error) {
	spec, set, err := parseRunAs(s)
	if err != nil || !set {
		return identity{}, err
	}
	var u *user.User
	switch {
	case spec.name != "":
		if u, err = user.Lookup(spec.name); err != nil {
			return identity{}, fmt.Errorf("no such user: %w", err)
		}
	default:
		u, err = user.LookupId(strconv.FormatUint(uint64(spec.uid), 10))
		if err != nil && !spec.withGID {
			return identity{}, fmt.Errorf("no user has uid %d: give uid:gid (%w)", spec.uid, err)
		}
	}
	if spec.withGID {
		id := identity{set: true, uid: spec.uid, gid: spec.gid}
		if u != nil {
			id.name, id.home = u.Username, u.HomeDir
		}
		return id, nil
	}
	return identityOf(u)
}

// identityOf reads a user database entry: its uid, gid and every group it is in.
func identityOf(u *user.User) (identity, error) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return identity{}, fmt.Errorf("user %s: %w", u.Username, err)
	}
	id := identity{set: true, uid: uint32(uid), gid: uint32(gid), name: u.Username, home: u.HomeDir}
	names, err := u.GroupIds()
	if err != nil {
		return identity{}, fmt.Errorf("groups of user %s: %w", u.Username, err)
	}
	for _, g := range names {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return identity{}, fmt.Errorf("groups of user %s: %q: %w", u.Username, g, err)
		}
		id.groups = append(id.groups, uint32(n))
	}
	return id, nil
}

// checkIdentity enforces who may run tasks as whom, for a worker of effective uid
// euid and gid egid:
//   - a worker running as root runs tasks as run_as; with no run_as, or a run_as of uid
//     0, it refuses to start unless allow_root is set;
//   - a worker not running as root cannot change user: run_as, if set, must be itself,
//     and is then not applied.
//
// It returns the identity to apply (unset where tasks run as the worker).
func checkIdentity(id identity, runAs string, allowRoot bool, euid, egid int) (identity, error) {
	if euid == 0 {
		switch {
		case !id.set && !allowRoot:
			return id, errors.New("worker: running as root with no run_as: tasks would run as root; " +
				"set run_as to the user tasks run as (a user name or uid[:gid], such as nobody), or allow_root: true to run them as root")
		case id.set && id.uid == 0 && !allowRoot:
			return id, fmt.Errorf("worker: run_as = %s is uid 0: tasks would run as root; set allow_root: true to allow it", runAs)
		}
		return id, nil
	}
	if id.set && (int(id.uid) != euid || int(id.gid) != egid) {
		return id, fmt.Errorf("worker: run_as = %s is %s, but the worker runs as uid %d, gid %d, not root: "+
			"it can run tasks only as itself; remove run_as or start the worker as root", runAs, id, euid, egid)
	}
	return identity{}, nil
}

// userEnv is what a task's environment says of the user it runs as (HOME, USER,
// LOGNAME), where it is not the worker's: the worker's own would name root's home.
func (id identity) userEnv() []string {
	if !id.set {
		return nil
	}
	name := id.name
	if name == "" {
		name = strconv.FormatUint(uint64(id.uid), 10)
	}
	home := id.home
	if home == "" {
		home = "/"
	}
	return []string{"HOME=" + home, "USER=" + name, "LOGNAME=" + name}
}
