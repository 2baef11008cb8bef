package configs

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"software.sslmate.com/src/go-pkcs12"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/server"
)

// storePassword is the key store password of the tests; no error or log may show it.
const storePassword = "hunter2-quorum"

// tlsFiles are a CA's trust store and member 1's key stores, PEM and PKCS12.
type tlsFiles struct {
	dir, ca, memberPEM, memberP12 string
}

// makeTLSFiles writes real stores, so that the tests hold whether loading checks them or not.
func makeTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(certs.IssueOptions{Hosts: []string{"zk1"}, MemberID: 1, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f := tlsFiles{dir: dir, ca: filepath.Join(dir, "ca.pem"), memberPEM: filepath.Join(dir, "member-1.pem"),
		memberP12: filepath.Join(dir, "member-1.p12")}
	writeTo(t, f.ca, ca.CertPEM())
	writeTo(t, f.memberPEM, certs.KeyStorePEM(certPEM, keyPEM, ca.CertPEM()))
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p12, err := pkcs12.Modern.Encode(cert.PrivateKey, cert.Leaf, nil, storePassword)
	if err != nil {
		t.Fatal(err)
	}
	writeTo(t, f.memberP12, p12)
	return f
}

func writeTo(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

const threeMembers = "server.1=zk1:2888:3888\nserver.2=zk2:2888:3888\nserver.3=zk3:2888:3888\n"

// A secure ensemble's zoo.cfg, as ZooKeeper's administrator's guide shows it (with PEM
// and PKCS12 stores where it shows JKS), gives the server's quorum TLS fields.
func TestZooCfgQuorumTLS(t *testing.T) {
	f := makeTLSFiles(t)
	cfg, log, err := loadZooCfg(t, "tickTime=2000\ndataDir=DIR\nclientPort=2181\n"+threeMembers+
		"sslQuorum=true\n"+
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"+
		"ssl.quorum.keyStore.location="+f.memberP12+"\n"+
		"ssl.quorum.keyStore.password="+storePassword+"\n"+
		"ssl.quorum.keyStore.type=pkcs12\n"+
		"ssl.quorum.trustStore.location="+f.ca+"\n"+
		"ssl.quorum.trustStore.type=PEM\n"+
		"ssl.quorum.hostnameVerification=false\n"+
		"ssl.quorum.protocol=TLSv1.3\n"+
		"ssl.quorum.enabledProtocols=TLSv1.2, TLSv1.3\n"+
		"ssl.quorum.ciphersuites=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384\n"+
		"ssl.quorum.clientAuth=need\n", "1")
	if err != nil {
		t.Fatal(err)
	}
	want := zkDefaults()
	want.TickTime = 2 * time.Second
	want.DataDir, want.ClientAddr, want.ServerID = cfg.DataDir, ":2181", 1
	want.Ensemble = []string{"1=zk1:2888:3888", "2=zk2:2888:3888", "3=zk3:2888:3888"}
	want.QuorumTLS = true
	want.QuorumKeyStore, want.QuorumKeyStoreType, want.QuorumKeyStorePassword = f.memberP12, "PKCS12", storePassword
	want.QuorumTrustStore, want.QuorumTrustStoreType = f.ca, "PEM"
	want.QuorumHostnameVerification = false
	want.QuorumTLSProtocol = "TLSv1.3"
	want.QuorumTLSEnabledProtocols = []string{"TLSv1.2", "TLSv1.3"}
	want.QuorumTLSCipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadServer =\n%+v\nwant\n%+v", cfg, want)
	}
	if got := warnedKeys(log); !slices.Equal(got, []string{"serverCnxnFactory"}) {
		t.Errorf("warned about %q, want serverCnxnFactory alone; log:\n%s", got, log)
	}
	if strings.Contains(log, storePassword) {
		t.Errorf("the log shows the password:\n%s", log)
	}
}

// The defaults of the keys a secure zoo.cfg leaves out: hostname verification on, as in
// ZooKeeper; no passwords; the type told by the file name.
func TestZooCfgQuorumTLSDefaults(t *testing.T) {
	f := makeTLSFiles(t)
	cfg, _, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+threeMembers+"sslQuorum=true\n"+
		"ssl.quorum.keyStore.location="+f.memberPEM+"\nssl.quorum.trustStore.location="+f.ca+"\n", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.QuorumTLS || cfg.QuorumKeyStore != f.memberPEM || cfg.QuorumTrustStore != f.ca ||
		!cfg.QuorumHostnameVerification || cfg.QuorumKeyStoreType != "" || cfg.QuorumKeyStorePassword != "" ||
		cfg.QuorumTLSProtocol != "" || cfg.QuorumTLSEnabledProtocols != nil || cfg.QuorumTLSCipherSuites != nil {
		t.Errorf("LoadServer = %+v", cfg)
	}

	// ZooKeeper's JKS type is kept for the loading to check, which reads a PKCS12 file
	// called JKS (keytool's default since Java 9).
	jks, _, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+threeMembers+"sslQuorum=true\n"+
		"ssl.quorum.keyStore.location="+f.memberP12+"\nssl.quorum.keyStore.type=jks\n"+
		"ssl.quorum.keyStore.password="+storePassword+"\nssl.quorum.trustStore.location="+f.ca+"\n", "1")
	if err != nil || jks.QuorumKeyStoreType != "JKS" {
		t.Errorf("ssl.quorum.keyStore.type=jks: type %q, err %v; want JKS", jks.QuorumKeyStoreType, err)
	}
}

