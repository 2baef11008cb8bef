package admin

import (
	"encoding/binary"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The golden answers below were written from Apache ZooKeeper 3.8's answers to the same
// words on the same state (see newFixtureSource), differing only where admin says it
// differs on purpose (build date form, sorted order, lresp clock, interest ops).
func TestWordsGolden(t *testing.T) {
	a, _, dir := newFixture(t, "*")
	const version = "Zookeeper version: 3.8.4-paddock, built on 11/21/2026 08:36 GMT\n"
	const stats = "Latency min/avg/max: 0/3.375/14\nReceived: 18\nSent: 17\nConnections: 3\n" +
		"Outstanding: 0\nZxid: 0x7\nMode: standalone\nNode count: 10\n"
	tests := []struct{ word, want string }{
		{"ruok", "imok"},
		{"isro", "rw"},
		{"srvr", version + stats},
		{"stat", version + "Clients:\n" +
			" /127.0.0.1:53618[1](queued=0,recved=11,sent=11)\n" +
			" /127.0.0.1:53622[1](queued=0,recved=5,sent=5)\n" +
			" /127.0.0.1:53668[1](queued=0,recved=1,sent=0)\n" +
			"\n" + stats},
		{"cons", "" +
			" /127.0.0.1:53618[1](queued=0,recved=11,sent=11,sid=0x10000038eec0000,lop=PING,est=1795250282133,to=10000,lcxid=0x9,lzxid=0x7,lresp=1795250285897,llat=1,minlat=0,avglat=4,maxlat=14)\n" +
			" /127.0.0.1:53622[1](queued=0,recved=5,sent=5,sid=0x10000038eec0001,lop=GETD,est=1795250282167,to=15000,lcxid=0x4,lzxid=0x7,lresp=1795250286129,llat=0,minlat=0,avglat=0,maxlat=2)\n" +
			" /127.0.0.1:53668[1](queued=0,recved=1,sent=0)\n" +
			"\n"},
		{"conf", "clientPort=27311\nsecureClientPort=-1\n" +
			"dataDir=" + dir + "\ndataDirSize=123\ndataLogDir=" + dir + "\ndataLogSize=123\n" +
			"tickTime=2000\nmaxClientCnxns=60\nminSessionTimeout=4000\nmaxSessionTimeout=40000\n" +
			"clientPortListenBacklog=-1\nserverId=1\n"},
		{"dirs", "datadir_size: 123\nlogdir_size: 123\n"},
		{"dump", "SessionTracker dump:\n" +
			"Session Sets (2)/(3):\n" +
			"2 expire at Sat Nov 21 08:38:15 UTC 2026:\n" +
			"\t0x10000038eec0000\n" +
			"\t0x10000038eec0002\n" +
			"1 expire at Sat Nov 21 08:38:17 UTC 2026:\n" +
			"\t0x10000038eec0001\n" +
			"ephemeral nodes dump:\n" +
			"Sessions with Ephemerals (2):\n" +
			"0x10000038eec0000:\n" +
			"\t/app/e1\n" +
			"\t/app/e2\n" +
			"0x10000038eec0001:\n" +
			"\t/app/s-0000000003\n" +
			"Connections dump:\n" +
			"Connections Sets (2)/(3):\n" +
			"2 expire at Sat Nov 21 08:38:19 UTC 2026:\n" +
			"\tip: /127.0.0.1:53618 sessionId: 0x10000038eec0000\n" +
			"\tip: /127.0.0.1:53622 sessionId: 0x10000038eec0001\n" +
			"1 expire at Sat Nov 21 08:38:20 UTC 2026:\n" +
			"\tip: /127.0.0.1:53668 sessionId: 0x0\n"},
		{"wchs", "2 connections watching 3 paths\nTotal watches:4\n"},
		{"wchc", "0x10000038eec0000\n\t/app/a\n0x10000038eec0001\n\t/app\n\t/app/a\n\t/nope\n\n"},
		{"wchp", "/app\n\t0x10000038eec0001\n/app/a\n\t0x10000038eec0000\n\t0x10000038eec0001\n/nope\n\t0x10000038eec0001\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			if got := serve(t, a, tt.word); got != tt.want {
				t.Errorf("%s:\n got %q\nwant %q", tt.word, got, tt.want)
			}
		})
	}
}

