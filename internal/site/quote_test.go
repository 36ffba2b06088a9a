package site

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", "''"},
		{"abc", "abc"},
		{"/scratch/alice/.sluice/ns-1234", "/scratch/alice/.sluice/ns-1234"},
		{"--time=10", "'--time=10'"},
		{"FOO=bar", "'FOO=bar'"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{"$(id)", "'$(id)'"},
		{"`id`", "'`id`'"},
		{"a\nb", "'a\nb'"},
		{"~alice", "'~alice'"},
		{"*", "'*'"},
		{"a;b|c&d", "'a;b|c&d'"},
		{"{a,b}", "'{a,b}'"},
		{`back\slash`, `'back\slash'`},
		{"é", "'é'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestJoin(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"squeue", "-h", "-o", "%i %T"}, "squeue -h -o '%i %T'"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"X=1", "id"}, "'X=1' id"},
	}
	for _, tt := range tests {
		if got := Join(tt.in); got != tt.want {
			t.Errorf("Join(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// shellArgs runs printf '%s\0' with the quoted args under shell and returns
// the arguments it printed.
func shellArgs(t testing.TB, shell string, args []string) []string {
	t.Helper()
	line := "printf '%s\\0'"
	if len(args) > 0 {
		line += " " + Join(args)
	}
	out, err := exec.Command(shell, "-c", line).Output()
	if err != nil {
		t.Fatalf("%s -c %q: %v", shell, line, err)
	}
	got := strings.Split(string(out), "\x00")
	return got[:len(got)-1]
}

// quoteCases are arguments that must reach a command unchanged.
var quoteCases = []string{
	"", " ", "plain", "two words", "it's", "'", "''", `"`, `\`, `\'`, "a\nb", "\n",
	"$HOME", "${HOME}", "$(id -un)", "`id -un`", "*", "?", "[a]", "~", "~root",
	"a;b", "a|b", "a&b", "a>b", "a<b", "(x)", "{a,b}", "!x", "#x", "x#y", "%s",
	"-n", "--", "FOO=bar", "\t", "\x01\x7f", "\xff\xfe", "é ü 中",
}

func TestQuoteShellRoundTrip(t *testing.T) {
	for _, shell := range []string{"sh", "bash"} {
		if _, err := exec.LookPath(shell); err != nil {
			t.Fatalf("%s not found: %v", shell, err)
		}
		t.Run(shell, func(t *testing.T) {
			for _, c := range quoteCases {
				if got := shellArgs(t, shell, []string{c}); !slices.Equal(got, []string{c}) {
					t.Errorf("%s got %q for Quote(%q); want it unchanged", shell, got, c)
				}
			}
			if got := shellArgs(t, shell, quoteCases); !slices.Equal(got, quoteCases) {
				t.Errorf("%s got %q for Join; want %q", shell, got, quoteCases)
			}
		})
	}
}

func FuzzQuote(f *testing.F) {
	for _, c := range quoteCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			return // no shell word holds a NUL byte: Run refuses such arguments
		}
		q := Quote(s)
		if strings.ContainsRune(q, '\n') != strings.ContainsRune(s, '\n') {
			t.Fatalf("Quote(%q) = %q adds or loses a newline", s, q)
		}
		got := shellArgs(t, "sh", []string{s, "end"})
		if want := []string{s, "end"}; !slices.Equal(got, want) {
			t.Fatalf("sh got %q for Quote(%q) = %q; want %q", got, s, q, want)
		}
	})
}
