package hostnode

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
)

// objectSource reads the ConfigMaps and Secrets a pod uses; a missing
// object is an error apierrors.IsNotFound recognises.
type objectSource interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// podAddrs are the addresses the downward API gives a pod.
type podAddrs struct {
	PodIP, HostIP netip.Addr
}

// defaultPath stands in for the PATH an image would set.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// envList is an environment in the order names were first defined; a later
// definition replaces the value in place, as in a container.
type envList struct {
	names  []string
	values map[string]string
}

func (e *envList) set(name, value string) {
	if e.values == nil {
		e.values = map[string]string{}
	}
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *envList) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

// environ is the list as KEY=VALUE strings, for exec.
func (e *envList) environ() []string {
	out := make([]string, len(e.names))
	for i, n := range e.names {
		out[i] = n + "=" + e.values[n]
	}
	return out
}

// containerEnv is the environment of container c of pod: what the image
// would set (PATH), HOSTNAME, the kubernetes Service's variables, then
// envFrom in order, then env, each value with $(VAR) expanded against the
// variables defined before it.
func containerEnv(ctx context.Context, src objectSource, pod *corev1.Pod, c *corev1.Container, addrs podAddrs) (*envList, error) {
	env := &envList{}
	env.set("PATH", defaultPath)
	env.set("HOSTNAME", podHostname(pod))
	// a name, not 10.96.0.1: the pod's /etc/hosts maps it to the proxy, and
	// the API server's certificate carries it
	env.set("KUBERNETES_SERVICE_HOST", "kubernetes.default.svc.cluster.local")
	env.set("KUBERNETES_SERVICE_PORT", "443")
	env.set("KUBERNETES_SERVICE_PORT_HTTPS", "443")
	for _, from := range c.EnvFrom {
		if err := addEnvFrom(ctx, src, pod.Namespace, from, env); err != nil {
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
	}
	for _, ev := range c.Env {
		v, ok, err := envValue(ctx, src, pod, ev, addrs, env)
		if err != nil {
			return nil, fmt.Errorf("container %s: env %s: %w", c.Name, ev.Name, err)
		}
		if ok {
			env.set(ev.Name, v)
		}
	}
	return env, nil
}

// podHostname is the pod's hostname: spec.hostname, else its name.
func podHostname(pod *corev1.Pod) string {
	if pod.Spec.Hostname != "" {
		return pod.Spec.Hostname
	}
	return pod.Name
}

// addEnvFrom adds every key of a ConfigMap or Secret that is a valid
// variable name, with the prefix.
func addEnvFrom(ctx context.Context, src objectSource, ns string, from corev1.EnvFromSource, env *envList) error {
	var data map[string]string
	switch {
	case from.ConfigMapRef != nil:
		cm, err := src.ConfigMap(ctx, ns, from.ConfigMapRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional(from.ConfigMapRef.Optional) {
				return nil
			}
			return fmt.Errorf("envFrom configMap %s: %w", from.ConfigMapRef.Name, err)
		}
		data = cm.Data
	case from.SecretRef != nil:
		s, err := src.Secret(ctx, ns, from.SecretRef.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional(from.SecretRef.Optional) {
				return nil
			}
			return fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
		}
		data = secretStrings(s)
	default:
		return fmt.Errorf("envFrom: neither configMapRef nor secretRef")
	}
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if name := from.Prefix + k; len(validation.IsEnvVarName(name)) == 0 {
			env.set(name, data[k])
		}
	}
	return nil
}

// envValue is the value of one env entry; false when an optional source is
// missing (the variable is then not set).
func envValue(ctx context.Context, src objectSource, pod *corev1.Pod, ev corev1.EnvVar, addrs podAddrs, env *envList) (string, bool, error) {
	vf := ev.ValueFrom
	if vf == nil {
		return expand(ev.Value, env.lookup), true, nil
	}
	switch {
	case vf.FieldRef != nil:
		v, err := fieldValue(pod, vf.FieldRef.FieldPath, addrs)
		return v, err == nil, err
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, err := src.ConfigMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configMap %s: %w", ref.Name, err)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("configMap %s has no key %s", ref.Name, ref.Key)
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, err := src.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %s: %w", ref.Name, err)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if v, ok := s.StringData[ref.Key]; ok {
			return v, true, nil
		}
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
	default:
		return "", false, fmt.Errorf("only value, fieldRef, configMapKeyRef and secretKeyRef are supported")
	}
}

// fieldValue resolves a downward-API field path of the pod.
func fieldValue(pod *corev1.Pod, path string, addrs podAddrs) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return addrs.PodIP.String(), nil
	case "status.hostIP", "status.hostIPs":
		return addrs.HostIP.String(), nil
	}
	return "", fmt.Errorf("fieldRef %s is not supported", path)
}

// subscript reads the key of a path like metadata.labels['app'].
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

func optional(p *bool) bool { return p != nil && *p }

// secretStrings is a Secret's data as strings.
func secretStrings(s *corev1.Secret) map[string]string {
	out := make(map[string]string, len(s.Data)+len(s.StringData))
	for k, v := range s.StringData {
		out[k] = v
	}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out
}

// containerArgv is the command line of container c: the image's program
// (entrypoint) with the args, or the container's command with the args,
// each word with $(VAR) expanded against env.
func containerArgv(c *corev1.Container, entrypoint string, env *envList) []string {
	var argv []string
	if len(c.Command) > 0 {
		for _, w := range c.Command {
			argv = append(argv, expand(w, env.lookup))
		}
	} else {
		argv = append(argv, entrypoint)
	}
	for _, w := range c.Args {
		argv = append(argv, expand(w, env.lookup))
	}
	return argv
}
