package conformance

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// scenarioFourLetterWords sends every four-letter word while one session with an ephemeral
// node and watches is connected, and records the *shape* of each answer: the same lines and
// keys in the same order where ZooKeeper's order is fixed (sorted where it is a hash order),
// with values that legitimately differ replaced by tokens. Per word, see normaliseWord.
func scenarioFourLetterWords(sc *Scenario) {
	s1 := sc.Connect("s1", ConnectOptions{})
	s1.create(sc.Root, nil, 0)
	s1.create(sc.Path("e"), nil, wire.FlagEphemeral)
	s1.getData(sc.Root, true)
	s1.getChildren(sc.Root, true)
	s1.exists(sc.Path("e"), true)
	for _, w := range []string{"ruok", "isro", "srvr", "stat", "conf", "cons", "envi", "mntr",
		"wchs", "wchc", "wchp", "dirs", "dump", "crst", "srst", "cons", "srvr"} {
		c := sc.Dial("4lw")
		c.WriteRaw([]byte(w), w)
		out := c.ReadText()
		sc.T.Add("%s <\n%s", w, indent(normaliseWord(sc, w, out)))
	}
	s1.Close()
}

func indent(text string) string {
	lines := Lines(text)
	for i, l := range lines {
		lines[i] = "    |" + l
	}
	return strings.Join(lines, "\n")
}

var (
	numRE     = regexp.MustCompile(`\d+`)
	portRE    = regexp.MustCompile(`/127\.0\.0\.1:\d+`)
	hexRE     = regexp.MustCompile(`0x[0-9a-f]+`)
	versionRE = regexp.MustCompile(`^(Zookeeper version: |zookeeper\.version=|zk_version\t)(\d+\.\d+\.\d+\S*), built on (.+)$`)
	latencyRE = regexp.MustCompile(`^Latency min/avg/max: \d+/\d+(\.\d+)?/\d+$`)
	dateRE    = regexp.MustCompile(`expire at .*:$`)
	// opsRE is the interest-ops field of a connection line, e.g. [1]: Java NIO selector state.
	opsRE            = regexp.MustCompile(`\[\d+\]`)
	clientCountersRE = regexp.MustCompile(`=\d+`)
	countRE          = regexp.MustCompile(`\(\d+\)`)
)

// normaliseWord turns a four-letter word's answer into its comparable shape.
func normaliseWord(sc *Scenario, word, out string) string {
	if strings.HasSuffix(out, " is not in the whitelist.\n") {
		return out // the refusal, exactly
	}
	out = sessionLabels(sc, out)
	out = portRE.ReplaceAllString(out, "/127.0.0.1:<port>")
	switch word {
	case "srvr", "stat":
		return normaliseStat(out)
	case "conf":
		return normaliseKeyValues(out, "=", map[string]bool{"tickTime": true, "maxClientCnxns": true,
			"minSessionTimeout": true, "maxSessionTimeout": true, "secureClientPort": true,
			"clientPortListenBacklog": true, "serverId": true})
	case "cons":
		return normaliseCons(out)
	case "envi":
		return normaliseEnvi(out)
	case "mntr":
		return normaliseMntr(out)
	case "wchc", "wchp":
		return sortBlocks(out)
	case "dirs":
		return numRE.ReplaceAllString(out, "<n>")
	case "dump":
		return normaliseDump(out)
	}
	return out // ruok, isro, wchs, crst, srst: exact
}

// sessionLabels replaces the hex session ids of the scenario's sessions by their labels.
func sessionLabels(sc *Scenario, out string) string {
	for id, label := range sc.T.Sessions() {
		out = strings.ReplaceAll(out, fmt.Sprintf("0x%x", id), "<"+label+">")
	}
	return out
}

// normaliseVersion checks the version line and replaces version and build date (which
// differ between builds and between ZooKeeper and paddock; go-zk's FLWSrvr date format is
// checked separately).
func normaliseVersion(line string) (string, bool) {
	m := versionRE.FindStringSubmatch(line)
	if m == nil {
		return line, false
	}
	return m[1] + "<version>, built on <date>", true
}

// normaliseStat: srvr and stat. Counters, latencies (a float with up to 4 decimals in
// ZooKeeper), the zxid, the node count (other scenarios' nodes) and per-client counters vary;
// Connections and Outstanding are kept: the suite knows how many connections it has open.
func normaliseStat(out string) string {
	lines := Lines(out)
	var clients []string
	var b []string
	for i, l := range lines {
		switch {
		case i == 0:
			l, _ = normaliseVersion(l)
		case strings.HasPrefix(l, " /"):
			clients = append(clients, clientCountersRE.ReplaceAllString(opsRE.ReplaceAllString(l, "[<ops>]"), "=<n>"))
			continue
		case latencyRE.MatchString(l):
			l = "Latency min/avg/max: <min>/<avg>/<max>"
		case strings.HasPrefix(l, "Received: "), strings.HasPrefix(l, "Sent: "), strings.HasPrefix(l, "Node count: "):
			l = numRE.ReplaceAllString(l, "<n>")
		case strings.HasPrefix(l, "Zxid: 0x"):
			l = hexRE.ReplaceAllString(l, "0x<zxid>")
		}
		if l == "" && len(clients) > 0 {
			b = append(b, SortedLines(clients)...)
			clients = nil
		}
		b = append(b, l)
	}
	return strings.Join(b, "\n")
}

