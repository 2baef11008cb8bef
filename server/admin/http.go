package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler returns the admin HTTP endpoints, for the server to serve on the admin port:
//
//	GET /commands          links to every command, as ZooKeeper's AdminServer lists them
//	GET /commands/<name>   the command's JSON (names and aliases as ZooKeeper's AdminServer);
//	                       404 with {"command": name, "error": "Unknown command: name"} otherwise
//	GET /metrics           Prometheus exposition
//
// The whitelist does not apply here, as in ZooKeeper. Other methods get 405.
func (a *Admin) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /commands", a.listCommands)
	mux.HandleFunc("GET /commands/{name...}", a.runCommand)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.prom.reg, promhttp.HandlerOpts{}))
	return mux
}

func (a *Admin) listCommands(w http.ResponseWriter, _ *http.Request) {
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.names[0])
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "<a href=\"/commands/%s\">%s</a>\n<br/>\n", n, n)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// runCommand answers in ZooKeeper's CommandResponse shape: the command's fields, then
// "command" (the primary name, whichever alias was asked for, as ZooKeeper answers) and
// "error" (null on success). ZooKeeper 3.8 answers an unknown name with status 200; paddock
// with 404, as ZooKeeper 3.9 does.
func (a *Admin) runCommand(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" {
		a.listCommands(w, r)
		return
	}
	c, ok := byName[name]
	if !ok {
		writeJSON(w, http.StatusNotFound, object{{"command", name}, {"error", "Unknown command: " + name}})
		return
	}
	writeJSON(w, http.StatusOK, append(c.json(a), field{"command", c.names[0]}, field{"error", nil}))
}

