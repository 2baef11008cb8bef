package configs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paddock/paddock/internal/certs"
	"github.com/paddock/paddock/server/datatree"
)

// zooMapped lists the zoo.cfg keys paddock uses, each with how ZooKeeper reads its value.
// Keys from QuorumPeerConfig.parseProperties are parsed with Integer.parseInt; the ones
// ZooKeeper turns into system properties are read with Integer.getInteger, which also
// takes hex (0xfffff); there, where ZooKeeper silently falls back to its default on a
// malformed value, paddock stops instead.
//
// znode.container.* and jute.maxbuffer are plain JVM properties in ZooKeeper, so setting
// them in zoo.cfg has no effect there; paddock honours them, which is what the user meant.
var zooMapped = map[string]func(string) (any, error){
	"tickTime":               positiveMillis(javaInt),
	"dataDir":                nonEmpty("want a directory"),
	"dataLogDir":             nonEmpty("want a directory"),
	"clientPort":             port(javaInt),
	"clientPortAddress":      host,
	"maxClientCnxns":         javaInt,
	"minSessionTimeout":      sessionTimeout,
	"maxSessionTimeout":      sessionTimeout,
	"snapCount":              javaDecode,
	"preAllocSize":           kibibytes,
	"globalOutstandingLimit": javaDecode,

	// zookeeper.nio.sessionlessCnxnTimeout, which zoo.cfg sets without its zookeeper.
	// prefix, as it sets every key QuorumPeerConfig does not know as a system property.
	"nio.sessionlessCnxnTimeout": positiveMillis(javaDecode),

	"autopurge.snapRetainCount": javaInt,
	"autopurge.purgeInterval":   purgeHours,

	"4lw.commands.whitelist": fourLetterWords,
	"admin.enableServer":     oneOf("true", "false"),
	"admin.serverAddress":    host,
	"admin.serverPort":       port(javaDecode),
	"admin.pprof":            javaBool,  // paddock's
	"admin.auth":             javaBool,  // paddock's
	"snapshot.receiveFloor":  byteCount, // paddock's

	"forceSync":            oneOf("yes", "no"),
	"skipACL":              oneOf("yes", "no"),
	"extendedTypesEnabled": javaBool,
	"jute.maxbuffer":       javaDecode,
	"reconfigEnabled":      javaBool,
	// A Java system property in ZooKeeper (-Dreadonlymode.enabled=true), which zoo.cfg
	// cannot set there; paddock reads it from zoo.cfg under the same name.
	"readonlymode.enabled": javaBool,
	// paddock's: maxClientCnxns for read-only sessions, which outlive their connections.
	"readonlymode.maxClientCnxns": javaInt,

	// zookeeper.enforceQuota and zookeeper.audit.enable, system properties that zoo.cfg
	// sets without their prefix (docs/quotas.md).
	"enforceQuota": javaBool,
	"audit.enable": javaBool,

	"DigestAuthenticationProvider.superDigest": nonEmpty("want user:<base64 SHA-1 digest>"),
	"znode.container.checkIntervalMs":          positiveMillis(javaDecode),
	"znode.container.maxPerMinute":             javaDecode,

	// SASL (server/sasl.go). ZooKeeper takes the JAAS file from the JVM property
	// java.security.auth.login.config, which zoo.cfg cannot set there (it would become
	// zookeeper.java.security…); paddock reads it from zoo.cfg under the same name, as it
	// does jute.maxbuffer. sasl.serverconfig and superUser are zookeeper.* properties
	// that zoo.cfg does set in ZooKeeper, as are enforce.auth.enabled and .schemes.
	"java.security.auth.login.config": nonEmpty("want the JAAS login configuration file"),
	"sasl.serverconfig":               nonEmpty("want the JAAS section of the server's users (ZooKeeper's default: Server)"),
	"superUser":                       nonEmpty("want a SASL user name"),
	"enforce.auth.enabled":            javaBool,
	"enforce.auth.schemes":            func(s string) (any, error) { return commaList(s), nil },
	"sessionRequireClientSASLAuth":    javaBool, // the pre-3.7 form of enforce.auth with sasl (saslAuth)
	// paddock's: the digests the server knows, and enforce.auth accepting only those.
	"enforce.auth.knownDigestsOnly":                 javaBool,
	"DigestAuthenticationProvider.knownDigestsFile": nonEmpty("want a file of digest ids, one [role=]digest:user:<base64 SHA-1> a line"),

	"dynamicConfigFile": nonEmpty("want a file name"),
	"peerType":          learnerType,

	// The member link's TLS. ZooKeeper turns the ssl.quorum.* keys into system properties
	// (zookeeper.ssl.quorum.*) that its QuorumX509Util reads; an empty value is as good as
	// none there, and here. The password keys are never shown back (zooHidden).
	"sslQuorum":                          javaBool,
	"ssl.quorum.keyStore.location":       anyString,
	"ssl.quorum.keyStore.type":           storeType,
	"ssl.quorum.keyStore.password":       anyString,
	"ssl.quorum.keyStore.passwordPath":   anyString,
	"ssl.quorum.trustStore.location":     anyString,
	"ssl.quorum.trustStore.type":         storeType,
	"ssl.quorum.trustStore.password":     anyString,
	"ssl.quorum.trustStore.passwordPath": anyString,
	"ssl.quorum.hostnameVerification":    javaBool,
	"ssl.quorum.protocol":                tlsProtocol,
	"ssl.quorum.enabledProtocols":        tlsProtocols,
	"ssl.quorum.ciphersuites":            cipherSuites,
	"ssl.quorum.clientAuth":              clientAuthNeed,
	// paddock's: a plain peer port on an address other than loopback (docs/security.md).
	"quorum.plaintext": javaBool,

	// The secure client port, and its TLS: the ssl.* keys (zookeeper.ssl.*, which
	// ZooKeeper's ClientX509Util reads) as the ssl.quorum.* ones are for the member link.
	"secureClientPort":            port(javaInt),
	"secureClientPortAddress":     host,
	"ssl.keyStore.location":       anyString,
	"ssl.keyStore.type":           storeType,
	"ssl.keyStore.password":       anyString,
	"ssl.keyStore.passwordPath":   anyString,
	"ssl.trustStore.location":     anyString,
	"ssl.trustStore.type":         storeType,
	"ssl.trustStore.password":     anyString,
	"ssl.trustStore.passwordPath": anyString,
	"ssl.clientAuth":              clientAuthMode,
	"ssl.protocol":                tlsProtocol,
	"ssl.enabledProtocols":        tlsProtocols,
	"ssl.ciphersuites":            cipherSuites,
	// zookeeper.X509AuthenticationProvider.superUser, set from zoo.cfg as every
	// key ZooKeeper does not know is: a system property.
	"X509AuthenticationProvider.superUser": x509Subject,
}

