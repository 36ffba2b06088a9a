package config

//go:generate go run ../../hack/tools/schema -chart ../../charts/sluice/values.schema.json

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// schema is one node of a JSON Schema (draft 07), its keywords in the order
// they are written.
type schema struct {
	Type                 any         `json:"type,omitempty"` // a name, or a list of names
	Enum                 []string    `json:"enum,omitempty"`
	MinLength            *int        `json:"minLength,omitempty"`
	MaxLength            *int        `json:"maxLength,omitempty"`
	Minimum              *float64    `json:"minimum,omitempty"`
	Maximum              *float64    `json:"maximum,omitempty"`
	ExclusiveMinimum     *float64    `json:"exclusiveMinimum,omitempty"`
	Pattern              string      `json:"pattern,omitempty"`
	Description          string      `json:"description,omitempty"`
	AdditionalProperties any         `json:"additionalProperties,omitempty"` // false or *schema
	Properties           *properties `json:"properties,omitempty"`
	Items                *schema     `json:"items,omitempty"`
	Required             []string    `json:"required,omitempty"`
}

// properties are a section's keys, kept in the order of its fields.
type properties struct {
	names []string
	nodes map[string]*schema
}

func (p *properties) add(name string, s *schema) {
	p.names = append(p.names, name)
	p.nodes[name] = s
}

func (p *properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range p.names {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeJSON(&b, name); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := writeJSON(&b, p.nodes[name]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeJSON writes v compactly, leaving <, > and & as they are (patterns
// hold them).
func writeJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetEscapeHTML(false)
	return e.Encode(v)
}

// durationPattern is what a time.Duration key takes: Go's duration syntax.
const durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`

// Schema returns the JSON Schema of the configuration file, built from its
// types (Keys), the values of its enums, and schemaHints: the `config`
// subtree of the chart's values schema. It is indented for a key at the
// depth of `config` in that file.
func Schema() ([]byte, error) {
	root, err := schemaOf()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeJSON(&b, root); err != nil {
		return nil, fmt.Errorf("config schema: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(b.Bytes()), "    ", "  "); err != nil {
		return nil, fmt.Errorf("config schema: %w", err)
	}
	return out.Bytes(), nil
}

// schemaOf builds the schema tree from Keys: each key's node hangs off its
// parent's, whether the parent is a section, a map's values or a list's
// items.
func schemaOf() (*schema, error) {
	root := &schema{Type: "object", AdditionalProperties: false, Properties: newProperties()}
	holders := map[string]*schema{"": root} // parent path → the object holding its keys
	for _, k := range Keys() {
		s, err := keySchema(k)
		if err != nil {
			return nil, err
		}
		parent, ok := holders[k.Parent]
		if !ok {
			return nil, fmt.Errorf("config schema: %s: no schema for its parent %s", k.Path, k.Parent)
		}
		parent.Properties.add(k.Name, s)
		switch {
		case k.Kind == KindSection:
			holders[k.Path] = s
		case k.Kind == KindMap:
			holders[k.Path+".<name>"] = s.AdditionalProperties.(*schema)
		case k.Kind == KindList:
			holders[k.Path+"[]"] = s.Items
		}
	}
	for path, s := range holders {
		hint(path, s)
	}
	return root, nil
}

func newProperties() *properties {
	return &properties{nodes: map[string]*schema{}}
}

// keySchema is the schema of one key, from its kind, its enum and its
// hints.
func keySchema(k Key) (*schema, error) {
	object := func() *schema {
		return &schema{Type: "object", AdditionalProperties: false, Properties: newProperties()}
	}
	var s *schema
	switch k.Kind {
	case KindString:
		s = &schema{Type: "string", Enum: enums[k.Path]}
	case KindBool:
		s = &schema{Type: "boolean"}
	case KindInteger:
		s = &schema{Type: "integer"}
	case KindNumber:
		s = &schema{Type: "number"}
	case KindDuration:
		s = &schema{Type: "string", Pattern: durationPattern, Description: "a Go duration such as 5s"}
	case KindStrings:
		s = &schema{Type: "array", Items: &schema{Type: "string"}}
		hint(k.Path+"[]", s.Items)
	case KindList:
		s = &schema{Type: "array", Items: object()}
	case KindStringMap:
		s = &schema{Type: "object", AdditionalProperties: &schema{Type: "string"}}
	case KindMap:
		s = &schema{Type: "object", AdditionalProperties: object()}
	case KindSection:
		s = object()
	default:
		return nil, fmt.Errorf("config schema: %s: no JSON type for Go type %s", k.Path, k.Type)
	}
	if k.Kind != KindSection {
		hint(k.Path, s)
	}
	return s, nil
}

// hint adds the hints of path to s: each keyword the hint sets.
func hint(path string, s *schema) {
	h, ok := schemaHints[path]
	if !ok {
		return
	}
	if h.Type != nil {
		s.Type = h.Type
	}
	for _, p := range []struct{ dst, src **int }{{&s.MinLength, &h.MinLength}, {&s.MaxLength, &h.MaxLength}} {
		if *p.src != nil {
			*p.dst = *p.src
		}
	}
	for _, p := range []struct{ dst, src **float64 }{{&s.Minimum, &h.Minimum}, {&s.Maximum, &h.Maximum}, {&s.ExclusiveMinimum, &h.ExclusiveMinimum}} {
		if *p.src != nil {
			*p.dst = *p.src
		}
	}
	for _, p := range []struct{ dst, src *string }{{&s.Pattern, &h.Pattern}, {&s.Description, &h.Description}} {
		if *p.src != "" {
			*p.dst = *p.src
		}
	}
	if h.Required != nil {
		s.Required = h.Required
	}
}

// ChartSchema returns the chart's values schema file with its `config`
// subtree (properties.config) replaced by Schema(), and every other byte
// as it was, so that the chart's own values stay hand-written.
func ChartSchema(file []byte) ([]byte, error) {
	start, end, err := configSpan(file)
	if err != nil {
		return nil, fmt.Errorf("chart schema: %w", err)
	}
	s, err := Schema()
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(file[:start])
	out = append(out, s...)
	return append(out, file[end:]...), nil
}

// configSpan finds the value of properties.config in the values schema
// file: its first and past-the-last byte.
func configSpan(file []byte) (start, end int, err error) {
	dec := json.NewDecoder(bytes.NewReader(file))
	// enter walks into the object that is the value of key, in the object
	// dec is inside, skipping the other keys' values.
	enter := func(key string) (int, error) {
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return 0, err
			}
			if t == key {
				at := int(dec.InputOffset())
				return at, nil
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, err
			}
		}
		return 0, fmt.Errorf("no key %q", key)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, errors.New("not a JSON object")
	}
	if _, err := enter("properties"); err != nil {
		return 0, 0, err
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, errors.New("properties: not an object")
	}
	at, err := enter("config")
	if err != nil {
		return 0, 0, fmt.Errorf("properties: %w", err)
	}
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return 0, 0, fmt.Errorf("properties.config: %w", err)
	}
	end = int(dec.InputOffset())
	i := strings.IndexByte(string(file[at:end]), '{')
	if i < 0 {
		return 0, 0, errors.New("properties.config: not an object")
	}
	return at + i, end, nil
}
