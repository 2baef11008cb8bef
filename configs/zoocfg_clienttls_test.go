package configs

import (
	"strings"
	"testing"
)

// The secure client port's zoo.cfg keys map to the server's, as ZooKeeper reads them.
func TestZooCfgClientTLS(t *testing.T) {
	f := makeTLSFiles(t)
	stores := "ssl.keyStore.location=" + f.memberP12 + "\nssl.keyStore.password=" + storePassword + "\n" +
		"ssl.trustStore.location=" + f.ca + "\nssl.trustStore.type=pem\n"
	tests := []struct {
		name, cfg            string
		wantPlain, wantSecur string
		wantAuth             string
	}{
		{"secure port alone", "secureClientPort=2281\n" + stores, "", ":2281", ""},
		{"beside the plain port", "clientPort=2181\nclientPortAddress=127.0.0.1\nsecureClientPort=2281\n" +
			"secureClientPortAddress=10.0.0.1\nssl.clientAuth=WANT\n" + stores, "127.0.0.1:2181", "10.0.0.1:2281", "want"},
		{"no trust store with clientAuth none", "secureClientPort=2281\nssl.clientAuth=none\n" +
			"ssl.keyStore.location=" + f.memberPEM + "\n", "", ":2281", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, log, err := loadZooCfg(t, "dataDir=DIR\n"+tt.cfg+"X509AuthenticationProvider.superUser=CN=admin,O=acme\n"+
				"ssl.protocol=TLSv1.3\nssl.enabledProtocols=TLSv1.3\nssl.ciphersuites=TLS_AES_128_GCM_SHA256\n", "")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ClientAddr != tt.wantPlain || cfg.SecureClientAddr != tt.wantSecur || cfg.ClientTLSAuth != tt.wantAuth {
				t.Errorf("client_addr, secure_client_addr, client_tls_auth = %q, %q, %q; want %q, %q, %q",
					cfg.ClientAddr, cfg.SecureClientAddr, cfg.ClientTLSAuth, tt.wantPlain, tt.wantSecur, tt.wantAuth)
			}
			if cfg.X509SuperUser != "CN=admin,O=acme" || cfg.ClientTLSProtocol != "TLSv1.3" ||
				strings.Join(cfg.ClientTLSEnabledProtocols, ",") != "TLSv1.3" ||
				strings.Join(cfg.ClientTLSCipherSuites, ",") != "TLS_AES_128_GCM_SHA256" {
				t.Errorf("x509_super_user, client_tls_protocol, _enabled_protocols, _cipher_suites = %q, %q, %q, %q",
					cfg.X509SuperUser, cfg.ClientTLSProtocol, cfg.ClientTLSEnabledProtocols, cfg.ClientTLSCipherSuites)
			}
			if strings.Contains(tt.cfg, "ssl.trustStore") && (cfg.ClientTLSKeyStorePassword != storePassword ||
				cfg.ClientTLSTrustStore != f.ca || cfg.ClientTLSTrustStoreType != "PEM") {
				t.Errorf("stores = %q (type %q), password set %v", cfg.ClientTLSTrustStore, cfg.ClientTLSTrustStoreType,
					cfg.ClientTLSKeyStorePassword == storePassword)
			}
			if strings.Contains(log, storePassword) {
				t.Errorf("the log shows the password:\n%s", log)
			}
		})
	}
}

func TestZooCfgClientTLSErrors(t *testing.T) {
	tests := []struct{ name, cfg, want string }{
		{"address without port", "clientPort=2181\nsecureClientPortAddress=127.0.0.1\n",
			"secureClientPortAddress is set but secureClientPort is not set"},
		{"no port at all", "", "clientPort is not set: want a port in [1, 65535], or a secureClientPort"},
		{"bad client auth", "secureClientPort=2281\nssl.clientAuth=always\n", "ssl.clientAuth"},
		{"misspelt key", "clientPort=2181\nssl.keystore.location=/x.pem\n", "ssl.keystore.location"},
		{"no key store", "secureClientPort=2281\nssl.clientAuth=none\n",
			"server.client_tls_key_store = \"\": secure_client_addr needs the server's key store"},
		{"no trust store for need", "secureClientPort=2281\nssl.keyStore.location=/k.pem\n",
			"server.client_tls_trust_store"},
		{"bad super user", "clientPort=2181\nX509AuthenticationProvider.superUser=admin\n",
			"X509AuthenticationProvider.superUser"},
		{"other auth provider", "clientPort=2181\nssl.authProvider=sasl\n", "ssl.authProvider"},
		{"password hidden", "secureClientPort=2281\nssl.keyStore.password=" + storePassword + "\nssl.keyStore.type=JCEKS\n",
			"ssl.keyStore.type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadZooCfg(t, "dataDir=DIR\n"+tt.cfg, "")
			wantErr(t, err, tt.want)
			if err != nil && strings.Contains(err.Error(), storePassword) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