func TestReadOnlyMode(t *testing.T) {
	a, src, _ := newFixture(t, "*")
	src.stats.Mode = ModeReadOnly
	if got := serve(t, a, "isro"); got != "ro" {
		t.Errorf("isro = %q, want ro", got)
	}
	// StatCommand adds this line for a ReadOnlyZooKeeperServer.
	want := "built on 11/21/2026 08:36 GMT\nREAD-ONLY mode; serving only read-only clients\nLatency"
	if got := serve(t, a, "srvr"); !strings.Contains(got, want) || !strings.Contains(got, "Mode: read-only\n") {
		t.Errorf("srvr in read-only mode:\n%s", got)
	}
	// A member that serves no client at all (no leader, not read-only): IsroCommand's
	// "null", while srvr and the other words that need a server say it does not serve.
	src.stats.Mode, src.stats.NotServing = ModeFollower, true
	if got := serve(t, a, "isro"); got != "null" {
		t.Errorf("isro on a member that does not serve = %q, want null", got)
	}
	if got := serve(t, a, "srvr"); got != notServing+"\n" {
		t.Errorf("srvr on a member that does not serve = %q", got)
	}
}

func TestResets(t *testing.T) {
	a, src, _ := newFixture(t, "*")
	a.ObserveFsync(2e9)
	if got := serve(t, a, "srst"); got != "Server stats reset.\n" {
		t.Errorf("srst = %q", got)
	}
	if src.resets != 1 {
		t.Errorf("srst called ResetStats %d times, want 1", src.resets)
	}
	srvr := serve(t, a, "srvr")
	if !strings.Contains(srvr, "Latency min/avg/max: 0/0.0/0\nReceived: 0\nSent: 0\n") {
		t.Errorf("srvr after srst:\n%s", srvr)
	}
	if a.fsync.snapshot().count != 0 || a.fsyncSlow.load() != 0 {
		t.Error("srst left fsync figures")
	}

	if got := serve(t, a, "crst"); got != "Connection stats reset.\n" {
		t.Errorf("crst = %q", got)
	}
	if src.connResets != 1 {
		t.Errorf("crst called ResetConnectionStats %d times, want 1", src.connResets)
	}
	// What ZooKeeper 3.8 prints for a connection after crst: lop=NA, no lcxid, lzxid -1.
	want := " /127.0.0.1:53618[1](queued=0,recved=0,sent=0,sid=0x10000038eec0000,lop=NA," +
		"est=1795250282133,to=10000,lzxid=0xffffffffffffffff,lresp=0,llat=0,minlat=0,avglat=0,maxlat=0)\n"
	if got := serve(t, a, "cons"); !strings.HasPrefix(got, want) {
		t.Errorf("cons after crst:\n got %q\nwant prefix %q", got, want)
	}
}

