package provider

import (
	"fmt"
	"time"

	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Waiting reasons of containers whose job has not started them.
const (
	reasonCreating     = "ContainerCreating"
	reasonInitializing = "PodInitializing"
	reasonJobPending   = "SlurmPending"
	reasonConfigError  = "CreateContainerConfigError"
	reasonSubmitError  = "SlurmSubmitError"
	reasonBackOff      = "CrashLoopBackOff"
)

// initialStatus is the status of a pod the provider just accepted: pending,
// on the node's address, its containers waiting to be created.
func initialStatus(pod *corev1.Pod, ip string, now time.Time) corev1.PodStatus {
	t := metav1.NewTime(now.Truncate(time.Second))
	st := corev1.PodStatus{
		Phase:     corev1.PodPending,
		HostIP:    ip,
		HostIPs:   []corev1.HostIP{{IP: ip}},
		PodIP:     ip,
		PodIPs:    []corev1.PodIP{{IP: ip}},
		StartTime: &t,
		QOSClass:  pod.Status.QOSClass,
	}
	st.Conditions = conditions(nil, now, true, false, false, "")
	st.InitContainerStatuses = waitingAll(pod.Spec.InitContainers, reasonCreating, "")
	st.ContainerStatuses = waitingAll(pod.Spec.Containers, reasonCreating, "")
	return st
}

// waitingStatus is prev with every container waiting for reason.
func waitingStatus(pod *corev1.Pod, prev corev1.PodStatus, reason, msg string) corev1.PodStatus {
	st := *prev.DeepCopy()
	st.InitContainerStatuses = waitingAll(pod.Spec.InitContainers, reason, msg)
	st.ContainerStatuses = waitingAll(pod.Spec.Containers, reason, msg)
	return st
}

func waitingAll(cs []corev1.Container, reason, msg string) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range cs {
		out = append(out, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		})
	}
	return out
}

// jobStatus is the status of a pod whose job Slurm reports as js; prev is
// the status reported before (for the address, start time and the times
// conditions last changed).
//
// As a kubelet reports it, a pod whose job runs is Pending while its init
// containers run (kubectl shows Init:N/M) and until its containers have
// all started, then Running; a container is ready while it runs (and, with
// a readiness probe, when the probe says so), and the pod is Ready when
// every container is.
//
// kept holds the statuses of the pod's kept containers, which run in its
// shadow (S3): the init containers that ran there before the job, and the
// others as last seen there; they stand for those containers.
func jobStatus(pod *corev1.Pod, prev corev1.PodStatus, js slurm.Status, kept map[string]corev1.ContainerStatus, now time.Time) corev1.PodStatus {
	phase, reason := slurm.PodPhase(js.State)
	st := *prev.DeepCopy()
	st.Reason = reason
	st.Message = jobMessage(js, phase)
	final := js.State.Final()

	initNotStarted := reasonInitializing
	if phase == slurm.PhasePending {
		initNotStarted = reasonJobPending
	} else if phase != slurm.PhaseRunning {
		initNotStarted = reasonCreating
	}
	initDone := true
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		cs, ok := kept[c.Name]
		if !ok {
			cs = containerStatus(c, js, final, initNotStarted)
		}
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			initDone = false
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	notStarted := reasonCreating
	if !initDone {
		notStarted = reasonInitializing
	}
	if phase == slurm.PhasePending {
		notStarted = reasonJobPending
	}
	allReady, anyWaiting := true, false
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cs, ok := kept[c.Name]
		if !ok {
			cs = containerStatus(c, js, final && initDone, notStarted)
		}
		if cs.State.Running == nil || !cs.Ready {
			allReady = false
		}
		if w := cs.State.Waiting; w != nil && w.Reason != reasonBackOff { // restarting: the pod still runs
			anyWaiting = true
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if phase == slurm.PhaseRunning && (!initDone || anyWaiting) {
		phase = slurm.PhasePending
	}
	st.Phase = corev1.PodPhase(phase)
	ready := phase == slurm.PhaseRunning && allReady
	completed := ""
	if final {
		completed = "PodCompleted"
	}
	st.Conditions = conditions(prev.Conditions, now, true, initDone, ready, completed)
	return st
}

// containerStatus is the status of one container of a job. A container
// that has not started waits for notStarted, unless its job is over
// (final), when it ended with the job. Its start and finish times are its
// own when its job wrote them, else the job's.
func containerStatus(c corev1.Container, js slurm.Status, final bool, notStarted string) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	if js.JobID != "" {
		cs.ContainerID = fmt.Sprintf("slurm://%s/%s", js.JobID, c.Name)
	}
	r, ok := js.Containers[c.Name]
	start := metav1.NewTime(orTime(r.StartedAt, js.StartTime))
	end := metav1.NewTime(orTime(r.FinishedAt, js.EndTime))
	switch {
	case ok && r.Finished:
		cs.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: int32(r.ExitCode), Reason: exitReason(r.ExitCode, js.State),
			StartedAt: start, FinishedAt: end, ContainerID: cs.ContainerID,
		}
		if r.KilledBy != "" {
			cs.State.Terminated.Message = "killed by its " + killedBy(r.KilledBy)
		}
	case ok && r.BackOff && !final:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reasonBackOff,
			Message: fmt.Sprintf("back-off restarting container %s, killed by its %s", c.Name, killedBy(r.LastTermination.Reason))}
	case final && (ok && r.Started || js.State != slurm.StateCompleted):
		code := jobExitCode(js)
		cs.State.Terminated = &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: exitReason(int(code), js.State),
			Message:   fmt.Sprintf("Slurm job %s ended %s", js.JobID, js.State),
			StartedAt: start, FinishedAt: metav1.NewTime(js.EndTime), ContainerID: cs.ContainerID,
		}
	case ok && r.Started:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: start}
		// nil: no readiness or startup probe run
		cs.Ready = (r.Ready == nil || *r.Ready) && (r.StartupPassed == nil || *r.StartupPassed)
	default:
		msg := ""
		if notStarted == reasonJobPending && js.Reason != "" {
			msg = "Slurm: " + js.Reason
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: notStarted, Message: msg}
	}
	started := cs.State.Running != nil && (r.StartupPassed == nil || *r.StartupPassed)
	cs.Started = &started
	lastRun(&cs, r)
	return cs
}

