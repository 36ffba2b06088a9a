package annotations

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A pod's value in any script is quoted into refusals: the cut that keeps
// Events small must not split a character.
func TestQuotedKeepsCharactersWhole(t *testing.T) {
	v := strings.Repeat("ä", maxQuoted) // 2 bytes each: the cut falls inside one at an odd bound
	q := truncate("x" + v)
	if !utf8.ValidString(q) {
		t.Fatalf("truncate split a character: %q", q)
	}
	if len(q) > maxQuoted+len("...") || !strings.HasSuffix(q, "...") {
		t.Fatalf("truncate = %d bytes %q; want at most %d and the cut marked", len(q), q, maxQuoted+3)
	}
}
