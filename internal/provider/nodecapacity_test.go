package provider

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// siteCapacity is two nodes of partition batch, one of them drained.
var siteCapacity = slurm.Capacity{
	Partitions: []string{"batch"}, Nodes: 2, Usable: 1,
	Total: slurm.Amounts{CPUs: 128, MemoryMiB: 512000, GRES: map[slurm.GRESKey]int64{
		{Name: "gpu", Type: "a100"}: 8, {Name: "gpu", Type: "mi250x"}: 4, {Name: "shard"}: 16, {Name: "mps"}: 400}},
	Available: slurm.Amounts{CPUs: 64, MemoryMiB: 256000, GRES: map[slurm.GRESKey]int64{
		{Name: "gpu", Type: "a100"}: 4, {Name: "shard"}: 8}},
}

func quantities(l corev1.ResourceList) map[corev1.ResourceName]string {
	out := map[corev1.ResourceName]string{}
	for k, v := range l {
		out[k] = v.String()
	}
	return out
}

func sameQuantities(t *testing.T, what string, got corev1.ResourceList, want map[corev1.ResourceName]string) {
	t.Helper()
	g := quantities(got)
	if len(g) != len(want) {
		t.Errorf("%s = %v; want %v", what, g, want)
		return
	}
	for k, v := range want {
		have, ok := got[k]
		if q, err := resource.ParseQuantity(v); err != nil || !ok || have.Cmp(q) != 0 {
			t.Errorf("%s = %v; want %v", what, g, want)
			return
		}
	}
}

func TestNodeCapacity(t *testing.T) {
	for _, tc := range []struct {
		name            string
		node            config.Node
		capacity, alloc map[corev1.ResourceName]string
	}{
		{"from the site", config.Node{ExtendedResources: map[string]string{"shard": "example.com/shard"}},
			map[corev1.ResourceName]string{"cpu": "128", "memory": "512000Mi", "pods": "1000",
				"nvidia.com/gpu": "8", "amd.com/gpu": "4", "example.com/shard": "16"},
			map[corev1.ResourceName]string{"cpu": "64", "memory": "256000Mi", "pods": "1000",
				"nvidia.com/gpu": "4", "amd.com/gpu": "0", "example.com/shard": "8"}},
		{"all GPUs as amd.com/gpu", config.Node{GPUResource: config.GPUResourceAMD},
			map[corev1.ResourceName]string{"cpu": "128", "memory": "512000Mi", "pods": "1000", "amd.com/gpu": "12"},
			map[corev1.ResourceName]string{"cpu": "64", "memory": "256000Mi", "pods": "1000", "amd.com/gpu": "4"}},
		{"configured amounts replace the site's", config.Node{CPU: "10", Memory: "1Gi", GPUs: "1"},
			map[corev1.ResourceName]string{"cpu": "10", "memory": "1Gi", "pods": "1000", "nvidia.com/gpu": "1"},
			map[corev1.ResourceName]string{"cpu": "10", "memory": "1Gi", "pods": "1000", "nvidia.com/gpu": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node
			n.Default()
			c, err := NodeCapacity(siteCapacity, n)
			if err != nil {
				t.Fatal(err)
			}
			sameQuantities(t, "capacity", c.Capacity, tc.capacity)
			sameQuantities(t, "allocatable", c.Allocatable, tc.alloc)
			if c.Message != "sinfo: 1 of 2 nodes of partition batch take jobs" {
				t.Errorf("message %q", c.Message)
			}
		})
	}
	withEmpty := siteCapacity
	withEmpty.Empty = []string{"gpu"}
	c, err := NodeCapacity(withEmpty, config.Node{})
	if err != nil || c.Message != "sinfo: 1 of 2 nodes of partition batch take jobs; no node in partition gpu" {
		t.Errorf("message %q, %v; want the empty partition named", c.Message, err)
	}
}

func TestGPUResource(t *testing.T) {
	for _, tc := range []struct{ configured, typ, want string }{
		{"", "", "nvidia.com/gpu"}, {"", "a100", "nvidia.com/gpu"}, {"", "mi250x", "amd.com/gpu"},
		{"", "MI300A", "amd.com/gpu"}, {"", "instinct", "amd.com/gpu"}, {"", "gfx90a", "amd.com/gpu"},
		{"", "mig", "nvidia.com/gpu"}, {"amd.com/gpu", "a100", "amd.com/gpu"}, {"nvidia.com/gpu", "mi250", "nvidia.com/gpu"},
	} {
		if got := GPUResource(tc.configured, tc.typ); string(got) != tc.want {
			t.Errorf("GPUResource(%q, %q) = %s; want %s", tc.configured, tc.typ, got, tc.want)
		}
	}
}

