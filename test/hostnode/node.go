package hostnode

import (
	"net/netip"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostIP is the node's address, given to pods as status.hostIP.
var hostIP = netip.MustParseAddr("127.0.0.1")

// kubeletVersion is what the node reports as its kubelet version.
const kubeletVersion = "v1.37.2-sluice-hostnode"

// newNode is the node object: Ready, untainted, with room for 110 pods and
// the kubelet API's port.
func newNode(name string, kubeletPort int32, now time.Time) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("32"),
		corev1.ResourceMemory:           resource.MustParse("128Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     runtime.GOARCH,
			"type":                   "sluice-hostnode",
		}},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "sluice-hostnode is ready"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", ""),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", ""),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", ""),
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", ""),
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: hostIP.String()}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{
				KubeletEndpoint: corev1.DaemonEndpoint{Port: kubeletPort},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:  kubeletVersion,
				OperatingSystem: "linux",
				Architecture:    runtime.GOARCH,
			},
		},
	}
}
