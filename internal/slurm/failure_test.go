package slurm

import (
	"strings"
	"testing"
)

func TestLastSluiceLine(t *testing.T) {
	for _, tt := range []struct{ name, out, want string }{
		{"none", "hello\nworld\n", ""},
		{"empty", "", ""},
		{"one", "starting\nsluice: reverse tunnel: the SOCKS proxy on port 1080 listens on every address\n", "reverse tunnel: the SOCKS proxy on port 1080 listens on every address"},
		{"last wins", "sluice: first\nother\nsluice: second\n", "second"},
		{"no newline", "sluice: cut", "cut"},
		{"control bytes", "sluice: a\x1b[31mred\x07\r\n", "a[31mred"},
		{"not at start", "  sluice: indented\n", ""},
	} {
		if got := lastSluiceLine([]byte(tt.out)); got != tt.want {
			t.Errorf("%s: %q; want %q", tt.name, got, tt.want)
		}
	}
	long := lastSluiceLine([]byte("sluice: " + strings.Repeat("é", 2000) + "\n"))
	if len(long) > maxFailureMessage+len("…") || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "éé") {
		t.Errorf("long message: %d bytes", len(long))
	}
}

func FuzzLastSluiceLine(f *testing.F) {
	f.Add([]byte("sluice: x\n"))
	f.Add([]byte("a\nsluice: \xff\xfe\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		got := lastSluiceLine(out)
		if len(got) > maxFailureMessage+len("…") || strings.ContainsAny(got, "\n\r\x00") {
			t.Errorf("lastSluiceLine = %q", got)
		}
	})
}