// saslProviderClass is ZooKeeper's SASL authentication provider: listed as an
// authProvider.N, it makes the sasl scheme valid in ACLs. paddock's sasl scheme is
// always valid; its users come from java.security.auth.login.config.
const saslProviderClass = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"

// zooSASLProvider reports whether key = value registers ZooKeeper's SASL provider.
func zooSASLProvider(key, value string) bool {
	return strings.HasPrefix(key, "authProvider.") && value == saslProviderClass
}

// saslAuth applies sessionRequireClientSASLAuth=true, which ZooKeeper's
// AuthenticationHelper reads as enforce.auth with the sasl scheme, whatever enforce.auth.*
// say; and warns when the SASL provider is listed with no users to authenticate.
func (m *zooMapper) saslAuth(c *zooCfg) {
	if on, _ := m.got["sessionRequireClientSASLAuth"].(bool); on {
		c.set("enforce_auth", true, "sessionRequireClientSASLAuth")
		c.set("enforce_auth_schemes", []string{"sasl"}, "sessionRequireClientSASLAuth")
	}
	if _, ok := m.got["java.security.auth.login.config"]; m.saslProvider > 0 && !ok {
		m.logger.Warn("sasl provider configured without users: sasl requests authenticate no one",
			"file", m.path, "line", m.saslProvider, "want", "java.security.auth.login.config = a JAAS file with a Server section")
	}
}

// zooHidden reports whether key's value may be a secret, which an error about the key
// must not show: a password key, or what may be one misspelt (ssl.quorum.keystore.password).
func zooHidden(key string) bool {
	k := strings.ToLower(key)
	return strings.Contains(k, "passw") || strings.Contains(k, "secret")
}

