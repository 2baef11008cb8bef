package digestmd5

import (
	"errors"
	"testing"
)

// FuzzServer feeds any token as a digest-response: the server must fail cleanly or, only
// with the right password, succeed; it never panics and never accepts past MaxToken.
func FuzzServer(f *testing.F) {
	f.Add([]byte(`charset=utf-8,username="alice",realm="zk-sasl-md5",nonce="N",nc=00000001,cnonce="c",` +
		`digest-uri="zookeeper/zk-sasl-md5",maxbuf=65536,response=0123456789abcdef0123456789abcdef,qop=auth`))
	f.Add([]byte(`a="\`))
	f.Add([]byte(`,,,=,"`))
	f.Add([]byte(`username="a",username="b"`))
	f.Fuzz(func(t *testing.T, token []byte) {
		s := NewServer(Config{Password: users(map[string]string{"alice": "pw"})})
		if _, err := s.Next(nil); err != nil {
			t.Fatal(err)
		}
		s.nonce = "N"
		out, err := s.Next(token)
		if err == nil && (len(token) > MaxToken || !s.Done() || len(out) == 0) {
			t.Fatalf("accepted %q", token)
		}
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrAuthFailed) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}