func TestMntr(t *testing.T) {
	a, _, _ := newFixture(t, "*")
	out := serve(t, a, "mntr")
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("mntr does not end in a newline: %q", out)
	}
	line := regexp.MustCompile(`^zk_[a-z_]+\t[^\t\n]+$`)
	got := map[string]string{}
	var keys []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !line.MatchString(l) {
			t.Errorf("mntr line %q is not zk_<key>\\t<value>", l)
			continue
		}
		k, v, _ := strings.Cut(l, "\t")
		keys = append(keys, k)
		got[k] = v
	}
	if len(keys) < 2 || keys[0] != "zk_version" || keys[1] != "zk_server_state" {
		t.Errorf("mntr starts with %v, want zk_version, zk_server_state", keys[:min(2, len(keys))])
	}
	want := map[string]string{
		"zk_version":               "3.8.4-paddock, built on 11/21/2026 08:36 GMT",
		"zk_server_state":          "standalone",
		"zk_avg_latency":           "3.375",
		"zk_min_latency":           "0",
		"zk_max_latency":           "14",
		"zk_packets_received":      "18",
		"zk_packets_sent":          "17",
		"zk_num_alive_connections": "3",
		"zk_outstanding_requests":  "0",
		"zk_znode_count":           "10",
		"zk_watch_count":           "5",
		"zk_ephemerals_count":      "3",
		"zk_approximate_data_size": "88",
		"zk_global_sessions":       "3",
		"zk_avg_readlatency":       "1.5", // ping 0, getData 1, exists 3, getChildren2 2
		"zk_cnt_readlatency":       "4",
		"zk_avg_updatelatency":     "5.25", // create 2, create 3, setData 2, createSession 14
		"zk_max_updatelatency":     "14",
		"zk_sum_updatelatency":     "21",
		"zk_avg_fsynctime":         "0.0",
		"zk_cnt_fsynctime":         "0",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	limits := []string{"zk_sessionless_connections_expired\t2", "zk_frames_rejected\t1",
		"zk_large_responses_rejected\t4", "zk_connection_drop_count\t3", "zk_request_throttle_wait_count\t7",
		"zk_connection_throttle_wait_count\t5", "zk_unsuccessful_handshake\t6", "zk_queued_bytes\t4096", "zk_readonly_sessions_refused\t8",
		"zk_quota_refused_count\t2", "zk_quota_exceeded_count\t6", "zk_audit_lines_written\t11", "zk_audit_lines_dropped\t1"}
	if !strings.HasSuffix(out, strings.Join(limits, "\n")+"\n") {
		t.Errorf("mntr does not end with the limit, quota and audit counters %q:\n%s", limits, out)
	}
	if _, err := strconv.ParseInt(got["zk_uptime"], 10, 64); err != nil {
		t.Errorf("zk_uptime = %q: %v", got["zk_uptime"], err)
	}
	if runtime.GOOS == "linux" {
		if n, err := strconv.Atoi(got["zk_open_file_descriptor_count"]); err != nil || n < 3 {
			t.Errorf("zk_open_file_descriptor_count = %q", got["zk_open_file_descriptor_count"])
		}
		if got["zk_max_file_descriptor_count"] == "" {
			t.Error("zk_max_file_descriptor_count missing")
		}
	}
}

func TestEnvi(t *testing.T) {
	a, _, _ := newFixture(t, "*")
	out := serve(t, a, "envi")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "Environment:" {
		t.Fatalf("envi starts with %q", lines[0])
	}
	// Environment.list's keys, in its order.
	wantKeys := []string{"zookeeper.version", "host.name", "java.version", "java.vendor", "java.home",
		"java.class.path", "java.library.path", "java.io.tmpdir", "java.compiler", "os.name", "os.arch",
		"os.version", "user.name", "user.home", "user.dir", "os.memory.free", "os.memory.max", "os.memory.total"}
	got := map[string]string{}
	for i, l := range lines[1:] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || i >= len(wantKeys) || k != wantKeys[i] {
			t.Errorf("envi line %d = %q, want key %q", i+1, l, wantKeys[min(i, len(wantKeys)-1)])
		}
		got[k] = v
	}
	if len(lines)-1 != len(wantKeys) {
		t.Errorf("envi has %d keys, want %d", len(lines)-1, len(wantKeys))
	}
	if got["java.version"] != runtime.Version() {
		t.Errorf("java.version = %q, want %q", got["java.version"], runtime.Version())
	}
	for _, k := range []string{"os.memory.free", "os.memory.max", "os.memory.total"} {
		if !regexp.MustCompile(`^\d+MB$`).MatchString(got[k]) {
			t.Errorf("%s = %q, want <n>MB", k, got[k])
		}
	}
	// kazoo's server_version(): split lines on the first "=", strip, take
	// ([\d\.]*) of zookeeper.version and int() each dotted part.
	v := regexp.MustCompile(`^([\d.]*)`).FindString(strings.TrimSpace(got["zookeeper.version"]))
	var parts []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("kazoo would fail to parse zookeeper.version=%q: %v", got["zookeeper.version"], err)
		}
		parts = append(parts, n)
	}
	if len(parts) != 3 || parts[0] != 3 || parts[1] != 8 {
		t.Errorf("kazoo would see version %v, want (3, 8, x)", parts)
	}
}