// zooPasswords maps the password keys to the server keys they set, each with the
// ZooKeeper 3.8 key naming a file that holds the password instead; when both are set the
// file wins, as in ZooKeeper (X509Util.getPasswordFromConfigPropertyOrFile).
var zooPasswords = []struct{ zk, path, key string }{
	{"ssl.quorum.keyStore.password", "ssl.quorum.keyStore.passwordPath", "quorum_key_store_password"},
	{"ssl.quorum.trustStore.password", "ssl.quorum.trustStore.passwordPath", "quorum_trust_store_password"},
	{"ssl.keyStore.password", "ssl.keyStore.passwordPath", "client_tls_key_store_password"},
	{"ssl.trustStore.password", "ssl.trustStore.passwordPath", "client_tls_trust_store_password"},
}

// zooDirect maps zoo.cfg keys whose parsed value is a server key's value as is.
var zooDirect = []struct{ zk, key string }{
	{"tickTime", "tick_time"},
	{"dataDir", "data_dir"},
	{"dataLogDir", "data_log_dir"},
	{"maxClientCnxns", "max_client_cnxns"},
	{"minSessionTimeout", "min_session_timeout"},
	{"maxSessionTimeout", "max_session_timeout"},
	{"snapCount", "snap_count"},
	{"preAllocSize", "prealloc_size"},
	{"globalOutstandingLimit", "max_outstanding"},
	{"nio.sessionlessCnxnTimeout", "handshake_timeout"},
	{"autopurge.purgeInterval", "purge_interval"},
	{"4lw.commands.whitelist", "four_letter_words"},
	{"admin.pprof", "admin_pprof"},
	{"admin.auth", "admin_auth"},
	{"snapshot.receiveFloor", "snapshot_receive_floor"},
	{"forceSync", "force_sync"},
	{"skipACL", "skip_acl"},
	{"extendedTypesEnabled", "extended_types"},
	{"reconfigEnabled", "reconfig_enabled"},
	{"readonlymode.enabled", "read_only_mode"},
	{"readonlymode.maxClientCnxns", "read_only_max_client_cnxns"},
	{"enforceQuota", "enforce_quota"},
	{"audit.enable", "audit_enable"},
	{"jute.maxbuffer", "max_buffer"},
	{"DigestAuthenticationProvider.superDigest", "super_digest"},
	{"java.security.auth.login.config", "sasl_jaas_config"},
	{"sasl.serverconfig", "sasl_jaas_section"},
	{"superUser", "sasl_super_user"},
	{"enforce.auth.enabled", "enforce_auth"},
	{"enforce.auth.schemes", "enforce_auth_schemes"},
	{"enforce.auth.knownDigestsOnly", "enforce_auth_known_digests_only"},
	{"DigestAuthenticationProvider.knownDigestsFile", "known_digests_file"},
	{"znode.container.checkIntervalMs", "container_check_interval"},
	{"znode.container.maxPerMinute", "container_max_per_minute"},
	{"sslQuorum", "quorum_tls"},
	{"ssl.quorum.keyStore.location", "quorum_key_store"},
	{"ssl.quorum.keyStore.type", "quorum_key_store_type"},
	{"ssl.quorum.trustStore.location", "quorum_trust_store"},
	{"ssl.quorum.trustStore.type", "quorum_trust_store_type"},
	{"ssl.quorum.hostnameVerification", "quorum_hostname_verification"},
	{"ssl.quorum.protocol", "quorum_tls_protocol"},
	{"ssl.quorum.enabledProtocols", "quorum_tls_enabled_protocols"},
	{"ssl.quorum.ciphersuites", "quorum_tls_cipher_suites"},
	{"quorum.plaintext", "quorum_plaintext"},
	{"ssl.keyStore.location", "client_tls_key_store"},
	{"ssl.keyStore.type", "client_tls_key_store_type"},
	{"ssl.trustStore.location", "client_tls_trust_store"},
	{"ssl.trustStore.type", "client_tls_trust_store_type"},
	{"ssl.clientAuth", "client_tls_auth"},
	{"ssl.protocol", "client_tls_protocol"},
	{"ssl.enabledProtocols", "client_tls_enabled_protocols"},
	{"ssl.ciphersuites", "client_tls_cipher_suites"},
	{"X509AuthenticationProvider.superUser", "x509_super_user"},
}

