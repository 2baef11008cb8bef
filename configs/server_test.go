package configs

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/server"
)

func TestServerKeys(t *testing.T) {
	want := []string{"client_addr", "secure_client_addr", "data_dir", "data_log_dir", "server_id", "tick_time",
		"min_session_timeout", "max_session_timeout", "max_client_cnxns", "max_buffer",
		"max_outstanding", "max_outstanding_per_conn", "max_queued_bytes", "handshake_timeout",
		"super_digest", "sasl_jaas_config", "sasl_jaas_section", "sasl_passwords", "sasl_super_user",
		"enforce_auth", "enforce_auth_schemes", "enforce_auth_known_digests_only", "known_digests_file", "extended_types", "skip_acl", "enforce_quota", "audit_enable", "audit_log_file", "audit_queue",
		"container_check_interval", "container_max_per_minute", "four_letter_words",
		"admin_addr", "admin_pprof", "admin_auth", "snap_count", "snap_retain_count", "purge_interval", "snapshot_receive_floor", "prealloc_size", "profile_contention", "procs", "force_sync",
		"ensemble", "election_timeout", "reconfig_enabled", "read_only_mode", "read_only_max_client_cnxns", "join",
		"quorum_tls", "quorum_plaintext", "quorum_key_store", "quorum_key_store_type", "quorum_key_store_password",
		"quorum_trust_store", "quorum_trust_store_type", "quorum_trust_store_password",
		"quorum_hostname_verification", "quorum_tls_protocol", "quorum_tls_enabled_protocols", "quorum_tls_cipher_suites",
		"client_tls_key_store", "client_tls_key_store_type", "client_tls_key_store_password",
		"client_tls_trust_store", "client_tls_trust_store_type", "client_tls_trust_store_password",
		"client_tls_auth", "client_tls_protocol", "client_tls_enabled_protocols", "client_tls_cipher_suites",
		"x509_super_user"}
	if got := serverSection.keys(); !slices.Equal(got, want) {
		t.Errorf("server keys =\n%q\nwant\n%q", got, want)
	}
}

