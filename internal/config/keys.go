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
	// Section: the key is a struct whose fields are keys of their own
	// (Network.SSH); it holds no value of its own. A map or list of
	// structs is no section: it is a key, and the parent of its values'
	// keys.
	Section bool
	// Default is the value Default fills into an empty configuration; it
	// is the zero reflect.Value inside a map's values or a list's items,
	// which an empty configuration does not have.
	Default reflect.Value
}

var durationType = reflect.TypeFor[time.Duration]()

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
			k := Key{Path: tag, Parent: parent, Name: tag, Type: f.Type, Default: fv}
			if parent != "" {
				k.Path = parent + "." + tag
			}
			ft := f.Type
			k.Section = ft.Kind() == reflect.Struct && ft != durationType
			keys = append(keys, k)
			switch {
			case k.Section:
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
