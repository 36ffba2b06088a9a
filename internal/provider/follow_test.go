package provider

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A batch host with '_' (Slurm accepts gpu_01) reaches the node ConfigMap
// of the real shadow manager: the slurm package and the tunnel agree on
// what a node name is.
func TestUnderscoreNodeReachesShadow(t *testing.T) {
	pod := testPod("gpu")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	h := newHarness(t, realShadows("", false), pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	h.jobs.setState(string(pod.UID), slurm.Status{State: slurm.StateRunning, BatchHost: "gpu_01",
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}})
	ns, name := shadow.Namespace(pod, ""), shadow.Name(pod)
	var data map[string]string
	h.waitFor("node gpu_01 in the shadow's node ConfigMap", func() bool {
		cm, err := h.client.CoreV1().ConfigMaps(ns).Get(context.Background(), shadow.NodeConfigMap(name), metav1.GetOptions{})
		if err != nil {
			return false
		}
		data = cm.Data
		return cm.Data[shadow.NodeKey] == "gpu_01"
	})
	if data[shadow.JobKey] != "101" {
		t.Errorf("got node ConfigMap data %v; want job 101", data)
	}
}

// gatedShadows is a shadow manager whose SetNode for node "old" blocks
// until the gate opens or its context ends, and then writes unless its
// context ended, as an API call cut short does.
type gatedShadows struct {
	fakeShadows
	gate chan struct{}

	mu      sync.Mutex
	entered chan string // each SetNode call, as it starts
	calls   int
	returns int
	written []string
}

func (g *gatedShadows) SetNode(ctx context.Context, _ *corev1.Pod, node, _, _ string) error {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	g.entered <- node
	defer func() {
		g.mu.Lock()
		g.returns++
		g.mu.Unlock()
	}()
	if node == "old" {
		select {
		case <-g.gate:
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.written = append(g.written, node)
	return nil
}

// A node write still in flight for the node before a requeue is cancelled,
// and never lands after the write of the newer node.
func TestStaleNodeNeverOverwritesNewer(t *testing.T) {
	pod := testPod("requeued")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	g := &gatedShadows{gate: make(chan struct{}), entered: make(chan string, 10)}
	h := newHarness(t, func(c *Config) { c.Shadows = g }, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	st := h.p.lookup("ns", "requeued")

	h.p.followNode(st, "old")
	if got := <-g.entered; got != "old" {
		t.Fatalf("got SetNode(%q) first; want old", got)
	}
	h.p.followNode(st, "new") // the job was requeued to another node
	h.waitFor("the new node written", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return slices.Contains(g.written, "new")
	})
	close(g.gate) // the old write, if still in flight, lands now
	h.waitFor("every SetNode call to return", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.calls == g.returns
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if last := g.written[len(g.written)-1]; last != "new" {
		t.Errorf("got node writes %q; want the last to be new", g.written)
	}
}
