package jobscript

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// containerEnv is a container's environment, in the order its variables were
// first set.
type containerEnv struct {
	names  []string
	values map[string]string
}

func (e *containerEnv) set(name, value string) {
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *containerEnv) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

func (e *containerEnv) vars() []envEntry {
	vars := make([]envEntry, 0, len(e.names))
	for _, n := range e.names {
		vars = append(vars, envEntry{Name: n, Value: e.values[n]})
	}
	return vars
}

// expand expands $(VAR) references to the variables set so far.
func (e *containerEnv) expand(s string) string { return expandVars(s, e.lookup) }

// expandAll expands every string of ss; nil stays nil.
func (e *containerEnv) expandAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = e.expand(s)
	}
	return out
}

// env builds a container's environment as the kubelet does: envFrom sources
// in order, then env entries in order, each value expanding $(VAR) references
// to the variables before it. Later settings of a name win.
func (b *podBuilder) env(c *corev1.Container, field string) (*containerEnv, error) {
	env := &containerEnv{values: map[string]string{}}
	for i := range c.EnvFrom {
		if err := b.envFrom(env, &c.EnvFrom[i], fmt.Sprintf("%s.envFrom[%d]", field, i)); err != nil {
			return nil, err
		}
	}
	for i := range c.Env {
		ev := &c.Env[i]
		f := fmt.Sprintf("%s.env[%d]", field, i)
		if err := checkAssignable(ev.Name); err != nil {
			return nil, podErr(f+".name", "%v", err)
		}
		value, ok := env.expand(ev.Value), true
		if ev.ValueFrom != nil {
			var err error
			value, ok, err = b.envValueFrom(c, ev.ValueFrom, f+".valueFrom")
			if err != nil {
				return nil, err
			}
		}
		if !ok {
			continue
		}
		if strings.IndexByte(value, 0) >= 0 {
			return nil, podErr(f, "the value of %s holds a NUL byte", ev.Name)
		}
		env.set(ev.Name, value)
	}
	return env, nil
}

// envFrom adds the keys of one envFrom source. Keys that are not shell names
// are skipped, as the kubelet skipped invalid names.
func (b *podBuilder) envFrom(env *containerEnv, from *corev1.EnvFromSource, field string) error {
	var data map[string][]byte
	switch {
	case from.ConfigMapRef != nil:
		cm, err := b.configMap(from.ConfigMapRef.Name, isTrue(from.ConfigMapRef.Optional), field+".configMapRef")
		if err != nil || cm == nil {
			return err
		}
		data = map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
	case from.SecretRef != nil:
		s, err := b.secret(from.SecretRef.Name, isTrue(from.SecretRef.Optional), field+".secretRef")
		if err != nil || s == nil {
			return err
		}
		data = s.Data
	default:
		return podErr(field, "neither configMapRef nor secretRef is set")
	}
	for _, k := range sortedKeys(data) {
		name := from.Prefix + k
		if checkEnvName(name) != nil {
			continue
		}
		if err := checkAssignable(name); err != nil {
			return podErr(field, "key %q: %v", k, err)
		}
		if strings.IndexByte(string(data[k]), 0) >= 0 {
			return podErr(field, "the value of key %q holds a NUL byte", k)
		}
		env.set(name, string(data[k]))
	}
	return nil
}

// envValueFrom resolves one env valueFrom. ok is false when an optional
// reference is missing: the variable is then not set.
func (b *podBuilder) envValueFrom(c *corev1.Container, from *corev1.EnvVarSource, field string) (value string, ok bool, err error) {
	switch {
	case from.FieldRef != nil:
		v, err := b.fieldValue(from.FieldRef.FieldPath, field+".fieldRef.fieldPath")
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := b.resourceValue(from.ResourceFieldRef, c.Name, field+".resourceFieldRef")
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := b.configMap(ref.Name, isTrue(ref.Optional), field+".configMapKeyRef")
		if err != nil || cm == nil {
			return "", false, err
		}
		v, found := cm.Data[ref.Key]
		if !found && !isTrue(ref.Optional) {
			return "", false, fmt.Errorf("%s: configmap %s/%s has no key %q", field, b.pod.Namespace, ref.Name, ref.Key)
		}
		return v, found, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := b.secret(ref.Name, isTrue(ref.Optional), field+".secretKeyRef")
		if err != nil || s == nil {
			return "", false, err
		}
		v, found := s.Data[ref.Key]
		if !found && !isTrue(ref.Optional) {
			return "", false, fmt.Errorf("%s: secret %s/%s has no key %q", field, b.pod.Namespace, ref.Name, ref.Key)
		}
		return string(v), found, nil
	case from.FileKeyRef != nil:
		return "", false, podErr(field+".fileKeyRef", "not supported")
	}
	return "", false, podErr(field, "no source is set")
}

func isTrue(b *bool) bool { return b != nil && *b }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// shellReserved are the names that bash, /bin/sh of the RHEL family and the
// shell many images start with, keeps for itself. Assigning a read-only one
// (UID, EUID, PPID, SHELLOPTS, BASHOPTS, BASH_VERSINFO), or a value that is
// not a number to an integer one (SRANDOM, HISTCMD, OPTIND; dash refuses
// OPTIND too), ends the shell that reads the env file, so the container
// would never start; the others (GROUPS, RANDOM, SECONDS, …) are silently
// dropped or replaced. A pod setting one is refused with the reason, rather
// than run only where /bin/sh is not bash, or run without the value.
var shellReserved = []string{
	"UID", "EUID", "PPID", "SHELLOPTS", "BASHOPTS", "BASH_VERSINFO", "SRANDOM", "HISTCMD", "OPTIND",
	"GROUPS", "FUNCNAME", "BASHPID", "BASH_ARGV0", "BASH_ARGV", "BASH_ARGC", "BASH_SUBSHELL", "BASH_LINENO",
	"BASH_SOURCE", "BASH_ALIASES", "BASH_CMDS", "DIRSTACK", "LINENO", "RANDOM", "SECONDS", "EPOCHSECONDS",
	"EPOCHREALTIME", "PIPESTATUS", "BASH_MONOSECONDS", "BASH_TRAPSIG",
}

// bash53Only are the reserved names that bash 5.3 added: older bash sets them.
var bash53Only = map[string]bool{"BASH_MONOSECONDS": true, "BASH_TRAPSIG": true}

// checkAssignable reports a name the batch script cannot pass on: not a
// shell name, or one the shell keeps for itself (see shellReserved).
func checkAssignable(name string) error {
	if err := checkEnvName(name); err != nil {
		return err
	}
	if slices.Contains(shellReserved, name) {
		return fmt.Errorf("%s is bash's own variable (bash is /bin/sh on many nodes, and may be the image's shell): bash would refuse it and end the container, or drop its value", name)
	}
	return nil
}
