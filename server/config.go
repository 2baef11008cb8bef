package server

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/paddock/paddock/server/wire"
)

// Config is the configuration of one coordination server. It is immutable after New.
// Field comments name the zoo.cfg key each field corresponds to.
type Config struct {
	// ClientAddr is the host:port clients connect to in plain TCP
	// (clientPortAddress:clientPort); empty when only SecureClientAddr serves clients.
	// A plain port on an address other than loopback is logged as a warning: its
	// clients are neither encrypted nor authenticated by the connection.
	ClientAddr string
	// SecureClientAddr is the host:port clients connect to over TLS
	// (secureClientPortAddress:secureClientPort); empty means no TLS port. The
	// ClientTLS* fields configure it (clienttls.go, docs/security.md).
	SecureClientAddr string
	// DataDir holds snapshots and, unless DataLogDir is set, the write-ahead log (dataDir).
	DataDir string
	// DataLogDir, if set, holds the write-ahead log on its own device (dataLogDir).
	DataLogDir string
	// ServerID is this server's id (myid); standalone servers use 1. It is the high byte
	// of every session id, so it must be in [1, 254] (255 is reserved by extended types).
	ServerID int64

	// TickTime is the basic time unit: session expiry is checked on tick boundaries (tickTime).
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the negotiated session timeout; zero means
	// 2×TickTime and 20×TickTime (minSessionTimeout, maxSessionTimeout).
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration

	// MaxClientCnxns limits concurrent connections from one IP address; 0 means no limit (maxClientCnxns).
	MaxClientCnxns int
	// MaxBuffer is the largest request frame accepted, in bytes (jute.maxbuffer).
	MaxBuffer int
	// MaxOutstanding bounds the requests in flight in the server before reads from
	// clients pause (globalOutstandingLimit): while this many requests are read and not
	// yet answered, a connection with a request of its own outstanding stops reading.
	MaxOutstanding int
	// MaxOutstandingPerConn bounds one connection's requests read and not yet answered;
	// at it the connection stops reading until one is answered (ZooKeeper has no such
	// bound). 100 lets a client keep a deep pipeline (a group commit takes every write
	// waiting) while ten clients, not one, are needed to reach MaxOutstanding's default.
	MaxOutstandingPerConn int
	// MaxQueuedBytes bounds the bytes of replies and notifications queued for clients and
	// not yet written, over all connections; past it the connections holding the most are
	// closed, slowest reader first (ZooKeeper has no such bound). Healthy clients drain
	// their replies within milliseconds, so what stays queued is what slow or stuck
	// clients leave unread: 128 MiB lets two clients each hold a connection's full 64 MiB
	// before anyone is cut off. The queue never passes it by more than the replies being
	// built (makeRoom), and the collector's soft limit is this, 64 MiB and twice the
	// server's state (gctune.go): what a flood of unread replies can make the process hold.
	MaxQueuedBytes int64
	// HandshakeTimeout is how long a new connection may take to send its ConnectRequest,
	// or a four-letter word, before it is closed (zookeeper.nio.sessionlessCnxnTimeout,
	// 10s in ZooKeeper).
	HandshakeTimeout time.Duration

	// SuperDigest, "super:<base64 sha1>", makes a digest identity with that hash a super user
	// that passes every ACL check (DigestAuthenticationProvider.superDigest).
	SuperDigest string
	// SASLJaasConfig names a JAAS login configuration file whose SASLJaasSection
	// section ("Server" when empty) defines the users of SASL DIGEST-MD5 as
	// user_NAME="password" options, as ZooKeeper reads the file its JVM's
	// java.security.auth.login.config names (section: zookeeper.sasl.serverconfig).
	// SASLPasswords adds users as "name:password" entries. With neither, SASL requests
	// get an empty token and authenticate no one, as in ZooKeeper without a Server
	// section. Passwords are never logged or shown (server/sasl.go).
	SASLJaasConfig  string
	SASLJaasSection string
	SASLPasswords   []string
	// SASLSuperUser makes the sasl identity of that user a super user too (zookeeper.superUser).
	SASLSuperUser string
	// EnforceAuth makes every request but auth and sasl from a connection that holds no
	// identity of one of EnforceAuthSchemes fail with SessionClosedRequireSaslAuth, and
	// close the connection (ZooKeeper 3.7's enforce.auth.enabled, enforce.auth.schemes).
	EnforceAuth        bool
	EnforceAuthSchemes []string
	// EnforceAuthKnownDigestsOnly makes a digest identity satisfy enforce.auth only if the
	// server knows it: the super digest or an entry of KnownDigestsFile
	// (enforce.auth.knownDigestsOnly, a paddock key). Without it, as in ZooKeeper, any
	// addauth digest with any user:password does, so digest among EnforceAuthSchemes
	// proves nothing (knowndigests.go), and the server warns at start.
	EnforceAuthKnownDigestsOnly bool
	// KnownDigestsFile names a file of the digest ids the server knows besides the super
	// digest, one "[role=]digest:user:<base64 SHA-1>" a line — the roles file paddock up
	// writes — other schemes' lines skipped (DigestAuthenticationProvider.knownDigestsFile,
	// a paddock key). Audit lines mark these identities known; with
	// EnforceAuthKnownDigestsOnly they are the digests enforce.auth accepts. Read at start.
	KnownDigestsFile string
	// ExtendedTypes enables TTL nodes (extendedTypesEnabled).
	ExtendedTypes bool
	// SkipACL disables all ACL checks (skipACL).
	SkipACL bool
	// EnforceQuota refuses a create or setData that would take a quota'd subtree past a
	// hard quota (setquota -N/-B) with QuotaExceeded (zookeeper.enforceQuota; docs/quotas.md).
	// Soft quotas are only logged. Every member of an ensemble must have the same value.
	EnforceQuota bool
	// AuditEnable writes the audit log (audit.enable; docs/quotas.md): a line per
	// create, delete, setData, setAcl, multi and reconfig a client of this server made,
	// and per ephemeral a session's close deleted.
	AuditEnable bool
	// AuditLogFile is the audit log's path; empty means audit.log in DataDir. It is
	// appended to, and created readable by its owner only.
	AuditLogFile string
	// AuditQueue is how many audit lines may wait for the disk; past it lines are
	// dropped and counted (mntr's audit_lines_dropped), never holding up writes.
	AuditQueue int

	// ContainerCheckInterval is how often empty containers and expired TTL nodes are looked
	// for (znode.container.checkIntervalMs); ContainerMaxPerMinute caps deletions per minute
	// (znode.container.maxPerMinute).
	ContainerCheckInterval time.Duration
	ContainerMaxPerMinute  int

	// FourLetterWords is the four-letter-word whitelist; "*" allows all (4lw.commands.whitelist).
	FourLetterWords []string
	// AdminAddr is the host:port of the admin HTTP server; empty disables it
	// (admin.serverAddress:admin.serverPort, admin.enableServer). An address that cannot
	// be bound is logged and the server serves without it (Server.AdminAddr is nil).
	AdminAddr string
	// AdminPprof serves Go's profiles under /debug/pprof/ on the admin port (admin.pprof,
	// a paddock key). Off by default: they show the command line and the heap.
	AdminPprof bool
	// AdminAuth makes the admin port's sensitive commands and profiles need an
	// Authorization header, "digest user:password" of the super user or of a digest
	// identity with every permission on the root's ACL (admin.auth, a paddock key).
	AdminAuth bool

	// SnapCount is the number of txns between snapshots (snapCount); as in ZooKeeper the
	// actual count is drawn at random from [SnapCount/2+1, SnapCount] each time, so that
	// servers sharing a disk do not snapshot together.
	SnapCount int
	// SnapRetainCount is how many snapshots the purge keeps, with the log they need
	// (autopurge.snapRetainCount); at least 3.
	SnapRetainCount int
	// PurgeInterval is how often old snapshots and log segments are purged; 0 disables
	// purging (autopurge.purgeInterval, which zoo.cfg gives in hours).
	PurgeInterval time.Duration
	// SnapshotReceiveFloor is the least a member accepts of a snapshot another member
	// streams to it, in bytes of records (snapshot.receiveFloor, a paddock key): a member
	// takes one of up to four times its own state's size, and at least this, and refuses
	// a larger one before it is whole. A new member joining an ensemble whose state is
	// larger than this needs it raised (docs/ensemble.md).
	SnapshotReceiveFloor int64
	// PreAllocSize is the size write-ahead log segments are preallocated to, in bytes
	// (preAllocSize, which zoo.cfg gives in KiB); 0 means the store's default, 64 MiB.
	PreAllocSize int64
	// ProfileContention turns on the runtime's mutex and block profiling, served with the
	// CPU and heap profiles at /debug/pprof/ on the admin port. It costs a little CPU.
	ProfileContention bool
	// Procs is how many threads may run Go code at once (GOMAXPROCS) in a process that
	// runs the server; 0 chooses (procs.go says how and why). The GOMAXPROCS environment
	// variable, when set, wins. It is process-wide: the binary applies it, with SetProcs.
	Procs int
	// ForceSync makes every commit wait for fsync (forceSync). Turning it off loses
	// acknowledged writes on a crash; it exists for tests and benchmarks only, and
	// configs.LoadServer warns, naming where the setting came from, when it is off.
	ForceSync bool

	// Ensemble lists the members of a replicated ensemble, one per server.N line of
	// zoo.cfg: "N=host:peerPort:electionPort[:participant|:observer][;[clientHost:]clientPort]"
	// (ParseMember). Empty runs a standalone server. ServerID (myid) says which member
	// this server is.
	Ensemble []string
	// ElectionTimeout is how long a member waits without hearing from a leader before
	// it stands for election (Raft's election timeout). The leader sends heartbeats ten
	// times as often.
	ElectionTimeout time.Duration
	// ReconfigEnabled lets a super user (or anyone, with SkipACL) change the ensemble's
	// membership with the reconfig request (reconfigEnabled).
	ReconfigEnabled bool
	// ReadOnlyMode lets a member cut off from its quorum serve reads to the clients that
	// ask for read-only sessions (readonlymode.enabled; docs/ensemble.md "Read-only
	// mode"): after two election timeouts without a leader it accepts connect requests
	// that set readOnly, answers them from its own tree, refuses their writes with
	// NotReadOnly, and closes them once it follows a leader again. A standalone server is
	// never cut off and ignores it.
	ReadOnlyMode bool
	// ReadOnlyMaxClientCnxns bounds the read-only sessions one client address may keep
	// on a read-only member (readonlymode.maxClientCnxns, a paddock key): maxClientCnxns
	// for sessions that outlive their connections until their timeout. 0 means
	// MaxClientCnxns, or ZooKeeper's default of it, 60, when that is 0 (readonly.go).
	ReadOnlyMaxClientCnxns int
	// Join makes a new member, on its first start with an empty data directory, wait
	// to be added to a running ensemble by a reconfig, instead of starting a new
	// ensemble of the members listed in Ensemble.
	Join bool

	// QuorumTLS secures the member link with mutual TLS (sslQuorum): a member presents
	// the certificate of QuorumKeyStore, accepts only members whose certificates chain
	// to QuorumTrustStore and prove the member id they claim, and sends nothing in the
	// clear (docs/security.md). Without it the peer port is unauthenticated.
	QuorumTLS bool
	// QuorumPlaintext lets a member without QuorumTLS listen for its peers on an
	// address other than loopback (quorum.plaintext, a paddock key): a plain peer port
	// authenticates no one, so whoever reaches it can act as any member and write as
	// any identity, and one beyond loopback must be asked for, on a network only the
	// members reach (validatePlainPeerPort). It may not be set with QuorumTLS.
	QuorumPlaintext bool
	// QuorumKeyStore holds the member's private key and certificate chain
	// (ssl.quorum.keyStore.location); QuorumKeyStoreType is PEM or PKCS12, empty to
	// tell by the file name (ssl.quorum.keyStore.type); QuorumKeyStorePassword
	// decrypts it (ssl.quorum.keyStore.password). It is never logged or shown.
	QuorumKeyStore, QuorumKeyStoreType, QuorumKeyStorePassword string
	// QuorumTrustStore holds the CA certificates a member's certificate must chain to
	// (ssl.quorum.trustStore.location, .type, .password).
	QuorumTrustStore, QuorumTrustStoreType, QuorumTrustStorePassword string
	// QuorumHostnameVerification makes a member check that a peer's certificate is
	// valid for the host of that peer's server.N line (ssl.quorum.hostnameVerification).
	QuorumHostnameVerification bool
	// QuorumTLSProtocol, QuorumTLSEnabledProtocols and QuorumTLSCipherSuites restrict
	// the TLS versions and cipher suites (ssl.quorum.protocol, .enabledProtocols,
	// .ciphersuites): versions as TLSv1.2 and TLSv1.3, suites by their IANA names.
	// Empty means TLS 1.2 or 1.3 with Go's default suites.
	QuorumTLSProtocol         string
	QuorumTLSEnabledProtocols []string
	QuorumTLSCipherSuites     []string

	// ClientTLSKeyStore holds the private key and certificate chain the secure client
	// port presents (ssl.keyStore.location, .type, .password); the password is never
	// logged or shown.
	ClientTLSKeyStore, ClientTLSKeyStoreType, ClientTLSKeyStorePassword string
	// ClientTLSTrustStore holds the CA certificates a client's certificate must chain
	// to (ssl.trustStore.location, .type, .password).
	ClientTLSTrustStore, ClientTLSTrustStoreType, ClientTLSTrustStorePassword string
	// ClientTLSAuth says whether a client on the secure port must present a
	// certificate: need (empty means need, ZooKeeper's default), want (verified if
	// given) or none (not asked for) (ssl.clientAuth). A verified certificate gives
	// the connection the x509 identity (x509auth.go).
	ClientTLSAuth string
	// ClientTLSProtocol, ClientTLSEnabledProtocols and ClientTLSCipherSuites restrict the
	// secure client port's TLS versions and suites, as the Quorum ones do the member
	// link's (ssl.protocol, ssl.enabledProtocols, ssl.ciphersuites).
	ClientTLSProtocol         string
	ClientTLSEnabledProtocols []string
	ClientTLSCipherSuites     []string
	// X509SuperUser is the subject (RFC 2253, as the x509 identity prints it) whose
	// client certificate makes a connection a super user
	// (zookeeper.X509AuthenticationProvider.superUser).
	X509SuperUser string
}