// The node status pushed to the node controller carries the capacity read
// from the site; a failed read keeps it, turns SiteCapacity False and pushes
// that once; the next read that succeeds brings the new figures.
func TestNodeStatusPushesCapacity(t *testing.T) {
	n := config.Node{}
	n.Default()
	node, err := NewNode("hpc", n, 10250, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	answer, fail := siteCapacity, error(nil)
	s := &NodeStatus{Node: node, Capacity: func(context.Context) (Capacity, error) {
		mu.Lock()
		defer mu.Unlock()
		if fail != nil {
			return Capacity{}, fail
		}
		return NodeCapacity(answer, n)
	}}
	var pushed []*corev1.Node
	s.NotifyNodeStatus(context.Background(), func(n *corev1.Node) { pushed = append(pushed, n) })
	ctx := context.Background()
	s.RefreshCapacity(ctx)
	s.RefreshCapacity(ctx) // the same: nothing pushed
	mu.Lock()
	fail = errors.New("sinfo: exit status 1: Unable to contact slurm controller")
	mu.Unlock()
	s.RefreshCapacity(ctx)
	s.RefreshCapacity(ctx) // the same failure: nothing pushed
	mu.Lock()
	fail = nil
	answer.Usable, answer.Available = 0, slurm.Amounts{}
	mu.Unlock()
	s.RefreshCapacity(ctx)
	if len(pushed) != 3 {
		t.Fatalf("pushed %d times; want 3 (read, failed, drained)", len(pushed))
	}
	if c := pushed[0].Status.Allocatable[corev1.ResourceCPU]; c.Value() != 64 || condition(pushed[0], ConditionSiteCapacity).Status != corev1.ConditionTrue {
		t.Errorf("first push: allocatable %v, %+v; want 64 CPUs, SiteCapacity True", quantities(pushed[0].Status.Allocatable), condition(pushed[0], ConditionSiteCapacity))
	}
	failed := condition(pushed[1], ConditionSiteCapacity)
	if c := pushed[1].Status.Allocatable[corev1.ResourceCPU]; c.Value() != 64 || failed.Status != corev1.ConditionFalse || !strings.Contains(failed.Message, "slurm controller") {
		t.Errorf("failed read: allocatable %v, %+v; want the last 64 CPUs kept, SiteCapacity False with the error", quantities(pushed[1].Status.Allocatable), failed)
	}
	if c, total := pushed[2].Status.Allocatable[corev1.ResourceCPU], pushed[2].Status.Capacity[corev1.ResourceCPU]; c.Value() != 0 || total.Value() != 128 {
		t.Errorf("all drained: allocatable CPU %s, capacity %s; want 0 of 128", c.String(), total.String())
	}
}

// Run reads the capacity at once when it was never read, and again every
// CapacityInterval.
func TestNodeStatusRunReadsCapacity(t *testing.T) {
	n := config.Node{}
	n.Default()
	node, err := NewNode("hpc", n, 10250, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	reads := make(chan struct{}, 16)
	s := &NodeStatus{Node: node, Interval: time.Hour, CapacityInterval: 20 * time.Millisecond,
		Capacity: func(context.Context) (Capacity, error) {
			reads <- struct{}{}
			return NodeCapacity(siteCapacity, n)
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	for range 3 {
		select {
		case <-reads:
		case <-time.After(10 * time.Second):
			t.Fatal("capacity not read again")
		}
	}
	cancel()
	<-done
}

// A node whose configuration sets every amount reads nothing and says so.
func TestConfiguredCapacityCondition(t *testing.T) {
	n := config.Node{CPU: "16", Memory: "64Gi", GPUs: "0"}
	n.Default()
	node, err := NewNode("hpc", n, 10250, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := condition(node, ConditionSiteCapacity)
	if cpu := node.Status.Allocatable[corev1.ResourceCPU]; c.Status != corev1.ConditionTrue || c.Reason != "Configured" || cpu.Value() != 16 {
		t.Errorf("SiteCapacity %+v, CPU %s; want True, Configured, 16", c, cpu.String())
	}
}