// Validate's messages must name the keys users write, or errors would point nowhere.
// Every field is set to a value Validate rejects where it can, and every key it names
// must be a key of the section.
func TestValidateNamesSectionKeys(t *testing.T) {
	cfg := server.DefaultConfig()
	rv := reflect.ValueOf(&cfg).Elem()
	for _, f := range serverSection.fields {
		switch v := rv.FieldByIndex(f.index); {
		case v.Kind() == reflect.String:
			v.SetString("bad value")
		case v.CanInt():
			v.SetInt(-1)
		case v.Kind() == reflect.Slice:
			v.Set(reflect.ValueOf([]string{"nope"}))
		}
	}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted every field set to a bad value")
	}
	named := 0
	for line := range strings.SplitSeq(err.Error(), "\n") {
		key := validatedKey(line)
		if _, ok := serverSection.lookup(key); !ok {
			t.Errorf("Validate names %q, which is no server key: %s", key, line)
		}
		named++
	}
	if named < 10 {
		t.Errorf("Validate named only %d keys:\n%v", named, err)
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"ClientAddr":            "client_addr",
		"ServerID":              "server_id",
		"SkipACL":               "skip_acl",
		"ACLCheck":              "acl_check",
		"MaxClientCnxns":        "max_client_cnxns",
		"ContainerMaxPerMinute": "container_max_per_minute",
		"TTL":                   "ttl",
		"Root":                  "root",
		"HTTP2Addr":             "http2_addr",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// The sample users copy must list every key, each with a comment, at its default.
func TestSampleServerYAML(t *testing.T) {
	clearPaddockEnv(t)
	cfg, err := LoadServer(Options{File: "server.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if want := server.DefaultConfig(); !reflect.DeepEqual(cfg, want) {
		t.Errorf("server.yaml loads as\n%+v\nwant the defaults\n%+v", cfg, want)
	}
	data, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for _, key := range serverSection.keys() {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  "+key+":") })
		switch {
		case i < 0:
			t.Errorf("server.yaml lacks server.%s", key)
		case !strings.HasPrefix(lines[i-1], "  # "):
			t.Errorf("server.yaml: server.%s has no comment above it", key)
		}
	}
}

func TestLoadServerDefaults(t *testing.T) {
	clearPaddockEnv(t)
	cfg, err := LoadServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := server.DefaultConfig(); !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadServer() = %+v, want %+v", cfg, want)
	}
}

func TestLoadServerYAML(t *testing.T) {
	clearPaddockEnv(t)
	file := writeFile(t, "paddock.yaml", `
server:
  client_addr: 127.0.0.1:2281
  data_dir: /var/lib/paddock
  data_log_dir: /fast/paddock
  server_id: 7
  tick_time: 500ms
  min_session_timeout: 1s
  max_session_timeout: 30s
  max_client_cnxns: 0
  max_buffer: 4194304
  max_outstanding: 5000
  super_digest: "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
  extended_types: true
  skip_acl: true
  enforce_quota: true
  audit_enable: true
  audit_log_file: /var/log/paddock/audit.log
  container_check_interval: 10s
  container_max_per_minute: 100
  four_letter_words: [ruok, srvr, mntr]
  admin_addr: ""
  snap_count: 1000
  force_sync: true
  ensemble:
    - 7=zk7.example.com:2888:3888;2281
    - "8=zk8.example.com:2888:3888:participant"
    - 9=[fd00::9]:2888:3888:observer;[fd00::9]:2181
  election_timeout: 500ms
  quorum_plaintext: true
`)
	cfg, err := LoadServer(Options{File: file})
	if err != nil {
		t.Fatal(err)
	}
	want := server.Config{
		ClientAddr: "127.0.0.1:2281", DataDir: "/var/lib/paddock", DataLogDir: "/fast/paddock",
		ServerID: 7, TickTime: 500 * time.Millisecond, MinSessionTimeout: time.Second,
		MaxSessionTimeout: 30 * time.Second, MaxClientCnxns: 0, MaxBuffer: 4 << 20,
		MaxOutstanding: 5000, SuperDigest: "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
		ExtendedTypes: true, SkipACL: true, ContainerCheckInterval: 10 * time.Second,
		EnforceQuota: true, AuditEnable: true, AuditLogFile: "/var/log/paddock/audit.log", AuditQueue: 4096,
		ContainerMaxPerMinute: 100, FourLetterWords: []string{"ruok", "srvr", "mntr"},
		AdminAddr: "", SnapCount: 1000, SnapRetainCount: 3, PurgeInterval: time.Hour, ForceSync: true,
		Ensemble: []string{"7=zk7.example.com:2888:3888;2281", "8=zk8.example.com:2888:3888:participant",
			"9=[fd00::9]:2888:3888:observer;[fd00::9]:2181"},
		ElectionTimeout:       500 * time.Millisecond,
		MaxOutstandingPerConn: 100, MaxQueuedBytes: 128 << 20, HandshakeTimeout: 10 * time.Second, // defaults
		QuorumHostnameVerification: true, SnapshotReceiveFloor: 1 << 30, QuorumPlaintext: true,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadServer =\n%+v\nwant\n%+v", cfg, want)
	}
}

func TestLoadServerPrecedence(t *testing.T) {
	file := writeFile(t, "paddock.yaml", "server:\n  client_addr: file:1\n  data_dir: file-dir\n")
	tests := []struct {
		name      string
		file      string
		env       string
		flags     []string
		wantAddr  string
		wantDir   string
		wantAdmin string
	}{
		{"defaults", "", "", nil, "127.0.0.1:2181", "data", "127.0.0.1:8081"},
		{"file over defaults", file, "", nil, "file:1", "file-dir", "127.0.0.1:8081"},
		{"env over file", file, "env:2", nil, "env:2", "file-dir", "127.0.0.1:8081"},
		{"flag over env", file, "env:2", []string{"--client-addr=flag:3"}, "flag:3", "file-dir", "127.0.0.1:8081"},
		{"unset flag keeps file", file, "", []string{"--admin-addr="}, "file:1", "file-dir", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearPaddockEnv(t)
			if tt.env != "" {
				t.Setenv("PADDOCK_SERVER_CLIENT_ADDR", tt.env)
			}
			cfg, err := LoadServer(Options{File: tt.file, Flags: serverFlags(t, tt.flags...)})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ClientAddr != tt.wantAddr || cfg.DataDir != tt.wantDir || cfg.AdminAddr != tt.wantAdmin {
				t.Errorf("client_addr, data_dir, admin_addr = %q, %q, %q; want %q, %q, %q",
					cfg.ClientAddr, cfg.DataDir, cfg.AdminAddr, tt.wantAddr, tt.wantDir, tt.wantAdmin)
			}
		})
	}
}

