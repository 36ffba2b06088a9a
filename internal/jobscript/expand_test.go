package jobscript

import (
	"strings"
	"testing"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "a", "B": "$(A)", "EMPTY": "", "WITH SPACE": "s"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"$(A)", "a"},
		{"x$(A)y$(A)z", "xayaz"},
		{"$(B)", "$(A)"}, // values are not expanded again
		{"$(EMPTY)|", "|"},
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$a"},
		{"$$", "$"},
		{"$", "$"},
		{"a$", "a$"},
		{"$A", "$A"},
		{"${A}", "${A}"},
		{"$(A", "$(A"},
		{"$(", "$("},
		{"$()", "$()"},
		{"$(WITH SPACE)", "s"},
		{"$(A)$(A", "a$(A"},
		{"é$(A)é", "éaé"},
	}
	for _, tt := range tests {
		if got := expandVars(tt.in, lookup); got != tt.want {
			t.Errorf("expandVars(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzExpandVars checks that expansion never panics, leaves strings without
// '$' alone, and with no variables defined only ever unescapes "$$".
func FuzzExpandVars(f *testing.F) {
	for _, s := range []string{"$(A)", "$$(A)", "$(", "a$", "$$$", "$(A)$(B"} {
		f.Add(s)
	}
	none := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, s string) {
		got := expandVars(s, none)
		if !strings.Contains(s, "$") && got != s {
			t.Fatalf("expandVars(%q) = %q; want it unchanged", s, got)
		}
		if want := strings.Count(s, "$") - strings.Count(s, "$$"); strings.Count(got, "$") < want {
			t.Fatalf("expandVars(%q) = %q lost a '$'", s, got)
		}
		if len(got) > len(s) {
			t.Fatalf("expandVars(%q) = %q grew without variables", s, got)
		}
	})
}
