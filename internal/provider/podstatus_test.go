package provider

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// state is a container state in short: "waiting:<reason>", "running" or
// "terminated:<code>:<reason>".
func state(cs corev1.ContainerStatus) string {
	switch s := cs.State; {
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return "terminated:" + strconv.Itoa(int(s.Terminated.ExitCode)) + ":" + s.Terminated.Reason
	}
	return "none"
}

func TestJobStatus(t *testing.T) {
	pod := testPod("p")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "img"}}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started := map[string]slurm.ContainerStatus{"init": {Started: true, Finished: true}, "main": {Started: true}}
	tests := []struct {
		name       string
		js         slurm.Status
		phase      corev1.PodPhase
		reason     string
		init, main string
		ready      corev1.ConditionStatus
		inited     corev1.ConditionStatus
	}{
		{"pending", slurm.Status{JobID: "1", State: slurm.StatePending, Reason: "Resources"},
			corev1.PodPending, "", "waiting:SlurmPending", "waiting:SlurmPending", "False", "False"},
		// a kubelet's pod is Pending while its init containers run
		{"job started", slurm.Status{JobID: "1", State: slurm.StateRunning},
			corev1.PodPending, "", "waiting:PodInitializing", "waiting:PodInitializing", "False", "False"},
		{"init running", slurm.Status{JobID: "1", State: slurm.StateRunning, Containers: map[string]slurm.ContainerStatus{"init": {Started: true}}},
			corev1.PodPending, "", "running", "waiting:PodInitializing", "False", "False"},
		{"init done", slurm.Status{JobID: "1", State: slurm.StateRunning, Containers: map[string]slurm.ContainerStatus{"init": {Started: true, Finished: true}}},
			corev1.PodPending, "", "terminated:0:Completed", "waiting:ContainerCreating", "False", "True"},
		{"running", slurm.Status{JobID: "1", State: slurm.StateRunning, Containers: started},
			corev1.PodRunning, "", "terminated:0:Completed", "running", "True", "True"},
		{"completed", slurm.Status{JobID: "1", State: slurm.StateCompleted, Containers: map[string]slurm.ContainerStatus{
			"init": {Started: true, Finished: true}, "main": {Started: true, Finished: true}}},
			corev1.PodSucceeded, "", "terminated:0:Completed", "terminated:0:Completed", "False", "True"},
		{"failed with code", slurm.Status{JobID: "1", State: slurm.StateFailed, Containers: map[string]slurm.ContainerStatus{
			"init": {Started: true, Finished: true}, "main": {Started: true, Finished: true, ExitCode: 7}}},
			corev1.PodFailed, slurm.ReasonFailed, "terminated:0:Completed", "terminated:7:Error", "False", "True"},
		{"out of memory", slurm.Status{JobID: "1", State: slurm.StateOutOfMemory, Exit: &slurm.ExitCode{Code: 0, Signal: 9}, Containers: started},
			corev1.PodFailed, slurm.ReasonOOMKilled, "terminated:0:Completed", "terminated:137:OOMKilled", "False", "True"},
		{"timeout", slurm.Status{JobID: "1", State: slurm.StateTimeout, Containers: started},
			corev1.PodFailed, slurm.ReasonDeadlineExceeded, "terminated:0:Completed", "terminated:1:DeadlineExceeded", "False", "True"},
		{"init failed", slurm.Status{JobID: "1", State: slurm.StateFailed, Containers: map[string]slurm.ContainerStatus{
			"init": {Started: true, Finished: true, ExitCode: 2}}},
			corev1.PodFailed, slurm.ReasonFailed, "terminated:2:Error", "waiting:PodInitializing", "False", "False"},
		{"cancelled while pending", slurm.Status{JobID: "1", State: slurm.StateCancelled},
			corev1.PodFailed, slurm.ReasonCancelled, "terminated:1:Cancelled", "waiting:PodInitializing", "False", "False"},
		{"requeued", slurm.Status{JobID: "1", State: slurm.StateRequeued},
			corev1.PodPending, slurm.ReasonRequeued, "waiting:SlurmPending", "waiting:SlurmPending", "False", "False"},
		{"lost", slurm.Status{JobID: "1", State: slurm.StateUnknown, Reason: "gone"},
			corev1.PodUnknown, slurm.ReasonLost, "waiting:ContainerCreating", "waiting:PodInitializing", "False", "False"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := initialStatus(pod, "10.0.0.9", now)
			got := jobStatus(pod, prev, tt.js, nil, now)
			if got.Phase != tt.phase || got.Reason != tt.reason {
				t.Errorf("got phase %s reason %q; want %s %q", got.Phase, got.Reason, tt.phase, tt.reason)
			}
			if s := state(got.InitContainerStatuses[0]); s != tt.init {
				t.Errorf("got init container %s; want %s", s, tt.init)
			}
			if s := state(got.ContainerStatuses[0]); s != tt.main {
				t.Errorf("got main container %s; want %s", s, tt.main)
			}
			conds := map[corev1.PodConditionType]corev1.ConditionStatus{}
			for _, c := range got.Conditions {
				conds[c.Type] = c.Status
			}
			if conds[corev1.PodReady] != tt.ready || conds[corev1.ContainersReady] != tt.ready ||
				conds[corev1.PodInitialized] != tt.inited || conds[corev1.PodScheduled] != corev1.ConditionTrue {
				t.Errorf("got conditions %v; want Ready %s, Initialized %s, PodScheduled True", conds, tt.ready, tt.inited)
			}
			if got.HostIP != "10.0.0.9" || got.StartTime == nil {
				t.Errorf("got hostIP %q startTime %v; want them kept", got.HostIP, got.StartTime)
			}
		})
	}
}