func TestLoadServerEnvTypes(t *testing.T) {
	clearPaddockEnv(t)
	t.Setenv("PADDOCK_SERVER_ADMIN_ADDR", "") // empty disables the admin server
	t.Setenv("PADDOCK_SERVER_FOUR_LETTER_WORDS", "ruok, srvr,,stat")
	t.Setenv("PADDOCK_SERVER_TICK_TIME", "250ms")
	t.Setenv("PADDOCK_SERVER_MAX_BUFFER", "2048")
	t.Setenv("PADDOCK_SERVER_SKIP_ACL", "TRUE")
	cfg, err := LoadServer(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdminAddr != "" || !slices.Equal(cfg.FourLetterWords, []string{"ruok", "srvr", "stat"}) ||
		cfg.TickTime != 250*time.Millisecond || cfg.MaxBuffer != 2048 || !cfg.SkipACL {
		t.Errorf("LoadServer = %+v", cfg)
	}
}

func TestLoadServerErrors(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string // written to a file when not empty
		env   map[string]string
		flags []string
		want  []string // parts of the error; FILE stands for the file's path
	}{
		{name: "typo key", yaml: "server:\n  tick_tim: 2s\n",
			want: []string{"FILE: unknown key server.tick_tim; did you mean server.tick_time?"}},
		{name: "typo section", yaml: "sever:\n  client_addr: :1\n",
			want: []string{`unknown key sever.client_addr: no section "sever"`, "did you mean server.client_addr?"}},
		{name: "every typo reported", yaml: "server:\n  tick_tim: 2s\n  dta_dir: x\n",
			want: []string{"server.tick_tim", "server.dta_dir; did you mean server.data_dir?"}},
		{name: "key without value", yaml: "server:\n  admin_addr:\n",
			want: []string{"server.admin_addr has no value"}},
		{name: "section not a mapping", yaml: "server: 5\n",
			want: []string{"server = 5: want a mapping of server keys"}},
		{name: "bad duration", yaml: "server:\n  tick_time: 2 seconds\n",
			want: []string{`server.tick_time = "2 seconds": want a duration like 2s (from FILE)`}},
		{name: "duration without unit", yaml: "server:\n  tick_time: 2000\n",
			want: []string{`server.tick_time = 2000: want a duration like 2s`}},
		{name: "bad integer", yaml: "server:\n  max_client_cnxns: lots\n",
			want: []string{`server.max_client_cnxns = "lots": want an integer`}},
		{name: "float integer", yaml: "server:\n  max_buffer: 1.5\n",
			want: []string{`server.max_buffer = 1.5: want an integer`}},
		{name: "yes is not a bool", yaml: "server:\n  force_sync: yes\n",
			want: []string{`server.force_sync = "yes": want true or false`}},
		{name: "list of numbers", yaml: "server:\n  four_letter_words: [1, 2]\n",
			want: []string{`server.four_letter_words = [1 2]: want a list of strings`}},
		{name: "validate names key and file", yaml: "server:\n  server_id: 300\n",
			want: []string{"server.server_id = 300: must be in [1, 254] (from FILE)"}},
		{name: "validate names env", env: map[string]string{"PADDOCK_SERVER_SNAP_COUNT": "1"},
			want: []string{"server.snap_count = 1: must be >= 2 (from PADDOCK_SERVER_SNAP_COUNT)"}},
		{name: "validate names flag", flags: []string{"--client-addr", "nowhere"},
			want: []string{"server.client_addr = nowhere: want host:port, or empty with a secure_client_addr (from flag --client-addr)"}},
		{name: "bad env value", env: map[string]string{"PADDOCK_SERVER_TICK_TIME": "soon"},
			want: []string{`server.tick_time = "soon": want a duration like 2s (from PADDOCK_SERVER_TICK_TIME)`}},
		{name: "unknown env", env: map[string]string{"PADDOCK_SERVER_TICKTIME": "2s"},
			want: []string{"unknown environment variable PADDOCK_SERVER_TICKTIME", "did you mean PADDOCK_SERVER_TICK_TIME?"}},
		{name: "env in lower case", env: map[string]string{"PADDOCK_SERVER_tick_time": "2s"},
			want: []string{"unknown environment variable PADDOCK_SERVER_tick_time", "did you mean PADDOCK_SERVER_TICK_TIME?"}},
		{name: "ensemble id twice", yaml: "server:\n  ensemble: [1=zk1:2888:3888, 1=zk2:2888:3888]\n",
			want: []string{"server.ensemble: server id 1 is listed twice (from FILE)"}},
		{name: "ensemble id out of range", yaml: "server:\n  ensemble: [1=zk1:2888:3888, 255=zk2:2888:3888]\n",
			want: []string{"server.ensemble: server id 255: must be in [1, 254] (from FILE)"}},
		{name: "ensemble id zero", yaml: "server:\n  ensemble: [0=zk0:2888:3888, 1=zk1:2888:3888]\n",
			want: []string{"server.ensemble: server id 0: must be in [1, 254] (from FILE)"}},
		{name: "ensemble without this server", yaml: "server:\n  server_id: 3\n  ensemble: [1=zk1:2888:3888, 2=zk2:2888:3888]\n",
			want: []string{"server.ensemble: this server's id (server_id, myid) 3 is not among the members (from FILE)"}},
		{name: "ensemble bad entries", yaml: "server:\n  ensemble: [1=zk1:2888, 2=zk2:2888:3888|zk3:2888:3888]\n",
			want: []string{`server.ensemble entry "1=zk1:2888": want host:peerPort:electionPort`,
				`server.ensemble entry "2=zk2:2888:3888|zk3:2888:3888": several addresses joined by |`, "(from FILE)"}},
		{name: "ensemble entry a mapping", yaml: "server:\n  ensemble:\n    - 1: zk1:2888:3888\n",
			want: []string{"server.ensemble = [map[1:zk1:2888:3888]]: want a list of strings (from FILE)"}},
		{name: "ensemble from env", env: map[string]string{"PADDOCK_SERVER_ENSEMBLE": "1=zk1:2888:3888,1=zk1:2889:3889"},
			want: []string{"server.ensemble: server id 1 is listed twice (from PADDOCK_SERVER_ENSEMBLE)"}},
		{name: "election timeout too short", yaml: "server:\n  election_timeout: 5ms\n",
			want: []string{"server.election_timeout = 5ms: must be at least 10ms (from FILE)"}},
		{name: "election timeout not a duration", yaml: "server:\n  election_timeout: 1000\n",
			want: []string{"server.election_timeout = 1000: want a duration like 2s (from FILE)"}},
		{name: "bad yaml", yaml: "server:\n  tick_time: [\n",
			want: []string{"read FILE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearPaddockEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var file string
			if tt.yaml != "" {
				file = writeFile(t, "paddock.yaml", tt.yaml)
			}
			_, err := LoadServer(Options{File: file, Flags: serverFlags(t, tt.flags...)})
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "FILE", file))
			}
			wantErr(t, err, want...)
		})
	}
}

