package certs

import (
	"crypto/x509"
	"net/url"
	"strconv"
	"strings"
)

// memberURN is the namespace of the URIs naming ensemble members: urn:paddock:member:<id>.
const memberURN = "paddock:member:"

// MemberURI returns the URI subject alternative name that names ensemble member id in
// its certificate: urn:paddock:member:<id>, the id in decimal.
func MemberURI(id uint64) *url.URL {
	return &url.URL{Scheme: "urn", Opaque: memberURN + strconv.FormatUint(id, 10)}
}

// MemberIDs returns the member ids cert's URI subject alternative names name, in their
// order. Other URIs, and member URIs whose id is not a decimal number above 0 as
// MemberURI writes it (no sign, no leading zero), are ignored.
func MemberIDs(cert *x509.Certificate) []uint64 {
	var ids []uint64
	for _, u := range cert.URIs {
		if id, ok := memberID(u); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

func memberID(u *url.URL) (uint64, bool) {
	// The prefix is compared ignoring case, as RFC 8141 compares a URN's scheme and namespace.
	if !strings.EqualFold(u.Scheme, "urn") || len(u.Opaque) < len(memberURN) ||
		!strings.EqualFold(u.Opaque[:len(memberURN)], memberURN) {
		return 0, false
	}
	s := u.Opaque[len(memberURN):]
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 || strconv.FormatUint(id, 10) != s || u.RawQuery != "" || u.Fragment != "" {
		return 0, false
	}
	return id, true
}