func writeJSON(w http.ResponseWriter, status int, o object) {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil { // only a NaN or a broken Marshaler gets here
		status = http.StatusInternalServerError
		b, _ = json.Marshal(object{{"error", err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// object is a JSON object that keeps its keys in order, as ZooKeeper's LinkedHashMaps do.
type object []field

type field struct {
	key string
	val any
}

func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.key)
		v, err := json.Marshal(f.val)
		if err != nil {
			return nil, fmt.Errorf("admin: json key %q: %w", f.key, err)
		}
		b = append(append(b, ':'), v...)
	}
	return append(b, '}'), nil
}

func (a *Admin) emptyJSON() object { return object{} }

func (a *Admin) isroJSON() object {
	return object{{"read_only", a.src.Stats().Mode == ModeReadOnly}}
}

// srvrJSON is ZooKeeper's server_stats response without the fields paddock has no figure
// for (client_response sizes, provider_null, auth_failed_count, non_mtls counts).
func (a *Admin) srvrJSON() object {
	st := a.src.Stats()
	c := a.conf()
	l := a.latency.snapshot()
	return object{
		{"version", a.version},
		{"read_only", st.Mode == ModeReadOnly},
		{"server_stats", object{
			{"packets_sent", st.PacketsSent},
			{"packets_received", st.PacketsReceived},
			{"fsync_threshold_exceed_count", a.fsyncSlow.load()},
			{"data_dir_size", c.dataDirSize},
			{"log_dir_size", c.dataLogSize},
			{"server_state", st.Mode},
			{"last_processed_zxid", st.Zxid},
			{"outstanding_requests", st.Outstanding},
			{"avg_latency", l.avg},
			{"max_latency", l.max},
			{"min_latency", l.min},
			{"num_alive_client_connections", st.Connections},
			{"uptime", a.uptime().Milliseconds()},
		}},
		{"node_count", st.Nodes},
	}
}

func (a *Admin) statJSON() object {
	return append(a.srvrJSON(),
		field{"connections", connectionsJSON(a.src.Connections(), true)},
		field{"secure_connections", []any{}})
}

func (a *Admin) consJSON() object {
	return object{
		{"connections", connectionsJSON(a.src.Connections(), false)},
		{"secure_connections", []any{}},
	}
}

// connectionsJSON is ServerCnxn.getConnectionInfo per connection. interest_ops is always 1,
// as in cons.
func connectionsJSON(cs []Connection, brief bool) []object {
	out := make([]object, 0, len(cs))
	for _, c := range sortConnections(cs) {
		o := object{
			{"remote_socket_address", javaHostPort(c.Remote)},
			{"interest_ops", 1},
			{"outstanding_requests", c.Queued},
			{"packets_received", c.Received},
			{"packets_sent", c.Sent},
		}
		if !brief {
			lop := c.LastOp
			if lop == "" {
				lop = "NA"
			}
			o = append(o,
				field{"session_id", c.SessionID},
				field{"last_operation", lop},
				field{"established", javaMillis(c.Established)},
				field{"session_timeout", c.Timeout.Milliseconds()},
				field{"last_cxid", c.LastCxid},
				field{"last_zxid", c.LastZxid},
				field{"last_response_time", javaMillis(c.LastResponse)},
				field{"last_latency", c.LastLatency.Milliseconds()},
				field{"min_latency", c.MinLatency.Milliseconds()},
				field{"avg_latency", c.AvgLatency.Milliseconds()},
				field{"max_latency", c.MaxLatency.Milliseconds()})
		}
		out = append(out, o)
	}
	return out
}

func (a *Admin) crstJSON() object {
	a.src.ResetConnectionStats()
	return object{}
}

func (a *Admin) srstJSON() object {
	a.resetStats()
	return object{}
}

func (a *Admin) confJSON() object {
	c := a.conf()
	return object{
		{"client_port", c.ClientPort},
		{"data_dir", c.dataDir},
		{"data_log_dir", c.dataLogDir},
		{"tick_time", c.TickTime.Milliseconds()},
		{"max_client_cnxns", c.MaxClientCnxns},
		{"min_session_timeout", c.MinSessionTimeout.Milliseconds()},
		{"max_session_timeout", c.MaxSessionTimeout.Milliseconds()},
		{"server_id", c.ServerID},
		{"client_port_listen_backlog", -1},
	}
}

func (a *Admin) dirsJSON() object {
	c := a.conf()
	return object{{"datadir_size", c.dataDirSize}, {"logdir_size", c.dataLogSize}}
}

// dumpJSON keys expiry buckets by Unix milliseconds (ZooKeeper uses its monotonic clock's
// milliseconds, whose origin is arbitrary) and sessions by decimal id, as ZooKeeper does.
func (a *Admin) dumpJSON() object {
	sessions := a.src.Sessions()
	expiry := object{}
	for _, bk := range sessionBuckets(sessions) {
		expiry = append(expiry, field{strconv.FormatInt(javaMillis(bk.expires), 10), bk.ids})
	}
	ephemerals := object{}
	for _, s := range ephemeralOwners(sessions) {
		ephemerals = append(ephemerals, field{strconv.FormatInt(s.ID, 10), s.Ephemerals})
	}
	return object{{"expiry_time_to_session_ids", expiry}, {"session_id_to_ephemeral_paths", ephemerals}}
}

func (a *Admin) enviJSON() object { return a.environment() }
func (a *Admin) mntrJSON() object { return a.monitor() }

func (a *Admin) wchsJSON() object {
	g := groupWatches(a.src.Watches())
	return object{
		{"num_connections", len(g.bySession)},
		{"num_paths", len(g.byPath)},
		{"num_total_watches", g.total},
	}
}

func (a *Admin) wchcJSON() object {
	o := object{}
	for _, s := range groupWatches(a.src.Watches()).bySession {
		o = append(o, field{strconv.FormatInt(s.id, 10), s.paths})
	}
	return object{{"session_id_to_watched_paths", o}}
}

func (a *Admin) wchpJSON() object {
	o := object{}
	for _, p := range groupWatches(a.src.Watches()).byPath {
		o = append(o, field{p.path, p.ids})
	}
	return object{{"path_to_session_ids", o}}
}