func TestLoadServerOtherEnvIgnored(t *testing.T) {
	clearPaddockEnv(t)
	t.Setenv("PADDOCK_NOTIFIER_THEME", "dark") // a section this paddock does not have
	if _, err := LoadServer(Options{}); err != nil {
		t.Errorf("LoadServer: %v, want PADDOCK_ variables of unknown sections left alone", err)
	}
}

func TestLoadServerMissingFile(t *testing.T) {
	clearPaddockEnv(t)
	_, err := LoadServer(Options{File: "/nonexistent/paddock.yaml"})
	wantErr(t, err, "/nonexistent/paddock.yaml")
}

func TestLoadServerWarnings(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // parts of the log; none means no warning at all
	}{
		{"force_sync off", "server:\n  force_sync: false\n",
			[]string{"level=WARN", "acknowledged writes can be lost on a crash", "key=server.force_sync", "from=FILE"}},
		{"zookeeper-only word", "server:\n  four_letter_words: [srvr, gtmk]\n",
			[]string{"level=WARN", "word=gtmk"}},
		{"defaults", "server:\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearPaddockEnv(t)
			logger, buf := logBuffer(t)
			file := writeFile(t, "paddock.yaml", tt.yaml)
			if _, err := LoadServer(Options{File: file, Logger: logger}); err != nil {
				t.Fatal(err)
			}
			if len(tt.want) == 0 && buf.Len() > 0 {
				t.Errorf("log = %s, want nothing", buf)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "FILE", file); !strings.Contains(buf.String(), w) {
					t.Errorf("log = %s, want it to contain %q", buf, w)
				}
			}
		})
	}
}

