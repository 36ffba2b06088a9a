//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTimeLimitFailsWithDeadlineExceeded runs a pod whose job has Slurm's
// shortest time limit, one minute (--time has minute granularity and rounds
// seconds up), and sleeps past it: slurmctld checks limits every 30s, so
// the job ends TIMEOUT 60 to 90s after it started.
func TestTimeLimitFailsWithDeadlineExceeded(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	p := e.pod("overtime", "echo started; sleep 600")
	p.Annotations = map[string]string{jobscript.AnnotationFlags: "--time=1"}
	pod := e.create(p)
	got := e.waitPod("overtime", "Failed", 150*time.Second, phaseIs(corev1.PodFailed))
	id := jobID(got)
	if got.Status.Reason != slurm.ReasonDeadlineExceeded {
		t.Errorf("pod reason: got %q; want %q", got.Status.Reason, slurm.ReasonDeadlineExceeded)
	}
	if !strings.Contains(got.Status.Message, "TIMEOUT") {
		t.Errorf("pod message: got %q; want it to name TIMEOUT", got.Status.Message)
	}
	term := got.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.Reason != slurm.ReasonDeadlineExceeded || term.ExitCode == 0 {
		t.Errorf("got container state %+v; want terminated, %s, non-zero exit code", got.Status.ContainerStatuses[0].State, slurm.ReasonDeadlineExceeded)
	}
	if jobs := e.squeue(string(pod.UID)); len(jobs) != 1 || jobs[0] != id+"_TIMEOUT" {
		t.Errorf("squeue as alice: got %q; want [%s_TIMEOUT]", jobs, id)
	}
	e.waitEvent(pod, "Failed: Slurm job "+id+" ended TIMEOUT ("+slurm.ReasonDeadlineExceeded+")")
	t.Logf("events: %q", e.events(pod))
}

// An OUT_OF_MEMORY end has no e2e test: Slurm reports it only when
// task/cgroup saw a step's cgroup kill a process for memory, and the rig's
// Slurm runs TaskPlugin=task/none. The provider's mapping of it is unit-tested
// (internal/provider TestJobLimitOutcomes).

// TestSiteOutageKeepsPodsAndRecovers cuts the virtual kubelet off the login
// node while a pod runs: the node says so, the pod keeps its last status,
// and once the login node is back the node and the pod recover without a
// restart of sluice-vk.
func TestSiteOutageKeepsPodsAndRecovers(t *testing.T) {
	e := newEnv(t)
	pod := e.create(e.pod("patient", "echo started; sleep 45; echo finished"))
	e.waitPod("patient", "its container running", 60*time.Second, containerRunning)

	start := time.Now()
	restore := e.cutLogin()
	e.waitFor("SiteReachable False", 60*time.Second, func() bool {
		return e.siteReachable() == corev1.ConditionFalse
	})
	t.Logf("SiteReachable False %s after the cut", time.Since(start).Round(time.Second))
	// the outage lasts at least 20s; the pod stays as it was all along
	for time.Since(start) < 20*time.Second {
		p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), "patient", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get pod: %v", err)
		}
		if p.Status.Phase != corev1.PodRunning || !containerRunning(p) {
			t.Fatalf("during the outage: got phase %s, containers %+v; want Running, as before", p.Status.Phase, p.Status.ContainerStatuses)
		}
		if s := e.siteReachable(); s != corev1.ConditionFalse {
			t.Fatalf("during the outage: got SiteReachable %s; want False", s)
		}
		time.Sleep(time.Second)
	}
	restore()
	e.waitFor("SiteReachable True", 60*time.Second, func() bool {
		return e.siteReachable() == corev1.ConditionTrue
	})
	t.Logf("SiteReachable True again %s after the cut", time.Since(start).Round(time.Second))
	done := e.waitPod("patient", "Succeeded", 90*time.Second, phaseIs(corev1.PodSucceeded))
	if term := done.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("got container state %+v; want terminated with exit code 0", done.Status.ContainerStatuses[0].State)
	}
	if got := e.logs("patient", corev1.PodLogOptions{}); strings.Join(got, "|") != "started|finished" {
		t.Errorf("logs: got %q; want [started finished]", got)
	}
	e.waitEvent(pod, "Succeeded: Slurm job "+jobID(done)+" completed")
	t.Logf("events: %q", e.events(pod))
}

// siteReachable is the status of the test node's SiteReachable condition.
func (e *env) siteReachable() corev1.ConditionStatus {
	n, err := e.client.CoreV1().Nodes().Get(context.Background(), e.node, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range n.Status.Conditions {
		if c.Type == "SiteReachable" {
			return c.Status
		}
	}
	return ""
}
