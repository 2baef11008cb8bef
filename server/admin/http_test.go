package admin

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/paddock/paddock/server/wire"
)

func get(t *testing.T, h http.Handler, method, path string) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	must(t, err)
	return res, body
}

// jsonKeys returns the top-level keys of a JSON object in document order.
func jsonKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", body)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		must(t, err)
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		must(t, dec.Decode(&skip))
	}
	return keys
}

func TestHTTPCommands(t *testing.T) {
	a, _, _ := newFixture(t) // the whitelist must not matter over HTTP
	h := a.Handler()
	// The keys of ZooKeeper 3.8's responses for each command, minus those paddock has no
	// figure for; "command" and "error" always come last.
	tests := []struct {
		names []string
		keys  []string
	}{
		{[]string{"ruok"}, nil},
		{[]string{"server_stats", "srvr"}, []string{"version", "read_only", "server_stats", "node_count"}},
		{[]string{"stats", "stat"}, []string{"version", "read_only", "server_stats", "node_count", "connections", "secure_connections"}},
		{[]string{"configuration", "conf", "config"}, []string{"client_port", "data_dir", "data_log_dir", "tick_time",
			"max_client_cnxns", "min_session_timeout", "max_session_timeout", "server_id", "client_port_listen_backlog"}},
		{[]string{"connections", "cons"}, []string{"connections", "secure_connections"}},
		{[]string{"connection_stat_reset", "crst"}, nil},
		{[]string{"dump"}, []string{"expiry_time_to_session_ids", "session_id_to_ephemeral_paths"}},
		{[]string{"environment", "env", "envi"}, nil}, // checked by TestEnvi
		{[]string{"monitor", "mntr"}, nil},            // checked below
		{[]string{"watch_summary", "wchs"}, []string{"num_connections", "num_paths", "num_total_watches"}},
		{[]string{"watches", "wchc"}, []string{"session_id_to_watched_paths"}},
		{[]string{"watches_by_path", "wchp"}, []string{"path_to_session_ids"}},
		{[]string{"dirs"}, []string{"datadir_size", "logdir_size"}},
		{[]string{"is_read_only", "isro"}, []string{"read_only"}},
		{[]string{"stat_reset", "srst"}, nil},
	}
	for _, tt := range tests {
		for _, name := range tt.names {
			t.Run(name, func(t *testing.T) {
				res, body := get(t, h, "GET", "/commands/"+name)
				if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("status %d, type %q: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
				}
				keys := jsonKeys(t, body)
				if n := len(keys); n < 2 || keys[n-2] != "command" || keys[n-1] != "error" {
					t.Fatalf("keys %v do not end with command, error", keys)
				}
				if tt.keys != nil && !slices.Equal(keys[:len(keys)-2], tt.keys) {
					t.Errorf("keys %v, want %v", keys[:len(keys)-2], tt.keys)
				}
				var m map[string]any
				must(t, json.Unmarshal(body, &m))
				if m["command"] != tt.names[0] || m["error"] != nil {
					t.Errorf("command = %v, error = %v; want %q, null", m["command"], m["error"], tt.names[0])
				}
			})
		}
	}

}

