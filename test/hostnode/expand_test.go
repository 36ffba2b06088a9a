package hostnode

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"POD_IP": "127.80.1.2", "EMPTY": "", "A": "$(B)"}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"--listen=$(POD_IP)", "--listen=127.80.1.2"},
		{"$(POD_IP):9464", "127.80.1.2:9464"},
		{"$(POD_IP)$(POD_IP)", "127.80.1.2127.80.1.2"},
		{"$(MISSING)", "$(MISSING)"},
		{"x$(EMPTY)y", "xy"},
		{"$$(POD_IP)", "$(POD_IP)"},
		{"$$$(POD_IP)", "$127.80.1.2"},
		{"cost $5", "cost $5"},
		{"trailing $", "trailing $"},
		{"open $(POD_IP", "open $(POD_IP"},
		{"$()", "$()"},
		{"$(A)", "$(B)"}, // values are not expanded again
	} {
		if got := expand(tc.in, lookup); got != tc.want {
			t.Errorf("expand(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"$(A)", "$$", "$(", "a$b", "$(A)$(B)$"} {
		f.Add(s)
	}
	none := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, s string) {
		// with nothing defined, only $$ changes anything
		got := expand(s, none)
		if !strings.Contains(s, "$$") && got != s {
			t.Errorf("expand(%q) = %q; want it unchanged", s, got)
		}
		if len(got) > len(s) {
			t.Errorf("expand(%q) = %q grew", s, got)
		}
	})
}
