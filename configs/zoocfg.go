package configs

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paddock/paddock/server"
)

// zooCfg is an Apache ZooKeeper zoo.cfg turned into server section keys.
type zooCfg struct {
	path   string
	values map[string]any    // server keys the file sets, as Go values
	from   map[string]string // server key -> what set it: zoo.cfg keys, or the myid file
}

func (c *zooCfg) set(key string, value any, from string) {
	c.values[key] = value
	c.from[key] = from
}

// zooMapper holds what has been read of one zoo.cfg so far.
type zooMapper struct {
	path    string
	logger  *slog.Logger
	got     map[string]any // parsed values of the zooMapped keys present
	lines   map[string]int // the line of each zooMapped key present
	dynamic bool           // dynamicConfigFile is set: the server.N lines belong in it
	servers []zooServer    // server.N lines, of this file or of its dynamicConfigFile
	// saslProvider is the line of an authProvider.N naming ZooKeeper's SASL provider, or 0.
	saslProvider int
}

// zooServer is one server.N line.
type zooServer struct {
	server.Member        // ID from the key, the rest from the value (server.ParseMemberAddrs)
	value         string // as written, for the ensemble key
	file          string // the zoo.cfg or its dynamicConfigFile
	line          int
}

// name is the line's key with its id as ZooKeeper reads it: server.1 for server.01.
func (s *zooServer) name() string { return "server." + strconv.FormatInt(s.ID, 10) }

// at says where the line is: file:line.
func (s *zooServer) at() string { return s.file + ":" + strconv.Itoa(s.line) }

// client returns the host and port of the line's client address; port is 0 when the
// line has none, host is empty when it has a port alone.
func (s *zooServer) client() (host string, port int) {
	if s.ClientAddr == "" {
		return "", 0
	}
	host, p, _ := net.SplitHostPort(s.ClientAddr) // ParseMemberAddrs joined it
	port, _ = strconv.Atoi(p)
	return host, port
}