// maxMaxBuffer bounds jute.maxbuffer: an ensemble's Raft entries hold up to two of its
// requests (maxEntryBytes), and the peer protocol's frames must hold an entry.
const maxMaxBuffer = 512 << 20

// minSnapshotReceiveFloor bounds snapshot.receiveFloor from below: an empty tree's
// snapshot must fit.
const minSnapshotReceiveFloor = 1 << 20

// DefaultConfig returns the embedded default: standalone, data under ./data, port 2181
// on loopback only (clients on other hosts need a configured address).
func DefaultConfig() Config {
	return Config{
		ClientAddr:             "127.0.0.1:2181",
		DataDir:                "data",
		ServerID:               1,
		TickTime:               2 * time.Second,
		MaxClientCnxns:         60,
		MaxBuffer:              wire.DefaultMaxBuffer,
		MaxOutstanding:         1000,
		MaxOutstandingPerConn:  100,
		MaxQueuedBytes:         128 << 20,
		SnapshotReceiveFloor:   1 << 30,
		HandshakeTimeout:       10 * time.Second,
		ContainerCheckInterval: time.Minute,
		ContainerMaxPerMinute:  10000,
		FourLetterWords:        []string{"srvr"},
		AdminAddr:              "127.0.0.1:8081",
		SnapCount:              100000,
		SnapRetainCount:        3,
		PurgeInterval:          time.Hour,
		ForceSync:              true,
		ElectionTimeout:        time.Second,
		AuditQueue:             4096,

		QuorumHostnameVerification: true,
	}
}

