package provider

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clock is a test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// renewPod is a service pod with a 2-minute limit renewed 30 s before it.
func renewPod(name string) *corev1.Pod {
	pod := testPod(name)
	pod.Annotations = map[string]string{annotations.RenewBefore: "30s"}
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	limit := int64(120)
	pod.Spec.ActiveDeadlineSeconds = &limit
	return pod
}

// running is the status of a job whose main container runs on node1
// since start, with a 2-minute limit.
func running(start time.Time) slurm.Status {
	return slurm.Status{State: slurm.StateRunning, BatchHost: "node1", StartTime: start, LimitEnd: start.Add(2 * time.Minute),
		Containers: map[string]slurm.ContainerStatus{"main": {Started: true, StartedAt: start}}}
}

func newRenewHarness(t *testing.T, pod *corev1.Pod) (*harness, *clock) {
	c := &clock{t: t0}
	h := newHarness(t, func(cfg *Config) { cfg.Now = c.Now }, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job 101")
	return h, c
}

// successorDue runs the job of uid until a successor is submitted, 20 s
// before its time limit.
func (h *harness) successorDue(c *clock, uid string) {
	h.t.Helper()
	h.jobs.setState(uid, running(t0))
	c.set(t0.Add(100 * time.Second))
	h.waitEvent("submitted Slurm job 102 (renewal 1)")
}

func (h *harness) cancelled(uid string) []slurm.JobRef {
	h.jobs.mu.Lock()
	defer h.jobs.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(h.jobs.cancels), func(r slurm.JobRef) bool { return r.UID != uid })
}