// TestLoadServices: the master and worker sections load from a file, the environment
// and flags like the server's; a bad value names its section and key, an unknown
// key in a known section stops loading.
func TestLoadServices(t *testing.T) {
	clearPaddockEnv(t)
	file := writeFile(t, "paddock.yaml", "master:\n  zk: [10.0.0.1:2181, 10.0.0.2:2181]\n  resync: 5s\n  signing_key: m.key\n  signers_file: signers\n"+
		"worker:\n  id: w7\n  capacity: 3\n  labels: [zone=a]\n  signers_file: signers\n")
	t.Setenv("PADDOCK_WORKER_CAPACITY", "6")
	m, err := LoadMaster(Options{File: file})
	if err != nil || len(m.Servers) != 2 || m.Resync != 5*time.Second {
		t.Fatalf("LoadMaster: %+v, %v", m, err)
	}
	w, err := LoadWorker(Options{File: file})
	if err != nil || w.ID != "w7" || w.Capacity != 6 || len(w.Labels) != 1 {
		t.Fatalf("LoadWorker: %+v, %v; want id w7, capacity 6 from the environment", w, err)
	}
	t.Setenv("PADDOCK_WORKER_CAPACITY", "0")
	_, err = LoadWorker(Options{File: file})
	wantErr(t, err, "worker.capacity", "PADDOCK_WORKER_CAPACITY")
	bad := writeFile(t, "bad.yaml", "master:\n  zk: [a:1]\n  resinc: 5s\n")
	_, err = LoadMaster(Options{File: bad})
	wantErr(t, err, "master.resinc")
}

// The sample's commented ensemble must load as it is shown, for each of its members.
func TestSampleServerYAMLEnsemble(t *testing.T) {
	data, err := os.ReadFile("server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var example []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "  #   "); ok {
			example = append(example, "  "+rest)
		}
	}
	if len(example) == 0 {
		t.Fatal("server.yaml shows no ensemble example (lines starting with '  #   ')")
	}
	for id := int64(1); id <= 4; id++ {
		clearPaddockEnv(t)
		file := writeFile(t, "paddock.yaml", fmt.Sprintf("server:\n  server_id: %d\n%s\n", id, strings.Join(example, "\n")))
		cfg, err := LoadServer(Options{File: file})
		if err != nil {
			t.Fatalf("the example with server_id %d: %v", id, err)
		}
		members, err := cfg.Members()
		if err != nil || len(members) != 4 || !members[3].Observer || members[0].Observer {
			t.Errorf("the example's members = %+v, %v; want three participants and an observer", members, err)
		}
	}
}
