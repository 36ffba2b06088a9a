package chart

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

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

// schemaType is the JSON schema type of a configuration key of type t.
func schemaType(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaType(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return t.Kind().String()
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
	var walk func(prefix string, typ reflect.Type, n *schemaNode)
	walk = func(prefix string, typ reflect.Type, n *schemaNode) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if opts == "inline" {
				walk(prefix, f.Type, n)
				continue
			}
			if tag == "" || tag == "-" {
				continue
			}
			name := prefix + tag
			p := n.Properties[tag]
			if p == nil {
				t.Errorf("values.schema.json has no config.%s (%s)", name, schemaType(f.Type))
				continue
			}
			if want := schemaType(f.Type); !p.hasType(want) {
				t.Errorf("values.schema.json types config.%s as %v; sluice reads a %s", name, p.Type, want)
				continue
			}
			switch ft := f.Type; {
			case ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]():
				walk(name+".", ft, p)
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				if e := p.elements(); e == nil {
					t.Errorf("values.schema.json has no schema for the values of config.%s", name)
				} else {
					walk(name+".<name>.", ft.Elem(), e)
				}
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				if p.Items == nil {
					t.Errorf("values.schema.json has no schema for the items of config.%s", name)
				} else {
					walk(name+"[].", ft.Elem(), p.Items)
				}
			}
		}
	}
	walk("", reflect.TypeFor[config.Config](), cfg)
}