// Why paddock accepts a ZooKeeper key without using it; each reason goes into the warning.
const (
	whySecurity  = "paddock authenticates clients with digest, x509 (TLS client certificates on secureClientPort) and SASL DIGEST-MD5 only: no Kerberos (GSSAPI), and a failed SASL login always closes"
	whyJVM       = "a setting of ZooKeeper's Java implementation with no equivalent in paddock"
	whyClient    = "a ZooKeeper client setting, not a server one"
	whyNoFeature = "a ZooKeeper feature paddock does not have"

	whyLargeRequests = "paddock counts a request once per 64 KiB of its frame toward globalOutstandingLimit, " +
		"and throttles rather than closes (docs/limits.md)"

	// The ensemble's keys: paddock's members replicate with Raft, not ZooKeeper's Zab.
	whyRaftTiming = "Raft's election timeout (server.election_timeout, default 1s) does this job in paddock's ensembles"
	whyElection   = "paddock elects leaders with Raft"
	whyZab        = "a setting of ZooKeeper's Zab ensembles with no equivalent in paddock's Raft ones"
	whyReconfig   = "paddock keeps a reconfigured ensemble in its Raft log, not in a dynamic config file (docs/ensemble.md)"
	whyQuorum     = "paddock's quorum is a majority of the participants (Raft): no groups, weights or oracle"
	whyPeerAuth   = "paddock's members authenticate each other with TLS certificates (sslQuorum), not SASL"

	// The member link's TLS settings paddock does not have.
	whyCertReload  = "paddock reads the key and trust stores once, at start: restart a member to load new certificates"
	whyRevocation  = "paddock checks no certificate revocation (CRL, OCSP): to shut out a leaked key, make a new CA and new member certificates"
	whyTLSDetect   = "paddock's peer port speaks TLS only when sslQuorum is set, and plain TCP only when it is not: there is no TLS detection"
	whyTLSProvider = "paddock's TLS is Go's crypto/tls"
	whyClientHost  = "a member accepting a connection checks the member id the peer's certificate proves, not the host name of its address"
	whyUnification = "paddock serves TLS on secureClientPort and plain TCP on clientPort: no port unification"
)

