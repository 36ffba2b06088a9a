package jobscript

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fieldValue resolves a downward-API field path of the pod, as the kubelet
// does. status.podIP may be empty: a pod's IP is set after it is submitted.
func (b *podBuilder) fieldValue(path, field string) (string, error) {
	p := b.pod
	if base, key, ok := subscript(path); ok {
		switch base {
		case "metadata.labels":
			return p.Labels[key], nil
		case "metadata.annotations":
			return p.Annotations[key], nil
		}
		return "", podErr(field, "field path %q is not supported", path)
	}
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "metadata.labels":
		return formatMap(p.Labels), nil
	case "metadata.annotations":
		return formatMap(p.Annotations), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return p.Status.HostIP, nil
	case "status.hostIPs":
		return joinIPs(p.Status.HostIPs, func(ip corev1.HostIP) string { return ip.IP }), nil
	case "status.podIP":
		return p.Status.PodIP, nil
	case "status.podIPs":
		return joinIPs(p.Status.PodIPs, func(ip corev1.PodIP) string { return ip.IP }), nil
	}
	return "", podErr(field, "field path %q is not supported", path)
}

// subscript splits "metadata.labels['key']" into its base and key.
func subscript(path string) (base, key string, ok bool) {
	open := strings.Index(path, "['")
	if open < 0 || !strings.HasSuffix(path, "']") || open+2 > len(path)-2 {
		return "", "", false
	}
	return path[:open], path[open+2 : len(path)-2], true
}

// formatMap formats labels or annotations as the downward API does: one
// key="quoted value" line per key, sorted.
func formatMap(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

func joinIPs[T any](ips []T, ip func(T) string) string {
	s := make([]string, len(ips))
	for i := range ips {
		s[i] = ip(ips[i])
	}
	return strings.Join(s, ",")
}

// resourceValue resolves a downward-API resource of a container, as the
// kubelet does: the value divided by the divisor, rounded up. A limit the
// container does not set is what the job gets, as an unset limit is the
// node's capacity for the kubelet; a request it does not set is its limit,
// else zero.
func (b *podBuilder) resourceValue(ref *corev1.ResourceFieldSelector, defaultContainer, field string) (string, error) {
	name := ref.ContainerName
	if name == "" {
		name = defaultContainer
	}
	c := b.findContainer(name)
	if c == nil {
		return "", podErr(field+".containerName", "no container %q in the pod", name)
	}
	kind, res, _ := strings.Cut(ref.Resource, ".")
	rn := corev1.ResourceName(res)
	var q resource.Quantity
	switch kind {
	case "limits":
		if l, ok := c.Resources.Limits[rn]; ok {
			q = l
		} else if a, ok := b.allocation(rn); ok {
			q = a
		} else {
			return "", podErr(field+".resource", "container %s sets no %s and the job's is the site's default", name, ref.Resource)
		}
	case "requests":
		if r, ok := c.Resources.Requests[rn]; ok {
			q = r
		} else {
			q = c.Resources.Limits[rn]
		}
	default:
		return "", podErr(field+".resource", "resource %q is not supported", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	value, div := q.Value(), divisor.Value()
	if rn == corev1.ResourceCPU {
		value, div = q.MilliValue(), divisor.MilliValue()
	}
	if div <= 0 || value < 0 {
		return "", podErr(field+".divisor", "divisor %s does not divide %s", divisor.String(), q.String())
	}
	n := value / div
	if value%div != 0 {
		n++
	}
	return strconv.FormatInt(n, 10), nil
}

// allocation is what the job gets of a resource, when it asks for it.
func (b *podBuilder) allocation(rn corev1.ResourceName) (resource.Quantity, bool) {
	r := b.job.Resources
	switch {
	case rn == corev1.ResourceCPU && r.CPUs > 0:
		return *resource.NewQuantity(r.CPUs, resource.DecimalSI), true
	case rn == corev1.ResourceMemory && r.MemoryMiB > 0:
		return *resource.NewQuantity(r.MemoryMiB*mib, resource.BinarySI), true
	}
	return resource.Quantity{}, false
}

func (b *podBuilder) findContainer(name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{b.pod.Spec.InitContainers, b.pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}