func TestConditionTimesKept(t *testing.T) {
	pod := testPod("p")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	js := slurm.Status{JobID: "1", State: slurm.StateRunning, Containers: map[string]slurm.ContainerStatus{"main": {Started: true}}}
	first := jobStatus(pod, initialStatus(pod, "ip", t0), js, nil, t0)
	second := jobStatus(pod, first, js, nil, t0.Add(time.Minute))
	for i := range first.Conditions {
		if !first.Conditions[i].LastTransitionTime.Equal(&second.Conditions[i].LastTransitionTime) {
			t.Errorf("condition %s: got transition time %v then %v; want it kept while unchanged",
				first.Conditions[i].Type, first.Conditions[i].LastTransitionTime, second.Conditions[i].LastTransitionTime)
		}
	}
}

// TestContainerTimes: each container shows the times its job wrote for
// it, and the job's where it wrote none.
func TestContainerTimes(t *testing.T) {
	pod := testPod("p")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "img"}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", Image: "img"})
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	js := slurm.Status{JobID: "1", State: slurm.StateRunning, StartTime: t0, Containers: map[string]slurm.ContainerStatus{
		"init": {Started: true, Finished: true, StartedAt: at(1), FinishedAt: at(6)},
		"main": {Started: true, StartedAt: at(7)},
		"side": {Started: true}, // a job of an older sluice
	}}
	got := jobStatus(pod, initialStatus(pod, "ip", t0), js, nil, at(8))
	if got.Phase != corev1.PodRunning {
		t.Errorf("got phase %s; want Running", got.Phase)
	}
	if term := got.InitContainerStatuses[0].State.Terminated; term == nil || !term.StartedAt.Time.Equal(at(1)) || !term.FinishedAt.Time.Equal(at(6)) {
		t.Errorf("got init container %+v; want terminated, started at %v and finished at %v", got.InitContainerStatuses[0].State, at(1), at(6))
	}
	for i, want := range []time.Time{at(7), t0} {
		cs := got.ContainerStatuses[i]
		if cs.State.Running == nil || !cs.State.Running.StartedAt.Time.Equal(want) {
			t.Errorf("got container %s %+v; want running since %v", cs.Name, cs.State, want)
		}
	}
}

// TestReadinessFromProbe: a running container whose readiness probe has
// not passed is not ready, and neither is its pod, which stays Running.
func TestReadinessFromProbe(t *testing.T) {
	pod := testPod("p")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	no, yes := false, true
	for _, tt := range []struct {
		name  string
		ready *bool
		want  corev1.ConditionStatus
	}{
		{"no probe", nil, corev1.ConditionTrue},
		{"probe failing", &no, corev1.ConditionFalse},
		{"probe passing", &yes, corev1.ConditionTrue},
	} {
		js := slurm.Status{JobID: "1", State: slurm.StateRunning, Containers: map[string]slurm.ContainerStatus{"main": {Started: true, Ready: tt.ready}}}
		got := jobStatus(pod, initialStatus(pod, "ip", now), js, nil, now)
		if got.Phase != corev1.PodRunning || got.ContainerStatuses[0].Ready != (tt.want == corev1.ConditionTrue) {
			t.Errorf("%s: got phase %s, container ready %v; want Running, %s", tt.name, got.Phase, got.ContainerStatuses[0].Ready, tt.want)
		}
		for _, c := range got.Conditions {
			if (c.Type == corev1.PodReady || c.Type == corev1.ContainersReady) && c.Status != tt.want {
				t.Errorf("%s: got %s %s; want %s", tt.name, c.Type, c.Status, tt.want)
			}
		}
	}
}