// zooIgnored lists keys ZooKeeper knows and paddock does not use: QuorumPeerConfig's own
// keys and the system properties ZooKeeper 3.8/3.9 reads. Where ZooKeeper rejects a bad
// value of such a key, so does paddock (check); otherwise check is nil.
var zooIgnored = map[string]struct {
	why   string
	check func(string) (any, error)
}{
	"initLimit":                       {whyRaftTiming, javaInt},
	"syncLimit":                       {whyRaftTiming, javaInt},
	"connectToLearnerMasterLimit":     {whyRaftTiming, javaInt},
	"electionAlg":                     {whyElection, javaInt},
	"electionPortBindRetry":           {whyElection + " over the peer port: nothing listens on the election port", nil},
	"cnxTimeout":                      {whyElection, nil},
	"quorumCnxnTimeoutMs":             {whyElection, nil},
	"quorumListenOnAllIPs":            {"members listen on the peer address of their server.N line", javaBool},
	"standaloneEnabled":               {"paddock runs one server.N line standalone and two or more as an ensemble, whatever this says", javaBool},
	"version":                         {whyReconfig, nil},
	"observerMasterPort":              {"paddock's observers are Raft learners, which the leader replicates to over the peer address", javaInt},
	"syncEnabled":                     {whyZab, javaBool},
	"leaderServes":                    {whyZab, nil},
	"forceSnapshotSync":               {whyZab, nil},
	"leaderConnectDelayDuringRetryMs": {whyZab, nil},
	"oraclePath":                      {whyQuorum, nil},
	"sslQuorumReloadCertFiles":        {whyCertReload, javaBool},
	"quorum.cnxn.threads.size":        {whyJVM, javaInt},
	"ensembleAuthName":                {whyNoFeature, nil},

	"portUnification":                          {whyUnification, javaBool},
	"client.portUnification":                   {whyUnification, nil},
	"client.secure":                            {whyClient, nil},
	"requireClientAuthScheme":                  {whySecurity, nil},
	"allowSaslFailedClients":                   {whySecurity, nil},
	"letAnySaslUserDoX":                        {whySecurity, nil},
	"kinit":                                    {whySecurity, nil},
	"jaasLoginRenew":                           {whySecurity, nil},
	"requireKerberosConfig":                    {whySecurity, nil},
	"security.auth_to_local":                   {whySecurity, nil},
	"SASLAuthenticationProvider.superPassword": {whySecurity, nil},
	"DigestAuthenticationProvider.enabled":     {whySecurity, nil},
	"DigestAuthenticationProvider.digestAlg":   {whySecurity + "; super digests are SHA-1", nil},

	"snapSizeLimitInKb":                                     {whyJVM, nil},
	"txnLogSizeLimitInKb":                                   {whyJVM, nil},
	"snapshotSizeFactor":                                    {whyJVM, nil},
	"snapshot.compression.method":                           {whyJVM, nil},
	"snapshot.trust.empty":                                  {whyJVM, nil},
	"commitLogCount":                                        {whyJVM, nil},
	"maxResponseCacheSize":                                  {whyJVM, nil},
	"maxGetChildrenResponseCacheSize":                       {whyJVM, nil},
	"serverCnxnFactory":                                     {whyJVM, nil},
	"clientPortListenBacklog":                               {whyJVM, javaInt},
	"maxCnxns":                                              {whyJVM + "; maxClientCnxns still limits each client address", nil},
	"flushDelay":                                            {whyJVM, nil},
	"maxWriteQueuePollTime":                                 {whyJVM, nil},
	"maxBatchSize":                                          {whyJVM, nil},
	"throttled_op_wait_time":                                {whyJVM, nil},
	"largeRequestMaxBytes":                                  {whyLargeRequests, nil},
	"largeRequestThreshold":                                 {whyLargeRequests, nil},
	"intBufferStartingSizeBytes":                            {whyJVM, nil},
	"bitHashCacheSize":                                      {whyJVM, nil},
	"fsync.warningthresholdms":                              {whyJVM, nil},
	"watchManagerName":                                      {whyJVM, nil},
	"watcherCleanThreshold":                                 {whyJVM, nil},
	"watcherCleanIntervalInSeconds":                         {whyJVM, nil},
	"watcherCleanThreadsNum":                                {whyJVM, nil},
	"maxInProcessingDeadWatchers":                           {whyJVM, nil},
	"digest.enabled":                                        {whyJVM, nil},
	"closeSessionTxn.enabled":                               {whyJVM, nil},
	"serializeLastProcessedZxid.enabled":                    {whyJVM, nil},
	"request_stale_connection_check":                        {whyJVM, nil},
	"request_stale_latency_check":                           {whyJVM, nil},
	"forward_learner_requests_to_commit_processor_disabled": {whyJVM, nil},
	"tcpKeepAlive":                                          {whyJVM, nil},
	"clientTcpKeepAlive":                                    {whyJVM, nil},
	"datadir.autocreate":                                    {whyJVM, nil},
	"db.autocreate":                                         {whyJVM, nil},
	"jute.maxbuffer.extrasize":                              {whyJVM, nil},
	"znode.container.maxNeverUsedIntervalMs":                {whyJVM, nil},
	"admin.idleTimeout":                                     {whyJVM, nil},
	"admin.commandURL":                                      {whyJVM + "; paddock serves /commands", nil},
	"admin.portUnification":                                 {whySecurity, nil},
	"admin.forceHttps":                                      {whySecurity, nil},
	"admin.needClientAuth":                                  {whySecurity, nil},
	"admin.httpVersion":                                     {whyJVM, nil},
	"admin.rateLimiterIntervalInMS":                         {whyJVM, nil},

	"localSessionsEnabled":          {whyNoFeature, javaBool},
	"localSessionsUpgradingEnabled": {whyNoFeature, javaBool},
	"emulate353TTLNodes":            {whyNoFeature, nil},
	"enableEagerACLCheck":           {whyNoFeature, nil},
	"audit.impl.class":              {"paddock writes its audit log itself, to server.audit_log_file", nil},

	"ssl.quorum.context.supplier.class":          {"a Java class that supplies the SSLContext: paddock builds its TLS from the ssl.quorum.keyStore and trustStore keys", nil},
	"ssl.quorum.crl":                             {whyRevocation, nil},
	"ssl.quorum.ocsp":                            {whyRevocation, nil},
	"ssl.quorum.handshakeDetectionTimeoutMillis": {whyTLSDetect, nil},
	"ssl.quorum.clientHostnameVerification":      {whyClientHost, nil},
	"ssl.quorum.sslProvider":                     {whyTLSProvider, nil},

	"ssl.context.supplier.class":          {"a Java class that supplies the SSLContext: paddock builds its TLS from the ssl.keyStore and trustStore keys", nil},
	"ssl.crl":                             {whyRevocation, nil},
	"ssl.ocsp":                            {whyRevocation, nil},
	"ssl.handshakeDetectionTimeoutMillis": {whyUnification, nil},
	"ssl.hostnameVerification":            {"a client setting: a server does not check client host names", nil},
	"ssl.clientHostnameVerification":      {"paddock checks a client certificate's chain, not the host name of the client's address", nil},
	"ssl.sslProvider":                     {whyTLSProvider, nil},
	"ssl.authProvider":                    {"paddock's secure client port authenticates certificates with the x509 scheme", x509Provider},

	"clientCnxnSocket":      {whyClient, nil},
	"disableAutoWatchReset": {whyClient, nil},
	"request.timeout":       {whyClient, nil},
}

