package hostnode

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTargetPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
		{Name: "b", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9464, Protocol: corev1.ProtocolTCP}}},
	}}}
	for _, tc := range []struct {
		name string
		sp   corev1.ServicePort
		want int32
		ok   bool
	}{
		{"number", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(8080)}, 8080, true},
		{"unset", corev1.ServicePort{Port: 6379}, 6379, true},
		{"empty name", corev1.ServicePort{Port: 81, TargetPort: intstr.FromString("")}, 81, true},
		{"named", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")}, 8080, true},
		{"named in second container", corev1.ServicePort{Port: 9, TargetPort: intstr.FromString("metrics")}, 9464, true},
		{"named UDP only", corev1.ServicePort{Port: 53, TargetPort: intstr.FromString("dns")}, 0, false},
		{"unknown name", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}, 0, false},
	} {
		got, ok := targetPort(tc.sp, pod)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: targetPort = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestReadyBackends(t *testing.T) {
	pod := func(name, ip string, ready bool, deleting bool) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
			Status:     corev1.PodStatus{PodIP: ip},
		}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	pods := []*corev1.Pod{
		pod("ready", "127.80.0.1", true, false),
		pod("not-ready", "127.80.0.2", false, false),
		pod("deleting", "127.80.0.3", true, true),
		pod("elsewhere", "10.244.0.5", true, false), // not a host node's
		pod("no-ip", "", true, false),
		pod("ready-too", "127.80.9.9", true, false),
	}
	got := readyBackends(pods, corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("http")})
	if want := []string{"127.80.0.1:8080", "127.80.9.9:8080"}; !slices.Equal(got, want) {
		t.Errorf("backends %v; want %v", got, want)
	}
	if got := readyBackends(pods[:1], corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("grpc")}); len(got) != 0 {
		t.Errorf("backends with no such port name: %v", got)
	}
}
