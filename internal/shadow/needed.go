package shadow

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Needed tells which tunnels pod's shadow runs. forward: a container the pod
// offloads exposes a TCP port (ssh carries TCP only, so UDP ports count for
// nothing). reverse: the pod asks for a reverse tunnel in its annotations,
// well-formed or not (Spec.Build reports a malformed one).
func Needed(pod *corev1.Pod) (forward, reverse bool) {
	kept := keptSet(pod, annotations.DisableOffloadContainers)
	for _, c := range pod.Spec.Containers {
		if !kept[c.Name] && len(tcpPorts(c)) > 0 {
			forward = true
		}
	}
	r, err := annotations.Parse(pod.Annotations, pod.Namespace)
	return forward, r != nil || err != nil
}

// Wanted tells whether pod gets a shadow at all: it needs a tunnel, exposes
// a TCP port (from a kept container, served by the shadow itself) or keeps
// containers in the cluster. A pod setting interlink.eu/pod-vpn gets none,
// as in interLink (the provider refuses such a pod that asks for a reverse
// tunnel, S6).
func Wanted(pod *corev1.Pod) bool {
	if annotations.HasPodVPN(pod.Annotations) {
		return false
	}
	forward, reverse := Needed(pod)
	return forward || reverse || len(KeptInit(pod)) > 0 || len(KeptContainers(pod)) > 0
}

// tcpPorts are c's TCP container ports (an empty protocol is TCP).
func tcpPorts(c corev1.Container) []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for _, p := range c.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			ports = append(ports, p)
		}
	}
	return ports
}

// exposed is a TCP port of the shadow: forwarded to the job, or served by a
// kept container in the shadow pod itself.
type exposed struct {
	port    int32
	name    string // the Service port name
	kept    bool
	carrier string // the container exposing it
}

// exposedPorts lists the TCP ports of pod's containers, ordered by number,
// with a distinct Service port name each. A port that an offloaded and a
// kept container both expose is an error: the Service could reach only one
// of them.
func exposedPorts(pod *corev1.Pod) ([]exposed, error) {
	kept := keptSet(pod, annotations.DisableOffloadContainers)
	byPort := map[int32]*exposed{}
	var ports []*exposed
	for i, c := range pod.Spec.Containers {
		for _, p := range tcpPorts(c) {
			if old := byPort[p.ContainerPort]; old != nil {
				if old.kept != kept[c.Name] {
					return nil, podErr("spec.containers["+strconv.Itoa(i)+"].ports",
						"TCP port %d is exposed by containers %s and %s, one kept in the cluster (%s) and one offloaded: the shadow's Service can reach only one",
						p.ContainerPort, old.carrier, c.Name, annotations.DisableOffloadContainers)
				}
				continue
			}
			e := &exposed{port: p.ContainerPort, name: p.Name, kept: kept[c.Name], carrier: c.Name}
			byPort[p.ContainerPort] = e
			ports = append(ports, e)
		}
	}
	slices.SortFunc(ports, func(a, b *exposed) int { return cmp.Compare(a.port, b.port) })
	nameServicePorts(ports)
	out := make([]exposed, len(ports))
	for i, e := range ports {
		out[i] = *e
	}
	return out, nil
}

// nameServicePorts gives each port a distinct Service port name: its
// container port name when that is a DNS-1035 label (a container port name
// may start with a digit, a Service port name may not), else tcp-<port>.
func nameServicePorts(ports []*exposed) {
	used := map[string]bool{}
	for _, e := range ports {
		if e.name != "" && len(validation.IsDNS1035Label(e.name)) == 0 && len(e.name) <= 15 && !used[e.name] {
			used[e.name] = true
		} else {
			e.name = ""
		}
	}
	for _, e := range ports {
		if e.name != "" {
			continue
		}
		name := "tcp-" + strconv.Itoa(int(e.port))
		for i := 2; used[name]; i++ {
			name = "tcp-" + strconv.Itoa(int(e.port)) + "-" + strconv.Itoa(i)
		}
		used[name] = true
		e.name = name
	}
}

// metricsPorts are the metrics ports of the forward and reverse containers
// (0 for a container the shadow does not run): the first free ports from
// 9464 and 9465, skipping the exposed ports and each other.
func metricsPorts(ports []exposed, withForward, withReverse bool) (forward, reverse int32) {
	taken := map[int32]bool{}
	for _, e := range ports {
		taken[e.port] = true
	}
	next := func(p int32) int32 {
		for taken[p] {
			p++
		}
		taken[p] = true
		return p
	}
	if withForward {
		forward = next(metricsForward)
	}
	if withReverse {
		reverse = next(metricsReverse)
	}
	return forward, reverse
}