// zooIgnoredPrefixes covers families of keys too open-ended to list one by one.
var zooIgnoredPrefixes = []struct{ prefix, why string }{
	{"group.", whyQuorum},
	{"weight.", whyQuorum},
	{"multiAddress.", "a paddock member has one peer address: server.N lines with several (|) are refused"},
	{"quorum.auth.", whyPeerAuth},
	{"fastleader.", whyElection},
	{"leader.", whyZab},
	{"learner.", whyZab},
	{"follower.", whyZab},
	{"observer.", whyZab},
	{"observerMaster.", whyZab},
	{"authProvider.", whySecurity},
	{"sasl.", whySecurity},
	{"kerberos.", whySecurity},
	{"metricsProvider.", whyJVM + "; paddock serves Prometheus metrics on the admin server's /metrics"},
	{"jvm.pause.", whyJVM},
	{"nio.", whyJVM},
	{"netty.", whyJVM},
	{"commitProcessor.", whyJVM},
	{"request_throttle", whyJVM},
	{"connection_throttle_", whyJVM},
	{"pathStats.", whyJVM},
	{"messageTracker.", whyJVM},
	{"admin.snapshot.", whyNoFeature},
	{"admin.restore.", whyNoFeature},
	{"jmx.", whyJVM},
}

// zooIgnoredWhy returns why paddock ignores key, or "" when ZooKeeper does not know it.
func zooIgnoredWhy(key string) string {
	if k, ok := zooIgnored[key]; ok {
		return k.why
	}
	if strings.HasPrefix(key, "ssl.") {
		// The TLS keys are all listed, so that a misspelt one, which would leave a
		// port less secure than meant, is an unknown key with a suggestion.
		return ""
	}
	for _, p := range zooIgnoredPrefixes {
		if strings.HasPrefix(key, p.prefix) {
			return p.why
		}
	}
	return ""
}

// zooKnownKeys lists every key named in the tables, for suggestions.
func zooKnownKeys() []string {
	keys := []string{"server.1"}
	for k := range zooMapped {
		keys = append(keys, k)
	}
	for k := range zooIgnored {
		keys = append(keys, k)
	}
	return keys
}

// javaTrim is Java's String.trim, which ZooKeeper applies to keys and values: it drops
// every character up to and including ' ' from both ends.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// javaInt parses like Integer.parseInt: decimal, optional sign, 32 bits.
func javaInt(s string) (any, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return nil, errors.New("want an integer")
	}
	return int(n), nil
}

