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
	parallel(t)
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
	parallel(t)
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

// TestLivenessProbeRestartsTheContainer: a pod (restartPolicy Always)
// whose liveness probe (exec, in the image) starts failing 5 s after its
// container starts has its container killed and run again by its job: the
// pod shows restartCount 1 or more with the killed run as its last state,
// the kubelet's Killing Event, and its container running again.
func TestLivenessProbeRestartsTheContainer(t *testing.T) {
	parallel(t)
	e := newProbesEnv(t)
	pod := e.pod("live", "rm -f /mnt/sick; echo run; sleep 5; touch /mnt/sick; sleep 600")
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	grace := int64(5)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/mnt"}}
	c.LivenessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "test ! -e /mnt/sick"}}},
		PeriodSeconds: 1, FailureThreshold: 2, TimeoutSeconds: 5,
	}
	pod = e.create(pod)
	running := e.waitPod("live", "Running", 90*time.Second, phaseIs(corev1.PodRunning))
	first := running.Status.ContainerStatuses[0].State.Running
	if first == nil {
		t.Fatalf("the pod is Running, its container %+v; want it running", running.Status.ContainerStatuses[0].State)
	}
	restarted := e.waitPod("live", "restartCount 1 and running again", 90*time.Second, func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil && cs.State.Running != nil &&
			!cs.State.Running.StartedAt.Before(&cs.LastTerminationState.Terminated.FinishedAt)
	})
	seen := time.Now()
	cs := restarted.Status.ContainerStatuses[0]
	last := cs.LastTerminationState.Terminated
	failing := first.StartedAt.Add(5 * time.Second)
	t.Logf("container started %v; probe failing from about %v; killed run ended %v (%v after), exit %d %s %q; running again since %v; restartCount %d seen %v after the probe began failing",
		first.StartedAt.Time, failing, last.FinishedAt.Time, last.FinishedAt.Sub(failing), last.ExitCode, last.Reason, last.Message,
		cs.State.Running.StartedAt.Time, cs.RestartCount, seen.Sub(failing).Round(time.Second))
	if last.ExitCode == 0 || last.Message != "killed by its failing liveness probe" {
		t.Errorf("last state %+v; want a non-zero exit, killed by its liveness probe", last)
	}
	if d := last.FinishedAt.Sub(failing); d < 0 || d > 30*time.Second {
		t.Errorf("the killed run ended %v after the probe began failing; want within the probe's 2 failures and the 5 s grace", d)
	}
	e.waitEvent(pod, "Killing: Container main failed liveness probe, will be restarted")
	e.waitEvent(pod, "Unhealthy: Liveness probe of container main failed")
	log := path.Join(e.rig.Get(t, "RIG_DATA_ROOT"), e.ns+"-"+string(pod.UID), "main.log")
	out, err := e.site.Run(context.Background(), nil, "cat", log)
	if err != nil {
		t.Fatalf("cat %s: %v", log, err)
	}
	if n := strings.Count(string(out), " run\n"); n < 2 {
		t.Errorf("the container ran %d times; want 2 or more:\n%s", n, out)
	}
}

// TestPostStartHookRuns: a container's postStart hook (exec, in the
// image) runs in the job right after the container starts: the file it
// writes into the pod's volume is seen by the container.
func TestPostStartHookRuns(t *testing.T) {
	parallel(t)
	e := newProbesEnv(t)
	pod := e.pod("post-start", "while [ ! -e /mnt/hooked ]; do sleep 0.2; done; echo saw the hook; sleep 600")
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/mnt"}}
	c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"sh", "-c", "echo hi > /mnt/hooked"},
	}}}
	pod = e.create(pod)
	e.waitPod("post-start", "Running", 90*time.Second, phaseIs(corev1.PodRunning))
	dir := path.Join(e.rig.Get(t, "RIG_DATA_ROOT"), e.ns+"-"+string(pod.UID))
	var out []byte
	e.waitFor("the container to see the hook's file", 60*time.Second, func() bool {
		var err error
		out, err = e.site.Run(context.Background(), nil, "cat", dir+"/main.log", dir+"/volumes/data/hooked")
		return err == nil && strings.Contains(string(out), "saw the hook")
	})
	if !strings.Contains(string(out), "hi") {
		t.Errorf("main.log and the hook's file: %q; want the hook's hi", out)
	}
}

// TestLivenessProbeKillWithRestartPolicyNever: under restartPolicy Never
// the container its liveness probe killed is not run again: the pod fails,
// its container terminated with a message naming the probe, and the
// kubelet's Events say so.
func TestLivenessProbeKillWithRestartPolicyNever(t *testing.T) {
	parallel(t)
	e := newProbesEnv(t)
	pod := e.pod("live-never", "echo run; sleep 600")
	grace := int64(5)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}},
		InitialDelaySeconds: 3, PeriodSeconds: 1, FailureThreshold: 2,
	}
	pod = e.create(pod)
	failed := e.waitPod("live-never", "Failed", 120*time.Second, phaseIs(corev1.PodFailed))
	cs := failed.Status.ContainerStatuses[0]
	term := cs.State.Terminated
	if term == nil || term.ExitCode == 0 || term.Message != "killed by its failing liveness probe" || cs.RestartCount != 0 {
		t.Errorf("container %+v, restartCount %d; want it terminated by its liveness probe, never restarted", cs.State, cs.RestartCount)
	}
	e.waitEvent(pod, "Killing: Container main failed liveness probe")
	for _, ev := range e.events(pod) {
		if strings.Contains(ev, "will be restarted") {
			t.Errorf("Event %q; want none saying the container will be restarted", ev)
		}
	}
}
