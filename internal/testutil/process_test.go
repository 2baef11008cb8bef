package testutil

import "testing"

// TestPortTakenAtStart: a start that failed on a taken client or peer port counts; the
// warning of a taken admin port, which the server runs on past, does not.
func TestPortTakenAtStart(t *testing.T) {
	const adminWarn = `time=t level=WARN msg="admin port not served: cannot listen; serving clients without it" ` +
		`admin_addr=127.0.0.1:8080 err="server: admin_addr 127.0.0.1:8080: ...: address already in use"`
	tests := []struct {
		log  string
		want bool
	}{
		{"paddock: server: client_addr 127.0.0.1:2191: ...: address already in use\n", true},
		{adminWarn + "\npaddock: server: start ensemble member: quorum: peer address 127.0.0.1:2891 of server.1: ...: address already in use\n", true},
		{adminWarn + "\npaddock: open log: permission denied\n", false},
		{"paddock: open log: permission denied\n", false},
	}
	for _, tt := range tests {
		if got := PortTakenAtStart(tt.log); got != tt.want {
			t.Errorf("PortTakenAtStart(%q) = %v, want %v", tt.log, got, tt.want)
		}
	}
}