// javaDecode parses like Integer.decode (what Integer.getInteger uses): decimal, 0x or #
// for hex, a leading 0 for octal, optional sign, 32 bits.
func javaDecode(s string) (any, error) {
	bad := errors.New("want an integer (decimal, or hex as 0x…)")
	digits, neg := s, false
	if rest, ok := strings.CutPrefix(digits, "-"); ok {
		digits, neg = rest, true
	} else if rest, ok := strings.CutPrefix(digits, "+"); ok {
		digits = rest
	}
	base := 10
	switch {
	case strings.HasPrefix(digits, "0x"), strings.HasPrefix(digits, "0X"):
		digits, base = digits[2:], 16
	case strings.HasPrefix(digits, "#"):
		digits, base = digits[1:], 16
	case len(digits) > 1 && digits[0] == '0':
		digits, base = digits[1:], 8
	}
	if digits == "" || digits[0] == '+' || digits[0] == '-' {
		return nil, bad
	}
	n, err := strconv.ParseInt(digits, base, 64)
	if neg {
		n = -n
	}
	if err != nil || n != int64(int32(n)) {
		return nil, bad
	}
	return int(n), nil
}

// byteCount reads a size in bytes, an int64 (paddock's keys).
func byteCount(s string) (any, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return nil, errors.New("want a size in bytes, an integer >= 0")
	}
	return n, nil
}

// kibibytes reads preAllocSize, which ZooKeeper parses with Long.parseLong and
// multiplies by 1024.
func kibibytes(s string) (any, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return nil, errors.New("want a size in KiB, an integer >= 0")
	}
	return n << 10, nil
}

// javaBool parses like QuorumPeerConfig.parseBoolean and Boolean.getBoolean: true or
// false in any case.
func javaBool(s string) (any, error) {
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return nil, errors.New("want true or false")
}

// oneOf accepts exactly yes and no (or the given pair), the first meaning true.
// ZooKeeper compares forceSync with "no", skipACL with "yes" and admin.enableServer
// with "false", case-sensitively, and takes anything else as the other choice; paddock
// rejects anything else instead of guessing.
func oneOf(yes, no string) func(string) (any, error) {
	return func(s string) (any, error) {
		switch s {
		case yes:
			return true, nil
		case no:
			return false, nil
		}
		return nil, fmt.Errorf("want %s or %s (lower case, as ZooKeeper compares it)", yes, no)
	}
}

func nonEmpty(want string) func(string) (any, error) {
	return func(s string) (any, error) {
		if s == "" {
			return nil, errors.New(want)
		}
		return s, nil
	}
}

func positiveMillis(parse func(string) (any, error)) func(string) (any, error) {
	return func(s string) (any, error) {
		n, err := parse(s)
		if err != nil || n.(int) <= 0 {
			return nil, errors.New("want milliseconds, an integer > 0")
		}
		return time.Duration(n.(int)) * time.Millisecond, nil
	}
}

// maxPurgeHours is the longest purge interval a time.Duration holds, in hours.
const maxPurgeHours = int(math.MaxInt64 / int64(time.Hour))

// purgeHours reads autopurge.purgeInterval: hours, parsed with Integer.parseInt. Zero or
// less disables purging, which ZooKeeper's DatadirCleanupManager does by not scheduling
// its task; paddock's zero means the same.
func purgeHours(s string) (any, error) {
	n, err := javaInt(s)
	if err != nil || n.(int) > maxPurgeHours {
		return nil, fmt.Errorf("want hours, an integer up to %d; 0 or less disables purging", maxPurgeHours)
	}
	return time.Duration(max(n.(int), 0)) * time.Hour, nil
}

// sessionTimeout reads minSessionTimeout or maxSessionTimeout: milliseconds, or -1 for
// ZooKeeper's default (2 and 20 ticks), which is paddock's zero.
func sessionTimeout(s string) (any, error) {
	n, err := javaInt(s)
	switch {
	case err == nil && n.(int) == -1:
		return time.Duration(0), nil
	case err == nil && n.(int) > 0:
		return time.Duration(n.(int)) * time.Millisecond, nil
	}
	return nil, errors.New("want milliseconds, an integer > 0, or -1 for the default (2 or 20 × tickTime)")
}

func port(parse func(string) (any, error)) func(string) (any, error) {
	return func(s string) (any, error) {
		n, err := parse(s)
		if err != nil || n.(int) < 1 || n.(int) > 65535 {
			return nil, errors.New("want a port number in [1, 65535]")
		}
		return n, nil
	}
}

// learnerType reads peerType as QuorumPeerConfig does, observer or participant in any
// case; true means observer.
func learnerType(s string) (any, error) {
	switch strings.ToLower(s) {
	case "observer":
		return true, nil
	case "participant":
		return false, nil
	}
	return nil, errors.New("want participant or observer")
}

