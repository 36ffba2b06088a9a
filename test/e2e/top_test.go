//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// usageJSON is the usage part of metrics.k8s.io's PodMetrics and
// NodeMetrics (k8s.io/metrics is not a dependency of sluice).
type usageJSON struct {
	Usage      usage            `json:"usage"`
	Containers []containerUsage `json:"containers"`
}

type containerUsage struct {
	Name  string `json:"name"`
	Usage usage  `json:"usage"`
}

type usage map[string]resource.Quantity

// nonZero: CPU and memory are above zero.
func (u usage) nonZero() bool {
	cpu, mem := u["cpu"], u["memory"]
	return !cpu.IsZero() && !mem.IsZero()
}

// metricsGet reads path of metrics.k8s.io/v1beta1 through the API server
// (the aggregation layer, then metrics-server).
func (e *env) metricsGet(path string) (usageJSON, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var u usageJSON
	body, err := e.client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1", path).DoRaw(ctx)
	if err != nil {
		return u, err
	}
	return u, json.Unmarshal(body, &u)
}

// TestTopOffloadedPod: a busy offloaded pod gets CPU and memory in
// metrics.k8s.io from Slurm's accounting of its job (sluice-vk's
// /metrics/resource, scraped by the rig's metrics-server), and so does its
// virtual node: `kubectl top pod` and `kubectl top node` show them. (The
// API server's node proxy refuses the e2e nodes' loopback address, so
// /stats/summary is left to the provider's tests.)
func TestTopOffloadedPod(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.create(e.pod("busy", "while :; do :; done"))
	e.waitPod("busy", "running", 60*time.Second, phaseIs(corev1.PodRunning))

	var pod, node usageJSON
	e.waitFor("CPU and memory of the pod and its node in metrics.k8s.io", 90*time.Second, func() bool {
		var err error
		if pod, err = e.metricsGet(fmt.Sprintf("namespaces/%s/pods/busy", e.ns)); err != nil {
			return false
		}
		if node, err = e.metricsGet("nodes/" + e.node); err != nil {
			return false
		}
		return len(pod.Containers) > 0 && pod.Containers[0].Usage.nonZero() && node.Usage.nonZero()
	})
	if len(pod.Containers) != 1 || pod.Containers[0].Name != "main" {
		t.Errorf("pod metrics %+v; want the job's usage as container main's", pod)
	}
	if cpu := pod.Containers[0].Usage["cpu"]; cpu.MilliValue() > 4000 {
		t.Errorf("pod CPU %s; want at most the node's 4 CPUs", cpu.String())
	}

	out, code := e.kubectl("top", "pod", "busy")
	if code != 0 || !topRowNonZero(out, "busy") {
		t.Errorf("kubectl top pod busy (exit %d):\n%s\nwant non-zero CPU and memory", code, out)
	}
	out, code = e.kubectl("top", "node", e.node)
	if code != 0 || !topRowNonZero(out, e.node) {
		t.Errorf("kubectl top node %s (exit %d):\n%s\nwant non-zero CPU and memory", e.node, code, out)
	}
}

// topRowNonZero: kubectl top's row for name gives CPU and memory above
// zero ("busy   412m   3Mi", or with percentages for a node).
func topRowNonZero(out, name string) bool {
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != name {
			continue
		}
		var cpu, mem resource.Quantity
		var err error
		if cpu, err = resource.ParseQuantity(f[1]); err != nil {
			return false
		}
		memField := f[2]
		if strings.HasSuffix(memField, "%") && len(f) >= 4 { // node: CPU%, then memory
			memField = f[3]
		}
		if mem, err = resource.ParseQuantity(memField); err != nil {
			return false
		}
		return !cpu.IsZero() && !mem.IsZero()
	}
	return false
}
