//go:build e2e && bench

package e2e

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A benchmark, not a test: built only with -tags 'e2e bench' (see
// bench/RESULTS.md, "Leader takeover"), so that the e2e suite in CI has
// nothing to skip.

// TestHelmTakeoverTimes measures the takeover of a killed leader,
// SLUICE_E2E_TAKEOVERS times (about 15 s a kill): two replicas with the chart's default durations (lease 15s, renew
// 10s, retry 2s); the leader's container is killed with SIGKILL and its pod
// deleted (so that the Deployment's new pod is a standby without a restart
// back-off); it logs, for each kill and as p50/p99, the time until the
// Lease has another holder and until the node's InternalIP is the new
// leader's pod IP (its node controller running).
func TestHelmTakeoverTimes(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_E2E_TAKEOVERS"))
	if n <= 0 {
		t.Skip("a benchmark: set SLUICE_E2E_TAKEOVERS to the number of kills")
	}
	r := installChart(t, true, "replicas: 2\nleaderElection:\n  enabled: true\n")
	e := r.e
	ctx := context.Background()
	holder := func() string {
		l, err := e.client.CoordinationV1().Leases(r.ns).Get(ctx, "sluice-vk-"+e.node, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	internalIP := func() string {
		node, err := e.client.CoreV1().Nodes().Get(ctx, e.node, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				return a.Address
			}
		}
		return ""
	}
	var leased, serving []time.Duration
	for i := range n {
		var leader corev1.Pod
		e.waitFor("two replicas running and a leader", 120*time.Second, func() bool {
			running := 0
			h := holder()
			for _, p := range r.vkPods() {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
					running++
					if strings.HasPrefix(h, p.Name+"_") {
						leader = p
					}
				}
			}
			return running == 2 && leader.Name != "" && internalIP() == leader.Status.PodIP
		})
		old := holder()
		container := strings.TrimPrefix(leader.Status.ContainerStatuses[0].ContainerID, "containerd://")
		start := time.Now()
		kill := exec.Command("ctr", "--address", e.rig.Get(t, "RIG_K8S_CONTAINERD_SOCK"), "--namespace", "k8s.io",
			"tasks", "kill", "--signal", "SIGKILL", container)
		if out, err := kill.CombinedOutput(); err != nil {
			t.Fatalf("kill the leader's container: %v\n%s", err, out)
		}
		zero := int64(0)
		_ = e.client.CoreV1().Pods(r.ns).Delete(ctx, leader.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		e.waitFor("a new leader", 60*time.Second, func() bool { h := holder(); return h != "" && h != old })
		leased = append(leased, time.Since(start))
		e.waitFor("the node at the new leader's address", 60*time.Second, func() bool {
			ip := internalIP()
			return ip != "" && ip != leader.Status.PodIP
		})
		serving = append(serving, time.Since(start))
		t.Logf("kill %d: Lease taken after %s, node at the new leader's address after %s",
			i+1, leased[i].Round(100*time.Millisecond), serving[i].Round(100*time.Millisecond))
	}
	t.Logf("%d kills: Lease taken p50 %s p99 %s; node served by the new leader p50 %s p99 %s", n,
		quantile(leased, 0.5), quantile(leased, 0.99), quantile(serving, 0.5), quantile(serving, 0.99))
}