// ZooKeeper 3.8's passwordPath keys name a file holding the password, which wins over the
// password key; one trailing line separator is dropped.
func TestZooCfgQuorumPasswordPath(t *testing.T) {
	f := makeTLSFiles(t)
	base := "dataDir=DIR\nclientPort=2181\n" + threeMembers + "sslQuorum=true\n" + // an unencrypted PEM key store ignores passwords
		"ssl.quorum.keyStore.location=" + f.memberPEM + "\nssl.quorum.trustStore.location=" + f.ca + "\n"
	for _, tt := range []struct {
		name, file, cfg string
		key, trust      string
		warned          bool
	}{
		{"newline", storePassword + "\n", "ssl.quorum.keyStore.passwordPath=PW\n", storePassword, "", false},
		{"CRLF", storePassword + "\r\n", "ssl.quorum.keyStore.passwordPath=PW\n", storePassword, "", false},
		{"no newline", storePassword, "ssl.quorum.keyStore.passwordPath=PW\n", storePassword, "", false},
		{"one newline only", storePassword + "\n\n", "ssl.quorum.trustStore.passwordPath=PW\n", "", storePassword + "\n", false},
		{"file wins", storePassword + "\n", "ssl.quorum.keyStore.password=other-secret\nssl.quorum.keyStore.passwordPath=PW\n",
			storePassword, "", true},
		{"empty path is none", "", "ssl.quorum.keyStore.password=" + storePassword + "\nssl.quorum.keyStore.passwordPath=\n",
			storePassword, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pw := filepath.Join(t.TempDir(), "pw")
			writeTo(t, pw, []byte(tt.file))
			cfg, log, err := loadZooCfg(t, base+strings.ReplaceAll(tt.cfg, "PW", pw), "1")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.QuorumKeyStorePassword != tt.key || cfg.QuorumTrustStorePassword != tt.trust {
				t.Errorf("passwords = %q, %q; want %q, %q", cfg.QuorumKeyStorePassword, cfg.QuorumTrustStorePassword, tt.key, tt.trust)
			}
			if warned := strings.Contains(log, "zoo.cfg password set twice: the file wins"); warned != tt.warned {
				t.Errorf("warned %v, want %v; log:\n%s", warned, tt.warned, log)
			}
			if strings.Contains(log, storePassword) || strings.Contains(log, "other-secret") {
				t.Errorf("the log shows a password:\n%s", log)
			}
		})
	}

	missing := filepath.Join(t.TempDir(), "missing")
	_, log, err := loadZooCfg(t, base+"ssl.quorum.keyStore.password="+storePassword+"\n"+
		"ssl.quorum.trustStore.passwordPath="+missing+"\n", "1")
	wantErr(t, err, `FILE:10: ssl.quorum.trustStore.passwordPath = "`+missing+`": read the password:`, "no such file")
	if strings.Contains(err.Error(), storePassword) || strings.Contains(log, storePassword) {
		t.Errorf("the error or the log shows the password: %v\n%s", err, log)
	}
}