func TestWhitelist(t *testing.T) {
	const refusal = " is not executed because it is not in the whitelist.\n"
	tests := []struct {
		name     string
		list     []string
		readOnly bool
		allowed  []string
		refused  []string
	}{
		{"default", []string{"srvr"}, false, []string{"srvr"}, []string{"ruok", "stat", "isro", "mntr", "crst"}},
		{"empty still allows srvr", nil, false, []string{"srvr"}, []string{"ruok"}},
		{"read-only mode adds isro", nil, true, []string{"srvr", "isro"}, []string{"ruok"}},
		{"entries are trimmed", []string{" ruok", "stat "}, false, []string{"ruok", "stat", "srvr"}, []string{"cons"}},
		{"star allows all", []string{"*"}, false, allWords(), nil},
		{"star among others", []string{"ruok", " * "}, false, allWords(), nil},
		{"unknown names ignored", []string{"gtmk", "hash", "nope"}, false, []string{"srvr"}, []string{"ruok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.FourLetterWords, cfg.ReadOnlyMode = tt.list, tt.readOnly
			a, err := New(cfg, newFixtureSource(), nil)
			must(t, err)
			for _, w := range tt.allowed {
				if got := serve(t, a, w); strings.HasSuffix(got, refusal) {
					t.Errorf("%s refused: %q", w, got)
				}
			}
			for _, w := range tt.refused {
				if got := serve(t, a, w); got != w+refusal {
					t.Errorf("%s = %q, want %q", w, got, w+refusal)
				}
			}
		})
	}
}

func TestServeRefusesNonWords(t *testing.T) {
	a, _, _ := newFixture(t, "*")
	for _, w := range []string{"", "gtmk", "stmk", "RUOK", "ruok\n"} {
		var b bytesWriter
		if err := a.Serve(&b, w); err == nil || len(b) != 0 {
			t.Errorf("Serve(%q) = %v, wrote %q; want an error and nothing written", w, err, b)
		}
	}
}

func allWords() []string {
	var ws []string
	for _, c := range commands {
		ws = append(ws, c.word)
	}
	return ws
}

func TestIsFourLetterWord(t *testing.T) {
	// The int values ZK-PROTOCOL.md §3 lists.
	codes := map[string]uint32{
		"ruok": 0x72756f6b, "srvr": 0x73727672, "stat": 0x73746174, "mntr": 0x6d6e7472,
		"conf": 0x636f6e66, "cons": 0x636f6e73, "crst": 0x63727374, "dump": 0x64756d70,
		"envi": 0x656e7669, "dirs": 0x64697273, "isro": 0x6973726f, "srst": 0x73727374,
		"wchs": 0x77636873, "wchc": 0x77636863, "wchp": 0x77636870,
	}
	if len(codes) != len(commands) {
		t.Fatalf("%d codes listed, %d commands", len(codes), len(commands))
	}
	for w, c := range codes {
		if got, ok := IsFourLetterWord(int32(c)); !ok || got != w {
			t.Errorf("IsFourLetterWord(%#x) = %q, %v; want %q", c, got, ok, w)
		}
	}
	notWords := []int32{0, 16, 44, 1 << 20, -1,
		int32(binary.BigEndian.Uint32([]byte("gtmk"))), int32(binary.BigEndian.Uint32([]byte("hash"))),
		-786947, // telnet close 0xfff4fffd
	}
	for _, c := range notWords {
		if w, ok := IsFourLetterWord(c); ok {
			t.Errorf("IsFourLetterWord(%#x) = %q, true; want false", uint32(c), w)
		}
	}
}

// Every word must answer zero data without panicking, in ZooKeeper's shape.
func TestWordsOnEmptySource(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FourLetterWords = []string{"*"}
	a, err := New(cfg, &fakeSource{}, nil)
	must(t, err)
	want := map[string]string{
		"cons": "\n",
		"wchc": "\n",
		"wchp": "\n",
		"wchs": "0 connections watching 0 paths\nTotal watches:0\n",
		"dirs": "datadir_size: 0\nlogdir_size: 0\n",
		"dump": "SessionTracker dump:\nSession Sets (0)/(0):\nephemeral nodes dump:\nSessions with Ephemerals (0):\n" +
			"Connections dump:\nConnections Sets (0)/(0):\n",
	}
	for _, c := range commands {
		got := serve(t, a, c.word)
		if w, ok := want[c.word]; ok && got != w {
			t.Errorf("%s on empty source = %q, want %q", c.word, got, w)
		}
	}
	srvr := serve(t, a, "srvr")
	if !strings.Contains(srvr, "Latency min/avg/max: 0/0.0/0\nReceived: 0\n") || !strings.Contains(srvr, "Zxid: 0x0\n") {
		t.Errorf("srvr on empty source:\n%s", srvr)
	}
}
