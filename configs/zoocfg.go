package configs

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	servers []zooServer    // server.N lines, of this file and its dynamicConfigFile
}

// zooServer is one server.N line.
type zooServer struct {
	id         int64
	line       int
	clientHost string // the ";host:port" client address's host; may be empty
	clientPort int    // 0 when the line has no client address
}

// readZooCfg reads the zoo.cfg at path as ZooKeeper (3.8, 3.9) would and maps it to server
// keys. It logs a warning for each key ZooKeeper knows and paddock does not use. A key
// neither knows, a bad value, or a replicated ensemble stop it with an error naming the
// file, the line, the key, the value and what is allowed. Relative paths in the file
// (dataDir, dynamicConfigFile) are relative to the working directory, as in ZooKeeper.
func readZooCfg(path string, logger *slog.Logger) (*zooCfg, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read zoo.cfg: %w", err)
	}
	props, err := parseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := &zooMapper{path: path, logger: logger, got: map[string]any{}}
	var errs []error
	for _, p := range m.lastOfEach(props) {
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
// about the values it drops.
func (m *zooMapper) lastOfEach(props []property) []property {
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
			"key", javaTrim(p.key), "file", m.path, "line", p.line, "last_line", props[last[p.key]].line)
	}
	return kept
}

// apply reads one key: mapped, ignored with a warning, or rejected.
func (m *zooMapper) apply(p property) error {
	key, value := javaTrim(p.key), javaTrim(p.value)
	bad := func(err error) error {
		return fmt.Errorf("%s:%d: %s = %q: %w", m.path, p.line, key, value, err)
	}
	if parse, ok := zooMapped[key]; ok {
		v, err := parse(value)
		if err != nil {
			return bad(err)
		}
		m.got[key] = v
		return nil
	}
	if id, ok := strings.CutPrefix(key, "server."); ok {
		return m.addServer(id, value, p.line, bad)
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

func (m *zooMapper) addServer(id, value string, line int, bad func(error) error) error {
	sid, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return bad(errors.New("want server.<id> with a numeric id"))
	}
	s, err := parseServerLine(value)
	if err != nil {
		return bad(err)
	}
	s.id, s.line = sid, line
	m.servers = append(m.servers, s)
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
	if err := m.standalone(); err != nil {
		return nil, err
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
	errs = append(errs, m.clientAddr(c), m.myid(c))
	m.adminAddr(c)
	m.autopurge(c)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// standalone refuses a replicated ensemble: paddock must never run one of its members
// standalone. A list of one server is how ZooKeeper runs standalone too.
func (m *zooMapper) standalone() error {
	if len(m.servers) <= 1 {
		return nil
	}
	ids := make([]string, len(m.servers))
	for i, s := range m.servers {
		ids[i] = "server." + strconv.FormatInt(s.id, 10)
	}
	return fmt.Errorf("%s: lists %d servers (%s): a replicated ensemble is not supported yet "+
		"(it comes in a later release), and paddock will not run a member of one standalone",
		m.path, len(m.servers), strings.Join(ids, ", "))
}

// clientAddr combines clientPortAddress and clientPort, or takes the client address of
// a single server.N line, which ZooKeeper requires to agree with clientPort.
func (m *zooMapper) clientAddr(c *zooCfg) error {
	port, hasPort := m.got["clientPort"].(int)
	host, hasHost := m.got["clientPortAddress"].(string)
	from := "clientPort"
	if len(m.servers) == 1 && m.servers[0].clientPort != 0 {
		s := m.servers[0]
		if hasPort && port != s.clientPort {
			return fmt.Errorf("%s:%d: server.%d has client port %d but clientPort is %d: want the same port",
				m.path, s.line, s.id, s.clientPort, port)
		}
		if !hasHost && s.clientHost != "" {
			host, hasHost = s.clientHost, true
		}
		port, hasPort, from = s.clientPort, true, fmt.Sprintf("server.%d", s.id)
	}
	switch {
	case !hasPort && hasHost:
		return fmt.Errorf("%s: clientPortAddress is set but clientPort is not set: want clientPort too", m.path)
	case !hasPort:
		return fmt.Errorf("%s: clientPort is not set: want a port in [1, 65535] (paddock has no secureClientPort)", m.path)
	}
	c.set("client_addr", net.JoinHostPort(host, strconv.Itoa(port)), from)
	return nil
}

// adminAddr applies ZooKeeper's AdminServer defaults: enabled, on 0.0.0.0:8080.
func (m *zooMapper) adminAddr(c *zooCfg) {
	if on, ok := m.got["admin.enableServer"].(bool); ok && !on {
		c.set("admin_addr", "", "admin.enableServer")
		return
	}
	host, port := "0.0.0.0", 8080
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

// myid reads the server id from dataDir/myid when the file exists; like ZooKeeper, a
// standalone server does not need one.
func (m *zooMapper) myid(c *zooCfg) error {
	dir, ok := m.got["dataDir"].(string)
	if !ok {
		return nil
	}
	path := filepath.Join(dir, "myid")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read myid: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	id, err := strconv.ParseInt(javaTrim(first), 10, 64)
	if err != nil {
		return fmt.Errorf("%s = %q: want this server's id, a number", path, javaTrim(first))
	}
	c.set("server_id", id, path)
	return nil
}

// readDynamic reads the server.N lines of a dynamicConfigFile (reconfigEnabled setups
// keep the ensemble there), so that an ensemble is never mistaken for a standalone server.
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
	for _, p := range props {
		key, value := javaTrim(p.key), javaTrim(p.value)
		bad := func(err error) error { return fmt.Errorf("%s:%d: %s = %q: %w", file, p.line, key, value, err) }
		switch id, isServer := strings.CutPrefix(key, "server."); {
		case isServer:
			errs = append(errs, m.addServer(id, value, p.line, bad))
		case key == "version", strings.HasPrefix(key, "group."), strings.HasPrefix(key, "weight."):
		default:
			errs = append(errs, bad(errors.New("want only server.N, group.N, weight.N and version in a dynamic config file")))
		}
	}
	return errors.Join(errs...)
}

// parseServerLine parses host:peerPort:electionPort[:participant|:observer], several such
// addresses joined by |, then optionally ;[clientHost:]clientPort. IPv6 hosts are
// bracketed.
func parseServerLine(v string) (zooServer, error) {
	bad := errors.New("want host:peerPort:electionPort[:participant|:observer][;[clientAddress:]clientPort]")
	addrs, client, hasClient := strings.Cut(v, ";")
	for a := range strings.SplitSeq(addrs, "|") {
		parts, ok := splitColons(a)
		if !ok || len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
			return zooServer{}, bad
		}
		for _, p := range parts[1:3] {
			if _, err := port(javaInt)(p); err != nil {
				return zooServer{}, bad
			}
		}
		if len(parts) == 4 && parts[3] != "participant" && parts[3] != "observer" {
			return zooServer{}, bad
		}
	}
	var s zooServer
	if !hasClient {
		return s, nil
	}
	parts, ok := splitColons(client)
	if !ok || len(parts) > 2 {
		return zooServer{}, bad
	}
	p, err := port(javaInt)(parts[len(parts)-1])
	if err != nil {
		return zooServer{}, bad
	}
	s.clientPort = p.(int)
	if len(parts) == 2 {
		s.clientHost = parts[0]
	}
	return s, nil
}

// splitColons splits host:a:b, where host may be a bracketed IPv6 address.
func splitColons(s string) ([]string, bool) {
	if !strings.HasPrefix(s, "[") {
		return strings.Split(s, ":"), true
	}
	host, rest, ok := strings.Cut(s[1:], "]")
	if !ok {
		return nil, false
	}
	if rest == "" {
		return []string{host}, true
	}
	rest, ok = strings.CutPrefix(rest, ":")
	return append([]string{host}, strings.Split(rest, ":")...), ok
}