func TestZooCfgQuorumTLSErrors(t *testing.T) {
	base := "dataDir=DIR\nclientPort=2181\n"
	for _, tt := range []struct {
		name, cfg string
		want      []string
	}{
		{"clientAuth none", "ssl.quorum.clientAuth=none\n",
			[]string{`FILE:3: ssl.quorum.clientAuth = "none": paddock's members always require each other's certificates: want need`}},
		{"clientAuth want", "ssl.quorum.clientAuth=WANT\n", []string{`ssl.quorum.clientAuth = "WANT": paddock's members always require`}},
		{"clientAuth bad", "ssl.quorum.clientAuth=always\n", []string{`ssl.quorum.clientAuth = "always": want need`}},
		{"sslQuorum yes", "sslQuorum=yes\n", []string{`FILE:3: sslQuorum = "yes": want true or false`}},
		{"hostnameVerification no", "ssl.quorum.hostnameVerification=no\n", []string{`ssl.quorum.hostnameVerification = "no": want true or false`}},
		{"BCFKS key store", "ssl.quorum.keyStore.type=BCFKS\n",
			[]string{`FILE:3: ssl.quorum.keyStore.type = "BCFKS": store type BCFKS is not supported`, "-deststoretype PKCS12"}},
		{"unknown trust store type", "ssl.quorum.trustStore.type=DER\n",
			[]string{`ssl.quorum.trustStore.type = "DER": unknown store type "DER": want PEM or PKCS12`}},
		{"TLSv1.1", "ssl.quorum.protocol=TLSv1.1\n",
			[]string{`FILE:3: ssl.quorum.protocol = "TLSv1.1": TLS version TLSv1.1 is insecure (RFC 8996) and refused`}},
		{"enabled TLSv1", "ssl.quorum.enabledProtocols=TLSv1,TLSv1.2\n",
			[]string{`ssl.quorum.enabledProtocols = "TLSv1,TLSv1.2": TLS version TLSv1 is insecure`}},
		{"RC4", "ssl.quorum.ciphersuites=TLS_ECDHE_RSA_WITH_RC4_128_SHA\n",
			[]string{`ssl.quorum.ciphersuites = "TLS_ECDHE_RSA_WITH_RC4_128_SHA": insecure cipher suites refused`}},
		{"unknown suite", "ssl.quorum.ciphersuites=TLS_FOO\n", []string{"unknown cipher suites: TLS_FOO"}},
		{"misspelt key", "ssl.quorum.keystore.location=/k\n",
			[]string{`FILE:3: ssl.quorum.keystore.location = "/k": unknown key`, "did you mean ssl.quorum.keyStore.location?"}},
		{"unknown ssl.quorum key", "ssl.quorum.keyStore.alias=m1\n", []string{"ssl.quorum.keyStore.alias", "unknown key"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadZooCfg(t, base+tt.cfg, "")
			wantErr(t, err, tt.want...)
		})
	}
}

// No error shows a password, whatever else is wrong with the file.
func TestZooCfgErrorsHidePasswords(t *testing.T) {
	_, log, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+
		"ssl.quorum.keyStore.password="+storePassword+"\nssl.quorum.trustStore.password="+storePassword+"2\n"+
		"ssl.quorum.keyStore.type=BCFKS\nssl.quorum.clientAuth=none\nsslQuorum=on\nssl.quorum.keystore.password="+storePassword+"3\n"+
		"ssl.keyStore.password="+storePassword+"4\n", "")
	wantErr(t, err, "ssl.quorum.keyStore.type", "ssl.quorum.clientAuth", "sslQuorum", "ssl.quorum.keystore.password")
	for _, text := range []string{err.Error(), log} {
		if strings.Contains(text, storePassword) {
			t.Errorf("a password is shown:\n%s", text)
		}
	}
}