// normaliseKeyValues keeps keys in order and the values of keep, replacing the rest.
func normaliseKeyValues(out, sep string, keep map[string]bool) string {
	lines := Lines(out)
	for i, l := range lines {
		k, _, ok := strings.Cut(l, sep)
		if ok && !keep[k] {
			lines[i] = k + sep + "<value>"
		}
	}
	return strings.Join(lines, "\n")
}

var consFieldRE = regexp.MustCompile(`(\w+)=([^,)]*)`)

// normaliseCons: one line per connection, in hash order (sorted here). sid, lop, to and
// lcxid are kept (the suite knows them); counters, times, zxids and latencies are replaced.
func normaliseCons(out string) string {
	var lines []string
	for _, l := range Lines(out) {
		if l == "" {
			continue
		}
		head, fields, _ := strings.Cut(l, "(")
		head = opsRE.ReplaceAllString(head, "[<ops>]")
		fields = consFieldRE.ReplaceAllStringFunc(fields, func(kv string) string {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "sid", "lop", "to", "lcxid":
				return kv
			case "est", "lresp":
				if ms, err := strconv.ParseInt(v, 10, 64); err != nil || !plausibleMillis(ms) {
					return k + "=IMPLAUSIBLE(" + v + ")"
				}
			}
			return k + "=<" + k + ">"
		})
		lines = append(lines, head+"("+fields)
	}
	return strings.Join(SortedLines(lines), "\n") + "\n(blank lines: " + strconv.Itoa(strings.Count(out, "\n\n")) + ")"
}

// plausibleMillis accepts a millisecond time within a day of now, or a small duration
// (lresp is a time stamp in ZooKeeper's cons but some servers print it relative).
func plausibleMillis(ms int64) bool {
	now := time.Now().UnixMilli()
	return (ms > now-86400000 && ms < now+86400000) || (ms >= 0 && ms < 86400000)
}

// normaliseEnvi keeps "Environment:" and the key order; the java.* keys are dropped (paddock
// has no JVM: its values, and whether it prints them, legitimately differ) and every value is
// replaced, except that zookeeper.version must look like ZooKeeper's (kazoo parses it).
func normaliseEnvi(out string) string {
	var b []string
	for _, l := range Lines(out) {
		k, _, ok := strings.Cut(l, "=")
		switch {
		case !ok:
			b = append(b, l)
		case strings.HasPrefix(k, "java."):
		case k == "zookeeper.version":
			v, good := normaliseVersion(l)
			if !good {
				v = "BAD VERSION LINE: " + l
			}
			b = append(b, v)
		default:
			b = append(b, k+"=<value>")
		}
	}
	return strings.Join(b, "\n")
}

// mntrKeys are the mntr keys monitoring tools read. ZooKeeper prints hundreds more (its
// metrics library's counters and summaries, in hash order); those are not compared.
// Values: zk_server_state exactly, the ephemeral and watch counts exactly (the suite knows
// them), the rest as int or float.
var mntrKeys = []string{"zk_version", "zk_server_state", "zk_avg_latency", "zk_max_latency",
	"zk_min_latency", "zk_packets_received", "zk_packets_sent", "zk_num_alive_connections",
	"zk_outstanding_requests", "zk_znode_count", "zk_watch_count", "zk_ephemerals_count",
	"zk_approximate_data_size", "zk_open_file_descriptor_count", "zk_max_file_descriptor_count",
	"zk_global_sessions", "zk_local_sessions", "zk_uptime"}

var intRE, floatRE = regexp.MustCompile(`^-?\d+$`), regexp.MustCompile(`^-?\d+\.\d+$`)

func normaliseMntr(out string) string {
	values := map[string]string{}
	var first []string
	for i, l := range Lines(out) {
		k, v, _ := strings.Cut(l, "\t")
		values[k] = v
		if i < 2 {
			first = append(first, k)
		}
	}
	b := []string{"first keys: " + strings.Join(first, " ")}
	for _, k := range mntrKeys {
		v, ok := values[k]
		switch {
		case !ok:
			v = "MISSING"
		case k == "zk_version":
			if _, good := normaliseVersion(k + "\t" + v); good {
				v = "<version>"
			}
		case k == "zk_server_state", k == "zk_ephemerals_count", k == "zk_watch_count":
		case intRE.MatchString(v):
			v = "<int>"
		case floatRE.MatchString(v):
			v = "<float>"
		}
		b = append(b, k+"\t"+v)
	}
	return strings.Join(b, "\n")
}

// sortBlocks sorts the tab-indented lines under each header (wchc, wchp): ZooKeeper prints
// them in hash order. Blocks are sorted too.
func sortBlocks(out string) string {
	var blocks []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			blocks = append(blocks, cur[0]+"\n"+strings.Join(SortedLines(cur[1:]), "\n"))
		}
		cur = nil
	}
	for _, l := range Lines(out) {
		if !strings.HasPrefix(l, "\t") {
			flush()
		}
		if l != "" {
			cur = append(cur, l)
		}
	}
	flush()
	sort.Strings(blocks)
	return strings.Join(blocks, "\n")
}

// normaliseDump keeps the section headers and the sessions, ephemerals and connections
// (sorted within each section); the expiry buckets depend on timing, so their header lines
// and counts are dropped.
func normaliseDump(out string) string {
	var b, section []string
	flush := func() { b = append(b, SortedLines(section)...); section = nil }
	for _, l := range Lines(out) {
		switch {
		case dateRE.MatchString(l):
		case strings.HasPrefix(l, "\t"):
			section = append(section, l)
		default:
			flush()
			b = append(b, countRE.ReplaceAllString(l, "(<n>)"))
		}
	}
	flush()
	return strings.Join(b, "\n")
}