func TestHTTPCommandValues(t *testing.T) {
	a, _, dir := newFixture(t)
	h := a.Handler()
	var srvr struct {
		Version     string         `json:"version"`
		ServerStats map[string]any `json:"server_stats"`
		NodeCount   int            `json:"node_count"`
	}
	_, body := get(t, h, "GET", "/commands/srvr")
	must(t, json.Unmarshal(body, &srvr))
	if srvr.Version != "3.8.4-paddock, built on 11/21/2026 08:36 GMT" || srvr.NodeCount != 10 ||
		srvr.ServerStats["avg_latency"] != 3.375 || srvr.ServerStats["last_processed_zxid"] != 7.0 ||
		srvr.ServerStats["data_dir_size"] != 123.0 {
		t.Errorf("server_stats = %s", body)
	}

	var cons struct {
		Connections []map[string]any `json:"connections"`
	}
	_, body = get(t, h, "GET", "/commands/connections")
	must(t, json.Unmarshal(body, &cons))
	c := cons.Connections[0]
	if len(cons.Connections) != 3 || c["remote_socket_address"] != "127.0.0.1:53618" ||
		c["session_id"] != float64(sid0) || c["last_operation"] != "PING" || c["established"] != 1795250282133.0 {
		t.Errorf("connections = %s", body)
	}

	_, body = get(t, h, "GET", "/commands/dump")
	wantDump := `"expiry_time_to_session_ids": {
    "1795250295000": [
      72057609320660992,
      72057609320660994
    ],
    "1795250297000": [
      72057609320660993
    ]
  },
  "session_id_to_ephemeral_paths": {
    "72057609320660992": [
      "/app/e1",
      "/app/e2"
    ],
    "72057609320660993": [
      "/app/s-0000000003"
    ]
  },`
	if !bytes.Contains(body, []byte(wantDump)) {
		t.Errorf("dump = %s\nwant it to contain %s", body, wantDump)
	}

	_, body = get(t, h, "GET", "/commands/wchp")
	var wchp struct {
		Paths map[string][]int64 `json:"path_to_session_ids"`
	}
	must(t, json.Unmarshal(body, &wchp))
	if !slices.Equal(wchp.Paths["/app/a"], []int64{sid0, sid1}) || len(wchp.Paths) != 3 {
		t.Errorf("wchp = %s", body)
	}

	_, body = get(t, h, "GET", "/commands/conf")
	if !bytes.Contains(body, []byte(`"data_dir": "`+dir+`"`)) || !bytes.Contains(body, []byte(`"tick_time": 2000`)) {
		t.Errorf("conf = %s", body)
	}

	_, body = get(t, h, "GET", "/commands/monitor")
	keys := jsonKeys(t, body)
	if keys[0] != "version" || keys[1] != "server_state" || !slices.Contains(keys, "znode_count") {
		t.Errorf("monitor keys = %v", keys)
	}
}

func TestHTTPErrors(t *testing.T) {
	a, _, _ := newFixture(t)
	h := a.Handler()

	res, body := get(t, h, "GET", "/commands/nosuch")
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown command: status %d", res.StatusCode)
	}
	var m map[string]any
	must(t, json.Unmarshal(body, &m))
	if m["command"] != "nosuch" || m["error"] != "Unknown command: nosuch" {
		t.Errorf("unknown command answered %s", body)
	}
	if res, _ := get(t, h, "GET", "/commands/stats/extra"); res.StatusCode != http.StatusNotFound {
		t.Errorf("/commands/stats/extra: status %d, want 404", res.StatusCode)
	}
	if res, _ := get(t, h, "POST", "/commands/ruok"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", res.StatusCode)
	}
	if res, _ := get(t, h, "GET", "/nothing"); res.StatusCode != http.StatusNotFound {
		t.Errorf("/nothing: status %d, want 404", res.StatusCode)
	}
}

func TestHTTPListsCommands(t *testing.T) {
	a, _, _ := newFixture(t)
	for _, path := range []string{"/commands", "/commands/"} {
		res, body := get(t, a.Handler(), "GET", path)
		if res.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, res.StatusCode)
		}
		for _, c := range commands {
			link := `<a href="/commands/` + c.names[0] + `">` + c.names[0] + "</a>\n<br/>\n"
			if !bytes.Contains(body, []byte(link)) {
				t.Errorf("%s lacks %q", path, link)
			}
		}
	}
}

// Every JSON command must answer an empty Source without panicking.
func TestHTTPOnEmptySource(t *testing.T) {
	a, err := New(DefaultConfig(), &fakeSource{}, nil)
	must(t, err)
	for name := range byName {
		res, body := get(t, a.Handler(), "GET", "/commands/"+name)
		var m map[string]any
		if res.StatusCode != 200 || json.Unmarshal(body, &m) != nil {
			t.Errorf("%s on empty source: status %d: %s", name, res.StatusCode, body)
		}
	}
	res, body := get(t, a.Handler(), "GET", "/metrics")
	if res.StatusCode != 200 {
		t.Errorf("/metrics on empty source: status %d", res.StatusCode)
	}
	// Series appear per opcode on first use only, so an idle server exports none.
	if bytes.Contains(body, []byte("paddock_request_duration_seconds_count")) {
		t.Errorf("request histograms exported before any request:\n%s", body)
	}
}

