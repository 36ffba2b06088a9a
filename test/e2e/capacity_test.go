//go:build e2e

package e2e

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodeCapacityFromSite: a node whose configuration sets no amounts
// offers what the rig's default partition holds (slurm.conf: node1, 4 CPUs,
// 2000 MB, Gres=gpu:2) with kubernetes.io/arch from the login node, and the
// scheduler holds it to that: a pod asking for 5 CPUs is not placed.
func TestNodeCapacityFromSite(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	ctx := context.Background()
	n, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[corev1.ResourceName]string{"cpu": "4", "memory": "2000Mi", "nvidia.com/gpu": "2", "pods": "1000"} {
		got := n.Status.Allocatable[name]
		if got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("allocatable %s = %s; want %s (all: %v)", name, got.String(), want, n.Status.Allocatable)
		}
	}
	if a := n.Labels["kubernetes.io/arch"]; a != runtime.GOARCH || n.Status.NodeInfo.Architecture != runtime.GOARCH {
		t.Errorf("arch label %q, NodeInfo %q; want the rig's %s", a, n.Status.NodeInfo.Architecture, runtime.GOARCH)
	}
	var cond corev1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == "SiteCapacity" {
			cond = c
		}
	}
	if cond.Status != corev1.ConditionTrue || !strings.Contains(cond.Message, "1 of 1 nodes of partition debug") {
		t.Errorf("SiteCapacity %+v; want True, from partition debug", cond)
	}

	big := e.pod("too-big", "true")
	big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}
	e.create(big)
	e.waitPod("too-big", "unschedulable for want of CPUs", 30*time.Second, func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "Insufficient cpu") {
				return true
			}
		}
		return false
	})
}
