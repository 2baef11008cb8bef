package configs

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/paddock/paddock/server"
)

func TestZooCfgSASL(t *testing.T) {
	cfg, log, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+
		"authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"+
		"java.security.auth.login.config=/etc/zk/jaas.conf\nsasl.serverconfig=ZKServer\nsuperUser=admin\n"+
		"enforce.auth.enabled=true\nenforce.auth.schemes=sasl, digest\n", "")
	if err != nil {
		t.Fatal(err)
	}
	want := zkDefaults()
	want.ClientAddr, want.DataDir = ":2181", cfg.DataDir
	want.SASLJaasConfig, want.SASLJaasSection, want.SASLSuperUser = "/etc/zk/jaas.conf", "ZKServer", "admin"
	want.EnforceAuth, want.EnforceAuthSchemes = true, []string{"sasl", "digest"}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadServer =\n%+v\nwant\n%+v", cfg, want)
	}
	if keys := warnedKeys(log); len(keys) != 0 || strings.Contains(log, "sasl provider") {
		t.Errorf("warned about %q:\n%s", keys, log)
	}
}

func TestZooCfgSessionRequireClientSASLAuth(t *testing.T) {
	cfg, _, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\njava.security.auth.login.config=/j\n"+
		"enforce.auth.enabled=false\nenforce.auth.schemes=digest\nsessionRequireClientSASLAuth=true\n", "")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.EnforceAuth || !slices.Equal(cfg.EnforceAuthSchemes, []string{"sasl"}) {
		t.Fatalf("enforce %v schemes %v, want sasl enforced as ZooKeeper's AuthenticationHelper", cfg.EnforceAuth, cfg.EnforceAuthSchemes)
	}
}

func TestZooCfgSASLRefused(t *testing.T) {
	for _, tc := range []struct{ name, cfg, want string }{
		{"enforce without schemes", "enforce.auth.enabled=true\n", "enforce_auth_schemes"},
		{"enforce sasl without users", "enforce.auth.enabled=true\nenforce.auth.schemes=sasl\n", "sasl needs SASL users"},
		{"unknown scheme", "enforce.auth.enabled=true\nenforce.auth.schemes=kerberos\n", "want schemes among digest, ip, sasl"},
		{"enforce not a boolean", "enforce.auth.enabled=yes\n", "enforce.auth.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+tc.cfg, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestZooCfgSASLProviderWithoutUsers(t *testing.T) {
	_, log, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+
		"authProvider.2=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "sasl provider configured without users") || slices.Contains(warnedKeys(log), "authProvider.2") {
		t.Fatalf("log:\n%s", log)
	}
}

// TestSASLPasswordsHidden: a malformed sasl_passwords entry is refused without its value.
func TestSASLPasswordsHidden(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.SASLPasswords = []string{"alice:pw", "hunter2"}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "sasl_passwords entry 2") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err %v", err)
	}
	clearPaddockEnv(t)
	t.Setenv("PADDOCK_SERVER_SASL_PASSWORDS", "hunter2")
	_, err = LoadServer(Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("LoadServer err %v", err)
	}
}
