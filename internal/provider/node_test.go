package provider

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
)

func TestNewNode(t *testing.T) {
	n := config.Node{Labels: map[string]string{"site": "rig"}}
	n.Default()
	n.GPUs = "2"
	node, err := NewNode("hpc", n, 12345, time.Now())
	if err != nil {
		t.Fatalf("NewNode: %v", err)
	}
	gpu := node.Status.Capacity[config.GPUResourceNVIDIA]
	if _, cpu := node.Status.Allocatable[corev1.ResourceCPU]; gpu.Value() != 2 || cpu || node.Status.Capacity.Pods().Value() != 1000 {
		t.Errorf("got capacity %v; want 1000 pods, 2 GPUs, no CPU before the site is read", node.Status.Capacity)
	}
	if c := condition(node, ConditionSiteCapacity); c.Status != corev1.ConditionUnknown {
		t.Errorf("got SiteCapacity %s; want Unknown before the first read", c.Status)
	}
	if a := node.Status.NodeInfo.Architecture; a != "" || node.Labels[LabelArch] != "" {
		t.Errorf("got architecture %q, label %q; want none before the site tells", a, node.Labels[LabelArch])
	}
	if node.Labels["site"] != "rig" || node.Labels["kubernetes.io/hostname"] != "hpc" || node.Labels["type"] != "virtual-kubelet" || node.Labels["virtual-node.interlink/type"] != "virtual-kubelet" {
		t.Errorf("got labels %v; want site=rig, hostname=hpc, type and interLink's virtual-node.interlink/type=virtual-kubelet", node.Labels)
	}
	if tt := node.Spec.Taints; len(tt) != 1 || tt[0].Key != TaintKey || tt[0].Value != "sluice" || tt[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("got taints %v; want %s=sluice:NoSchedule", tt, TaintKey)
	}
	if a := node.Status.Addresses; len(a) != 1 || a[0].Type != corev1.NodeInternalIP || a[0].Address != "127.0.0.1" {
		t.Errorf("got addresses %v; want only InternalIP 127.0.0.1", a)
	}
	if p := node.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 12345 {
		t.Errorf("got kubelet port %d; want 12345", p)
	}
	if c := condition(node, corev1.NodeReady); c.Status != corev1.ConditionTrue {
		t.Errorf("got Ready %s; want True", c.Status)
	}
}

func condition(n *corev1.Node, typ corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func TestSiteReachable(t *testing.T) {
	n := config.Node{}
	n.Default()
	node, err := NewNode("hpc", n, 10250, time.Now())
	if err != nil {
		t.Fatalf("NewNode: %v", err)
	}
	var mu sync.Mutex
	var down error
	s := &NodeStatus{Node: node, Check: func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return down
	}}
	var got []corev1.ConditionStatus
	push := func(n *corev1.Node) {
		got = append(got, condition(n, ConditionSiteReachable).Status)
	}
	ctx := context.Background()
	s.checkOnce(ctx) // before the node controller listens: kept for later
	s.NotifyNodeStatus(ctx, push)
	s.checkOnce(ctx)
	s.checkOnce(ctx) // no change: nothing pushed
	mu.Lock()
	down = errors.New("ssh: handshake failed")
	mu.Unlock()
	if !s.Reachable() {
		t.Error("Reachable: false before the failing check; want true")
	}
	s.checkOnce(ctx)
	if s.Reachable() {
		t.Error("Reachable: true after a failed check; want false")
	}
	mu.Lock()
	down = nil
	mu.Unlock()
	s.checkOnce(ctx)
	want := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionTrue}
	if len(got) != len(want) {
		t.Fatalf("got pushes %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("push %d: got SiteReachable %s; want %s", i, got[i], want[i])
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping: %v; want nil while the site is checked separately", err)
	}
}