func TestMetrics(t *testing.T) {
	a, _, _ := newFixture(t)
	a.ObserveRequest(wire.Op(-99), time.Millisecond) // outside the opcode table
	a.ObserveRequest(wire.Op(10), time.Millisecond)  // in the table, but no such opcode
	a.ObserveFsync(200 * time.Microsecond)
	a.ObserveFsync(3 * time.Second) // over the 1 s warning threshold
	res, body := get(t, a.Handler(), "GET", "/metrics")
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}

	req := families["paddock_request_duration_seconds"]
	if req == nil || req.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("paddock_request_duration_seconds missing or not a histogram")
	}
	counts := map[string]uint64{}
	for _, m := range req.Metric {
		counts[m.Label[0].GetValue()] = m.Histogram.GetSampleCount()
	}
	want := map[string]uint64{"ping": 1, "getData": 1, "create": 2, "exists": 1, "getChildren2": 1,
		"setData": 1, "createSession": 1, "unknown": 2}
	if !maps.Equal(counts, want) {
		t.Errorf("request counts by op = %v, want %v", counts, want)
	}
	fsync := families["paddock_fsync_duration_seconds"]
	if fsync == nil || fsync.Metric[0].Histogram.GetSampleCount() != 2 {
		t.Errorf("fsync histogram = %v", fsync)
	}
	for _, name := range []string{"go_goroutines", "process_open_fds"} {
		if families[name] == nil {
			t.Errorf("%s missing", name)
		}
	}

	expected := `
# HELP paddock_znodes Number of znodes.
# TYPE paddock_znodes gauge
paddock_znodes 10
# HELP paddock_sessions Number of live sessions.
# TYPE paddock_sessions gauge
paddock_sessions 3
# HELP paddock_watches Number of registered watches.
# TYPE paddock_watches gauge
paddock_watches 5
# HELP paddock_connections Number of open client connections.
# TYPE paddock_connections gauge
paddock_connections 3
# HELP paddock_packets_received_total Packets received from clients (reset by srst).
# TYPE paddock_packets_received_total counter
paddock_packets_received_total 18
# HELP paddock_fsync_threshold_exceeded_total Fsyncs slower than the fsync warning threshold (reset by srst).
# TYPE paddock_fsync_threshold_exceeded_total counter
paddock_fsync_threshold_exceeded_total 1
# HELP paddock_server_info Always 1; labels give the ZooKeeper version reported and the server state.
# TYPE paddock_server_info gauge
paddock_server_info{state="standalone",version="3.8.4-paddock"} 1
# HELP paddock_connection_drops_total Connections closed because the replies queued for them passed the connection's or the server's limit.
# TYPE paddock_connection_drops_total counter
paddock_connection_drops_total 3
# HELP paddock_request_throttle_waits_total Times a connection stopped reading because the server had its limit of requests outstanding.
# TYPE paddock_request_throttle_waits_total counter
paddock_request_throttle_waits_total 7
# HELP paddock_queued_bytes Bytes of replies and notifications queued for clients and not yet written.
# TYPE paddock_queued_bytes gauge
paddock_queued_bytes 4096
# HELP paddock_readonly_sessions_refused_total Read-only sessions a read-only member refused: its table full, or the client's address keeping as many as it may.
# TYPE paddock_readonly_sessions_refused_total counter
paddock_readonly_sessions_refused_total 8
`
	if err := testutil.GatherAndCompare(a.prom.reg, strings.NewReader(expected),
		"paddock_znodes", "paddock_sessions", "paddock_watches", "paddock_connections",
		"paddock_packets_received_total", "paddock_fsync_threshold_exceeded_total", "paddock_server_info",
		"paddock_connection_drops_total", "paddock_request_throttle_waits_total", "paddock_queued_bytes",
		"paddock_readonly_sessions_refused_total"); err != nil {
		t.Error(err)
	}
}
