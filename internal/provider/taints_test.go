package provider

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// tolerates is Kubernetes' own rule (corev1.Toleration.ToleratesTaint,
// called with a discarding logger, which reflect gives without naming klog).
func tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	m := reflect.ValueOf(&tol).MethodByName("ToleratesTaint")
	out := m.Call([]reflect.Value{reflect.Zero(m.Type().In(0)), reflect.ValueOf(&taint), reflect.ValueOf(false)})
	return out[0].Bool()
}

// schedulable is the scheduler's TaintToleration filter: every NoSchedule
// and NoExecute taint of the node is tolerated.
func schedulable(tols []corev1.Toleration, taints []corev1.Taint) bool {
	for _, taint := range taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for _, tol := range tols {
			ok = ok || tolerates(tol, taint)
		}
		if !ok {
			return false
		}
	}
	return true
}

// The node carries sluice's taint unless Node.Taints says otherwise; with
// interLink's, the pods written for interLink (their toleration as its
// documentation writes it) are scheduled there; a node with both admits
// only pods that tolerate both.
func TestNodeTaintsAndTolerations(t *testing.T) {
	sluicePod := []corev1.Toleration{{Key: TaintKey, Operator: corev1.TolerationOpEqual, Value: TaintValue, Effect: corev1.TaintEffectNoSchedule}}
	interLinkPod := []corev1.Toleration{{Key: "virtual-node.interlink/no-schedule", Operator: corev1.TolerationOpExists}}
	interLinkPodEqual := []corev1.Toleration{{Key: "virtual-node.interlink/no-schedule", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	bothPod := append(append([]corev1.Toleration{}, sluicePod...), interLinkPod...)
	tests := []struct {
		name   string
		taints []config.Taint
		want   []string
		admits map[string]bool
	}{
		{"default", nil, []string{"virtual-kubelet.io/provider=sluice:NoSchedule"},
			map[string]bool{"sluice": true, "interlink": false, "interlink-equal": false, "both": true, "none": false}},
		{"interLink's", []config.Taint{config.InterLinkTaint}, []string{"virtual-node.interlink/no-schedule=true:NoSchedule"},
			map[string]bool{"sluice": false, "interlink": true, "interlink-equal": true, "both": true, "none": false}},
		{"both", []config.Taint{config.SluiceTaint, config.InterLinkTaint}, []string{"virtual-kubelet.io/provider=sluice:NoSchedule", "virtual-node.interlink/no-schedule=true:NoSchedule"},
			map[string]bool{"sluice": false, "interlink": false, "interlink-equal": false, "both": true, "none": false}},
	}
	pods := map[string][]corev1.Toleration{"sluice": sluicePod, "interlink": interLinkPod, "interlink-equal": interLinkPodEqual, "both": bothPod, "none": nil}
	for _, tt := range tests {
		n := config.Node{Taints: tt.taints}
		n.Default()
		node, err := NewNode("hpc", n, 10250, time.Now())
		if err != nil {
			t.Fatalf("NewNode: %v", err)
		}
		var got []string
		for _, taint := range node.Spec.Taints {
			got = append(got, taint.ToString())
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got taints %q; want %q", tt.name, got, tt.want)
		}
		for pod, want := range tt.admits {
			if schedulable(pods[pod], node.Spec.Taints) != want {
				t.Errorf("%s: a pod tolerating %s is schedulable: %v; want %v", tt.name, pod, !want, want)
			}
		}
	}
}
