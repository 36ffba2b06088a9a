//go:build e2e

package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	corev1 "k8s.io/api/core/v1"
)

// TestNamedPipeJobOutDoesNotWedgeTheNode runs a pod whose pre-exec replaces
// job.out with a named pipe and fails, so that the virtual kubelet reads
// job.out for the reason. OpenSSH's sftp-server serves one request at a
// time: an SFTP open of the pipe would stop every later file operation of
// the node (submissions, logs, clean-up). The next pod must still be
// submitted, run and have its logs read.
func TestNamedPipeJobOutDoesNotWedgeTheNode(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	bad := e.pod("fifo-out", "echo never runs")
	bad.Annotations = map[string]string{jobscript.AnnotationPreExec: "rm -f job.out && mkfifo job.out && false"}
	pod := e.create(bad)
	failed := e.waitPod("fifo-out", "Failed", 90*time.Second, phaseIs(corev1.PodFailed))
	e.waitEvent(pod, "Failed: Slurm job "+jobID(failed)+" ended FAILED")

	e.create(e.pod("after-fifo", "echo still served"))
	e.waitPod("after-fifo", "Succeeded", 90*time.Second, phaseIs(corev1.PodSucceeded))
	if got := e.logs("after-fifo", corev1.PodLogOptions{}); !slices.Equal(got, []string{"still served"}) {
		t.Errorf("logs of the next pod: got %q; want [still served]", got)
	}
}
