package config

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// referencePage is the configuration reference, which gives every key of the
// file a row: | `KEY` | TYPE | DEFAULT | what it does |.
const referencePage = "../../docs/configuration.md"

// typeWords are how the reference's type column starts for a key of
// each kind; a key of another kind names its Go kind.
var typeWords = map[Kind]string{
	KindString: "string", KindBool: "boolean", KindInteger: "integer", KindNumber: "number",
	KindDuration: "duration", KindStrings: "list of strings", KindList: "list",
	KindStringMap: "map of strings", KindMap: "map",
}

// typeWord is how the reference's type column starts for k.
func typeWord(k Key) string {
	if w, ok := typeWords[k.Kind]; ok {
		return w
	}
	return k.Type.Kind().String()
}

// defaultText is how the reference's default column shows a default that
// Default fills, or "" when it fills none (or one not shown as a scalar).
func defaultText(v reflect.Value) string {
	if !v.IsValid() || v.IsZero() {
		return ""
	}
	switch {
	case v.Type() == durationType:
		return v.Interface().(time.Duration).String()
	case v.Kind() == reflect.String, v.Kind() == reflect.Int:
		return fmt.Sprint(v.Interface())
	}
	return ""
}

// versionDependent are the keys whose default depends on the binary's
// version, which the reference shows as a pattern.
var versionDependent = map[string]bool{"Network.SSH.TunnelImage": true}

// docs/configuration.md gives every key of the configuration file (every
// one of Keys but the sections) a row, with its type and the default that
// Default fills, and no row to a key the file does not have.
func TestReferenceNamesEveryKey(t *testing.T) {
	page, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatalf("read the configuration reference: %v", err)
	}
	top := map[string]bool{}
	for i := range reflect.TypeFor[Config]().NumField() {
		top[reflect.TypeFor[Config]().Field(i).Tag.Get("yaml")] = true
	}
	type row struct{ typ, def string }
	rows := map[string]row{}
	for _, line := range strings.Split(string(page), "\n") {
		rest, ok := strings.CutPrefix(line, "| `")
		if !ok {
			continue
		}
		name, rest, ok := strings.Cut(rest, "` | ")
		if !ok {
			continue
		}
		first, _, _ := strings.Cut(strings.SplitN(name, "[", 2)[0], ".")
		if !top[first] {
			continue // an annotation, or another table's row
		}
		cells := strings.Split(rest, " | ")
		if len(cells) < 3 {
			t.Errorf("the reference's row for %s has %d cells after the key; want type, default, what it does", name, len(cells))
			continue
		}
		if _, dup := rows[name]; dup {
			t.Errorf("the reference has two rows for %s", name)
		}
		rows[name] = row{typ: cells[0], def: cells[1]}
	}
	var keys []Key
	for _, k := range Keys() {
		if k.Kind != KindSection {
			keys = append(keys, k)
		}
	}
	known := map[string]bool{}
	for _, k := range keys {
		known[k.Path] = true
		r, ok := rows[k.Path]
		if !ok {
			t.Errorf("the reference has no row for %s", k.Path)
			continue
		}
		if w := typeWord(k); !strings.HasPrefix(r.typ, w) {
			t.Errorf("the reference says %s is %q; the configuration's type is %s", k.Path, r.typ, w)
		}
		if d := defaultText(k.Default); d != "" && !versionDependent[k.Path] && !strings.Contains(r.def, "`"+d+"`") {
			t.Errorf("the reference gives %s the default %q; Default fills `%s`", k.Path, r.def, d)
		}
	}
	for name := range rows {
		if !known[name] {
			t.Errorf("the reference has a row for %s, which the configuration lacks", name)
		}
	}
	if len(keys) < 60 {
		t.Errorf("found %d keys by reflection; the walk lost some (Config has more than 60)", len(keys))
	}
}