// FourLetterWordNames lists every four-letter word the server knows.
var FourLetterWordNames = []string{"ruok", "srvr", "stat", "conf", "cons", "crst", "dump", "envi",
	"mntr", "wchs", "wchc", "wchp", "dirs", "isro", "srst"}

var superDigestRE = regexp.MustCompile(`^[^:]+:[A-Za-z0-9+/]{27}=$`)

// SessionTimeoutBounds returns the effective minimum and maximum session timeouts.
func (c *Config) SessionTimeoutBounds() (min, max time.Duration) {
	min, max = c.MinSessionTimeout, c.MaxSessionTimeout
	if min <= 0 {
		min = 2 * c.TickTime
	}
	if max <= 0 {
		max = 20 * c.TickTime
	}
	return min, max
}

// Validate checks every field and names the first bad one, its value and what is allowed.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, value any, allowed string) {
		errs = append(errs, fmt.Errorf("%s = %v: %s", key, value, allowed))
	}
	switch _, _, err := net.SplitHostPort(c.ClientAddr); {
	case c.ClientAddr == "" && c.SecureClientAddr == "":
		bad("client_addr", `""`, "want host:port, or a secure_client_addr to serve clients over TLS only")
	case c.ClientAddr != "" && err != nil:
		bad("client_addr", c.ClientAddr, "want host:port, or empty with a secure_client_addr")
	}
	if c.AdminAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdminAddr); err != nil {
			bad("admin_addr", c.AdminAddr, "want host:port, or empty to disable")
		}
	}
	if c.DataDir == "" {
		bad("data_dir", `""`, "a directory is required")
	}
	if c.AuditQueue < 1 || c.AuditQueue > 1<<20 {
		bad("audit_queue", c.AuditQueue, "must be in [1, 1048576] lines")
	}
	if c.ServerID < 1 || c.ServerID > 254 {
		bad("server_id", c.ServerID, "must be in [1, 254]")
	}
	if c.TickTime < time.Millisecond {
		bad("tick_time", c.TickTime, "must be at least 1ms")
	}
	if min, max := c.SessionTimeoutBounds(); min > max {
		bad("min_session_timeout", min, fmt.Sprintf("must not exceed max_session_timeout (%v)", max))
	}
	if c.MaxClientCnxns < 0 {
		bad("max_client_cnxns", c.MaxClientCnxns, "must be >= 0 (0 = unlimited)")
	}
	if c.ReadOnlyMaxClientCnxns < 0 || c.ReadOnlyMaxClientCnxns > maxReadOnlySessions {
		bad("read_only_max_client_cnxns", c.ReadOnlyMaxClientCnxns,
			fmt.Sprintf("must be in [0, %d] (0 = max_client_cnxns, or 60 when that is 0)", maxReadOnlySessions))
	}
	if c.MaxBuffer < 1024 || c.MaxBuffer > maxMaxBuffer {
		bad("max_buffer", c.MaxBuffer, fmt.Sprintf("must be at least 1024 bytes and at most %d (512 MiB)", maxMaxBuffer))
	}
	if c.MaxOutstanding < 1 {
		bad("max_outstanding", c.MaxOutstanding, "must be >= 1")
	}
	if c.MaxOutstandingPerConn < 1 {
		bad("max_outstanding_per_conn", c.MaxOutstandingPerConn, "must be >= 1")
	}
	if c.MaxQueuedBytes < int64(c.MaxBuffer) {
		bad("max_queued_bytes", c.MaxQueuedBytes, fmt.Sprintf("must be at least max_buffer (%d)", c.MaxBuffer))
	}
	if c.HandshakeTimeout <= 0 {
		bad("handshake_timeout", c.HandshakeTimeout, "must be > 0")
	}
	if c.SnapshotReceiveFloor < minSnapshotReceiveFloor {
		bad("snapshot_receive_floor", c.SnapshotReceiveFloor, fmt.Sprintf("must be at least %d (1 MiB)", minSnapshotReceiveFloor))
	}
	errs = append(errs, c.validateAuth()...)
	if c.SuperDigest != "" && !superDigestRE.MatchString(c.SuperDigest) {
		bad("super_digest", c.SuperDigest, `want "user:<base64 SHA-1>", as zkCli's DigestAuthenticationProvider prints`)
	}
	if c.ContainerCheckInterval <= 0 {
		bad("container_check_interval", c.ContainerCheckInterval, "must be > 0")
	}
	if c.ContainerMaxPerMinute < 1 {
		bad("container_max_per_minute", c.ContainerMaxPerMinute, "must be >= 1")
	}
	if c.SnapRetainCount < 3 {
		bad("snap_retain_count", c.SnapRetainCount, "must be >= 3")
	}
	if c.PurgeInterval < 0 {
		bad("purge_interval", c.PurgeInterval, "must be >= 0 (0 disables purging)")
	}
	if c.PreAllocSize != 0 && (c.PreAllocSize < 1<<10 || c.PreAllocSize > 1<<30) {
		bad("prealloc_size", c.PreAllocSize, "must be 0 (default 64 MiB) or between 1 KiB and 1 GiB")
	}
	if c.Procs < 0 {
		bad("procs", c.Procs, "must be >= 0 (0 chooses)")
	}
	if c.SnapCount < 2 {
		bad("snap_count", c.SnapCount, "must be >= 2")
	}
	if c.ElectionTimeout < 10*time.Millisecond {
		bad("election_timeout", c.ElectionTimeout, "must be at least 10ms")
	}
	if err := c.validateEnsemble(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateQuorumTLS(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validatePlainPeerPort(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateClientTLS(); err != nil {
		errs = append(errs, err)
	}
	for _, w := range c.FourLetterWords {
		if w != "*" && !isFourLetterWord(w) {
			bad("four_letter_words", w, "known words: * "+strings.Join(FourLetterWordNames, " "))
		}
	}
	return errors.Join(errs...)
}

// zkOnlyWords are four-letter words Apache ZooKeeper knows that paddock does not answer;
// a whitelist may name them (configs warn), and the server answers them as unknown words.
var zkOnlyWords = []string{"gtmk", "stmk", "hash"}

func isFourLetterWord(w string) bool {
	return slices.Contains(FourLetterWordNames, w) || slices.Contains(zkOnlyWords, w)
}