// host accepts a host name or an IP address, IPv6 with or without brackets.
func host(s string) (any, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if h == "" || strings.ContainsAny(h, " /") {
		return nil, errors.New("want a host name or an IP address")
	}
	return h, nil
}

// fourLetterWords reads 4lw.commands.whitelist: comma-separated, blanks trimmed, * for
// all. ZooKeeper always adds srvr, which zkServer.sh status needs; so does paddock.
func fourLetterWords(s string) (any, error) {
	words := []string{}
	for w := range strings.SplitSeq(s, ",") {
		switch w = strings.TrimSpace(w); w {
		case "":
		case "*":
			return []string{"*"}, nil
		default:
			words = append(words, w)
		}
	}
	if !slices.Contains(words, "srvr") {
		words = append(words, "srvr")
	}
	return words, nil
}

func anyString(s string) (any, error) { return s, nil }

// storeType reads ssl.quorum.keyStore.type and trustStore.type: PEM, PKCS12 or JKS in
// any case; empty tells the type by the store's file name, as in ZooKeeper. JKS is kept
// for the store's loading to decide (certs.LoadKeyStore): it reads a PKCS12 file called
// JKS, as Java does, and refuses a true JKS one with how to convert it. BCFKS is refused.
func storeType(s string) (any, error) {
	switch {
	case s == "":
		return "", nil
	case strings.EqualFold(s, "JKS"):
		return "JKS", nil
	}
	return certs.StoreType("", s)
}

// tlsProtocol reads ssl.quorum.protocol: TLSv1.2 or TLSv1.3.
func tlsProtocol(s string) (any, error) {
	if s == "" {
		return "", nil
	}
	if _, err := certs.Version(s); err != nil {
		return nil, err
	}
	return s, nil
}

// tlsProtocols reads ssl.quorum.enabledProtocols: comma-separated, as ZooKeeper splits it;
// blanks around names are dropped.
func tlsProtocols(s string) (any, error) {
	list := commaList(s)
	if _, _, err := certs.Versions("", list); err != nil {
		return nil, err
	}
	return list, nil
}

// cipherSuites reads ssl.quorum.ciphersuites: comma-separated IANA names.
func cipherSuites(s string) (any, error) {
	list := commaList(s)
	if _, err := certs.CipherSuites(list); err != nil {
		return nil, err
	}
	return list, nil
}

// clientAuthNeed reads ssl.quorum.clientAuth, which ZooKeeper reads in any case and
// defaults to need. Only need is accepted: members must prove who they are to each other.
func clientAuthNeed(s string) (any, error) {
	switch strings.ToLower(s) {
	case "", "need":
		return true, nil
	case "want", "none":
		return nil, errors.New("paddock's members always require each other's certificates: want need, or no ssl.quorum.clientAuth")
	}
	return nil, errors.New("want need (ZooKeeper's NONE and WANT are refused: members must authenticate each other)")
}

// clientAuthMode reads ssl.clientAuth: none, want or need in any case; empty is need,
// ZooKeeper's default (X509Util's ClientAuth.fromPropertyValue).
func clientAuthMode(s string) (any, error) {
	switch v := strings.ToLower(s); v {
	case "":
		return "need", nil
	case "none", "want", "need":
		return v, nil
	}
	return nil, errors.New("want none, want or need")
}

// x509Subject reads X509AuthenticationProvider.superUser: a subject as the x509
// identity prints it.
func x509Subject(s string) (any, error) {
	if s == "" || !datatree.ValidX509ID(s) {
		return nil, errors.New("want a certificate subject in RFC 2253 form, as the x509 identity prints it: CN=admin,O=example")
	}
	return s, nil
}

// x509Provider checks ssl.authProvider, the auth scheme a secure connection's
// certificate is read with: x509 is the only one.
func x509Provider(s string) (any, error) {
	if s != "" && s != "x509" {
		return nil, errors.New("paddock reads client certificates with the x509 scheme only: want x509, or no ssl.authProvider")
	}
	return s, nil
}

// commaList splits a comma-separated value, dropping blanks around items and empty items.
func commaList(s string) []string {
	var list []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			list = append(list, item)
		}
	}
	return list
}
