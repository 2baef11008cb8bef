package datatree

import "testing"

func TestValidX509ID(t *testing.T) {
	valid := []string{"", "CN=alice", "CN=alice,OU=dev,O=acme", `CN=a\,b\+c\=d`, "CN=a+UID=b",
		"CN=x,2.5.4.5=#13023432", "OID.2.5.4.3=x", "CN=alice; O=acme", `CN="a, b"`, "CN=", "emailAddress=a@b"}
	invalid := []string{"alice", " ", "=alice", "CN=alice,", "CN=a=b", `CN=a\`, "1..2=x", "CN=#1", "CN=#zz",
		`CN="open`, "C N=x", "CN=a,,O=b"}
	for _, id := range valid {
		if !ValidX509ID(id) {
			t.Errorf("ValidX509ID(%q) = false, want true", id)
		}
	}
	for _, id := range invalid {
		if ValidX509ID(id) {
			t.Errorf("ValidX509ID(%q) = true, want false", id)
		}
	}
}