func podCondition(pod *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == typ {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func TestRenewalHandsOverBeforeTheTimeLimit(t *testing.T) {
	pod := renewPod("svc")
	h, c := newRenewHarness(t, pod)
	h.jobs.setState("uid-svc", running(t0))
	c.set(t0.Add(85 * time.Second)) // 35 s left: not yet
	h.waitFor("the pod Ready", func() bool {
		got := h.last(pod)
		return got != nil && podReady(got)
	})
	time.Sleep(50 * time.Millisecond) // polls that must not renew
	if s, _, _, _ := h.jobs.counts(); s != 1 {
		t.Fatalf("%d submissions with 35 s left; want none but the first", s)
	}

	c.set(t0.Add(91 * time.Second)) // 29 s left
	h.waitEvent("Normal SuccessorSubmitted submitted Slurm job 102 (renewal 1) to take over from Slurm job 101")
	time.Sleep(50 * time.Millisecond)
	if s, _, _, _ := h.jobs.counts(); s != 2 {
		t.Fatalf("%d submissions; want one successor only, whatever the polls", s)
	}
	h.jobs.mu.Lock()
	succ := h.jobs.lastJob
	h.jobs.mu.Unlock()
	if succ.UID != "uid-svc-r1" || succ.Resources.TimeLimit != 2*time.Minute || succ.Containers[0].Name != "main" {
		t.Fatalf("successor job %s, limit %v, containers %+v; want uid-svc-r1, the pod's job again", succ.UID, succ.Resources.TimeLimit, succ.Containers)
	}
	if got := h.last(pod); !podReady(got) {
		t.Fatalf("the pod is not Ready while its successor is pending")
	}

	h.jobs.setState("uid-svc-r1", running(t0.Add(95*time.Second)))
	h.waitEvent("Normal SuccessorReady successor Slurm job 102 (renewal 1) ready on node node1")
	h.waitEvent("Normal HandedOver handed over from Slurm job 101 to Slurm job 102 (renewal 1)")
	old := h.cancelled("uid-svc")
	if len(old) != 1 || old[0].JobID != "101" || old[0].Grace != 35*time.Second {
		t.Errorf("cancels of the old job: %+v; want job 101 with the 30 s grace period and the slack", old)
	}
	if c := h.cancelled("uid-svc-r1"); len(c) != 0 {
		t.Errorf("the successor was cancelled: %+v", c)
	}
	got := h.last(pod)
	if cond := podCondition(got, ConditionCurrentJob); cond == nil || cond.Reason != "Renewal1" || cond.Message != "Slurm job 102, after renewal 0" {
		t.Errorf("CurrentJob condition %+v; want Renewal1, Slurm job 102", cond)
	}
	if !podReady(got) || got.Status.Phase != corev1.PodRunning {
		t.Errorf("after the handover: phase %s, ready %v; want Running and Ready", got.Status.Phase, podReady(got))
	}
	rj, err := h.p.RunningJob("ns", "svc")
	if err != nil || rj.Ref.JobID != "102" {
		t.Errorf("RunningJob = %+v, %v; want job 102", rj.Ref, err)
	}

	// The successor is renewed in its turn, as renewal 2.
	c.set(t0.Add(95*time.Second + 91*time.Second))
	h.waitEvent("submitted Slurm job 103 (renewal 2) to take over from Slurm job 102")
}

func podReady(pod *corev1.Pod) bool {
	c := podCondition(pod, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

func TestRenewalRetriesAFailedSuccessor(t *testing.T) {
	pod := renewPod("flaky")
	h, c := newRenewHarness(t, pod)
	h.successorDue(c, "uid-flaky")
	h.jobs.setState("uid-flaky-r1", slurm.Status{State: slurm.StateFailed, Reason: "NonZeroExitCode"})
	h.waitEvent("Warning SuccessorFailed successor Slurm job 102 (renewal 1) ended FAILED: NonZeroExitCode; another is tried in")
	h.waitFor("the failed successor removed", func() bool {
		h.jobs.mu.Lock()
		defer h.jobs.mu.Unlock()
		return slices.ContainsFunc(h.jobs.removes, func(r slurm.JobRef) bool { return r.UID == "uid-flaky-r1" })
	})
	// the next one takes a name of its own (the failed one's would be
	// adopted), after the back-off
	c.set(t0.Add(101 * time.Second))
	h.waitEvent("submitted Slurm job 103 (renewal 2)")
	if got := h.last(pod); !podReady(got) {
		t.Errorf("the pod is not Ready while its job still runs")
	}
}

func TestRenewalSuccessorLate(t *testing.T) {
	pod := renewPod("late")
	h, c := newRenewHarness(t, pod)
	h.successorDue(c, "uid-late")
	c.set(t0.Add(121 * time.Second))
	timeout := running(t0)
	timeout.State, timeout.Reason = slurm.StateTimeout, "TimeLimit"
	h.jobs.setState("uid-late", timeout)
	h.waitEvent("Warning SuccessorLate Slurm job 101 reached its time limit before its successor ran")
	got := h.last(pod)
	if cond := podCondition(got, corev1.PodReady); got.Status.Phase != corev1.PodRunning || cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != reasonWaitingForSuccessor {
		t.Fatalf("while late: phase %s, Ready %+v; want Running, not Ready (%s)", got.Status.Phase, cond, reasonWaitingForSuccessor)
	}
	h.jobs.setState("uid-late-r1", running(t0.Add(125*time.Second)))
	h.waitEvent("HandedOver handed over from Slurm job 101 to Slurm job 102")
	h.waitFor("the pod Ready again", func() bool { return podReady(h.last(pod)) })
}

func TestRenewalDeletedDuringHandoverCancelsBoth(t *testing.T) {
	pod := renewPod("gone")
	h, c := newRenewHarness(t, pod)
	h.successorDue(c, "uid-gone")
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("both jobs removed", func() bool {
		h.jobs.mu.Lock()
		defer h.jobs.mu.Unlock()
		var uids []string
		for _, r := range h.jobs.removes {
			uids = append(uids, r.UID)
		}
		return slices.Contains(uids, "uid-gone") && slices.Contains(uids, "uid-gone-r1")
	})
}

// A restarted sluice-vk takes up the job the pod's status names as current,
// and cancels the one it was handed over from, should the restart have cut
// the handover short.
func TestRenewalResumedAfterRestart(t *testing.T) {
	pod := renewPod("back")
	pod.Finalizers = []string{Finalizer}
	start := metav1.NewTime(t0)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.9", StartTime: &start,
		Conditions: []corev1.PodCondition{{Type: ConditionCurrentJob, Status: corev1.ConditionTrue, Reason: "Renewal3", Message: "Slurm job 77, after renewal 1"}}}
	c := &clock{t: t0}
	h := newHarness(t, func(cfg *Config) { cfg.Now = c.Now }, pod)
	h.jobs.mu.Lock()
	h.jobs.jobs["uid-back-r3"] = "77"
	h.jobs.statuses["uid-back-r3"] = running(t0)
	h.jobs.mu.Unlock()
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("adopted Slurm job 77")
	if s, _, _, _ := h.jobs.counts(); s != 1 {
		t.Errorf("%d submissions; want the adoption only", s)
	}
	if err := h.p.DeletePod(context.Background(), pod); err != nil {
		t.Fatalf("DeletePod: %v", err)
	}
	h.waitFor("the previous job removed", func() bool {
		h.jobs.mu.Lock()
		defer h.jobs.mu.Unlock()
		return slices.ContainsFunc(h.jobs.removes, func(r slurm.JobRef) bool { return r.UID == "uid-back-r1" })
	})
}
