package configs

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock/paddock/server"
)

// zkDefaults is what a zoo.cfg gives for the keys it leaves out where ZooKeeper's
// defaults differ from paddock's: tickTime 3000, the AdminServer on port 8080 (of
// 127.0.0.1, where ZooKeeper listens on 0.0.0.0) and no autopurge.
func zkDefaults() server.Config {
	cfg := server.DefaultConfig()
	cfg.TickTime = 3 * time.Second
	cfg.AdminAddr = "127.0.0.1:8080"
	cfg.PurgeInterval = 0
	return cfg
}

// loadZooCfg writes content as zoo.cfg (DIR in it stands for a fresh data directory,
// which gets a myid file when myid is not empty) and loads it.
func loadZooCfg(t *testing.T, content, myid string, flags ...string) (server.Config, string, error) {
	t.Helper()
	clearPaddockEnv(t)
	dir := t.TempDir()
	if myid != "" {
		if err := os.WriteFile(filepath.Join(dir, "myid"), []byte(myid), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := writeFile(t, "zoo.cfg", strings.ReplaceAll(content, "DIR", dir))
	logger, buf := logBuffer(t)
	cfg, err := LoadServer(Options{ZooCfg: path, Flags: serverFlags(t, flags...), Logger: logger})
	if err != nil {
		err = &pathError{err: err, path: path, dir: dir}
	}
	return cfg, buf.String(), err
}

// pathError lets expected messages write FILE and DIR for the test's temporary paths.
type pathError struct {
	err       error
	path, dir string
}

func (e *pathError) Error() string {
	return strings.NewReplacer(e.path, "FILE", e.dir, "DIR").Replace(e.err.Error())
}

// warnedKeys returns the keys of "zoo.cfg key ignored" warnings in a log.
func warnedKeys(log string) []string {
	var keys []string
	for line := range strings.SplitSeq(log, "\n") {
		if !strings.Contains(line, `msg="zoo.cfg key ignored"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, " key=")
		key, _, _ := strings.Cut(rest, " ")
		keys = append(keys, key)
	}
	return keys
}

// The Debian package's /etc/zookeeper/conf/zoo.cfg (zookeeper 3.8.0-11+deb12u2), as
// shipped; it is Apache ZooKeeper's conf/zoo_sample.cfg.
func TestZooCfgDebianSample(t *testing.T) {
	paths := []string{"testdata/debian-zoo.cfg"}
	for _, p := range []string{"/etc/zookeeper/conf/zoo.cfg", "/etc/zookeeper/conf_example/zoo.cfg"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p) // the installed one too, where the package is
		}
	}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			clearPaddockEnv(t)
			logger, buf := logBuffer(t)
			cfg, err := LoadServer(Options{ZooCfg: path, Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			want := zkDefaults()
			want.TickTime = 2 * time.Second
			want.DataDir = "/tmp/zookeeper"
			want.ClientAddr = ":2181"
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("LoadServer =\n%+v\nwant\n%+v", cfg, want)
			}
			if got := warnedKeys(buf.String()); !slices.Equal(got, []string{"initLimit", "syncLimit"}) {
				t.Errorf("warned about %q, want initLimit and syncLimit; log:\n%s", got, buf)
			}
		})
	}
}

func TestZooCfg(t *testing.T) {
	tests := []struct {
		name   string
		cfg    string
		myid   string
		flags  []string
		want   func(*server.Config)
		warned []string
	}{
		{
			// go-zookeeper/zk's test harness (NewIntegrationTestServer) writes this, and a
			// myid file next to the data.
			name: "go-zookeeper harness",
			cfg: "admin.enableServer=false\ndataDir=DIR\ntickTime=500\ninitLimit=10\nsyncLimit=5\n" +
				"clientPort=12000\nreconfigEnabled=true\n4lw.commands.whitelist=*\n",
			myid: "1\n",
			want: func(c *server.Config) {
				c.AdminAddr, c.TickTime, c.ClientAddr = "", 500*time.Millisecond, ":12000"
				c.FourLetterWords = []string{"*"}
				c.ReconfigEnabled = true
			},
			warned: []string{"initLimit", "syncLimit"},
		},
		{
			name: "every mapped key",
			cfg: `tickTime=1000
dataDir=DIR
dataLogDir=/logs
clientPort=2281
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=3000
maxSessionTimeout=90000
snapCount=5000
preAllocSize=16384
globalOutstandingLimit=2000
nio.sessionlessCnxnTimeout=3000
autopurge.snapRetainCount=5
autopurge.purgeInterval=24
4lw.commands.whitelist=ruok, mntr ,,stat
admin.serverAddress=127.0.0.2
admin.serverPort=9090
admin.enableServer=true
admin.pprof=true
admin.auth=true
snapshot.receiveFloor=2147483648
forceSync=yes
skipACL=yes
extendedTypesEnabled=TRUE
jute.maxbuffer=0x400000
DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=
znode.container.checkIntervalMs=5000
znode.container.maxPerMinute=600
`,
			myid: "42",
			want: func(c *server.Config) {
				c.TickTime, c.DataLogDir, c.ClientAddr = time.Second, "/logs", "127.0.0.1:2281"
				c.MaxClientCnxns, c.MinSessionTimeout, c.MaxSessionTimeout = 0, 3*time.Second, 90*time.Second
				c.SnapCount, c.MaxOutstanding, c.PreAllocSize = 5000, 2000, 16<<20
				c.FourLetterWords = []string{"ruok", "mntr", "stat", "srvr"}
				c.AdminAddr, c.ForceSync, c.SkipACL, c.ExtendedTypes = "127.0.0.2:9090", true, true, true
				c.AdminPprof, c.AdminAuth, c.SnapshotReceiveFloor = true, true, 2<<30
				c.MaxBuffer, c.SuperDigest = 4<<20, "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
				c.ContainerCheckInterval, c.ContainerMaxPerMinute = 5*time.Second, 600
				c.ServerID = 42
				c.SnapRetainCount, c.PurgeInterval = 5, 24*time.Hour
				c.HandshakeTimeout = 3 * time.Second
			},
		},
		{
			name: "properties syntax",
			cfg: "# comment\n! comment\ntickTime : 2000   \n  clientPort 2181\t\ndataDir=\\\n    DIR\n" +
				"4lw.commands.whitelist=ruok,\\\n  stat\r\n",
			want: func(c *server.Config) {
				c.TickTime, c.ClientAddr = 2*time.Second, ":2181"
				c.FourLetterWords = []string{"ruok", "stat", "srvr"}
			},
		},
		{
			// A JVM property in ZooKeeper (-Dreadonlymode.enabled=true); read from zoo.cfg.
			name: "read-only mode",
			cfg:  "dataDir=DIR\nclientPort=2181\nreadonlymode.enabled=true\n",
			want: func(c *server.Config) { c.ClientAddr, c.ReadOnlyMode = ":2181", true },
		},
		{
			// paddock's: maxClientCnxns for the read-only sessions of one address.
			name: "read-only sessions per address",
			cfg:  "dataDir=DIR\nclientPort=2181\nreadonlymode.enabled=true\nreadonlymode.maxClientCnxns=200\n",
			want: func(c *server.Config) { c.ClientAddr, c.ReadOnlyMode, c.ReadOnlyMaxClientCnxns = ":2181", true, 200 },
		},
		{
			name: "quotas and audit",
			cfg:  "dataDir=DIR\nclientPort=2181\nenforceQuota=true\naudit.enable=True\n",
			want: func(c *server.Config) { c.ClientAddr, c.EnforceQuota, c.AuditEnable = ":2181", true, true },
		},
		{
			name: "session timeouts -1 are the defaults",
			cfg:  "dataDir=DIR\nclientPort=2181\nminSessionTimeout=-1\nmaxSessionTimeout=-1\n",
		},
		{
			name: "last value of a repeated key wins",
			cfg:  "dataDir=DIR\nclientPort=2181\ntickTime=abc\ntickTime=100\n",
			want: func(c *server.Config) { c.TickTime, c.ClientAddr = 100*time.Millisecond, ":2181" },
		},
		{
			name:   "single server line is standalone",
			cfg:    "dataDir=DIR\nclientPort=2181\nserver.1=localhost:2888:3888\nstandaloneEnabled=false\n",
			myid:   "1",
			want:   func(c *server.Config) { c.ClientAddr = ":2181" },
			warned: []string{"standaloneEnabled"},
		},
		{
			name: "client address from the server line",
			cfg:  "dataDir=DIR\nserver.3=[::1]:2888:3888:participant;[::1]:2182\n",
			myid: "3",
			want: func(c *server.Config) { c.ClientAddr, c.ServerID = "[::1]:2182", 3 },
		},
		{
			name: "IPv6 client port address",
			cfg:  "dataDir=DIR\nclientPort=2181\nclientPortAddress=[::1]\n",
			want: func(c *server.Config) { c.ClientAddr = "[::1]:2181" },
		},
		{
			name: "flags override zoo.cfg",
			cfg:  "dataDir=DIR\nclientPort=2181\nadmin.enableServer=false\n",
			flags: []string{"--client-addr=127.0.0.1:3000", "--admin-addr=127.0.0.1:3001",
				"--data-dir=/elsewhere"},
			want: func(c *server.Config) {
				c.ClientAddr, c.AdminAddr, c.DataDir = "127.0.0.1:3000", "127.0.0.1:3001", "/elsewhere"
			},
		},
		{
			name: "ignored keys",
			cfg: "dataDir=DIR\nclientPort=2181\n" +
				"metricsProvider.className=x.Y\nssl.crl=true\n" +
				"client.secure=true\nserverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n" +
				"admin.idleTimeout=30000\nlocalSessionsEnabled=true\nelectionAlg=3\nquorumListenOnAllIPs=false\n" +
				"authProvider.1=com.example.CustomAuthenticationProvider\n",
			want: func(c *server.Config) { c.ClientAddr = ":2181" },
			warned: []string{"metricsProvider.className", "ssl.crl", "client.secure",
				"serverCnxnFactory", "admin.idleTimeout", "localSessionsEnabled", "electionAlg",
				"quorumListenOnAllIPs", "authProvider.1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, log, err := loadZooCfg(t, tt.cfg, tt.myid, tt.flags...)
			if err != nil {
				t.Fatal(err)
			}
			want := zkDefaults()
			want.ClientAddr = ":2181"
			if tt.want != nil {
				tt.want(&want)
			}
			want.DataDir = cfg.DataDir // a temporary directory
			if tt.name == "flags override zoo.cfg" {
				want.DataDir = "/elsewhere"
			}
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("LoadServer =\n%+v\nwant\n%+v", cfg, want)
			}
			if got := warnedKeys(log); !slices.Equal(got, tt.warned) {
				t.Errorf("warned about %q, want %q; log:\n%s", got, tt.warned, log)
			}
			if strings.Contains(log, "hunter2") {
				t.Errorf("the log shows an ignored key's value: %s", log)
			}
		})
	}
}

// ZooKeeper resolves a relative dataDir, and so myid, against the working directory.
func TestZooCfgRelativeDataDir(t *testing.T) {
	clearPaddockEnv(t)
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("zkdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("zkdata", "myid"), []byte("5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "zoo.cfg", "dataDir=zkdata\nclientPort=2181\n")
	cfg, err := LoadServer(Options{ZooCfg: path})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "zkdata" || cfg.ServerID != 5 {
		t.Errorf("data_dir, server_id = %q, %d; want zkdata, 5", cfg.DataDir, cfg.ServerID)
	}
}

func TestZooCfgWarnings(t *testing.T) {
	_, log, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\nclientPort=2182\nforceSync=no\n"+
		"4lw.commands.whitelist=ruok,hash\n", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`msg="zoo.cfg key repeated, the last value wins as in zookeeper" key=clientPort`,
		`msg="force_sync is off: acknowledged writes can be lost on a crash" key=server.force_sync`,
		"from=", "zoo.cfg", // where force_sync came from
		`word=hash`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log = %s, want it to contain %q", log, want)
		}
	}
}

func TestZooCfgErrors(t *testing.T) {
	base := "dataDir=DIR\nclientPort=2181\n"
	tests := []struct {
		name, cfg, myid string
		want            []string // parts of the error; FILE is the zoo.cfg, DIR its data dir
	}{
		{"typo", base + "tickTim=2000\n", "",
			[]string{`FILE:3: tickTim = "2000": unknown key`, "did you mean tickTime?"}},
		{"case typo", base + "ticktime=2000\n", "",
			[]string{`FILE:3: ticktime = "2000": unknown key`, "did you mean tickTime?"}},
		{"no suggestion", base + "frobnicate=1\n", "",
			[]string{`FILE:3: frobnicate = "1": unknown key: not a setting of ZooKeeper or paddock`}},
		{"system property prefix", base + "zookeeper.snapCount=10\n", "",
			[]string{`zookeeper.snapCount = "10": unknown key`, `no "zookeeper." prefix: did you mean snapCount?`}},
		{"all problems at once", base + "tickTim=2000\nmaxClientCnxns=many\n", "",
			[]string{"FILE:3: tickTim", `FILE:4: maxClientCnxns = "many": want an integer`}},
		{"tickTime not a number", base + "tickTime=2s\n", "",
			[]string{`FILE:3: tickTime = "2s": want milliseconds, an integer > 0`}},
		{"tickTime zero", base + "tickTime=0\n", "",
			[]string{`tickTime = "0": want milliseconds, an integer > 0`}},
		{"port out of range", "dataDir=DIR\nclientPort=99999\n", "",
			[]string{`FILE:2: clientPort = "99999": want a port number in [1, 65535]`}},
		{"forceSync false", base + "forceSync=false\n", "",
			[]string{`forceSync = "false": want yes or no`}},
		{"skipACL upper case", base + "skipACL=YES\n", "",
			[]string{`skipACL = "YES": want yes or no (lower case, as ZooKeeper compares it)`}},
		{"extendedTypesEnabled yes", base + "extendedTypesEnabled=yes\n", "",
			[]string{`extendedTypesEnabled = "yes": want true or false`}},
		{"admin.enableServer no", base + "admin.enableServer=no\n", "",
			[]string{`admin.enableServer = "no": want true or false`}},
		{"session timeout zero", base + "minSessionTimeout=0\n", "",
			[]string{`minSessionTimeout = "0": want milliseconds, an integer > 0, or -1 for the default`}},
		{"min above max", base + "tickTime=2000\nminSessionTimeout=60000\n", "",
			[]string{"server.min_session_timeout = 1m0s: must not exceed max_session_timeout (40s) (from minSessionTimeout in FILE)"}},
		{"bad value of an ignored key", base + "initLimit=ten\n", "",
			[]string{`FILE:3: initLimit = "ten": want an integer`}},
		{"standaloneEnabled yes", base + "standaloneEnabled=yes\n", "",
			[]string{`standaloneEnabled = "yes": want true or false`}},
		{"jute.maxbuffer too small", base + "jute.maxbuffer=100\n", "",
			[]string{"server.max_buffer = 100: must be at least 1024 bytes and at most 536870912 (512 MiB) (from jute.maxbuffer in FILE)"}},
		{"unknown four-letter word", base + "4lw.commands.whitelist=ruok,rouk\n", "",
			[]string{"server.four_letter_words = rouk: known words", "(from 4lw.commands.whitelist in FILE)"}},
		{"bad super digest", base + "DigestAuthenticationProvider.superDigest=super:secret\n", "",
			[]string{"server.super_digest = super:secret", "(from DigestAuthenticationProvider.superDigest in FILE)"}},
		{"no dataDir", "clientPort=2181\n", "",
			[]string{"FILE: dataDir is not set"}},
		{"no clientPort", "dataDir=DIR\n", "",
			[]string{"FILE: clientPort is not set: want a port in [1, 65535]"}},
		{"clientPortAddress alone", "dataDir=DIR\nclientPortAddress=127.0.0.1\n", "",
			[]string{"FILE: clientPortAddress is set but clientPort is not set"}},
		{"server id not a number", base + "server.one=zk1:2888:3888\n", "",
			[]string{`FILE:3: server.one = "zk1:2888:3888": want server.<id> with a numeric id`}},
		{"server line without election port", base + "server.1=zk1:2888\n", "",
			[]string{`FILE:3: server.1 = "zk1:2888": want `, "host:peerPort:electionPort[:participant|:observer]"}},
		{"server line bad type", base + "server.1=zk1:2888:3888:leader\n", "",
			[]string{`FILE:3: server.1 = "zk1:2888:3888:leader": role "leader"`, "host:peerPort:electionPort[:participant|:observer]"}},
		{"server line bad port", base + "server.1=zk1:2888:70000\n", "",
			[]string{`FILE:3: server.1 = "zk1:2888:70000": port "70000"`}},
		{"server line several addresses", base + "server.1=zk1:2888:3888|zk1b:2888:3888;2181\n", "1",
			[]string{`FILE:3: server.1 = "zk1:2888:3888|zk1b:2888:3888;2181": several addresses joined by |`}},
		{"single observer line", base + "server.1=zk1:2888:3888:observer\n", "1",
			[]string{"FILE:3: server.1 is an observer and no server.N line is a participant"}},
		{"peerType observer standalone", base + "peerType=observer\n", "",
			[]string{"FILE:3: peerType = observer but this server runs standalone"}},
		{"ensemble key typo", base + "peerTyp=observer\ninitlimit=10\n", "",
			[]string{`FILE:3: peerTyp = "observer": unknown key`, "; did you mean peerType?",
				`FILE:4: initlimit = "10": unknown key`, "; did you mean initLimit?"}},
		{"peerType bad", base + "peerType=leader\n", "",
			[]string{`FILE:3: peerType = "leader": want participant or observer`}},
		{"server line client port differs", base + "server.1=zk1:2888:3888;2182\n", "",
			[]string{"FILE:3: server.1 has client port 2182 but clientPort is 2181"}},
		{"Debian's placeholder myid", base, "replace this text with the cluster-unique zookeeper's instance id (1-255)\n",
			[]string{`DIR/myid = "replace this text with the cluster-unique zookeeper's instance id (1-255)": want this server's id, a number`}},
		{"myid out of range", base, "255\n",
			[]string{"server.server_id = 255: must be in [1, 254] (from DIR/myid in FILE)"}},
		{"preAllocSize too large", base + "preAllocSize=4194304\n", "",
			[]string{"server.prealloc_size = 4294967296", "(from preAllocSize in FILE)"}},
		{"preAllocSize not a number", base + "preAllocSize=64M\n", "",
			[]string{`preAllocSize = "64M": want a size in KiB, an integer >= 0`}},
		{"purgeInterval with a unit", base + "autopurge.purgeInterval=1h\n", "",
			[]string{`FILE:3: autopurge.purgeInterval = "1h": want hours, an integer up to 2562047; 0 or less disables purging`}},
		{"purgeInterval beyond a duration", base + "autopurge.purgeInterval=2562048\n", "",
			[]string{`autopurge.purgeInterval = "2562048": want hours`}},
		{"snapRetainCount not a number", base + "autopurge.snapRetainCount=three\n", "",
			[]string{`FILE:3: autopurge.snapRetainCount = "three": want an integer`}},
		{"malformed escape", base + "dataLogDir=C:\\users\n", "",
			[]string{`FILE: line 3: malformed \uxxxx escape`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadZooCfg(t, tt.cfg, tt.myid)
			wantErr(t, err, tt.want...)
		})
	}
}

func TestZooCfgDynamicFile(t *testing.T) {
	single := writeFile(t, "zoo.cfg.dynamic", "server.1=zk1:2888:3888;0.0.0.0:2181\n")
	cfg, _, err := loadZooCfg(t, "dataDir=DIR\ndynamicConfigFile="+single+"\n", "")
	if err != nil || cfg.ClientAddr != "0.0.0.0:2181" || cfg.Ensemble != nil {
		t.Errorf("single-server dynamic file: client_addr = %q, ensemble = %q, err = %v; want 0.0.0.0:2181, none",
			cfg.ClientAddr, cfg.Ensemble, err)
	}

	bad := writeFile(t, "zoo.cfg.dynamic", "server.1=zk1:2888:3888;2181\ntickTime=2000\n")
	_, _, err = loadZooCfg(t, "dataDir=DIR\ndynamicConfigFile="+bad+"\n", "")
	wantErr(t, err, bad+`:2: tickTime = "2000": want only server.N, group.N, weight.N and version`)

	_, _, err = loadZooCfg(t, "dataDir=DIR\nclientPort=2181\ndynamicConfigFile=/nonexistent/zoo.cfg.dynamic\n", "")
	wantErr(t, err, "dynamicConfigFile", "/nonexistent/zoo.cfg.dynamic")
}

// TestZooCfgAutopurge checks ZooKeeper's rules for autopurge.*, as the 3.8 jar applies
// them: QuorumPeerConfig raises a snapRetainCount below 3 to 3 with the warning "Invalid
// autopurge.snapRetainCount: 1. Defaulting to 3", and DatadirCleanupManager does not
// schedule the purge for a purgeInterval of 0 or less ("Purge task is not scheduled.").
func TestZooCfgAutopurge(t *testing.T) {
	tests := []struct {
		name     string
		keys     string
		retain   int
		interval time.Duration
		warned   bool
	}{
		{"unset: ZooKeeper keeps everything", "", 3, 0, false},
		{"hourly", "autopurge.purgeInterval=1\n", 3, time.Hour, false},
		{"off", "autopurge.snapRetainCount=10\nautopurge.purgeInterval=0\n", 10, 0, false},
		{"negative interval is off", "autopurge.purgeInterval=-2\n", 3, 0, false},
		{"retain count raised to 3", "autopurge.snapRetainCount=1\nautopurge.purgeInterval=6\n", 3, 6 * time.Hour, true},
		{"negative retain count raised to 3", "autopurge.snapRetainCount=-5\n", 3, 0, true},
		{"retain count of 3", "autopurge.snapRetainCount=3\n", 3, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, log, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+tt.keys, "")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.SnapRetainCount != tt.retain || cfg.PurgeInterval != tt.interval {
				t.Errorf("snap_retain_count, purge_interval = %d, %v; want %d, %v",
					cfg.SnapRetainCount, cfg.PurgeInterval, tt.retain, tt.interval)
			}
			warned := strings.Contains(log, "autopurge.snapRetainCount below the minimum")
			if warned != tt.warned {
				t.Errorf("warned about snapRetainCount: %v, want %v; log:\n%s", warned, tt.warned, log)
			}
			if got := warnedKeys(log); len(got) > 0 {
				t.Errorf("autopurge keys ignored with a warning: %q", got)
			}
		})
	}
}

func TestZooCfgWithYAMLServerSection(t *testing.T) {
	clearPaddockEnv(t)
	yaml := writeFile(t, "paddock.yaml", "server:\n  tick_time: 1s\n")
	zoo := writeFile(t, "zoo.cfg", "dataDir=/tmp/zk\nclientPort=2181\n")
	_, err := LoadServer(Options{File: yaml, ZooCfg: zoo})
	wantErr(t, err, "both "+yaml+" (its server section) and zoo.cfg "+zoo+" configure the server: use one")

	// A file without a server section may go with a zoo.cfg.
	empty := writeFile(t, "paddock.yaml", "# other sections only\n")
	if _, err := LoadServer(Options{File: empty, ZooCfg: zoo}); err != nil {
		t.Errorf("LoadServer: %v", err)
	}
}

func TestZooCfgEnvOverrides(t *testing.T) {
	clearPaddockEnv(t)
	t.Setenv("PADDOCK_SERVER_TICK_TIME", "750ms")
	zoo := writeFile(t, "zoo.cfg", "dataDir=/tmp/zk\nclientPort=2181\ntickTime=2000\n")
	cfg, err := LoadServer(Options{ZooCfg: zoo})
	if err != nil || cfg.TickTime != 750*time.Millisecond {
		t.Errorf("tick_time = %v, err = %v; want the environment's 750ms over zoo.cfg's 2000", cfg.TickTime, err)
	}
}

func TestZooCfgEnvOverridesAutopurge(t *testing.T) {
	clearPaddockEnv(t)
	t.Setenv("PADDOCK_SERVER_PURGE_INTERVAL", "30m")
	zoo := writeFile(t, "zoo.cfg", "dataDir=/tmp/zk\nclientPort=2181\n")
	cfg, err := LoadServer(Options{ZooCfg: zoo})
	if err != nil || cfg.PurgeInterval != 30*time.Minute {
		t.Errorf("purge_interval = %v, err = %v; want the environment's 30m over ZooKeeper's default (off)", cfg.PurgeInterval, err)
	}
}

func TestZooCfgMissingFile(t *testing.T) {
	clearPaddockEnv(t)
	_, err := LoadServer(Options{ZooCfg: "/nonexistent/zoo.cfg"})
	wantErr(t, err, "read zoo.cfg", "/nonexistent/zoo.cfg")
}

func TestJavaDecode(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"100", 100, true}, {"+100", 100, true}, {"-1", -1, true}, {"0", 0, true},
		{"0xfffff", 0xfffff, true}, {"0XFF", 255, true}, {"#10", 16, true}, {"-0x10", -16, true},
		{"010", 8, true}, // Integer.decode reads a leading 0 as octal
		{"2147483647", 2147483647, true}, {"2147483648", 0, false},
		{"", 0, false}, {"0x", 0, false}, {"1_000", 0, false}, {"--1", 0, false}, {"08", 0, false},
		{"1e3", 0, false},
	}
	for _, tt := range tests {
		got, err := javaDecode(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("javaDecode(%q) = %v, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// zkEnsemble is the server.N lines of a three-member ensemble and an observer, as
// ZooKeeper's admin guide writes them (client addresses in the dynamic file's form).
const zkEnsemble = "server.1=zk1:2888:3888;2181\nserver.2=zk2:2888:3888;2181\n" +
	"server.3=zk3:2888:3888;2181\nserver.4=zk4:2888:3888:observer;2181\n"

// TestZooCfgEnsemble: two or more server.N lines, of the zoo.cfg or of its
// dynamicConfigFile (DYN), are the ensemble key, and myid picks this server's line.
func TestZooCfgEnsemble(t *testing.T) {
	tests := []struct {
		name     string
		cfg      string
		dynamic  string // written to a file DYN stands for
		myid     string
		ensemble []string
		id       int64
		client   string
		warned   []string
	}{
		{
			name: "three members",
			cfg: "tickTime=2000\ndataDir=DIR\nclientPort=2181\ninitLimit=5\nsyncLimit=2\n" +
				"server.1=zk1:2888:3888\nserver.2=zk2:2888:3888\nserver.3=zk3:2888:3888\n",
			myid:     "2\n",
			ensemble: []string{"1=zk1:2888:3888", "2=zk2:2888:3888", "3=zk3:2888:3888"},
			id:       2, client: ":2181", warned: []string{"initLimit", "syncLimit"},
		},
		{
			name:     "observer, with peerType",
			cfg:      "dataDir=DIR\npeerType=Observer\n" + zkEnsemble,
			myid:     "4",
			ensemble: []string{"1=zk1:2888:3888;2181", "2=zk2:2888:3888;2181", "3=zk3:2888:3888;2181", "4=zk4:2888:3888:observer;2181"},
			id:       4, client: ":2181",
		},
		{
			name: "participant, with peerType",
			cfg:  "dataDir=DIR\npeerType=participant\nserver.1=zk1:2888:3888\nserver.2=zk2:2888:3888:observer\nclientPort=2181\n",
			myid: "1", ensemble: []string{"1=zk1:2888:3888", "2=zk2:2888:3888:observer"}, id: 1, client: ":2181",
		},
		{
			name: "the member's line gives the client address",
			cfg: "dataDir=DIR\nserver.1=10.0.0.1:2888:3888;10.0.0.1:2181\n" +
				"server.2=10.0.0.2:2888:3888;10.0.0.2:2182\nserver.3=[fd00::3]:2888:3888;[fd00::3]:2183\n",
			myid: "3",
			ensemble: []string{"1=10.0.0.1:2888:3888;10.0.0.1:2181", "2=10.0.0.2:2888:3888;10.0.0.2:2182",
				"3=[fd00::3]:2888:3888;[fd00::3]:2183"},
			id: 3, client: "[fd00::3]:2183",
		},
		{
			// setupClientPort: a wildcard clientPortAddress only has to agree on the port.
			name: "the member's line over a wildcard clientPortAddress",
			cfg: "dataDir=DIR\nclientPort=2182\nclientPortAddress=0.0.0.0\n" +
				"server.1=zk1:2888:3888;2181\nserver.2=zk2:2888:3888;127.0.0.2:2182\n",
			myid: "2", ensemble: []string{"1=zk1:2888:3888;2181", "2=zk2:2888:3888;127.0.0.2:2182"},
			id: 2, client: "127.0.0.2:2182",
		},
		{
			name: "clientPortAddress and clientPort equal to the member's line",
			cfg: "dataDir=DIR\nclientPort=2181\nclientPortAddress=::1\n" +
				"server.1=[::1]:2888:3888;[0:0::1]:2181\nserver.2=[::1]:2889:3889;[::1]:2182\n",
			myid: "1", ensemble: []string{"1=[::1]:2888:3888;[0:0::1]:2181", "2=[::1]:2889:3889;[::1]:2182"},
			id: 1, client: "[0:0::1]:2181",
		},
		{
			name: "clientPort where the member's line has none",
			cfg:  "dataDir=DIR\nclientPort=2281\nserver.1=zk1:2888:3888\nserver.2=zk2:2888:3888;2181\n",
			myid: "1", ensemble: []string{"1=zk1:2888:3888", "2=zk2:2888:3888;2181"}, id: 1, client: ":2281",
		},
		{
			name: "ids as ZooKeeper reads them",
			cfg:  "dataDir=DIR\nclientPort=2181\nserver.01=zk1:2888:3888\nserver.2 = zk2:2888:3888 \n",
			myid: " 1 \n", ensemble: []string{"1=zk1:2888:3888", "2=zk2:2888:3888"}, id: 1, client: ":2181",
		},
		{
			name:    "dynamicConfigFile",
			cfg:     "dataDir=DIR\nreconfigEnabled=true\nstandaloneEnabled=false\ndynamicConfigFile=DYN\n",
			dynamic: zkEnsemble + "version=100000000\n",
			myid:    "1",
			ensemble: []string{"1=zk1:2888:3888;2181", "2=zk2:2888:3888;2181", "3=zk3:2888:3888;2181",
				"4=zk4:2888:3888:observer;2181"},
			id: 1, client: ":2181", warned: []string{"standaloneEnabled"},
		},
		{
			name:     "dynamicConfigFile with weights",
			cfg:      "dataDir=DIR\nclientPort=2181\ndynamicConfigFile=DYN\n",
			dynamic:  "server.1=zk1:2888:3888\nserver.2=zk2:2888:3888\nweight.1=1\nweight.2=0\n",
			myid:     "2",
			ensemble: []string{"1=zk1:2888:3888", "2=zk2:2888:3888"},
			id:       2, client: ":2181", warned: []string{"weight.1", "weight.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// These ensembles' hosts are not loopback and they have no TLS: without
			// quorum.plaintext they would not load (TestPlainPeerPort).
			cfgText := "quorum.plaintext=true\n" + tt.cfg
			if tt.dynamic != "" {
				cfgText = strings.ReplaceAll(cfgText, "DYN", writeFile(t, "zoo.cfg.dynamic", tt.dynamic))
			}
			cfg, log, err := loadZooCfg(t, cfgText, tt.myid)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.Ensemble, tt.ensemble) || cfg.ServerID != tt.id || cfg.ClientAddr != tt.client {
				t.Errorf("ensemble, server_id, client_addr =\n%q, %d, %q\nwant\n%q, %d, %q",
					cfg.Ensemble, cfg.ServerID, cfg.ClientAddr, tt.ensemble, tt.id, tt.client)
			}
			if !cfg.QuorumPlaintext {
				t.Error("quorum.plaintext=true: quorum_plaintext = false, want true")
			}
			if cfg.ElectionTimeout != time.Second {
				t.Errorf("election_timeout = %v, want the default 1s", cfg.ElectionTimeout)
			}
			if got := warnedKeys(log); !slices.Equal(got, tt.warned) {
				t.Errorf("warned about %q, want %q; log:\n%s", got, tt.warned, log)
			}
		})
	}
}

// The warnings for ensemble keys say what paddock does instead.
func TestZooCfgEnsembleWarnings(t *testing.T) {
	_, log, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\ninitLimit=10\nsyncLimit=5\nelectionAlg=3\n"+
		"quorumListenOnAllIPs=true\nsslQuorumReloadCertFiles=true\nssl.quorum.crl=true\nmultiAddress.enabled=true\nquorum.plaintext=true\n"+
		"server.1=zk1:2888:3888\nserver.2=zk2:2888:3888\nserver.3=zk3:2888:3888\n", "1")
	if err != nil {
		t.Fatal(err)
	}
	for key, reason := range map[string]string{
		"initLimit":                "server.election_timeout, default 1s",
		"syncLimit":                "server.election_timeout, default 1s",
		"electionAlg":              "paddock elects leaders with Raft",
		"quorumListenOnAllIPs":     "members listen on the peer address of their server.N line",
		"sslQuorumReloadCertFiles": "paddock reads the key and trust stores once, at start",
		"ssl.quorum.crl":           "paddock checks no certificate revocation (CRL, OCSP)",
		"multiAddress.enabled":     "a paddock member has one peer address",
	} {
		if !slices.ContainsFunc(strings.Split(log, "\n"), func(l string) bool {
			return strings.Contains(l, "key="+key+" ") && strings.Contains(l, reason)
		}) {
			t.Errorf("no warning for %s with reason %q; log:\n%s", key, reason, log)
		}
	}
}

func TestZooCfgEnsembleErrors(t *testing.T) {
	three := "server.1=zk1:2888:3888\nserver.2=zk2:2888:3888\nserver.3=zk3:2888:3888\n"
	tests := []struct {
		name, cfg, dynamic, myid string
		want                     []string // FILE is the zoo.cfg, DIR its data dir, DYN its dynamic file
	}{
		{name: "no myid", cfg: "dataDir=DIR\nclientPort=2181\n" + three,
			want: []string{"DIR/myid: missing: an ensemble member needs its id there, one of the ids of the server.N lines of FILE (1, 2, 3)"}},
		{name: "myid not listed", cfg: "dataDir=DIR\nclientPort=2181\n" + three, myid: "4\n",
			want: []string{"DIR/myid = 4: not among the ids of the server.N lines of FILE (1, 2, 3): want this server's id"}},
		{name: "myid not a number", cfg: "dataDir=DIR\nclientPort=2181\n" + three, myid: "one\n",
			want: []string{`DIR/myid = "one": want this server's id, a number`}},
		{name: "no dataDir", cfg: "clientPort=2181\n" + three,
			want: []string{"FILE: dataDir is not set"}},
		{name: "client port differs", cfg: "dataDir=DIR\nclientPort=2181\nserver.1=zk1:2888:3888;2181\nserver.2=zk2:2888:3888;2182\n",
			myid: "2", want: []string{"FILE:4: server.2 has client port 2182 but clientPort is 2181: want the same port"}},
		{name: "client address differs", cfg: "dataDir=DIR\nclientPort=2181\nclientPortAddress=10.0.0.1\n" +
			"server.1=zk1:2888:3888;10.0.0.2:2181\nserver.2=zk2:2888:3888;2181\n", myid: "1",
			want: []string{"FILE:4: server.1 has client address 10.0.0.2:2181 but clientPortAddress and clientPort are 10.0.0.1:2181: want the same address"}},
		{name: "any address is not clientPortAddress's", cfg: "dataDir=DIR\nclientPort=2181\nclientPortAddress=10.0.0.1\n" +
			"server.1=zk1:2888:3888;2181\nserver.2=zk2:2888:3888;2181\n", myid: "1",
			want: []string{"FILE:4: server.1 has client address :2181 but clientPortAddress and clientPort are 10.0.0.1:2181"}},
		{name: "no client address", cfg: "dataDir=DIR\nserver.1=zk1:2888:3888\nserver.2=zk2:2888:3888;2181\n", myid: "1",
			want: []string{"FILE: clientPort is not set"}},
		{name: "peerType observer, line participant", cfg: "dataDir=DIR\nclientPort=2181\npeerType=observer\n" + three, myid: "3",
			want: []string{"FILE:3: peerType = observer but server.3 (FILE:6) makes this server (myid 3) participant: want the same role in both"}},
		{name: "peerType participant, line observer", cfg: "dataDir=DIR\npeerType=participant\n" + zkEnsemble, myid: "4",
			want: []string{"FILE:2: peerType = participant but server.4 (FILE:6) makes this server (myid 4) observer"}},
		{name: "several addresses", cfg: "dataDir=DIR\nclientPort=2181\nserver.1=zk1:2888:3888|zk1b:2888:3888\nserver.2=zk2:2888:3888\n",
			myid: "1", want: []string{`FILE:3: server.1 = "zk1:2888:3888|zk1b:2888:3888": several addresses joined by | (multiAddress): a paddock member has one peer address`}},
		{name: "id twice", cfg: "dataDir=DIR\nclientPort=2181\nserver.1=zk1:2888:3888\nserver.01=zk2:2888:3888\n", myid: "1",
			want: []string{"server.ensemble: server id 1 is listed twice (from server.N lines in FILE)"}},
		{name: "id out of range", cfg: "dataDir=DIR\nclientPort=2181\nserver.1=zk1:2888:3888\nserver.300=zk2:2888:3888\n", myid: "1",
			want: []string{"server.ensemble: server id 300: must be in [1, 254] (from server.N lines in FILE)"}},
		{name: "observers only", cfg: "dataDir=DIR\nclientPort=2181\nserver.1=zk1:2888:3888:observer\nserver.2=zk2:2888:3888:observer\n", myid: "1",
			want: []string{"server.ensemble: every member is an observer"}},
		{name: "server lines beside dynamicConfigFile", cfg: "dataDir=DIR\ndynamicConfigFile=DYN\nserver.1=zk1:2888:3888\n",
			dynamic: "server.2=zk2:2888:3888;2181\nserver.3=zk3:2888:3888;2181\n", myid: "2",
			want: []string{`FILE:3: server.1 = "zk1:2888:3888": dynamicConfigFile is set: the server.N lines belong in it`}},
		{name: "dynamic file without myid", cfg: "dataDir=DIR\ndynamicConfigFile=DYN\n", dynamic: zkEnsemble,
			want: []string{"DIR/myid: missing", "server.N lines of DYN (1, 2, 3, 4)"}},
		{name: "dynamic file client port differs", cfg: "dataDir=DIR\nclientPort=2182\ndynamicConfigFile=DYN\n", dynamic: zkEnsemble, myid: "2",
			want: []string{"DYN:2: server.2 has client port 2181 but clientPort is 2182"}},
		{name: "dynamic file id twice", cfg: "dataDir=DIR\ndynamicConfigFile=DYN\n", dynamic: zkEnsemble + "server.04=zk5:2888:3888;2181\n", myid: "1",
			want: []string{"server.ensemble: server id 4 is listed twice (from server.N lines of dynamicConfigFile DYN in FILE)"}},
		{name: "dynamic file bad line", cfg: "dataDir=DIR\ndynamicConfigFile=DYN\n", dynamic: "server.1=zk1:2888:3888;2181\nserver.2=zk2|zk3\n", myid: "1",
			want: []string{`DYN:2: server.2 = "zk2|zk3": several addresses joined by |`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgText, dyn := tt.cfg, ""
			if tt.dynamic != "" {
				dyn = writeFile(t, "zoo.cfg.dynamic", tt.dynamic)
				cfgText = strings.ReplaceAll(cfgText, "DYN", dyn)
			}
			_, _, err := loadZooCfg(t, cfgText, tt.myid)
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "DYN", dyn))
			}
			wantErr(t, err, want...)
		})
	}
}
