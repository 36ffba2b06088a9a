package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// Keys finds keys of every shape: a section's field, an inline struct's,
// a map's values', a list's items'; each after what holds it, with its
// parent, name, type, kind and the default Default fills.
func TestKeysShapes(t *testing.T) {
	got := map[string]Key{}
	seen := map[string]bool{"": true}
	for _, k := range Keys() {
		if _, dup := got[k.Path]; dup {
			t.Errorf("Keys lists %s twice", k.Path)
		}
		got[k.Path] = k
		holder := k.Parent
		for _, suffix := range []string{".<name>", "[]"} {
			if h, ok := strings.CutSuffix(holder, suffix); ok {
				holder = h
			}
		}
		if !seen[holder] {
			t.Errorf("Keys lists %s before %s, which holds it", k.Path, holder)
		}
		seen[k.Path] = true
		want := k.Name
		if k.Parent != "" {
			want = k.Parent + "." + k.Name
		}
		if k.Path != want {
			t.Errorf("Keys gives the path %s to %s in %q; want %s", k.Path, k.Name, k.Parent, want)
		}
	}
	for _, want := range []struct {
		path, parent string
		typ          reflect.Type
		kind         Kind
	}{
		{"NodeName", "", reflect.TypeFor[string](), KindString},
		{"Site", "", reflect.TypeFor[Site](), KindSection},
		{"Network.SSH", "Network", reflect.TypeFor[SSH](), KindSection},
		{"Network.SSH.Reverse.AllowSocks", "Network.SSH.Reverse", reflect.TypeFor[bool](), KindBool},
		{"Network.SSH.Port", "Network.SSH", reflect.TypeFor[int](), KindInteger},
		{"Network.SSH.Pacing.Rate", "Network.SSH.Pacing", reflect.TypeFor[float64](), KindNumber},
		{"Site.CommandPrefix", "Site", nil, KindString},
		{"Site.ExportPodData", "Site", reflect.TypeFor[*bool](), KindBool},
		{"Site.Flavors", "Site", nil, KindMap},
		{"Site.Flavors.<name>.SlurmFlags", "Site.Flavors.<name>", nil, KindStrings},
		{"Site.Flavors.<name>.UID", "Site.Flavors.<name>", reflect.TypeFor[*int64](), KindInteger},
		{"Node.Labels", "Node", nil, KindStringMap},
		{"Node.Taints", "Node", nil, KindList},
		{"Node.Taints[].Effect", "Node.Taints[]", nil, KindString},
		{"Node.KubeletAPI", "Node", nil, KindSection},
		{"Node.KubeletAPI.MaxSessionsPerNode", "Node.KubeletAPI", nil, KindInteger},
		{"Site.PollInterval", "Site", reflect.TypeFor[time.Duration](), KindDuration},
	} {
		k, ok := got[want.path]
		switch {
		case !ok:
			t.Errorf("Keys lacks %s", want.path)
		case k.Parent != want.parent:
			t.Errorf("Keys gives %s the parent %q; want %q", want.path, k.Parent, want.parent)
		case k.Kind != want.kind:
			t.Errorf("Keys gives %s the kind %v; want %v", want.path, k.Kind, want.kind)
		case want.typ != nil && k.Type != want.typ:
			t.Errorf("Keys gives %s the type %v; want %v", want.path, k.Type, want.typ)
		}
	}
	if d := got["Site.PollInterval"].Default; !d.IsValid() || d.Interface() != 5*time.Second {
		t.Errorf("Keys gives Site.PollInterval the default %v; want 5s (what Default fills)", d)
	}
	if d := got["Node.Taints[].Effect"].Default; d.IsValid() {
		t.Errorf("Keys gives Node.Taints[].Effect, a list item's key, a default %v; want none", d)
	}
}
