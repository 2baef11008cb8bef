package server

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Member is one server of a replicated ensemble: a server.N line of zoo.cfg.
type Member struct {
	ID int64
	// PeerAddr (host:peerPort) carries the Raft messages between members.
	PeerAddr string
	// ElectionAddr (host:electionPort) is kept for /zookeeper/config and conf only:
	// Raft holds its elections over PeerAddr, so nothing listens on it.
	ElectionAddr string
	// Observer members are Raft learners: they replicate and serve clients, never vote.
	Observer bool
	// ClientAddr ([host:]port) is where the member serves clients, when the line says.
	ClientAddr string
}

// errMemberSyntax names the form a server.N value must have; ParseMember's entries
// put "N=" before it.
var errMemberSyntax = errors.New("want host:peerPort:electionPort[:participant|:observer][;[clientAddress:]clientPort]")

// ParseMember parses "N=host:peerPort:electionPort[:participant|:observer][;[clientHost:]clientPort]",
// the right-hand side of zoo.cfg's server.N with the id in front. IPv6 hosts are
// bracketed. ZooKeeper's multi-address form (addresses joined by |) is refused: a
// paddock member has one peer address.
func ParseMember(spec string) (Member, error) {
	id, rest, ok := strings.Cut(spec, "=")
	if !ok {
		return Member{}, fmt.Errorf("no \"N=\": want N=<server.N value>, where the value: %w", errMemberSyntax)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64)
	if err != nil {
		return Member{}, fmt.Errorf("id %q is not a number", id)
	}
	m, err := ParseMemberAddrs(strings.TrimSpace(rest))
	m.ID = n
	return m, err
}

// ParseMemberAddrs parses the value of a server.N line (ParseMember without "N=").
func ParseMemberAddrs(v string) (Member, error) {
	addrs, client, hasClient := strings.Cut(v, ";")
	if strings.Contains(addrs, "|") {
		return Member{}, errors.New("several addresses joined by | (multiAddress): a paddock member has one peer address")
	}
	parts, ok := splitColons(addrs)
	if !ok || len(parts) < 3 || len(parts) > 4 || parts[0] == "" {
		return Member{}, errMemberSyntax
	}
	for _, p := range parts[1:3] {
		if !validPort(p) {
			return Member{}, fmt.Errorf("port %q: %w", p, errMemberSyntax)
		}
	}
	m := Member{PeerAddr: net.JoinHostPort(parts[0], parts[1]), ElectionAddr: net.JoinHostPort(parts[0], parts[2])}
	if len(parts) == 4 {
		switch parts[3] {
		case "observer":
			m.Observer = true
		case "participant":
		default:
			return Member{}, fmt.Errorf("role %q: %w", parts[3], errMemberSyntax)
		}
	}
	if !hasClient {
		return m, nil
	}
	cparts, ok := splitColons(strings.TrimSpace(client))
	if !ok || len(cparts) > 2 || !validPort(cparts[len(cparts)-1]) {
		return Member{}, fmt.Errorf("client address %q: %w", client, errMemberSyntax)
	}
	host := ""
	if len(cparts) == 2 {
		host = cparts[0]
	}
	m.ClientAddr = net.JoinHostPort(host, cparts[len(cparts)-1])
	return m, nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
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

// String gives the member as zoo.cfg and /zookeeper/config write it, without the id.
func (m Member) String() string {
	host, peer, _ := net.SplitHostPort(m.PeerAddr)
	_, election, _ := net.SplitHostPort(m.ElectionAddr)
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	role := "participant"
	if m.Observer {
		role = "observer"
	}
	s := host + ":" + peer + ":" + election + ":" + role
	if m.ClientAddr != "" {
		chost, cport, _ := net.SplitHostPort(m.ClientAddr)
		if chost == "" {
			chost = "0.0.0.0"
		}
		s += ";" + net.JoinHostPort(chost, cport)
	}
	return s
}

// Members parses Ensemble, sorted by id. It is nil for a standalone server.
func (c *Config) Members() ([]Member, error) {
	var out []Member
	var errs []error
	for _, spec := range c.Ensemble {
		m, err := ParseMember(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("ensemble entry %q: %w", spec, err))
			continue
		}
		out = append(out, m)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Member) int { return int(a.ID - b.ID) })
	return out, nil
}

// validateEnsemble checks the ensemble as a whole: ids unique and in range, at least
// one voter, this server among the members.
func (c *Config) validateEnsemble() error {
	if len(c.Ensemble) == 0 {
		return nil
	}
	ms, err := c.Members()
	if err != nil {
		return err
	}
	voters, self := 0, false
	for i, m := range ms {
		if m.ID < 1 || m.ID > 254 {
			return fmt.Errorf("ensemble: server id %d: must be in [1, 254]", m.ID)
		}
		if i > 0 && ms[i-1].ID == m.ID {
			return fmt.Errorf("ensemble: server id %d is listed twice", m.ID)
		}
		if !m.Observer {
			voters++
		}
		self = self || m.ID == c.ServerID
	}
	switch {
	case voters == 0:
		return errors.New("ensemble: every member is an observer: want at least one participant")
	case !self:
		return fmt.Errorf("ensemble: this server's id (server_id, myid) %d is not among the members", c.ServerID)
	}
	for _, m := range ms {
		if m.ID != c.ServerID || m.ClientAddr == "" {
			continue
		}
		_, mine, _ := net.SplitHostPort(m.ClientAddr)
		if _, port, _ := net.SplitHostPort(c.ClientAddr); port != mine {
			return fmt.Errorf("ensemble: server %d's entry has client port %s but client_addr is %s: want the same port",
				m.ID, mine, c.ClientAddr)
		}
	}
	return nil
}
