package shadow

import (
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	corev1 "k8s.io/api/core/v1"
)

func TestNeeded(t *testing.T) {
	sidecar := corev1.Container{Name: "side", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}
	tests := []struct {
		name             string
		pod              *corev1.Pod
		forward, reverse bool
		wanted           bool
	}{
		{"no ports", testPod("ns", "p"), false, false, false},
		{"tcp port", testPod("ns", "p", withPorts("8080/TCP")), true, false, true},
		{"protocol left empty is tcp", testPod("ns", "p", withPorts("8080")), true, false, true},
		{"udp only", testPod("ns", "p", withPorts("5353/UDP", "5354/UDP")), false, false, false},
		{"udp and tcp", testPod("ns", "p", withPorts("5353/UDP", "80/TCP")), true, false, true},
		{"sctp only", testPod("ns", "p", withPorts("9/SCTP")), false, false, false},
		{"reverse", testPod("ns", "p", withAnnotation(annotations.ReverseForwards, "redis:6379")), false, true, true},
		{"reverse and ports", testPod("ns", "p", withPorts("80"), withAnnotation(annotations.ReverseForwards, "redis:6379")), true, true, true},
		{"reverse malformed", testPod("ns", "p", withAnnotation(annotations.ReverseForwards, "redis")), false, true, true},
		{"reverse with no entries", testPod("ns", "p", withAnnotation(annotations.ReverseForwards, " , ")), false, false, false},
		{"socks only", testPod("ns", "p", withAnnotation(annotations.ReverseSocksPort, "1080")), false, true, true},
		{"udp only and reverse", testPod("ns", "p", withPorts("53/UDP"), withAnnotation(annotations.ReverseForwards, "redis:6379")), false, true, true},
		{"port of a kept container", testPod("ns", "p", withContainer(sidecar),
			withAnnotation(annotations.DisableOffloadContainers, "side")), false, false, true},
		{"port of an offloaded second container", testPod("ns", "p", withContainer(sidecar)), true, false, true},
		{"kept init container only", testPod("ns", "p", withInit(corev1.Container{Name: "fetch", Image: "busybox"}),
			withAnnotation(annotations.DisableOffloadInitContainers, "fetch")), false, false, true},
		{"pod-vpn", testPod("ns", "p", withPorts("80"), withAnnotation(annotations.PodVPN, "false")), true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forward, reverse := Needed(tt.pod)
			if forward != tt.forward || reverse != tt.reverse {
				t.Errorf("Needed = %v, %v; want %v, %v", forward, reverse, tt.forward, tt.reverse)
			}
			if got := Wanted(tt.pod); got != tt.wanted {
				t.Errorf("Wanted = %v; want %v", got, tt.wanted)
			}
			objs, err := testSpec().Build(tt.pod)
			if tt.name == "reverse malformed" {
				if err == nil {
					t.Errorf("Build accepted a malformed %s", annotations.ReverseForwards)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if (objs != nil) != tt.wanted {
				t.Fatalf("Build made objects %v; want %v", objs != nil, tt.wanted)
			}
			if objs != nil && (objs.Forward != tt.forward || objs.Reverse != tt.reverse) {
				t.Errorf("Build: Forward, Reverse = %v, %v; want %v, %v", objs.Forward, objs.Reverse, tt.forward, tt.reverse)
			}
		})
	}
}
