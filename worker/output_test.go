package worker

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"short", []string{"a", "bc"}, "abc"},
		{"keeps the end", []string{"abcdef", "gh"}, "cdefgh"},
		{"one big write", []string{"0123456789"}, "456789"},
		{"exactly full", []string{"abc", "def"}, "abcdef"},
		// "é" is two bytes: cutting the 7 bytes of "éééa" to 6 leaves a lone continuation byte.
		{"cut rune dropped", []string{"éééa"}, "ééa"},
		{"invalid bytes replaced", []string{"a\xffb"}, "a\uFFFDb"},
		{"rune cut at the end", []string{"ab\xc3"}, "ab\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTailBuffer(6)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Fatalf("String() = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestTailBufferLarge(t *testing.T) {
	b := newTailBuffer(tailSize)
	for range 1000 {
		b.Write([]byte(strings.Repeat("日本", 3) + "\n"))
	}
	got := b.String()
	if len(got) > tailSize || len(got) < tailSize-utf8.UTFMax {
		t.Fatalf("tail of %d bytes; want about %d", len(got), tailSize)
	}
	if !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) {
		t.Fatalf("tail is not clean UTF-8: %q", got[:20])
	}
	if !strings.HasSuffix(got, "日本日本日本\n") {
		t.Fatalf("tail does not end with the last line: %q", got[len(got)-20:])
	}
}
