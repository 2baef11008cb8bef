package admin

import (
	"net/netip"
	"testing"
	"time"
)

func TestJavaDouble(t *testing.T) {
	// Double.toString's answers.
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0.0"}, {1, "1.0"}, {3.375, "3.375"}, {13.6429, "13.6429"}, {-2.5, "-2.5"},
		{0.001, "0.001"}, {0.0005, "5.0E-4"}, {1.2e-5, "1.2E-5"}, {9999999, "9999999.0"},
		{1e7, "1.0E7"}, {1.2345e7, "1.2345E7"}, {1e21, "1.0E21"},
	}
	for _, tt := range tests {
		if got := javaDouble(tt.v); got != tt.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestRound4(t *testing.T) {
	for _, tt := range []struct{ v, want float64 }{
		{191.0 / 14, 13.6429}, {27.0 / 8, 3.375}, {1.0 / 32, 0.0313}, {2.0 / 3, 0.6667}, {0, 0},
	} {
		if got := round4(tt.v); got != tt.want {
			t.Errorf("round4(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestJavaHostPort(t *testing.T) {
	tests := []struct{ in, want string }{
		{"127.0.0.1:53618", "127.0.0.1:53618"},
		{"[::1]:2181", "0:0:0:0:0:0:0:1:2181"},
		{"[::ffff:10.1.2.3]:9", "10.1.2.3:9"},
		{"[2001:db8::ff00:42:8329]:80", "2001:db8:0:0:0:ff00:42:8329:80"},
		{"[fe80::1%eth0]:5", "fe80:0:0:0:0:0:0:1%eth0:5"},
	}
	for _, tt := range tests {
		if got := javaHostPort(netip.MustParseAddrPort(tt.in)); got != tt.want {
			t.Errorf("javaHostPort(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := javaHostPort(netip.AddrPort{}); got != "0.0.0.0:0" {
		t.Errorf("zero AddrPort = %q", got)
	}
}

func TestJavaHexAndTime(t *testing.T) {
	if got := javaHex(-1); got != "ffffffffffffffff" {
		t.Errorf("javaHex(-1) = %q", got)
	}
	if got := javaHex(0x10000038eec0000); got != "10000038eec0000" {
		t.Errorf("javaHex = %q", got)
	}
	if got := javaMillis(time.Time{}); got != 0 {
		t.Errorf("javaMillis(zero) = %d", got)
	}
	if got := javaDate(time.Date(2026, 11, 1, 8, 3, 4, 0, time.UTC)); got != "Sun Nov 01 08:03:04 UTC 2026" {
		t.Errorf("javaDate = %q", got)
	}
}
