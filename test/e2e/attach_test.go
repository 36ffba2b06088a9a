//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestAttachFollowsTheOutput: kubectl attach shows what the container
// writes from the moment it attached until the container ends; attach -i
// is refused, saying the container has no stdin.
func TestAttachFollowsTheOutput(t *testing.T) {
	parallel(t)
	e := newStreamEnv(t)
	e.create(e.pod("att", "echo started; sleep 10; i=0; while [ $i -lt 4 ]; do echo tick-$i; i=$((i+1)); sleep 1; done\n"))
	e.waitPod("att", "running", 120*time.Second, phaseIs(corev1.PodRunning))
	e.waitFor("the container's first line", 30*time.Second, func() bool {
		return len(e.logs("att", corev1.PodLogOptions{})) > 0
	})

	out, code := e.kubectl("attach", "-i", "att")
	if code == 0 || !strings.Contains(out, "no stdin to attach to") {
		t.Errorf("kubectl attach -i: exit %d, %q; want refused, saying the container has no stdin", code, out)
	}

	start := time.Now()
	out, code = e.kubectl("attach", "att")
	t.Logf("kubectl attach ended after %v: exit %d\n%s", time.Since(start).Round(100*time.Millisecond), code, out)
	if code != 0 || !strings.Contains(out, "tick-3") {
		t.Errorf("kubectl attach: exit %d, %q; want the container's output to its end", code, out)
	}
	if strings.Contains(out, "started") {
		t.Errorf("kubectl attach replayed what the container wrote before it attached: %q", out)
	}
}
