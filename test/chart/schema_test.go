package chart

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/sluice-hpc/sluice/internal/config"
)

// schemaNode is the part of a JSON schema the chart's values.schema.json
// uses for sluice's configuration.
type schemaNode struct {
	Type                 any                    `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
}

// elements is the schema of a map's values (additionalProperties as a
// schema), or nil.
func (n *schemaNode) elements() *schemaNode {
	var e schemaNode
	if len(n.AdditionalProperties) == 0 || json.Unmarshal(n.AdditionalProperties, &e) != nil {
		return nil
	}
	return &e
}

func (n *schemaNode) hasType(want string) bool {
	switch t := n.Type.(type) {
	case string:
		return t == want
	case []any:
		for _, x := range t {
			if x == want {
				return true
			}
		}
	}
	return false
}

// schemaTypes are the JSON schema types of configuration keys by kind; a
// key of another kind names its Go kind.
var schemaTypes = map[config.Kind]string{
	config.KindString: "string", config.KindDuration: "string", config.KindBool: "boolean",
	config.KindInteger: "integer", config.KindNumber: "number",
	config.KindStrings: "array", config.KindList: "array",
	config.KindStringMap: "object", config.KindMap: "object", config.KindSection: "object",
}

// schemaType is the JSON schema type of k.
func schemaType(k config.Key) string {
	if w, ok := schemaTypes[k.Kind]; ok {
		return w
	}
	return k.Type.Kind().String()
}

// TestSchemaKnowsEveryKey: values.schema.json refuses what sluice-vk does
// not know (additionalProperties false), so it must know every key sluice-vk
// reads, with its type: it walks the configuration's types by their yaml
// tags and fails naming each key the schema lacks or types otherwise.
func TestSchemaKnowsEveryKey(t *testing.T) {
	data, err := os.ReadFile("../../charts/sluice/values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root schemaNode
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	cfg := root.Properties["config"]
	if cfg == nil {
		t.Fatal("values.schema.json has no config")
	}
	// nodes holds the schema of each key's parent, found as Keys lists
	// the parent first; the keys below one the schema lacks are not
	// looked for.
	nodes := map[string]*schemaNode{"": cfg}
	for _, k := range config.Keys() {
		n := nodes[k.Parent]
		if n == nil {
			continue
		}
		p := n.Properties[k.Name]
		if p == nil {
			t.Errorf("values.schema.json has no config.%s (%s)", k.Path, schemaType(k))
			continue
		}
		if want := schemaType(k); !p.hasType(want) {
			t.Errorf("values.schema.json types config.%s as %v; sluice reads a %s", k.Path, p.Type, want)
			continue
		}
		switch ft := k.Type; {
		case k.Kind == config.KindSection:
			nodes[k.Path] = p
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			e := p.elements()
			nodes[k.Path+".<name>"] = e
			if e == nil {
				t.Errorf("values.schema.json has no schema for the values of config.%s", k.Path)
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			nodes[k.Path+"[]"] = p.Items
			if p.Items == nil {
				t.Errorf("values.schema.json has no schema for the items of config.%s", k.Path)
			}
		}
	}
}
