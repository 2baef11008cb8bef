package configs

import (
	"fmt"
	"slices"
	"testing"
)

// The expected results are what java.util.Properties.load (OpenJDK 17) gives for the
// same input.
func TestParseProperties(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // "key=value" in file order
	}{
		{"equals", "a=b", []string{"[a]=[b]"}},
		{"colon", "a: b", []string{"[a]=[b]"}},
		{"space", "a b", []string{"[a]=[b]"}},
		{"blanks kept at end of value", "  a  =  b  ", []string{"[a]=[b  ]"}},
		{"tabs", "a\t=\tb\t", []string{"[a]=[b\t]"}},
		{"hash comment", "# c=d", nil},
		{"bang comment", "  ! c=d", nil},
		{"continuation drops leading blanks", "a=b\\\n   c", []string{"[a]=[bc]"}},
		{"even backslashes do not continue", "a=b\\\\\nc=d", []string{`[a]=[b\]`, "[c]=[d]"}},
		{"escaped blank in key", `a\ b=c`, []string{"[a b]=[c]"}},
		{"escaped equals in key", `a\=b=c`, []string{"[a=b]=[c]"}},
		{"second equals is value", "a==b", []string{"[a]=[=b]"}},
		{"escapes", `a=\u0041\t\x`, []string{"[a]=[A\tx]"}},
		{"key only", "a", []string{"[a]=[]"}},
		{"empty value", "a=", []string{"[a]=[]"}},
		{"empty key", ":b", []string{"[]=[b]"}},
		{"backslash at end of file", "a=b\\", []string{"[a]=[b]"}},
		{"comment does not continue", "#x\\\nc=d", []string{"[c]=[d]"}},
		{"continued line is not a comment", "a=b\\\n#c", []string{"[a]=[b#c]"}},
		{"line ends", "a=1\r\nb=2\rc=3", []string{"[a]=[1]", "[b]=[2]", "[c]=[3]"}},
		{"continued key", "k\\\n  ey=v", []string{"[key]=[v]"}},
		{"colon then equals", "a:=b", []string{"[a]=[=b]"}},
		{"blank then separator", "a =:b", []string{"[a]=[:b]"}},
		{"duplicates kept in order", "a=1\nb=2\na=3", []string{"[a]=[1]", "[b]=[2]", "[a]=[3]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			props, err := parseProperties([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range props {
				got = append(got, fmt.Sprintf("[%s]=[%s]", p.key, p.value))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("parseProperties(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesLines(t *testing.T) {
	props, err := parseProperties([]byte("# c\n\na=1\\\n 2\nb=3\r\nc=4"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, p := range props {
		lines = append(lines, p.line)
	}
	if want := []int{3, 5, 6}; !slices.Equal(lines, want) {
		t.Errorf("lines = %v, want %v", lines, want)
	}
}

func TestParsePropertiesMalformedEscape(t *testing.T) {
	_, err := parseProperties([]byte("a=1\nb=\\u12"))
	if err == nil || err.Error() != `line 2: malformed \uxxxx escape in "\\u12"` {
		t.Errorf("err = %v, want a malformed escape on line 2", err)
	}
}