// readZooCfg reads the zoo.cfg at path as ZooKeeper (3.8, 3.9) would and maps it to server
// keys: two or more server.N lines configure a replicated ensemble (the ensemble key),
// one or none a standalone server. It logs a warning for each key ZooKeeper knows and
// paddock does not use. A key neither knows, a bad value, or an ensemble this server
// cannot be a member of (no myid, or one no server.N line has) stop it with an error
// naming the file, the line, the key, the value and what is allowed. Relative paths in
// the file (dataDir, dynamicConfigFile) are relative to the working directory, as in
// ZooKeeper.
func readZooCfg(path string, logger *slog.Logger) (*zooCfg, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read zoo.cfg: %w", err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := &zooMapper{path: path, logger: logger, got: map[string]any{}, lines: map[string]int{}}
	props = m.lastOfEach(path, props)
	m.dynamic = slices.ContainsFunc(props, func(p property) bool { return javaTrim(p.key) == "dynamicConfigFile" })
	var errs []error
	for _, p := range props {
		if err := m.apply(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m.finish()
}

// lastOfEach keeps the last value of each key, as java.util.Properties does, and warns
// about the values it drops; file is where props come from.
func (m *zooMapper) lastOfEach(file string, props []property) []property {
	last := map[string]int{}
	for i, p := range props {
		last[p.key] = i
	}
	var kept []property
	for i, p := range props {
		if last[p.key] == i {
			kept = append(kept, p)
			continue
		}
		m.logger.Warn("zoo.cfg key repeated, the last value wins as in zookeeper",
			"key", javaTrim(p.key), "file", file, "line", p.line, "last_line", props[last[p.key]].line)
	}
	return kept
}

// apply reads one key: mapped, ignored with a warning, or rejected.
func (m *zooMapper) apply(p property) error {
	key, value := javaTrim(p.key), javaTrim(p.value)
	bad := func(err error) error {
		if zooHidden(key) {
			return fmt.Errorf("%s:%d: %s (value hidden): %w", m.path, p.line, key, err)
		}
		return fmt.Errorf("%s:%d: %s = %q: %w", m.path, p.line, key, value, err)
	}
	if parse, ok := zooMapped[key]; ok {
		v, err := parse(value)
		if err != nil {
			return bad(err)
		}
		m.got[key], m.lines[key] = v, p.line
		return nil
	}
	if id, ok := strings.CutPrefix(key, "server."); ok {
		if m.dynamic {
			// QuorumPeerConfig refuses them too: "must be in a separate dynamic config file".
			return bad(errors.New("dynamicConfigFile is set: the server.N lines belong in it, as in ZooKeeper"))
		}
		return m.addServer(id, value, m.path, p.line, bad)
	}
	if zooSASLProvider(key, value) {
		m.saslProvider = p.line
		return nil
	}
	if why := zooIgnoredWhy(key); why != "" {
		if check := zooIgnored[key].check; check != nil {
			if _, err := check(value); err != nil {
				return bad(err)
			}
		}
		// The value is not logged: ignored keys include passwords (ssl.keyStore.password).
		m.logger.Warn("zoo.cfg key ignored", "key", key, "file", m.path, "line", p.line, "reason", why)
		return nil
	}
	return bad(errors.New("unknown key: not a setting of ZooKeeper or paddock" + zooSuggest(key)))
}

func zooSuggest(key string) string {
	if rest, ok := strings.CutPrefix(key, "zookeeper."); ok && (zooMapped[rest] != nil || zooIgnoredWhy(rest) != "") {
		return `; zoo.cfg keys have no "zookeeper." prefix: did you mean ` + rest + "?"
	}
	return suggest(key, zooKnownKeys())
}

// addServer reads the server.N line at file:line with server.ParseMemberAddrs.
func (m *zooMapper) addServer(id, value, file string, line int, bad func(error) error) error {
	sid, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return bad(errors.New("want server.<id> with a numeric id"))
	}
	member, err := server.ParseMemberAddrs(value)
	if err != nil {
		return bad(err)
	}
	member.ID = sid
	m.servers = append(m.servers, zooServer{Member: member, value: value, file: file, line: line})
	return nil
}

// finish turns what was read into server keys, with ZooKeeper's defaults where they
// differ from paddock's, and checks what spans several keys.
func (m *zooMapper) finish() (*zooCfg, error) {
	if file, ok := m.got["dynamicConfigFile"]; ok {
		if err := m.readDynamic(file.(string)); err != nil {
			return nil, err
		}
	}
	c := &zooCfg{path: m.path, values: map[string]any{}, from: map[string]string{}}
	for _, d := range zooDirect {
		if v, ok := m.got[d.zk]; ok {
			c.set(d.key, v, d.zk)
		}
	}
	if _, ok := m.got["tickTime"]; !ok {
		// ZooKeeper's code default; its sample zoo.cfg says 2000, as paddock's default does.
		c.set("tick_time", 3*time.Second, "ZooKeeper's default tickTime")
	}
	var errs []error
	if _, ok := m.got["dataDir"]; !ok {
		errs = append(errs, fmt.Errorf("%s: dataDir is not set: want the directory for snapshots and myid", m.path))
	}
	id, hasID, err := m.myid(c)
	errs = append(errs, err)
	switch {
	case len(m.servers) < 2:
		errs = append(errs, m.standalone(c))
	case err == nil:
		errs = append(errs, m.ensemble(c, id, hasID))
	}
	errs = append(errs, m.secureClientAddr(c))
	m.adminAddr(c)
	m.autopurge(c)
	m.saslAuth(c)
	errs = append(errs, m.passwords(c))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// standalone checks the zoo.cfg of a standalone server: no server.N line, or one, which
// is how ZooKeeper (standaloneEnabled, its default) runs standalone too.
func (m *zooMapper) standalone(c *zooCfg) error {
	if len(m.servers) == 0 {
		return errors.Join(m.clientAddr(c, nil), m.peerType(nil))
	}
	s := &m.servers[0]
	if s.Observer {
		// QuorumPeerConfig: "Observers w/o participants is an invalid configuration".
		return fmt.Errorf("%s: %s is an observer and no server.N line is a participant: "+
			"an observer needs an ensemble to follow", s.at(), s.name())
	}
	return errors.Join(m.clientAddr(c, s), m.peerType(nil))
}

// ensemble sets the ensemble key from two or more server.N lines, in file order, and
// finds this server's line by its myid, which a member of an ensemble must have (as
// QuorumPeerConfig requires: "myid file is missing").
func (m *zooMapper) ensemble(c *zooCfg, id int64, hasID bool) error {
	entries := make([]string, len(m.servers))
	ids := make([]string, len(m.servers))
	var self *zooServer
	for i := range m.servers {
		s := &m.servers[i]
		ids[i] = strconv.FormatInt(s.ID, 10)
		entries[i] = ids[i] + "=" + s.value
		if hasID && s.ID == id {
			self = s
		}
	}
	file := m.servers[0].file // all in the zoo.cfg, or all in its dynamicConfigFile
	c.set("ensemble", entries, m.inFile("server.N lines", file))
	dir, ok := m.got["dataDir"].(string)
	switch {
	case !ok:
		return nil // reported by finish
	case !hasID:
		return fmt.Errorf("%s: missing: an ensemble member needs its id there, one of the ids of the server.N lines of %s (%s)",
			filepath.Join(dir, "myid"), file, strings.Join(ids, ", "))
	case self == nil:
		return fmt.Errorf("%s = %d: not among the ids of the server.N lines of %s (%s): want this server's id",
			filepath.Join(dir, "myid"), id, file, strings.Join(ids, ", "))
	}
	return errors.Join(m.clientAddr(c, self), m.peerType(self))
}

// clientAddr sets client_addr from clientPortAddress and clientPort, or from self, this
// server's server.N line, when it has a client address (";[host:]port"):
//   - a standalone server's single line must agree with clientPort on the port; its
//     host is used when clientPortAddress is not set;
//   - an ensemble member's line is its address, as in ZooKeeper (setupClientPort):
//     clientPortAddress:clientPort, if set too, must be the same address, or only the
//     same port when clientPortAddress is a wildcard (0.0.0.0, ::) or not set.
func (m *zooMapper) clientAddr(c *zooCfg, self *zooServer) error {
	port, hasPort := m.got["clientPort"].(int)
	host, hasHost := m.got["clientPortAddress"].(string)
	switch {
	case !hasPort && hasHost:
		return fmt.Errorf("%s: clientPortAddress is set but clientPort is not set: want clientPort too", m.path)
	case self != nil && self.ClientAddr != "":
		return m.lineClientAddr(c, self, host, port)
	case !hasPort && m.got["secureClientPort"] != nil:
		c.set("client_addr", "", "secureClientPort without clientPort") // TLS clients only, as in ZooKeeper
		return nil
	case !hasPort:
		return fmt.Errorf("%s: clientPort is not set: want a port in [1, 65535], or a secureClientPort", m.path)
	}
	c.set("client_addr", net.JoinHostPort(host, strconv.Itoa(port)), "clientPort")
	return nil
}

// lineClientAddr is clientAddr for a server.N line with a client address; port is 0
// when clientPort is not set, host empty when clientPortAddress is not.
func (m *zooMapper) lineClientAddr(c *zooCfg, self *zooServer, host string, port int) error {
	lineHost, linePort := self.client()
	member := len(m.servers) > 1 // of an ensemble; else a standalone server's single line
	switch {
	case member && port != 0 && !wildcard(host) && !(sameHost(host, lineHost) && port == linePort):
		return fmt.Errorf("%s: %s has client address %s but clientPortAddress and clientPort are %s: want the same address",
			self.at(), self.name(), self.ClientAddr, net.JoinHostPort(host, strconv.Itoa(port)))
	case port != 0 && port != linePort:
		return fmt.Errorf("%s: %s has client port %d but clientPort is %d: want the same port",
			self.at(), self.name(), linePort, port)
	}
	if member || host == "" {
		host = lineHost
	}
	c.set("client_addr", net.JoinHostPort(host, strconv.Itoa(linePort)), m.inFile(self.name(), self.file))
	return nil
}

// inFile says where server keys set from what (zoo.cfg keys) of file came from, for
// zooCfg.from; explain adds the zoo.cfg's own path.
func (m *zooMapper) inFile(what, file string) string {
	if file == m.path {
		return what
	}
	return what + " of dynamicConfigFile " + file
}

// wildcard reports whether host listens on every address: empty, 0.0.0.0 or ::.
func wildcard(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// sameHost compares two hosts as addresses when both are IPs (::1 and 0:0::1 are the
// same), as names otherwise. ZooKeeper compares resolved addresses; paddock resolves
// nothing while loading its configuration.
func sameHost(a, b string) bool {
	ipa, ipb := net.ParseIP(a), net.ParseIP(b)
	if ipa != nil && ipb != nil {
		return ipa.Equal(ipb)
	}
	return strings.EqualFold(a, b)
}

// peerType checks peerType against the role the server.N lines give this server: self's,
// or a participant for a standalone server (self nil). ZooKeeper warns and follows the
// lines (setupPeerType); paddock refuses to guess which of the two was meant.
func (m *zooMapper) peerType(self *zooServer) error {
	want, ok := m.got["peerType"].(bool)
	observer := self != nil && self.Observer
	if !ok || want == observer {
		return nil
	}
	at := fmt.Sprintf("%s:%d: peerType = %s", m.path, m.lines["peerType"], role(want))
	if self == nil {
		return fmt.Errorf("%s but this server runs standalone (fewer than two server.N lines): "+
			"want participant, or the ensemble's server.N lines", at)
	}
	return fmt.Errorf("%s but %s (%s) makes this server (myid %d) %s: want the same role in both",
		at, self.name(), self.at(), self.ID, role(observer))
}

func role(observer bool) string {
	if observer {
		return "observer"
	}
	return "participant"
}

// adminAddr applies ZooKeeper's AdminServer defaults, enabled on port 8080, but on
// 127.0.0.1 unless admin.serverAddress says otherwise: ZooKeeper listens on 0.0.0.0.
func (m *zooMapper) adminAddr(c *zooCfg) {
	if on, ok := m.got["admin.enableServer"].(bool); ok && !on {
		c.set("admin_addr", "", "admin.enableServer")
		return
	}
	host, port := "127.0.0.1", 8080
	if h, ok := m.got["admin.serverAddress"].(string); ok {
		host = h
	}
	if p, ok := m.got["admin.serverPort"].(int); ok {
		port = p
	}
	c.set("admin_addr", net.JoinHostPort(host, strconv.Itoa(port)), "admin.serverAddress, admin.serverPort")
}

// autopurge applies ZooKeeper's rules for autopurge.*: purging is off unless
// purgeInterval is set (paddock's own default is hourly), and a snapRetainCount below 3
// is raised to 3 with a warning, as QuorumPeerConfig does, rather than refused.
func (m *zooMapper) autopurge(c *zooCfg) {
	if _, ok := m.got["autopurge.purgeInterval"]; !ok {
		c.set("purge_interval", time.Duration(0), "ZooKeeper's default autopurge.purgeInterval (0: off)")
	}
	n, ok := m.got["autopurge.snapRetainCount"].(int)
	if !ok {
		return // ZooKeeper's default, 3, is paddock's
	}
	if n < minSnapRetainCount {
		m.logger.Warn("zoo.cfg autopurge.snapRetainCount below the minimum: raised to it, as in zookeeper",
			"key", "autopurge.snapRetainCount", "value", n, "minimum", minSnapRetainCount, "file", m.path)
		n = minSnapRetainCount
	}
	c.set("snap_retain_count", n, "autopurge.snapRetainCount")
}

// minSnapRetainCount is ZooKeeper's MIN_SNAP_RETAIN_COUNT, which server.Config's
// snap_retain_count also requires.
const minSnapRetainCount = 3

// myid reads the server id from dataDir/myid when the file exists (found); like
// ZooKeeper, a standalone server does not need one.
func (m *zooMapper) myid(c *zooCfg) (id int64, found bool, err error) {
	dir, ok := m.got["dataDir"].(string)
	if !ok {
		return 0, false, nil
	}
	path := filepath.Join(dir, "myid")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, true, fmt.Errorf("read myid: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	id, err = strconv.ParseInt(javaTrim(first), 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("%s = %q: want this server's id, a number", path, javaTrim(first))
	}
	c.set("server_id", id, path)
	return id, true, nil
}

// readDynamic reads the server.N lines of a dynamicConfigFile, where reconfigEnabled
// setups keep the ensemble.
func (m *zooMapper) readDynamic(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%s: dynamicConfigFile: %w", m.path, err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var errs []error
	for _, p := range m.lastOfEach(file, props) {
		key, value := javaTrim(p.key), javaTrim(p.value)
		bad := func(err error) error { return fmt.Errorf("%s:%d: %s = %q: %w", file, p.line, key, value, err) }
		switch id, isServer := strings.CutPrefix(key, "server."); {
		case isServer:
			errs = append(errs, m.addServer(id, value, file, p.line, bad))
		case key == "version": // dynamic reconfiguration's own bookkeeping
		case strings.HasPrefix(key, "group."), strings.HasPrefix(key, "weight."):
			m.logger.Warn("zoo.cfg key ignored", "key", key, "file", file, "line", p.line, "reason", zooIgnoredWhy(key))
		default:
			errs = append(errs, bad(errors.New("want only server.N, group.N, weight.N and version in a dynamic config file")))
		}
	}
	return errors.Join(errs...)
}

// passwords sets the key and trust store passwords, each from its password key or from
// the file its passwordPath key names, which wins as in ZooKeeper. ZooKeeper's
// SecretUtils.readSecret drops one trailing line separator; so does paddock, \r\n too.
// Neither the password nor the file's contents ever appear in an error or the log.
func (m *zooMapper) passwords(c *zooCfg) error {
	var errs []error
	for _, p := range zooPasswords {
		pw, hasPW := m.got[p.zk].(string)
		file, _ := m.got[p.path].(string)
		switch {
		case file != "":
			data, err := os.ReadFile(file)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %s = %q: read the password: %w", m.path, m.lines[p.path], p.path, file, err))
				continue
			}
			if hasPW {
				m.logger.Warn("zoo.cfg password set twice: the file wins, as in zookeeper",
					"key", p.zk, "line", m.lines[p.zk], "file_key", p.path, "file", m.path)
			}
			pw := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
			c.set(p.key, pw, p.path)
		case hasPW:
			c.set(p.key, pw, p.zk)
		}
	}
	return errors.Join(errs...)
}
