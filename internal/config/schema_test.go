package config

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// chartSchema is the chart's values schema, whose config subtree Schema
// writes (go generate ./internal/config/).
const chartSchema = "../../charts/sluice/values.schema.json"

// The chart's values schema holds, under config, exactly what Schema makes
// of the configuration's types today: a key added, renamed or given a new
// enum value without `go generate ./internal/config/` fails here.
func TestChartSchemaMatchesTypes(t *testing.T) {
	file, err := os.ReadFile(chartSchema)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ChartSchema(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, want) {
		t.Errorf("%s is stale: its config subtree is not what the configuration's types give; run go generate ./internal/config/ (make schema)", chartSchema)
	}
	var v map[string]any
	if err := json.Unmarshal(want, &v); err != nil {
		t.Fatalf("the generated schema file is not JSON: %v", err)
	}
}

// Every key of the file has a place in the schema, with its enum.
func TestSchemaCoversKeys(t *testing.T) {
	root, err := schemaOf()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		s := lookup(root, k.Path)
		if s == nil {
			t.Errorf("%s: not in the schema", k.Path)
			continue
		}
		if e := enums[k.Path]; e != nil && !slices.Equal(s.Enum, e) {
			t.Errorf("%s: schema enum %q; want %q", k.Path, s.Enum, e)
		}
	}
	if got := Enum("Site.ContainerRuntime"); !slices.Contains(got, "enroot") {
		t.Errorf("Site.ContainerRuntime enum %q lacks enroot", got)
	}
}

// Every enum and hint names a key the file has: a renamed key leaves none
// behind.
func TestEnumsAndHintsNameKeys(t *testing.T) {
	paths := map[string]bool{"": true}
	for _, k := range Keys() {
		paths[k.Path] = true
		paths[k.Path+"[]"] = true
		paths[k.Path+".<name>"] = true
	}
	for p := range enums {
		if !paths[p] {
			t.Errorf("enums: %q is no key of the configuration", p)
		}
	}
	for p := range schemaHints {
		if !paths[p] {
			t.Errorf("schemaHints: %q is no key of the configuration", p)
		}
	}
}

// lookup finds the schema of path (Key.Path) under root.
func lookup(root *schema, path string) *schema {
	s := root
	for part := range strings.SplitSeq(path, ".") {
		if part == "<name>" {
			next, _ := s.AdditionalProperties.(*schema)
			s = next
		} else {
			name, list := strings.CutSuffix(part, "[]")
			if s.Properties == nil {
				return nil
			}
			s = s.Properties.nodes[name]
			if s != nil && list {
				s = s.Items
			}
		}
		if s == nil {
			return nil
		}
	}
	return s
}

// Validate takes every value the schema's enums list, and refuses one they
// do not: the enum is the validation's, not a copy that can fall behind.
func TestValidateTakesEnums(t *testing.T) {
	set := map[string]struct {
		set    func(c *Config, v string)
		prefix string // of the problem a wrong value gives
	}{
		"Site.Access":           {func(c *Config, v string) { c.Site.Access = Access(v) }, "Site.Access"},
		"Site.ContainerRuntime": {func(c *Config, v string) { c.Site.ContainerRuntime = v }, "Site.ContainerRuntime"},
		"Network.ShadowMode":    {func(c *Config, v string) { c.Network.ShadowMode = v }, "Network.ShadowMode"},
		"Network.ShadowTolerations[].Operator": {func(c *Config, v string) {
			c.Network.ShadowTolerations = []ShadowToleration{{Key: "k", Operator: v}}
		}, "Network.ShadowTolerations"},
		"Network.ShadowTolerations[].Effect": {func(c *Config, v string) {
			c.Network.ShadowTolerations = []ShadowToleration{{Key: "k", Effect: v}}
		}, "Network.ShadowTolerations"},
		"Network.SSH.Auth":             {func(c *Config, v string) { c.Network.SSH.Auth = v }, "Network.SSH.Auth"},
		"Network.SSH.ForwardTarget":    {func(c *Config, v string) { c.Network.SSH.ForwardTarget = v }, "Network.SSH.ForwardTarget"},
		"Network.SSH.Reverse.Sshd":     {func(c *Config, v string) { c.Network.SSH.Reverse.Sshd = v }, "Network.SSH.Reverse.Sshd"},
		"Network.SSH.Reverse.NodeExec": {func(c *Config, v string) { c.Network.SSH.Reverse.NodeExec = v }, "Network.SSH.Reverse.NodeExec"},
		"Node.GPUResource":             {func(c *Config, v string) { c.Node.GPUResource = v }, "Node.GPUResource"},
		"Node.KubeletAPI.Certificate": {func(c *Config, v string) {
			c.Node.KubeletAPI.Certificate = CertificateSource(v)
		}, "Node.KubeletAPI.Certificate"},
		"Node.Taints[].Effect": {func(c *Config, v string) {
			c.Node.Taints = append(c.Node.Taints, Taint{Key: "example.com/k", Effect: v})
		}, "Node.Taints[1].Effect"},
	}
	for path, values := range enums {
		s, ok := set[path]
		if !ok {
			t.Errorf("%s: an enum this test cannot set; add it", path)
			continue
		}
		for _, v := range append(slices.Clone(values), "bogus") {
			c, err := Parse([]byte(minimal))
			if err != nil {
				t.Fatal(err)
			}
			s.set(c, v)
			var hit []string
			for _, p := range Problems(c.Validate()) {
				if strings.HasPrefix(p, s.prefix) {
					hit = append(hit, p)
				}
			}
			switch {
			case v == "bogus" && len(hit) == 0:
				t.Errorf("%s %q: Validate took it; want a problem at %s", path, v, s.prefix)
			case v != "bogus" && len(hit) > 0:
				t.Errorf("%s %q: the schema lists it but Validate says %q", path, v, hit)
			}
		}
	}
}
