package config

import (
	"reflect"
	"strings"
	"time"
)

// Key is one key of the configuration file, as the configuration's types
// give it by their yaml tags.
type Key struct {
	// Path names the key as the reference does: Network.SSH.Port,
	// Site.Flavors.<name>.CPUDefault (a map's values), Node.Taints[].Key
	// (a list's items).
	Path string
	// Parent is the path of what holds the key ("" at the top):
	// Network.SSH, Site.Flavors.<name>, Node.Taints[].
	Parent string
	// Name is the key's own name, its yaml tag: Port.
	Name string
	// Type is the Go type the key is read into.
	Type reflect.Type
	// Kind is what the key holds, from its type.
	Kind Kind
	// Default is the value Default fills into an empty configuration; it
	// is the zero reflect.Value inside a map's values or a list's items,
	// which an empty configuration does not have.
	Default reflect.Value
}

// Kind is what a key of the configuration file holds.
type Kind int

// The kinds of keys. A pointer's kind is its element's.
const (
	KindOther     Kind = iota // a type no other kind covers (a pointer to a struct, a uint, …)
	KindString                // a string
	KindBool                  // true or false
	KindInteger               // an int or int64
	KindNumber                // a float64
	KindDuration              // a time.Duration, written as Go writes one: 30s
	KindStrings               // a list of strings
	KindList                  // a list of anything else (of sections: Node.Taints)
	KindStringMap             // a map of strings
	KindMap                   // a map of anything else (of sections: Site.Flavors)
	// KindSection is a struct whose fields are keys of their own
	// (Network.SSH): it holds no value of its own. A map or list of
	// structs is no section: it is a key, and the parent of its values'
	// keys.
	KindSection
)

var durationType = reflect.TypeFor[time.Duration]()

// kindOf is the kind of a key of type t.
func kindOf(t reflect.Type) Kind {
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			return KindOther
		}
		return kindOf(t.Elem())
	case reflect.String:
		return KindString
	case reflect.Bool:
		return KindBool
	case reflect.Int, reflect.Int64:
		if t == durationType {
			return KindDuration
		}
		return KindInteger
	case reflect.Float64:
		return KindNumber
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return KindStrings
		}
		return KindList
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return KindStringMap
		}
		return KindMap
	case reflect.Struct:
		return KindSection
	}
	return KindOther
}

// Keys lists every key of the configuration file, each after the key
// that holds it, in the order of the fields. An inline struct's fields
// are its parent's keys; fields without a yaml name are none.
func Keys() []Key {
	var c Config
	c.Default()
	var keys []Key
	var walk func(parent string, t reflect.Type, v reflect.Value)
	walk = func(parent string, t reflect.Type, v reflect.Value) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			var fv reflect.Value
			if v.IsValid() {
				fv = v.Field(i)
			}
			if opts == "inline" {
				walk(parent, f.Type, fv)
				continue
			}
			if tag == "" || tag == "-" {
				continue
			}
			k := Key{Path: tag, Parent: parent, Name: tag, Type: f.Type, Kind: kindOf(f.Type), Default: fv}
			if parent != "" {
				k.Path = parent + "." + tag
			}
			keys = append(keys, k)
			switch ft := f.Type; {
			case k.Kind == KindSection:
				walk(k.Path, ft, fv)
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				walk(k.Path+".<name>", ft.Elem(), reflect.Value{})
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(k.Path+"[]", ft.Elem(), reflect.Value{})
			}
		}
	}
	walk("", reflect.TypeFor[Config](), reflect.ValueOf(c))
	return keys
}