// The keys of the member link ZooKeeper has and paddock does not use are accepted with a
// warning that says what paddock does instead.
func TestZooCfgQuorumTLSWarnings(t *testing.T) {
	_, log, err := loadZooCfg(t, "dataDir=DIR\nclientPort=2181\n"+
		"sslQuorumReloadCertFiles=true\nssl.quorum.crl=true\nssl.quorum.ocsp=true\n"+
		"ssl.quorum.context.supplier.class=com.example.Supplier\nssl.quorum.handshakeDetectionTimeoutMillis=5000\n"+
		"ssl.quorum.clientHostnameVerification=false\nssl.quorum.sslProvider=OPENSSL\n"+
		"quorum.auth.enableSasl=true\nssl.ocsp=true\n", "")
	if err != nil {
		t.Fatal(err)
	}
	for key, reason := range map[string]string{
		"sslQuorumReloadCertFiles":                   "restart a member to load new certificates",
		"ssl.quorum.crl":                             "checks no certificate revocation",
		"ssl.quorum.ocsp":                            "checks no certificate revocation",
		"ssl.quorum.context.supplier.class":          "builds its TLS from the ssl.quorum.keyStore and trustStore keys",
		"ssl.quorum.handshakeDetectionTimeoutMillis": "there is no TLS detection",
		"ssl.quorum.clientHostnameVerification":      "checks the member id the peer's certificate proves",
		"ssl.quorum.sslProvider":                     "Go's crypto/tls",
		"quorum.auth.enableSasl":                     "authenticate each other with TLS certificates (sslQuorum), not SASL",
		"ssl.ocsp":                                   "no certificate revocation",
	} {
		if !slices.ContainsFunc(strings.Split(log, "\n"), func(l string) bool {
			return strings.Contains(l, "key="+key+" ") && strings.Contains(l, reason)
		}) {
			t.Errorf("no warning for %s with reason %q; log:\n%s", key, reason, log)
		}
	}
}

// The YAML keys, with the password from the environment as the sample suggests.
func TestLoadServerQuorumTLSYAML(t *testing.T) {
	f := makeTLSFiles(t)
	clearPaddockEnv(t)
	t.Setenv("PADDOCK_SERVER_QUORUM_KEY_STORE_PASSWORD", storePassword)
	file := writeFile(t, "paddock.yaml", `
server:
  server_id: 1
  ensemble: ["1=zk1:2888:3888", "2=zk2:2888:3888", "3=zk3:2888:3888"]
  quorum_tls: true
  quorum_key_store: `+f.memberP12+`
  quorum_key_store_type: PKCS12
  quorum_trust_store: `+f.ca+`
  quorum_hostname_verification: false
  quorum_tls_enabled_protocols: [TLSv1.3]
  quorum_tls_cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
`)
	cfg, err := LoadServer(Options{File: file})
	if err != nil {
		t.Fatal(err)
	}
	want := server.DefaultConfig()
	want.ServerID, want.Ensemble = 1, []string{"1=zk1:2888:3888", "2=zk2:2888:3888", "3=zk3:2888:3888"}
	want.QuorumTLS, want.QuorumKeyStore, want.QuorumKeyStoreType = true, f.memberP12, "PKCS12"
	want.QuorumKeyStorePassword, want.QuorumTrustStore, want.QuorumHostnameVerification = storePassword, f.ca, false
	want.QuorumTLSEnabledProtocols = []string{"TLSv1.3"}
	want.QuorumTLSCipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("LoadServer =\n%+v\nwant\n%+v", cfg, want)
	}
}

// A password of the wrong type is reported without its value.
func TestLoadServerHidesPasswords(t *testing.T) {
	clearPaddockEnv(t)
	file := writeFile(t, "paddock.yaml", "server:\n  quorum_key_store_password: ["+storePassword+", x]\n"+
		"  quorum_trust_store_password: ["+storePassword+"]\n")
	_, err := LoadServer(Options{File: file})
	wantErr(t, err, "server.quorum_key_store_password = (hidden): want a string",
		"server.quorum_trust_store_password = (hidden): want a string")
	if strings.Contains(err.Error(), storePassword) {
		t.Errorf("the error shows the password: %v", err)
	}
}

// server.Config.Validate must never show a password, whatever else is wrong.
func TestValidateHidesPasswords(t *testing.T) {
	cfg := server.DefaultConfig()
	cfg.Ensemble = []string{"1=zk1:2888:3888", "2=zk2:2888:3888"}
	cfg.QuorumTLS = true
	cfg.QuorumKeyStore, cfg.QuorumTrustStore = filepath.Join(t.TempDir(), "missing.pem"), "trust.jks"
	cfg.QuorumKeyStoreType, cfg.QuorumTrustStoreType = "", "bad value"
	cfg.QuorumKeyStorePassword, cfg.QuorumTrustStorePassword = storePassword, storePassword
	cfg.QuorumTLSProtocol, cfg.QuorumTLSEnabledProtocols = "TLSv1", []string{"SSLv3"}
	cfg.QuorumTLSCipherSuites = []string{"TLS_FOO"}
	if err := cfg.Validate(); err != nil && strings.Contains(err.Error(), storePassword) {
		t.Errorf("Validate shows a password: %v", err)
	}
}
