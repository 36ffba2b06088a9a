package annotations

import (
	"os"
	"strings"
	"testing"
)

// docs/interlink-migration.md gives every annotation of the table a row
// saying what sluice does with it, in the table's words, and no other.
func TestMigrationPageNamesEveryAnnotation(t *testing.T) {
	page, err := os.ReadFile("../../docs/interlink-migration.md")
	if err != nil {
		t.Fatalf("read the migration page: %v", err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(page), "\n") {
		rest, ok := strings.CutPrefix(line, "| `")
		if !ok {
			continue
		}
		name, rest, ok := strings.Cut(rest, "` | ")
		if !ok {
			continue
		}
		support, _, _ := strings.Cut(rest, " |")
		if Prefixed(name) {
			rows[name] = support
		}
	}
	for name := range rows {
		if _, ok := Lookup(name); !ok {
			t.Errorf("the migration page has a row for %s, which the table lacks", name)
		}
	}
	for _, k := range Table() {
		support, ok := rows[k.Name]
		switch {
		case !ok:
			t.Errorf("the migration page has no row for %s", k.Name)
		case !strings.HasPrefix(support, string(k.Support)):
			t.Errorf("the migration page says %s is %q; the table says %s", k.Name, support, k.Support)
		case k.Support == Warned && strings.HasPrefix(k.Note, notYet) != strings.Contains(support, "not implemented yet"):
			t.Errorf("the migration page says %s is %q; the table's note is %q", k.Name, support, k.Note)
		}
	}
}
