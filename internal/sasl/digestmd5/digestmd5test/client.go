// Package digestmd5test answers a DIGEST-MD5 challenge as ZooKeeper's Java client does
// (RFC 2831, realm zk-sasl-md5, digest-uri zookeeper/zk-sasl-md5, qop auth). Tests of the
// server use it to speak SASL on the wire; its hashes are written out here, apart from
// the server's package, so that a mistake in one does not hide in the other.
package digestmd5test

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strings"
)

// cnonce is the client nonce of every response: tests want them reproducible.
const cnonce = "Y2xpZW50bm9uY2U"

// Respond returns the client's digest-response to challenge for user and password, or
// an error if the challenge names no nonce or another realm than ZooKeeper's.
func Respond(challenge []byte, user, password string) ([]byte, error) {
	var nonce string
	for part := range strings.SplitSeq(string(challenge), ",") {
		if v, ok := strings.CutPrefix(part, "nonce="); ok {
			nonce = strings.Trim(v, `"`)
		}
	}
	if nonce == "" || !strings.Contains(string(challenge), `realm="zk-sasl-md5"`) {
		return nil, fmt.Errorf("digestmd5test: challenge %q: want a nonce and realm zk-sasl-md5", challenge)
	}
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	inner := md5.Sum([]byte(user + ":zk-sasl-md5:" + password))
	const uri = "zookeeper/zk-sasl-md5"
	resp := h(h(string(inner[:])+":"+nonce+":"+cnonce) + ":" + nonce + ":00000001:" + cnonce + ":auth:" + h("AUTHENTICATE:"+uri))
	return fmt.Appendf(nil, `charset=utf-8,username="%s",realm="zk-sasl-md5",nonce="%s",nc=00000001,cnonce="%s",`+
		`digest-uri="%s",maxbuf=65536,response=%s,qop=auth`, user, nonce, cnonce, uri, resp), nil
}
