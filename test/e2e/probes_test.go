//go:build e2e

package e2e

import (
	"context"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newProbesEnv is newEnv on a site that runs probes (Site.EnableProbes).
func newProbesEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, "", func(e *env) {
		cfg, err := os.ReadFile(e.cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		with := strings.Replace(string(cfg), "\nSite:\n", "\nSite:\n  EnableProbes: true\n", 1)
		if with == string(cfg) {
			t.Fatal("no Site: in the configuration")
		}
		if err := os.WriteFile(e.cfgFile, []byte(with), 0o600); err != nil {
			t.Fatal(err)
		}
	})
}

// podCondition is the status of the pod's condition typ.
func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestReadinessProbeMakesThePodReady: a readiness probe (exec, run in the
// job on the node, in the container's image) that passes 5 s after its
// container starts makes the pod Ready then, and not before.
func TestReadinessProbeMakesThePodReady(t *testing.T) {
	e := newProbesEnv(t)
	pod := e.pod("ready-late", "sleep 5; touch /mnt/ready; echo ready; sleep 600")
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/mnt"}}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/mnt/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}
	pod = e.create(pod)

	var early []string
	running := e.waitPod("ready-late", "Running", 90*time.Second, phaseIs(corev1.PodRunning))
	state := running.Status.ContainerStatuses[0].State
	if state.Running == nil {
		t.Fatalf("the pod is Running, its container %+v; want it running", state)
	}
	started := state.Running.StartedAt.Time
	ready := e.waitPod("ready-late", "Ready", 60*time.Second, func(p *corev1.Pod) bool {
		c := podCondition(p, corev1.PodReady)
		isReady := c != nil && c.Status == corev1.ConditionTrue
		if isReady && time.Since(started) < 5*time.Second {
			early = append(early, time.Since(started).String())
		}
		return isReady
	})
	if len(early) > 0 {
		t.Errorf("Ready %v after the container started; want 5 s or more", early)
	}
	cond := podCondition(ready, corev1.PodReady)
	after := cond.LastTransitionTime.Sub(started)
	t.Logf("container started %v, Ready at %v (%v later)", started, cond.LastTransitionTime.Time, after)
	if after < 5*time.Second || after > 20*time.Second {
		t.Errorf("the pod became Ready %v after its container started; want about 5 s", after)
	}
	if !ready.Status.ContainerStatuses[0].Ready {
		t.Errorf("the pod is Ready but its container is not")
	}
	e.waitEvent(pod, "ProbeReady: Readiness probe of container main passed")
}

// TestPreStopHookRunsOnDelete: a deleted pod's job runs its container's
// preStop hook (exec, in the container's image) before the container is
// stopped and the job ends; the hook's file appears in the pod's volume
// before the job directory goes.
func TestPreStopHookRunsOnDelete(t *testing.T) {
	e := newProbesEnv(t)
	pod := e.pod("pre-stop", "echo started; sleep 600")
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/mnt"}}
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"sh", "-c", "echo bye > /mnt/prestop; sleep 3"},
	}}}
	pod = e.create(pod)
	e.waitPod("pre-stop", "Running", 90*time.Second, phaseIs(corev1.PodRunning))
	hooked := path.Join(e.rig.Get(t, "RIG_DATA_ROOT"), e.ns+"-"+string(pod.UID), "volumes/data/prestop")
	if err := e.client.CoreV1().Pods(e.ns).Delete(context.Background(), "pre-stop", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	var got string
	e.waitFor("the preStop hook's file", 30*time.Second, func() bool {
		out, err := e.site.Run(context.Background(), nil, "cat", hooked)
		got = strings.TrimSpace(string(out))
		return err == nil && got != ""
	})
	if got != "bye" {
		t.Errorf("%s = %q; want bye", hooked, got)
	}
	e.waitEvent(pod, "PreStopHook: running the containers' preStop hooks")
	e.waitFor("the pod to be gone", 60*time.Second, func() bool {
		_, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), "pre-stop", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
