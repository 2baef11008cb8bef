package certs

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// Version returns the TLS version name stands for, as ZooKeeper (Java) names them:
// TLSv1.2 or TLSv1.3, in any case. TLSv1 and TLSv1.1, which Java still knows, are
// refused as insecure (RFC 8996). Here and in Versions and CipherSuites, the error says
// what is allowed, for the caller to prefix with the setting it checks.
func Version(name string) (uint16, error) {
	switch strings.ToUpper(name) {
	case "TLSV1.2":
		return tls.VersionTLS12, nil
	case "TLSV1.3":
		return tls.VersionTLS13, nil
	case "TLSV1", "TLSV1.1", "SSLV3":
		return 0, fmt.Errorf("TLS version %s is insecure (RFC 8996) and refused: want TLSv1.2 or TLSv1.3", name)
	}
	return 0, fmt.Errorf("unknown TLS version %q: want TLSv1.2 or TLSv1.3", name)
}

// Versions returns the TLS versions to allow, as tls.Config's MinVersion and MaxVersion,
// from ZooKeeper's ssl.*.protocol and ssl.*.enabledProtocols:
//   - both empty: TLS 1.2 to 1.3;
//   - protocol alone: that version only, as Java's SSLContext.getInstance(protocol) with
//     no enabledProtocols gives (ZooKeeper enables the context's protocol alone);
//   - enabled: from the lowest to the highest version it names. Java lets enabledProtocols
//     override protocol; paddock refuses a protocol outside them as a contradiction.
func Versions(protocol string, enabled []string) (min, max uint16, err error) {
	if len(enabled) == 0 {
		if protocol == "" {
			return tls.VersionTLS12, tls.VersionTLS13, nil
		}
		v, err := Version(protocol)
		return v, v, err
	}
	min, max = tls.VersionTLS13, tls.VersionTLS12
	for _, name := range enabled {
		v, err := Version(name)
		if err != nil {
			return 0, 0, err
		}
		if v < min {
			min = v
		}
		if v > max {
			max = v
		}
	}
	if protocol != "" {
		p, err := Version(protocol)
		if err != nil {
			return 0, 0, err
		}
		if p < min || p > max {
			return 0, 0, fmt.Errorf("protocol %s is not among the enabled protocols %s: "+
				"want one of them, or no protocol", protocol, strings.Join(enabled, ","))
		}
	}
	return min, max, nil
}

// noSuite lists names Java accepts as cipher suites that choose no cipher: the
// renegotiation signal, which Go's TLS always sends as an extension instead.
var noSuite = []string{"TLS_EMPTY_RENEGOTIATION_INFO_SCSV"}

// CipherSuites returns the IDs of the TLS 1.2 cipher suites names lists, by their IANA
// names (tls.CipherSuite.Name, which are also Java's and so ZooKeeper's), in any case;
// an empty list gives nil, which is Go's default suites. Suites Go marks insecure
// (tls.InsecureCipherSuites: RC4, 3DES, CBC with SHA-256, NULL) are refused, as are
// names Go does not know. TLS 1.3 suites are accepted and left out: Go does not let them
// be configured (all three are always enabled for TLS 1.3), so naming them restricts
// nothing. A list of TLS 1.3 suites alone gives an empty, non-nil result.
func CipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return nil, nil
	}
	ids := []uint16{}
	var insecure, unknown []string
	for _, name := range names {
		s := suiteNamed(tls.CipherSuites(), name)
		switch {
		case s != nil && slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13}):
		case s != nil:
			ids = append(ids, s.ID)
		case suiteNamed(tls.InsecureCipherSuites(), name) != nil:
			insecure = append(insecure, name)
		case slices.Contains(noSuite, strings.ToUpper(name)):
		default:
			unknown = append(unknown, name)
		}
	}
	switch {
	case len(insecure) > 0:
		return nil, fmt.Errorf("insecure cipher suites refused: %s: want suites with AEAD ciphers "+
			"(GCM or ChaCha20-Poly1305), such as TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", strings.Join(insecure, ", "))
	case len(unknown) > 0:
		return nil, fmt.Errorf("unknown cipher suites: %s: want IANA names of suites Go supports: %s",
			strings.Join(unknown, ", "), strings.Join(suiteNames(), ", "))
	}
	return ids, nil
}

func suiteNamed(suites []*tls.CipherSuite, name string) *tls.CipherSuite {
	i := slices.IndexFunc(suites, func(s *tls.CipherSuite) bool { return strings.EqualFold(s.Name, name) })
	if i < 0 {
		return nil
	}
	return suites[i]
}

// suiteNames lists the names of the secure TLS 1.2 suites, for error messages.
func suiteNames() []string {
	var names []string
	for _, s := range tls.CipherSuites() {
		if slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
			names = append(names, s.Name)
		}
	}
	return names
}
