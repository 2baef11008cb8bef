package admin

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// The four-letter words print numbers, dates and addresses the way the JVM's toString
// methods do; these helpers reproduce those forms.

// javaHex is Long.toHexString: the two's-complement value in lower-case hex, no padding.
func javaHex(v int64) string { return strconv.FormatUint(uint64(v), 16) }

// javaDouble is Double.toString: at least one digit after the point ("0.0", "3.375"), and
// computerized scientific notation ("5.0E-4") outside [1e-3, 1e7).
func javaDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		return "0.0"
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'e', -1, 64) // "5e-04", "1.2345e+07"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// round4 rounds half up to 4 decimals, as ZooKeeper's AvgMinMaxCounter.getAvg does.
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// javaDate is java.util.Date.toString in the local time zone, as dump prints expiry times.
func javaDate(t time.Time) string {
	return t.Local().Format("Mon Jan 02 15:04:05 MST 2006")
}

// javaMillis is Date.getTime: milliseconds since the Unix epoch, 0 for the zero time.
func javaMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// javaHostAddress is InetAddress.getHostAddress: dotted IPv4 (IPv4-mapped IPv6 addresses
// included, since Java turns those into Inet4Address), or eight uncompressed hex groups for
// IPv6 ("0:0:0:0:0:0:0:1"), with "%zone" when there is one.
func javaHostAddress(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "0.0.0.0"
	case a.Is4():
		return a.String()
	}
	b := a.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := a.Zone(); z != "" {
		sb.WriteString("%" + z)
	}
	return sb.String()
}

// javaHostPort is the "host:port" part of InetSocketAddress.toString for a literal address.
func javaHostPort(ap netip.AddrPort) string {
	return javaHostAddress(ap.Addr()) + ":" + strconv.Itoa(int(ap.Port()))
}
