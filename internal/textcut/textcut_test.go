package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc..."},
		{"aé", 2, "a..."},  // é is 2 bytes: not split
		{"日本語", 4, "日..."}, // 3-byte characters
		{"😀x", 3, "..."},   // a 4-byte character does not fit at all
		{"anything", 0, "..."},
		{"anything", -1, "..."},
	} {
		if got := Cut(tc.s, tc.max, "..."); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q; want %q", tc.s, tc.max, got, tc.want)
		}
	}
}

func FuzzCut(f *testing.F) {
	f.Add("日本語のテキスト", 5)
	f.Add("plain", 2)
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := Cut(s, max, "…")
		if len(s) <= max {
			if got != s {
				t.Fatalf("Cut(%q, %d) = %q; want it unchanged", s, max, got)
			}
			return
		}
		prefix := strings.TrimSuffix(got, "…")
		if !strings.HasPrefix(s, prefix) || len(prefix) > max && max >= 0 {
			t.Fatalf("Cut(%q, %d) = %q: not a prefix within the bound", s, max, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Cut(%q, %d) = %q: split a character", s, max, got)
		}
	})
}
