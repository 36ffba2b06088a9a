package hostnode

import (
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func exitedWith(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
}

func backingOff() corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
}

func TestPodPhase(t *testing.T) {
	never, always, onFailure := corev1.RestartPolicyNever, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure
	cv := func(state, last corev1.ContainerState) containerView { return containerView{State: state, Last: last} }
	none := corev1.ContainerState{}
	for _, tc := range []struct {
		name   string
		policy corev1.RestartPolicy
		v      podView
		want   corev1.PodPhase
	}{
		{"refused", always, podView{Failure: &podFailure{}, InitDone: true}, corev1.PodFailed},
		{"init running", always, podView{Inits: []containerView{cv(running(), none)}}, corev1.PodPending},
		{"init failed, Never", never, podView{Inits: []containerView{cv(exitedWith(1), none)}}, corev1.PodFailed},
		{"init failed, OnFailure retries", onFailure, podView{Inits: []containerView{cv(exitedWith(1), none)}}, corev1.PodPending},
		{"not started", always, podView{InitDone: true, Ctrs: []containerView{cv(none, none)}}, corev1.PodPending},
		{"one of two started", always, podView{InitDone: true, Ctrs: []containerView{cv(running(), none), cv(none, none)}}, corev1.PodPending},
		{"running", always, podView{InitDone: true, Ctrs: []containerView{cv(running(), none), cv(running(), none)}}, corev1.PodRunning},
		{"crash looping", always, podView{InitDone: true, Ctrs: []containerView{cv(backingOff(), exitedWith(2))}}, corev1.PodRunning},
		{"exited 0, Always restarts", always, podView{InitDone: true, Ctrs: []containerView{cv(exitedWith(0), none)}}, corev1.PodRunning},
		{"exited 0, Never", never, podView{InitDone: true, Ctrs: []containerView{cv(exitedWith(0), none)}}, corev1.PodSucceeded},
		{"exited 1, Never", never, podView{InitDone: true, Ctrs: []containerView{cv(exitedWith(0), none), cv(exitedWith(1), none)}}, corev1.PodFailed},
		{"exited 1, OnFailure restarts", onFailure, podView{InitDone: true, Ctrs: []containerView{cv(exitedWith(1), none)}}, corev1.PodRunning},
		{"one left running, Never", never, podView{InitDone: true, Ctrs: []containerView{cv(exitedWith(1), none), cv(running(), none)}}, corev1.PodRunning},
		{"deleted, all 0", always, podView{InitDone: true, Deleting: true, Ctrs: []containerView{cv(exitedWith(0), none)}}, corev1.PodSucceeded},
		{"deleted, SIGTERM", always, podView{InitDone: true, Deleting: true, Ctrs: []containerView{cv(exitedWith(143), none)}}, corev1.PodFailed},
		{"deleted, still stopping", always, podView{InitDone: true, Deleting: true, Ctrs: []containerView{cv(running(), none)}}, corev1.PodRunning},
		{"deleted before start", always, podView{Deleting: true, Ctrs: []containerView{cv(none, none)}}, corev1.PodFailed},
	} {
		if got := podPhase(tc.policy, tc.v); got != tc.want {
			t.Errorf("%s: phase %s; want %s", tc.name, got, tc.want)
		}
	}
}

func TestBuildPodStatus(t *testing.T) {
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "i"}},
			Containers:     []corev1.Container{{Name: "a", Image: "img-a"}, {Name: "b", Image: "img-b"}},
		},
		Status: corev1.PodStatus{QOSClass: corev1.PodQOSBestEffort, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := podView{
		PodIP: netip.MustParseAddr("127.80.1.2"), HostIP: netip.MustParseAddr("127.0.0.1"), StartTime: &t0, Sandbox: true,
		Inits: []containerView{{Name: "init", State: running()}},
		Ctrs:  []containerView{{Name: "a"}, {Name: "b"}},
	}
	st := buildPodStatus(pod, v, nil, t0)
	if st.Phase != corev1.PodPending || st.PodIP != "127.80.1.2" || st.PodIPs[0].IP != "127.80.1.2" || st.HostIP != "127.0.0.1" || st.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("pending status: %+v", st)
	}
	if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
		t.Errorf("container a during init: %+v", st.ContainerStatuses[0].State)
	}
	if got := conditions(st); got != "PodScheduled=True PodReadyToStartContainers=True Initialized=False ContainersReady=False Ready=False" {
		t.Errorf("conditions during init: %s", got)
	}

	v.InitDone = true
	v.Inits[0].State = exitedWith(0)
	v.Ctrs[0].State, v.Ctrs[1].State = running(), running()
	v.Ctrs[1].Restarts = 2
	t1 := metav1.NewTime(t0.Add(time.Minute))
	st2 := buildPodStatus(pod, v, st.Conditions, t1)
	if st2.Phase != corev1.PodRunning || !st2.ContainerStatuses[1].Ready || st2.ContainerStatuses[1].RestartCount != 2 || !*st2.ContainerStatuses[0].Started {
		t.Errorf("running status: %+v", st2)
	}
	if got := conditions(st2); got != "PodScheduled=True PodReadyToStartContainers=True Initialized=True ContainersReady=True Ready=True" {
		t.Errorf("conditions when running: %s", got)
	}
	for _, c := range st2.Conditions {
		want := t1
		if c.Type == corev1.PodReadyToStartContainers {
			want = t0 // unchanged, keeps its time
		}
		if c.Type != corev1.PodScheduled && !c.LastTransitionTime.Equal(&want) {
			t.Errorf("condition %s changed at %v; want %v", c.Type, c.LastTransitionTime, want)
		}
	}
	if !podReady(v) {
		t.Error("podReady false with every container running")
	}
	v.Deleting = true
	if podReady(v) {
		t.Error("podReady true while the pod is deleted")
	}
}

func TestContainerStatusWaitingReasons(t *testing.T) {
	c := corev1.Container{Name: "a"}
	if w := containerStatus(c, containerView{}, podView{MountErr: "configMap x: not found"}, "ContainerCreating").State.Waiting; w.Reason != "ContainerCreating" || w.Message != "configMap x: not found" {
		t.Errorf("waiting on volumes: %+v", w)
	}
	if w := containerStatus(c, containerView{}, podView{Failure: &podFailure{Message: "no PVCs"}}, "ContainerCreating").State.Waiting; w.Reason != "CreateContainerConfigError" || w.Message != "no PVCs" {
		t.Errorf("refused pod: %+v", w)
	}
}

func conditions(st corev1.PodStatus) string {
	s := ""
	for i, c := range st.Conditions {
		if i > 0 {
			s += " "
		}
		s += string(c.Type) + "=" + string(c.Status)
	}
	return s
}