// lastRun sets the restart count and last termination of a container
// that its probes or postStart hook killed and its job ran again. The job
// counts a restart when the killed run ends; the kubelet counts it when
// the container runs again, after the back-off.
func lastRun(cs *corev1.ContainerStatus, r slurm.ContainerStatus) {
	t := r.LastTermination
	if t == nil {
		return
	}
	cs.RestartCount = int32(r.RestartCount)
	if r.BackOff {
		cs.RestartCount--
	}
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
		ExitCode: int32(t.ExitCode), Reason: exitReason(t.ExitCode, slurm.StateRunning),
		Message:   fmt.Sprintf("killed by its %s", killedBy(t.Reason)),
		StartedAt: metav1.NewTime(t.StartedAt), FinishedAt: metav1.NewTime(t.FinishedAt), ContainerID: cs.ContainerID,
	}
}

// killedBy names what killed a container.
func killedBy(r slurm.KillReason) string {
	switch r {
	case slurm.KilledByLiveness:
		return "failing liveness probe"
	case slurm.KilledByStartup:
		return "failing startup probe"
	case slurm.KilledByPostStart:
		return "failed postStart hook"
	}
	return "probes"
}

// orTime is t, or def when t is zero.
func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

// exitReason is the reason of a container that exited with code in a job
// in state s: the job's own reason for time limits and memory, else
// Completed or Error, as the kubelet says.
func exitReason(code int, s slurm.State) string {
	switch _, reason := slurm.PodPhase(s); reason {
	case slurm.ReasonOOMKilled, slurm.ReasonDeadlineExceeded, slurm.ReasonCancelled:
		if code != 0 {
			return reason
		}
	}
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

// jobExitCode is the code a container that did not report its own ends
// with: the job's, 128+signal for a signal, else 1 for a failed job.
func jobExitCode(js slurm.Status) int32 {
	if e := js.Exit; e != nil {
		if e.Signal != 0 {
			return int32(128 + e.Signal)
		}
		if e.Code != 0 {
			return int32(e.Code)
		}
	}
	if phase, _ := slurm.PodPhase(js.State); phase == slurm.PhaseSucceeded {
		return 0
	}
	return 1
}

func jobMessage(js slurm.Status, phase slurm.Phase) string {
	switch {
	case js.State == slurm.StateUnknown:
		return js.Reason
	case phase == slurm.PhasePending && js.Reason != "" && js.Reason != "None":
		return fmt.Sprintf("Slurm job %s is %s: %s", js.JobID, js.State, js.Reason)
	case phase == slurm.PhaseFailed:
		msg := fmt.Sprintf("Slurm job %s ended %s", js.JobID, js.State)
		if js.Reason != "" && js.Reason != "None" {
			msg += ": " + js.Reason
		}
		return msg
	}
	return ""
}

// conditions sets the pod's four conditions, keeping the transition time
// of those that did not change.
func conditions(prev []corev1.PodCondition, now time.Time, scheduled, initialized, ready bool, completed string) []corev1.PodCondition {
	t := metav1.NewTime(now.Truncate(time.Second))
	notReady := "ContainersNotReady"
	if completed != "" {
		notReady = completed
	}
	want := []struct {
		typ    corev1.PodConditionType
		ok     bool
		reason string
	}{
		{corev1.PodScheduled, scheduled, ""},
		{corev1.PodInitialized, initialized, "ContainersNotInitialized"},
		{corev1.ContainersReady, ready, notReady},
		{corev1.PodReady, ready, notReady},
	}
	var out []corev1.PodCondition
	for _, w := range want {
		c := corev1.PodCondition{Type: w.typ, Status: corev1.ConditionFalse, Reason: w.reason, LastTransitionTime: t}
		if w.ok {
			c.Status, c.Reason = corev1.ConditionTrue, ""
		}
		if completed != "" && w.typ == corev1.PodInitialized && !w.ok {
			c.Reason = completed
		}
		for _, p := range prev {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}
